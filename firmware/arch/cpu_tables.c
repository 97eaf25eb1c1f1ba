/* Enumerates enabled processors from the MP table (minivmm's, at 0x9fc00) or the ACPI MADT. */
#include <stdbool.h>

#include "cpu_tables.h"
#include "lib.h"
#include "x86.h"

static bool checksum_ok(const void *p, uint32_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;
	while (len--)
		sum += *b++;
	return sum == 0;
}

static void add_cpu(struct cpu_list *out, uint32_t apic_id)
{
	if (out->count < MAX_CPUS && apic_id < 0xff)
		out->apic_id[out->count++] = (uint8_t)apic_id;
}

/* MP floating pointer: "_MP_" on a 16-byte boundary, 16 * length bytes, checksummed. */
static const uint8_t *find_mpf(uint64_t start, uint64_t end)
{
	for (uint64_t a = start; a + 16 <= end; a += 16) {
		const uint8_t *p = (const uint8_t *)a;
		if (!memcmp(p, "_MP_", 4) && p[8] && checksum_ok(p, 16u * p[8]))
			return p;
	}
	return 0;
}

static bool parse_mptable(struct cpu_list *out)
{
	const uint16_t *ebda_seg = phys_ptr(0x40e); /* BDA: EBDA segment */
	uint64_t ebda = (uint64_t)*ebda_seg << 4;
	const uint8_t *mpf = 0;
	if (ebda >= 0x80000 && ebda < 0xa0000)
		mpf = find_mpf(ebda, ebda + 1024);
	if (!mpf)
		mpf = find_mpf(0x9fc00, 0xa0000);
	if (!mpf)
		mpf = find_mpf(0xf0000, 0x100000);
	if (!mpf)
		return false;
	uint32_t cfg_addr;
	memcpy(&cfg_addr, mpf + 4, 4);
	const uint8_t *cfg = (const uint8_t *)(uint64_t)cfg_addr;
	uint16_t len, count;
	if (!cfg_addr || memcmp(cfg, "PCMP", 4))
		return false;
	memcpy(&len, cfg + 4, 2);
	memcpy(&count, cfg + 0x22, 2);
	if (!checksum_ok(cfg, len))
		return false;
	const uint8_t *e = cfg + 0x2c, *end = cfg + len;
	for (unsigned i = 0; i < count && e < end; i++) {
		if (e[0] == 0) { /* processor: id, version, flags (bit 0 enabled) */
			if (e[3] & 1)
				add_cpu(out, e[1]);
			e += 20;
		} else {
			e += 8;
		}
	}
	return out->count > 0;
}

static const uint8_t *find_rsdp(void)
{
	for (uint64_t a = 0xe0000; a < 0x100000; a += 16) {
		const uint8_t *p = (const uint8_t *)a;
		if (!memcmp(p, "RSD PTR ", 8) && checksum_ok(p, 20))
			return p;
	}
	return 0;
}

static const uint8_t *find_madt(const uint8_t *rsdp)
{
	uint32_t rsdt;
	uint64_t xsdt = 0;
	memcpy(&rsdt, rsdp + 16, 4);
	if (rsdp[15] >= 2)
		memcpy(&xsdt, rsdp + 24, 8);
	const uint8_t *sdt = (const uint8_t *)(xsdt ? xsdt : (uint64_t)rsdt);
	unsigned esize = xsdt ? 8 : 4;
	uint32_t len;
	if (!sdt)
		return 0;
	memcpy(&len, sdt + 4, 4);
	for (uint32_t off = 36; off + esize <= len; off += esize) {
		uint64_t t = 0;
		memcpy(&t, sdt + off, esize);
		if (t && !memcmp((const void *)t, "APIC", 4))
			return (const uint8_t *)t;
	}
	return 0;
}

static bool parse_madt(uint64_t rsdp_addr, struct cpu_list *out)
{
	const uint8_t *rsdp = rsdp_addr ? (const uint8_t *)rsdp_addr : find_rsdp();
	if (!rsdp || memcmp(rsdp, "RSD PTR ", 8))
		return false;
	const uint8_t *madt = find_madt(rsdp);
	if (!madt)
		return false;
	uint32_t len;
	memcpy(&len, madt + 4, 4);
	for (uint32_t off = 44; off + 2 <= len && madt[off + 1] >= 2; off += madt[off + 1]) {
		const uint8_t *e = madt + off;
		if (e[0] == 0) { /* processor local APIC: uid, apic id, flags (bit 0 enabled) */
			uint32_t flags;
			memcpy(&flags, e + 4, 4);
			if (flags & 1)
				add_cpu(out, e[3]);
		}
	}
	return out->count > 0;
}

void cpu_tables_find(uint64_t rsdp, struct cpu_list *out)
{
	out->count = 0;
	out->source = 0;
	if (parse_mptable(out))
		out->source = "mptable";
	else if ((out->count = 0, parse_madt(rsdp, out)))
		out->source = "madt";
}
