/* libFuzzer target: the snapshot state parser (vmm/snapshot/snapshot_format.c) on arbitrary bytes.
 * What it accepts must serialize and parse back to the same records (the kinds' own states
 * included). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/snapshot/snapshot_format.h"

static struct snapshot_state st, again;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[200];
	if (snapshot_state_parse(data, size, &st, err, sizeof(err)))
		return 0;
	size_t len;
	uint8_t *out = snapshot_state_write(&st, &len);
	if (!out)
		abort();
	if (snapshot_state_parse(out, len, &again, err, sizeof(err)) ||
	    memcmp(&st.config, &again.config, sizeof(st.config)) ||
	    memcmp(&st.serial, &again.serial, sizeof(st.serial)))
		abort();
	for (uint32_t i = 0; i < st.config.nr_devices; i++)
		if (!st.kind_state[i] != !again.kind_state[i] ||
		    st.kind_state_len[i] != again.kind_state_len[i] ||
		    (st.kind_state[i] &&
		     memcmp(st.kind_state[i], again.kind_state[i], st.kind_state_len[i])))
			abort();
	for (uint32_t i = 0; i < st.config.nr_cpus; i++)
		if (st.vcpus[i].nr_msrs != again.vcpus[i].nr_msrs ||
		    memcmp(&st.vcpus[i].regs, &again.vcpus[i].regs, sizeof(st.vcpus[i].regs)))
			abort();
	free(out);
	snapshot_state_free_maps(&st);
	snapshot_state_free_maps(&again);
	return 0;
}
