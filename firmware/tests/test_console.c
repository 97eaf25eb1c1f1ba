/*
 * test=console: the first virtio console; console.bytes=N (default 1M, suffixes K M G) of the
 * pattern console_pattern_next() makes from console.seed=N (default 1) are written to the port
 * named console.port=NAME (default probe.data, found by the MULTIPORT handshake; `hvc0` is port
 * 0, no handshake; `com1`: the 8250, the benchmark's baseline) in console.chunk=N buffers (default
 * 16K, at most 64K), console.depth=N in flight (1 to 16, default 8). Then "probe: console bytes=N
 * crc32=HEX us=... MB/s=..." on the serial console: the host checks the port's output against it
 * (the bytes are the host's to see: the probe cannot tell whether they arrived). The time includes
 * making the pattern.
 */
#include "test_console.h"

#include "boot_info.h"
#include "cmdline.h"
#include "crc32.h"
#include "lib.h"
#include "printf.h"
#include "serial.h"
#include "virtio_console.h"
#include "x86.h"

#define CHUNK_MAX     (64u << 10)
#define CHUNK_DEFAULT (16u << 10)
#define DEPTH_MAX     16
#define DEPTH_DEFAULT 8
#define BYTES_DEFAULT (1u << 20)

static uint8_t tx_buf[DEPTH_MAX][CHUNK_MAX] __attribute__((aligned(4096), section(".noinit")));
static struct vcon con;

struct console_opts {
	const char *port;
	size_t port_len;
	uint64_t bytes, seed, chunk, depth;
};

static bool opt_u64(const char *key, uint64_t *out)
{
	const char *v;
	size_t n;
	return !cmdline_get(boot_info.cmdline, key, &v, &n) || parse_u64(v, n, true, out);
}

static const char *parse_opts(struct console_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->bytes = BYTES_DEFAULT;
	o->seed = 1;
	o->chunk = CHUNK_DEFAULT;
	o->depth = DEPTH_DEFAULT;
	o->port = "probe.data";
	o->port_len = strlen(o->port);
	if (cmdline_get(boot_info.cmdline, "console.port", &o->port, &o->port_len) &&
	    (!o->port_len || o->port_len > VCON_NAME_MAX))
		return "bad console.port";
	if (!opt_u64("console.bytes", &o->bytes))
		return "bad console.bytes";
	if (!opt_u64("console.seed", &o->seed) || o->seed > 0xffffffffu)
		return "bad console.seed (32 bits)";
	if (!opt_u64("console.chunk", &o->chunk) || !o->chunk || o->chunk > CHUNK_MAX)
		return "bad console.chunk (1 to 64K)";
	if (!opt_u64("console.depth", &o->depth) || !o->depth || o->depth > DEPTH_MAX)
		return "bad console.depth (1 to 16)";
	return 0;
}

/* The whole stream on vq, depth buffers in flight; *crc is the CRC-32 of what was queued. */
static const char *stream(const struct console_opts *o, struct virtq *vq, uint32_t *crc)
{
	uint8_t buf_of[VIRTQ_MAX_SIZE], free_bufs[DEPTH_MAX];
	unsigned depth = o->depth < vq->size ? (unsigned)o->depth : vq->size;
	unsigned nfree = depth, inflight = 0;
	uint32_t state = (uint32_t)o->seed;
	uint64_t next = 0;
	const char *err;
	for (unsigned i = 0; i < depth; i++)
		free_bufs[i] = (uint8_t)i;
	*crc = 0;
	while (next < o->bytes || inflight) {
		bool posted = false;
		while (nfree && next < o->bytes) {
			unsigned b = free_bufs[--nfree];
			uint64_t left = o->bytes - next;
			uint32_t len = left < o->chunk ? (uint32_t)left : (uint32_t)o->chunk;
			for (uint32_t i = 0; i < len; i++)
				tx_buf[b][i] = console_pattern_next(&state);
			*crc = crc32_update(*crc, tx_buf[b], len);
			struct virtq_buf vb = {(uint64_t)tx_buf[b], len, false};
			int head = virtq_add(vq, &vb, 1);
			if (head < 0)
				return "console: transmit queue full";
			buf_of[head] = (uint8_t)b;
			inflight++;
			next += len;
			posted = true;
		}
		if (posted)
			virtq_kick(vq, false);
		if (!inflight)
			break;
		uint16_t id;
		uint32_t used;
		if ((err = virtq_wait(vq, &id, &used, VCON_TIMEOUT_MS)))
			return err;
		free_bufs[nfree++] = buf_of[id];
		inflight--;
	}
	return 0;
}

static bool port_is(const struct console_opts *o, const char *name)
{
	return o->port_len == strlen(name) && !memcmp(o->port, name, o->port_len);
}

/* The same stream through COM1, a byte per exit: the baseline a virtio console is measured
 * against (its lines are the output's as much as the stream). */
static void stream_com1(const struct console_opts *o)
{
	uint32_t state = (uint32_t)o->seed, crc = 0;
	uint64_t t0 = rdtsc();
	for (uint64_t next = 0; next < o->bytes;) {
		uint64_t left = o->bytes - next;
		uint32_t len = left < o->chunk ? (uint32_t)left : (uint32_t)o->chunk;
		for (uint32_t i = 0; i < len; i++)
			tx_buf[0][i] = console_pattern_next(&state);
		crc = crc32_update(crc, tx_buf[0], len);
		serial_write((const char *)tx_buf[0], len);
		next += len;
	}
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	kprintf("\nprobe: console com1 bytes=%lu crc32=%08x us=%lu KB/s=%lu\n", o->bytes, crc, us,
		us ? o->bytes * 1000 / us : 0);
}

const char *test_console(void)
{
	struct console_opts o;
	const char *err;
	if ((err = parse_opts(&o)))
		return err;
	if (port_is(&o, "com1")) {
		stream_com1(&o);
		return 0;
	}
	unsigned count;
	struct virtio_dev **devs = vcon_devices(&count);
	if (!count)
		return "no virtio console device";
	if ((err = vcon_open(&con, devs[0])))
		return err;
	kprintf("probe: console devices=%u transport=%s multiport=%u max_nr_ports=%u\n", count,
		virtio_transport_name(devs[0]), con.multiport, con.max_nr_ports);
	unsigned port = 0;
	if (!port_is(&o, "hvc0") &&
	    (err = vcon_find_port(&con, o.port, (unsigned)o.port_len, &port)))
		return err;
	kprintf("probe: console port=%u name=%s\n", port, port ? con.port[port].name : "hvc0");
	struct virtq *vq = vcon_txq(&con, port);
	uint64_t kicks0 = vq->kicks, t0 = rdtsc();
	uint32_t crc;
	if ((err = stream(&o, vq, &crc)))
		return err;
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	kprintf(
	    "probe: console bytes=%lu crc32=%08x chunk=%lu depth=%lu us=%lu MB/s=%lu kicks=%lu\n",
	    o.bytes, crc, o.chunk, o.depth, us, us ? o.bytes / us : 0, vq->kicks - kicks0);
	return 0;
}
