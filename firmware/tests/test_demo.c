/*
 * test=demo: the boot checks of test=boot, then whatever devices are present: the first
 * virtio-blk disk (write demo.bytes, default 4 MiB, FLUSH, read back and verify), every
 * virtio-rng device (64 KiB), and the first virtio-net device (ARP for the peer, then ICMP
 * echo to it: libslirp answers pings to its gateway 10.0.2.2 itself). net.ip and net.peer
 * default to minivmm's user-mode network (10.0.2.15/24, peer 10.0.2.2). Ends with
 * `probe: demo summary ...`.
 */
#include "test_demo.h"

#include "boot_info.h"
#include "cmdline.h"
#include "lib.h"
#include "net.h"
#include "printf.h"
#include "serial.h"
#include "test_boot.h"
#include "test_net.h"
#include "test_rng.h"
#include "virtio_blk.h"
#include "x86.h"

#define DEMO_CHUNK	 (1u << 20)
#define DEMO_NCHUNK	 4
#define DEMO_SEED	 0xdead
#define DEMO_RNG_BYTES	 (64u << 10)
#define DEMO_PINGS	 4
#define DEMO_PING_MS	 1000
#define DEMO_PING_ID	 0x6d76 /* "mv" */
#define DEMO_PING_DATA	 56
#define DEMO_NET_DEFAULT "10.0.2.15/24"
#define DEMO_PEER	 "10.0.2.2"

static uint8_t blk_buf[DEMO_NCHUNK][DEMO_CHUNK] __attribute__((aligned(4096), section(".noinit")));

static struct {
	bool blk, rng, net;
	uint64_t blk_capacity, blk_bytes, blk_write_mbps, blk_read_mbps;
	unsigned rng_devs;
	uint64_t rng_kib_per_s;
	char peer[16], peer_mac[18];
	unsigned pings_sent, pings_got;
	uint64_t rtt_min_us, rtt_sum_us, rtt_max_us;
} demo;

static uint64_t per_us(uint64_t bytes, uint64_t cycles)
{
	uint64_t us = virtio_cycles_to_us(cycles);
	return us ? bytes / us : 0; /* bytes per us = MB/s */
}

/* All chunks of [0, bytes) in flight at once (writes carry the pattern; reads are zeroed). */
static const char *blk_pass(struct vblk *b, bool write, uint64_t bytes, uint64_t *cycles)
{
	unsigned n = (unsigned)((bytes + DEMO_CHUNK - 1) / DEMO_CHUNK);
	uint64_t t0 = rdtsc();
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = (uint64_t)i * DEMO_CHUNK;
		uint32_t len = bytes - off < DEMO_CHUNK ? (uint32_t)(bytes - off) : DEMO_CHUNK;
		uint64_t *w = (uint64_t *)blk_buf[i];
		for (uint32_t k = 0; k < len / 8; k++)
			w[k] = write ? vblk_pattern(DEMO_SEED, off + 8ull * k) : 0;
		if (vblk_post(b, write ? VBLK_T_OUT : VBLK_T_IN, off / 512, blk_buf[i], len,
			      !write) < 0)
			return "blk: no free request slot";
	}
	vblk_kick(b);
	while (b->inflight) {
		unsigned slot;
		uint8_t status;
		const char *err = vblk_wait(b, &slot, &status);
		if (err)
			return err;
		if (status != VBLK_S_OK)
			return write ? "blk write failed" : "blk read failed";
	}
	*cycles = rdtsc() - t0;
	return 0;
}

static const char *demo_blk(void)
{
	static struct vblk b;
	unsigned count;
	struct virtio_dev **devs = vblk_devices(&count);
	const char *err, *v;
	size_t n;
	uint8_t status;
	if (!count) {
		kprintf("probe: demo blk: no virtio-blk disk (skipped)\n");
		return 0;
	}
	if ((err = vblk_open(&b, devs[0])))
		return err;
	uint64_t want = DEMO_NCHUNK * (uint64_t)DEMO_CHUNK, disk = b.capacity * 512;
	if (cmdline_get(boot_info.cmdline, "demo.bytes", &v, &n) &&
	    (!parse_u64(v, n, true, &want) || !want || want > DEMO_NCHUNK * (uint64_t)DEMO_CHUNK))
		return "bad demo.bytes (at most 4M)";
	uint64_t bytes = (want < disk ? want : disk) & ~511ull;
	demo.blk_capacity = disk;
	kprintf(
	    "probe: demo blk dev=0 transport=%s capacity=%lu sectors (%lu MiB) ro=%u disks=%u\n",
	    virtio_transport_name(devs[0]), b.capacity, disk >> 20, b.ro, count);
	if (b.ro || !bytes) {
		kprintf("probe: demo blk: read-only or empty disk, no write test\n");
		demo.blk = true;
		return 0;
	}
	uint64_t wc, rc;
	if ((err = blk_pass(&b, true, bytes, &wc)) ||
	    (err = vblk_sync(&b, VBLK_T_FLUSH, 0, 0, 0, false, &status)))
		return err;
	if (status != VBLK_S_OK)
		return "blk flush failed";
	if ((err = blk_pass(&b, false, bytes, &rc)))
		return err;
	for (uint64_t off = 0; off < bytes; off += 8)
		if (((uint64_t *)blk_buf[off / DEMO_CHUNK])[off % DEMO_CHUNK / 8] !=
		    vblk_pattern(DEMO_SEED, off)) {
			kprintf("probe: demo blk mismatch at byte %lu\n", off);
			return "blk data read back differs from what was written";
		}
	demo.blk = true;
	demo.blk_bytes = bytes;
	demo.blk_write_mbps = per_us(bytes, wc);
	demo.blk_read_mbps = per_us(bytes, rc);
	kprintf("probe: demo blk wrote=%lu flushed read=%lu verify=ok write_mbps=%lu "
		"read_mbps=%lu\n",
		bytes, bytes, demo.blk_write_mbps, demo.blk_read_mbps);
	return 0;
}

static const char *demo_rng(void)
{
	struct virtio_dev **devs = rng_devices(&demo.rng_devs);
	const char *err;
	if (!demo.rng_devs) {
		kprintf("probe: demo rng: no virtio-rng device (skipped)\n");
		return 0;
	}
	for (unsigned i = 0; i < demo.rng_devs; i++) {
		struct rng_stats st;
		if ((err = rng_init(devs[i])) ||
		    (err = rng_read_checked(devs[i], DEMO_RNG_BYTES, &st)))
			return err;
		rng_report(i, devs[i], &st);
		uint64_t us = virtio_cycles_to_us(st.cycles);
		if (!i)
			demo.rng_kib_per_s = us ? st.bytes * 1000000 / 1024 / us : 0;
	}
	demo.rng = true;
	return 0;
}

static struct {
	uint16_t seq;
	bool got;
} ping;

static void echo_reply(const struct ip_hdr *ip, const uint8_t *pkt, unsigned len)
{
	uint16_t id, seq;
	memcpy(&id, pkt + 4, 2);
	memcpy(&seq, pkt + 6, 2);
	if (ip->src == netif.peer && ntohs(id) == DEMO_PING_ID && ntohs(seq) == ping.seq &&
	    len == 8 + DEMO_PING_DATA)
		ping.got = true;
}

static bool have_net(void)
{
	virtio_discover();
	for (unsigned i = 0; i < virtio_ndevs; i++)
		if (virtio_devs[i].device_id == VIRTIO_ID_NET)
			return true;
	return false;
}

static const char *demo_net(void)
{
	const char *err;
	uint8_t mac[6], data[DEMO_PING_DATA];
	if (!have_net()) {
		kprintf("probe: demo net: no virtio-net device (skipped)\n");
		return 0;
	}
	net_default_ip = DEMO_NET_DEFAULT;
	net_default_peer = DEMO_PEER;
	if ((err = net_open()))
		return err;
	net_fmt_ip(demo.peer, netif.peer);
	uint64_t t0 = rdtsc();
	if ((err = net_peer_mac(mac)))
		return err;
	net_fmt_mac(demo.peer_mac, mac);
	kprintf("probe: demo net arp peer=%s mac=%s us=%lu\n", demo.peer, demo.peer_mac,
		virtio_cycles_to_us(rdtsc() - t0));
	demo.net = true;
	for (unsigned i = 0; i < DEMO_PING_DATA; i++)
		data[i] = (uint8_t)i;
	netif.echo_reply_rx = echo_reply;
	uint64_t timeout = virtio_ms_to_cycles(DEMO_PING_MS);
	for (unsigned i = 0; i < DEMO_PINGS; i++) {
		ping.seq = (uint16_t)(i + 1);
		ping.got = false;
		t0 = rdtsc();
		if ((err = icmp_echo_send(mac, netif.peer, DEMO_PING_ID, ping.seq, data,
					  DEMO_PING_DATA)))
			break;
		demo.pings_sent++;
		uint64_t dt;
		while (!ping.got && (dt = rdtsc() - t0) < timeout && !netif.nic.err) {
			if (!net_poll(32))
				cpu_relax();
			vnet_tx_flush(&netif.nic); /* ARP replies, if asked */
		}
		dt = rdtsc() - t0;
		if (netif.nic.err) {
			err = netif.nic.err;
			break;
		}
		if (!ping.got) {
			kprintf("probe: demo net ping seq=%u to %s: no reply in %u ms\n", ping.seq,
				demo.peer, DEMO_PING_MS);
			continue;
		}
		uint64_t us = virtio_cycles_to_us(dt);
		kprintf("probe: demo net ping seq=%u to %s rtt_us=%lu\n", ping.seq, demo.peer, us);
		if (!demo.pings_got || us < demo.rtt_min_us)
			demo.rtt_min_us = us;
		if (us > demo.rtt_max_us)
			demo.rtt_max_us = us;
		demo.rtt_sum_us += us;
		demo.pings_got++;
	}
	netif.echo_reply_rx = 0;
	net_report_stats();
	return err;
}

/* Append to the summary (kprintf lines stop at 255 characters; the summary is longer). */
static char sum_buf[1024];
static size_t sum_len;

static void __attribute__((format(printf, 1, 2))) add(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(sum_buf + sum_len, sizeof(sum_buf) - sum_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		sum_len += (size_t)n;
	if (sum_len > sizeof(sum_buf) - 1)
		sum_len = sizeof(sum_buf) - 1;
}

static void summary(void)
{
	add("probe: demo summary: %u CPU(s) online, %lu MiB RAM, TSC %u kHz, compute %lu "
	    "Miter/s; ",
	    boot_summary.cpus_online, boot_summary.ram_bytes >> 20, boot_summary.tsc_khz,
	    boot_summary.miter_per_s);
	if (!demo.blk)
		add("no disk; ");
	else if (!demo.blk_bytes)
		add("a %lu MiB read-only disk; ", demo.blk_capacity >> 20);
	else
		add("a %lu MiB disk: wrote, flushed, read back and verified %lu KiB (write %lu "
		    "MB/s, read %lu MB/s); ",
		    demo.blk_capacity >> 20, demo.blk_bytes >> 10, demo.blk_write_mbps,
		    demo.blk_read_mbps);
	if (demo.rng)
		add("%u rng device(s), %lu KiB/s; ", demo.rng_devs, demo.rng_kib_per_s);
	else
		add("no rng; ");
	if (!demo.net)
		add("no network.\n");
	else if (demo.pings_got)
		add("network up, peer %s is %s (ARP), %u/%u pings answered, rtt min/avg/max "
		    "%lu/%lu/%lu us.\n",
		    demo.peer, demo.peer_mac, demo.pings_got, demo.pings_sent, demo.rtt_min_us,
		    demo.rtt_sum_us / demo.pings_got, demo.rtt_max_us);
	else
		add("network up, peer %s is %s (ARP), no answer to %u pings.\n", demo.peer,
		    demo.peer_mac, demo.pings_sent);
	serial_write(sum_buf, sum_len);
}

const char *test_demo(void)
{
	const char *err;
	if ((err = test_boot()) || (err = demo_blk()) || (err = demo_rng()) || (err = demo_net()))
		return err;
	summary();
	return 0;
}
