#include "snapshot_format.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC_LEN  8
#define RECORD_HDR 12
#define NR_CHIPS   3
/* Tags a vCPU must have, and the global ones (besides the config). */
static const uint32_t vcpu_required[] = {SNAP_REGS,  SNAP_SREGS,  SNAP_XSAVE,	 SNAP_MSRS,
					 SNAP_LAPIC, SNAP_EVENTS, SNAP_MP_STATE, SNAP_DEBUGREGS};
#define NR_VCPU_TAGS   9 /* SNAP_REGS..SNAP_DEBUGREGS */
#define NR_DEVICE_TAGS 2 /* SNAP_DEVICE, SNAP_DEVICE_STATE */

struct writer {
	uint8_t *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct writer *w, const void *p, size_t n)
{
	if (w->failed)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 65536;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *b = realloc(w->buf, cap);
		if (!b) {
			w->failed = true;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void record(struct writer *w, uint32_t tag, uint32_t index, const void *p, size_t n)
{
	uint32_t hdr[3] = {tag, index, (uint32_t)n};
	put(w, hdr, sizeof(hdr));
	put(w, p, n);
}

uint8_t *snapshot_state_write(const struct snapshot_state *st, size_t *len)
{
	struct writer w = {0};
	put(&w, SNAPSHOT_STATE_MAGIC, MAGIC_LEN);
	record(&w, SNAP_CONFIG, 0, &st->config, sizeof(st->config));
	record(&w, SNAP_CLOCK, 0, &st->clock, sizeof(st->clock));
	for (uint32_t i = 0; i < NR_CHIPS; i++)
		record(&w, SNAP_IRQCHIP, i, &st->irqchip[i], sizeof(st->irqchip[i]));
	record(&w, SNAP_PIT, 0, &st->pit, sizeof(st->pit));
	record(&w, SNAP_SERIAL, 0, &st->serial, sizeof(st->serial));
	for (uint32_t i = 0; i < st->config.nr_devices && i < MAX_DEVICES; i++) {
		record(&w, SNAP_DEVICE, i, &st->devices[i], sizeof(st->devices[i]));
		if (st->kind_state[i] && st->kind_state_len[i])
			record(&w, SNAP_DEVICE_STATE, i, st->kind_state[i], st->kind_state_len[i]);
	}
	for (uint32_t i = 0; i < st->config.nr_cpus && i < MAX_VCPUS; i++) {
		const struct snapshot_vcpu *v = &st->vcpus[i];
		record(&w, SNAP_REGS, i, &v->regs, sizeof(v->regs));
		record(&w, SNAP_SREGS, i, &v->sregs, sizeof(v->sregs));
		record(&w, SNAP_XSAVE, i, &v->xsave, sizeof(v->xsave));
		if (v->has_xcrs)
			record(&w, SNAP_XCRS, i, &v->xcrs, sizeof(v->xcrs));
		record(&w, SNAP_MSRS, i, v->msrs, v->nr_msrs * sizeof(v->msrs[0]));
		record(&w, SNAP_LAPIC, i, &v->lapic, sizeof(v->lapic));
		record(&w, SNAP_EVENTS, i, &v->events, sizeof(v->events));
		record(&w, SNAP_MP_STATE, i, &v->mp_state, sizeof(v->mp_state));
		record(&w, SNAP_DEBUGREGS, i, &v->debugregs, sizeof(v->debugregs));
	}
	if (w.failed) {
		free(w.buf);
		return NULL;
	}
	*len = w.len;
	return w.buf;
}

void snapshot_state_free_maps(struct snapshot_state *st)
{
	for (int i = 0; i < MAX_DEVICES; i++) {
		free(st->kind_state[i]);
		st->kind_state[i] = NULL;
		st->kind_state_len[i] = 0;
	}
}

void snapshot_state_free(struct snapshot_state *st)
{
	if (!st)
		return;
	snapshot_state_free_maps(st);
	free(st);
}

int snapshot_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Where a record's payload goes and how long it must be (0 length: a variable MSR list). */
static void *target(struct snapshot_state *st, uint32_t tag, uint32_t index, size_t *size)
{
	struct snapshot_vcpu *v = &st->vcpus[index < MAX_VCPUS ? index : 0];
#define T(field)                                                                                   \
	do {                                                                                       \
		*size = sizeof(field);                                                             \
		return &(field);                                                                   \
	} while (0)
	switch (tag) {
	case SNAP_CLOCK:
		T(st->clock);
	case SNAP_IRQCHIP:
		T(st->irqchip[index < NR_CHIPS ? index : 0]);
	case SNAP_PIT:
		T(st->pit);
	case SNAP_SERIAL:
		T(st->serial);
	case SNAP_DEVICE:
		T(st->devices[index < MAX_DEVICES ? index : 0]);
	case SNAP_DEVICE_STATE:
		*size = 0; /* the kind's to check */
		return &st->kind_state[index < MAX_DEVICES ? index : 0];
	case SNAP_REGS:
		T(v->regs);
	case SNAP_SREGS:
		T(v->sregs);
	case SNAP_XSAVE:
		T(v->xsave);
	case SNAP_XCRS:
		T(v->xcrs);
	case SNAP_LAPIC:
		T(v->lapic);
	case SNAP_EVENTS:
		T(v->events);
	case SNAP_MP_STATE:
		T(v->mp_state);
	case SNAP_DEBUGREGS:
		T(v->debugregs);
	case SNAP_MSRS:
		*size = 0;
		return v->msrs;
	}
#undef T
	return NULL;
}

static int check_config(const struct snapshot_config *c, char *err, size_t errlen)
{
	if (c->memory_bytes < (16ULL << 20) || c->memory_bytes > (1ULL << 40) ||
	    c->memory_bytes & ((1ULL << 20) - 1))
		return snapshot_fail(err, errlen, "memory size %llu is not 16M to 1T in whole MiB",
				     (unsigned long long)c->memory_bytes);
	if (c->nr_cpus < 1 || c->nr_cpus > MAX_VCPUS)
		return snapshot_fail(err, errlen, "%u vCPUs (expected 1 to %d)", c->nr_cpus,
				     MAX_VCPUS);
	if (c->nr_devices > MAX_DEVICES)
		return snapshot_fail(err, errlen, "%u virtio devices (at most %d)", c->nr_devices,
				     MAX_DEVICES);
	return 0;
}

static bool is_device_tag(uint32_t tag)
{
	return tag == SNAP_DEVICE || tag == SNAP_DEVICE_STATE;
}

static int parse_records(const uint8_t *buf, size_t len, struct snapshot_state *st, char *err,
			 size_t errlen);

int snapshot_state_parse(const uint8_t *buf, size_t len, struct snapshot_state *st, char *err,
			 size_t errlen)
{
	memset(st, 0, sizeof(*st));
	if (parse_records(buf, len, st, err, errlen)) {
		snapshot_state_free_maps(st);
		return -1;
	}
	return 0;
}

static int parse_records(const uint8_t *buf, size_t len, struct snapshot_state *st, char *err,
			 size_t errlen)
{
	if (len < MAGIC_LEN || memcmp(buf, SNAPSHOT_STATE_MAGIC, MAGIC_LEN))
		return snapshot_fail(err, errlen, "not a minivmm state file (bad magic)");
	/* Which records were seen: globals by tag, per-vCPU ones by (vCPU, tag). */
	bool seen_global[8] = {false}, seen_chip[NR_CHIPS] = {false},
	     seen_dev[NR_DEVICE_TAGS][MAX_DEVICES] = {{false}};
	static _Thread_local bool seen_vcpu[MAX_VCPUS][NR_VCPU_TAGS];
	memset(seen_vcpu, 0, sizeof(seen_vcpu));
	size_t off = MAGIC_LEN;
	bool have_config = false;
	while (off < len) {
		uint32_t hdr[3];
		if (len - off < RECORD_HDR)
			return snapshot_fail(err, errlen, "record header cut short at byte %zu",
					     off);
		memcpy(hdr, buf + off, sizeof(hdr));
		off += RECORD_HDR;
		uint32_t tag = hdr[0], index = hdr[1], size = hdr[2];
		if (size > len - off)
			return snapshot_fail(err, errlen, "record %u at byte %zu runs past the end",
					     tag, off - RECORD_HDR);
		const uint8_t *payload = buf + off;
		off += size;
		if (!have_config) {
			if (tag != SNAP_CONFIG || index || size != sizeof(st->config))
				return snapshot_fail(err, errlen,
						     "the first record is not the configuration");
			memcpy(&st->config, payload, sizeof(st->config));
			if (check_config(&st->config, err, errlen))
				return -1;
			have_config = true;
			continue;
		}
		size_t want;
		void *dst = target(st, tag, index, &want);
		if (!dst)
			return snapshot_fail(err, errlen, "unknown record tag %u", tag);
		bool *seen;
		if (tag >= SNAP_REGS) {
			if (index >= st->config.nr_cpus)
				return snapshot_fail(err, errlen, "record %u for vCPU %u of %u",
						     tag, index, st->config.nr_cpus);
			seen = &seen_vcpu[index][tag - SNAP_REGS];
		} else if (is_device_tag(tag)) {
			if (index >= st->config.nr_devices)
				return snapshot_fail(err, errlen, "device %u of %u", index,
						     st->config.nr_devices);
			seen = &seen_dev[tag - SNAP_DEVICE][index];
		} else if (tag == SNAP_IRQCHIP) {
			if (index >= NR_CHIPS)
				return snapshot_fail(err, errlen, "irqchip %u (expected 0 to 2)",
						     index);
			seen = &seen_chip[index];
		} else {
			if (index)
				return snapshot_fail(err, errlen, "record %u has index %u", tag,
						     index);
			seen = &seen_global[tag];
		}
		if (*seen)
			return snapshot_fail(err, errlen, "record %u (index %u) appears twice", tag,
					     index);
		*seen = true;
		if (tag == SNAP_MSRS) {
			if (size % sizeof(struct kvm_msr_entry) ||
			    size / sizeof(struct kvm_msr_entry) > SNAPSHOT_MAX_MSRS)
				return snapshot_fail(
				    err, errlen, "MSR list of %u bytes for vCPU %u", size, index);
			st->vcpus[index].nr_msrs = size / sizeof(struct kvm_msr_entry);
			memcpy(dst, payload, size);
			continue;
		}
		if (tag == SNAP_DEVICE_STATE) {
			uint8_t **state = dst;
			if (!size)
				return snapshot_fail(err, errlen,
						     "device %u: an empty state record", index);
			if (!(*state = malloc(size)))
				return snapshot_fail(err, errlen, "out of memory");
			memcpy(*state, payload, size);
			st->kind_state_len[index] = size;
			continue;
		}
		if (size != want)
			return snapshot_fail(err, errlen, "record %u is %u bytes, expected %zu",
					     tag, size, want);
		memcpy(dst, payload, size);
		if (tag == SNAP_XCRS)
			st->vcpus[index].has_xcrs = true;
	}
	if (!have_config)
		return snapshot_fail(err, errlen, "no configuration record");
	const struct serial_state *ser = &st->serial;
	if (ser->rx_count > SERIAL_RX_FIFO || ser->thri_pending > 1 || ser->irq_level > 1)
		return snapshot_fail(err, errlen, "the serial port's state is out of range");
	static const uint32_t global_required[] = {SNAP_CLOCK, SNAP_PIT, SNAP_SERIAL};
	for (size_t i = 0; i < sizeof(global_required) / sizeof(global_required[0]); i++)
		if (!seen_global[global_required[i]])
			return snapshot_fail(err, errlen, "record %u is missing",
					     global_required[i]);
	for (int i = 0; i < NR_CHIPS; i++)
		if (!seen_chip[i])
			return snapshot_fail(err, errlen, "irqchip %d is missing", i);
	for (uint32_t i = 0; i < st->config.nr_devices; i++) {
		const struct snapshot_device *d = &st->devices[i];
		if (!seen_dev[0][i])
			return snapshot_fail(err, errlen, "device %u is missing", i);
		if (!memchr(d->flag, 0, sizeof(d->flag)) || !memchr(d->spec, 0, sizeof(d->spec)) ||
		    d->transport > TRANSPORT_MMIO)
			return snapshot_fail(err, errlen,
					     "device %u: bad kind, options or transport", i);
	}
	for (uint32_t v = 0; v < st->config.nr_cpus; v++)
		for (size_t i = 0; i < sizeof(vcpu_required) / sizeof(vcpu_required[0]); i++)
			if (!seen_vcpu[v][vcpu_required[i] - SNAP_REGS])
				return snapshot_fail(err, errlen, "record %u of vCPU %u is missing",
						     vcpu_required[i], v);
	return 0;
}
