#include "acpi_sleep.h"

#include <string.h>

#include "base/log.h"

#define SLP_TYP_SHIFT 2
#define SLP_TYP_MASK  0x7
#define SLP_EN	      (1u << 5)

void acpi_sleep_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct acpi_sleep *s = opaque;
	if (!is_write) {
		memset(data, 0, len); /* WAK_STS clear; the control register reads as zero */
		return;
	}
	if (offset != 0 || len != 1 || !(data[0] & SLP_EN))
		return; /* status writes clear WAK_STS, which is never set */
	unsigned type = (data[0] >> SLP_TYP_SHIFT) & SLP_TYP_MASK;
	if (type == ACPI_S5_SLEEP_TYPE) {
		s->power_off(s->opaque);
	} else if (!s->warned) {
		/* Only \_S5 is declared, so an OSPM never asks for this; ignore it. */
		s->warned = true;
		log_warn("guest asked for ACPI sleep type %u, which is not offered; ignored", type);
	}
}
