/* libFuzzer target: the control socket's command handling on request lines against a small
 * fake VM: vCPUs that are parked (or never started), guest memory, and optionally an rng and a
 * balloon device in the device list (the balloon's driver past DRIVER_OK or not), so status,
 * balloon-set, pause, resume and shutdown all do their work.
 *
 * Input: u8 setup, u8 mode, then the bytes a client sends.
 *   setup bits 0-1  vCPUs - 1
 *         bit 2     a balloon device
 *         bit 3     its driver is live (FEATURES_OK, DRIVER_OK): balloon-set signals it
 *         bit 4     an rng device in front of it (status lists every device)
 *         bit 5     the VM is stopping and its vCPUs never started (else they are parked)
 *         bits 6-7  configured RAM: 64 MiB (the guest memory's size), 256 MiB (more than the
 *                   balloon sees), 1 MiB, 1 TiB
 *   mode  bit 0     0: the bytes are cut into lines here, the way the server does (read in
 *                   chunks into a buffer of API_MAX_LINE bytes, each '\n' ends a request, a '\r'
 *                   before it is dropped, a buffer full without a newline ends the connection),
 *                   and each line goes to api_handle_request in an allocation of exactly its
 *                   length, so ASan sees any read past it;
 *                   1: the bytes go through a real connection to the server (api_server_start
 *                   on a socket in a temporary directory, served by this thread), sent in
 *                   chunks of 1 << (bits 1-4) bytes, then a half-close; the server's own line
 *                   handling (client_event, client_lines, client_reply, client_flush) cuts them.
 * Every response must be one line of JSON starting {"ok":true or {"ok":false,"error":"...";
 * every one but status's parses back as a flat object. Directly, a successful balloon-set must
 * have set that target and a successful shutdown must have stopped the VM; through the socket,
 * there must be one response per complete line (plus one for a line too long), in order.
 * FUZZ_VERBOSE=1 prints each request (directly) and each response. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "devices/virtio/balloon.h"
#include "devices/virtio/rng.h"
#include "vmm/api/api.h"
#include "base/log.h"
#include "vmm/cli/config.h"
#include "vmm/api/json.h"
#include "vmm/kinds/kinds.h"
#include "vmm/kvm/virtio_devices.h"
#include "vmm/kvm/vm.h"

#define RAM_SIZE (64ULL << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct vm vm;
static struct vm_config cfg;
static struct virtio_devices devs;
static const struct device_config balloon_cfg = {.kind = &virtio_balloon_kind,
						 .transport = TRANSPORT_PCI};
static const struct device_config rng_cfg = {.kind = &virtio_rng_kind, .transport = TRANSPORT_MMIO};
static uint8_t *ram;
static unsigned config_irqs;
static bool verbose; /* FUZZ_VERBOSE: print each request and its response */
static struct api_server *server;
static char sock_dir[] = "/tmp/fuzz_api.XXXXXX";
static struct sockaddr_un sock_addr = {.sun_family = AF_UNIX};

static void stop_server(void)
{
	api_server_stop(server);
	rmdir(sock_dir);
}

static void signal_queue(struct virtio_dev *d, int q)
{
	(void)d;
	(void)q;
}

static void signal_config(struct virtio_dev *d)
{
	(void)d;
	config_irqs++;
}

static const struct virtio_transport_ops transport = {.signal_queue = signal_queue,
						      .signal_config = signal_config};

static void global_init(void)
{
	log_set_quiet(true);
	verbose = getenv("FUZZ_VERBOSE");
	/* Never touched by these requests: reserve it, do not back it. */
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ram == MAP_FAILED || event_loop_init(&vm.loop))
		abort();
	vm.loop.tid = gettid();
	pthread_mutex_init(&vm.stop_lock, NULL);
	pthread_mutex_init(&vm.pause_lock, NULL);
	pthread_cond_init(&vm.pause_cond, NULL);
	vm.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm.stop_fd < 0)
		abort();
	vm.cfg = &cfg;
	vm.virtio = &devs;
	if (!mkdtemp(sock_dir))
		abort();
	snprintf(sock_addr.sun_path, sizeof(sock_addr.sun_path), "%s/api.sock", sock_dir);
	server = api_server_start(&vm, sock_addr.sun_path);
	if (!server)
		abort();
	atexit(stop_server);
}

/* now: r answers a request made just now (not through the socket); balloon: the last device
 * slot is a balloon. */
static void check_response(const char *r, bool now, bool balloon)
{
	if (!r)
		abort(); /* out of memory: not here */
	if (strchr(r, '\n'))
		abort(); /* one response, one line */
	bool ok = !strncmp(r, "{\"ok\":true", 10);
	if (!ok && strncmp(r, "{\"ok\":false,\"error\":\"", 21))
		abort();
	if (!strncmp(r, "{\"ok\":true,\"state\":", 19))
		return; /* status: nested, beyond the flat parser */
	struct json_object o;
	char err[160];
	if (json_parse_object(r, strlen(r), &o, err, sizeof(err)))
		abort();
	const struct json_member *m = json_get(&o, "target_mib");
	if (ok && m) {
		/* balloon-set: the target is what was asked for. */
		struct balloon_info bi;
		if (!balloon)
			abort();
		if (!now)
			return;
		virtio_balloon_get_info(devs.slots[devs.nr - 1].model, &bi);
		if ((uint64_t)bi.target_pages !=
		    (uint64_t)m->num * ((1u << 20) / BALLOON_PAGE_SIZE))
			abort();
	}
}

static void handle(const char *line, size_t len, bool balloon)
{
	/* Exactly sized, not NUL-terminated: as in the server's buffer, what follows is not
	 * the request's. */
	char *copy = malloc(len ? len : 1);
	if (!copy)
		abort();
	memcpy(copy, line, len);
	char *r = api_handle_request(&vm, copy, len, NULL, 0);
	if (verbose) /* to check what seeds reach */
		fprintf(stderr, "%.*s -> %s\n", (int)(len < 200 ? len : 200), copy, r);
	check_response(r, true, balloon);
	bool shutdown_ok =
	    r && !strcmp(r, "{\"ok\":true}") && len >= 8 && memmem(copy, len, "shutdown", 8);
	if (shutdown_ok && !vm_is_stopping(&vm))
		abort();
	free(r);
	free(copy);
}

/* Cut data into request lines as the server does; handle each (if handle_lines) and return
 * how many responses the server owes: one per complete line, plus one if a line is too long. */
static size_t cut_lines(const uint8_t *data, size_t size, bool handle_lines, bool balloon)
{
	static char in[API_MAX_LINE + 1];
	size_t in_len = 0, responses = 0;
	while (size) {
		size_t n = API_MAX_LINE - in_len < size ? API_MAX_LINE - in_len : size;
		memcpy(in + in_len, data, n);
		in_len += n;
		data += n;
		size -= n;
		size_t start = 0;
		for (size_t i = 0; i < in_len; i++) {
			if (in[i] != '\n')
				continue;
			size_t len = i - start;
			if (len && in[start + len - 1] == '\r')
				len--;
			if (handle_lines)
				handle(in + start, len, balloon);
			responses++;
			start = i + 1;
		}
		memmove(in, in + start, in_len - start);
		in_len -= start;
		if (in_len >= API_MAX_LINE)
			return responses + 1; /* "request line longer than ...", and closed */
	}
	return responses; /* a last line without a newline is dropped with the connection */
}

/* The same bytes through a connection to the server; the responses checked as they come. */
static void via_socket(const uint8_t *data, size_t size, size_t chunk, bool balloon)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sock_addr, sizeof(sock_addr)))
		abort();
	size_t sent = 0, got = 0, line = 0, responses = 0;
	bool writing = true, eof = false;
	char *out = NULL;
	size_t cap = 0;
	for (unsigned idle = 0; !eof; idle++) {
		if (writing && sent < size) {
			size_t n = size - sent < chunk ? size - sent : chunk;
			ssize_t w = send(fd, data + sent, n, MSG_NOSIGNAL);
			if (w > 0) {
				sent += (size_t)w;
				idle = 0;
			} else if (w < 0 && errno != EAGAIN) {
				writing = false; /* the server closed (a line too long) */
			}
		}
		if (writing && sent == size) {
			shutdown(fd, SHUT_WR);
			writing = false;
		}
		event_loop_run_once(&vm.loop, 0);
		for (;;) {
			if (cap - got < 4096) {
				cap = cap ? 2 * cap : 65536;
				out = realloc(out, cap);
				if (!out)
					abort();
			}
			ssize_t r = recv(fd, out + got, cap - got - 1, 0);
			if (r < 0 && errno == EAGAIN)
				break;
			if (r <= 0) { /* EOF, or ECONNRESET once everything sent to us was read */
				eof = true;
				break;
			}
			idle = 0;
			got += (size_t)r;
		}
		/* Check complete response lines. */
		for (char *nl; (nl = memchr(out + line, '\n', got - line)); line = nl + 1 - out) {
			*nl = '\0';
			if (verbose)
				fprintf(stderr, "-> %.400s\n", out + line);
			check_response(out + line, false, balloon);
			responses++;
		}
		if (idle > 100000)
			abort(); /* the server neither answers nor closes */
	}
	close(fd);
	event_loop_run_once(&vm.loop, 0); /* the server frees the closed client */
	if (verbose)
		fprintf(stderr, "%zu bytes sent, %zu responses\n", sent, responses);
	if (line != got || responses != cut_lines(data, size, false, false))
		abort();
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ram)
		global_init();
	if (size < 2)
		return 0;
	uint8_t setup = data[0], mode = data[1];
	data += 2;
	size -= 2;

	static const uint64_t ram_choice[4] = {RAM_SIZE, 256ULL << 20, 1ULL << 20, 1ULL << 40};
	memset(&cfg, 0, sizeof(cfg));
	cfg.memory_bytes = ram_choice[setup >> 6];
	cfg.nr_cpus = vm.nr_vcpus = (setup & 3) + 1;
	bool stopping = setup & 0x20;
	for (int i = 0; i < vm.nr_vcpus; i++) {
		memset(&vm.vcpus[i], 0, sizeof(vm.vcpus[i]));
		vm.vcpus[i].started = vm.vcpus[i].paused = !stopping;
		vm.vcpus[i].tid = i == 0 ? gettid() : 0; /* one with a real affinity */
		cfg.pinned[i] = i & 1;
	}
	vm.stopping = stopping;
	vm.exit_status = 0;
	vm.pause_requested = false;
	uint64_t drain;
	if (read(vm.stop_fd, &drain, sizeof(drain)) < 0) {
		/* nothing to drain */
	}
	guest_mem_init_with(&vm.mem, ram, RAM_SIZE);

	memset(&devs, 0, sizeof(devs));
	struct virtio_rng *rng = NULL;
	struct virtio_balloon *balloon = NULL;
	if (setup & 0x10) {
		struct virtio_slot *s = &devs.slots[devs.nr++];
		s->cfg = &rng_cfg;
		rng = virtio_rng_create(&s->dev, &vm.mem, &vm.loop, "rng0");
		if (!rng)
			abort();
		s->model = rng;
	}
	if (setup & 0x04) {
		struct virtio_slot *s = &devs.slots[devs.nr++];
		s->cfg = &balloon_cfg;
		struct balloon_options o = {.deflate_on_oom = setup & 1, .reporting = setup & 2};
		balloon = virtio_balloon_create(&s->dev, &vm.mem, &vm.loop, "balloon0", &o);
		if (!balloon)
			abort();
		s->model = balloon;
		s->dev.transport = &transport;
		if (setup & 0x08) {
			uint8_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;
			virtio_dev_set_status(&s->dev, st);
			virtio_dev_set_driver_features(&s->dev, 1, 1); /* VERSION_1 */
			virtio_dev_set_status(&s->dev, st |= VIRTIO_STATUS_FEATURES_OK);
			virtio_dev_set_status(&s->dev, st | VIRTIO_STATUS_DRIVER_OK);
		}
	}

	/* The I/O thread runs what DRIVER_OK scheduled (devices live in devs, which the next
	 * input clears: nothing may stay queued on the loop). */
	event_loop_run_once(&vm.loop, 0);
	if (mode & 1)
		via_socket(data, size, (size_t)1 << ((mode >> 1) & 15), balloon != NULL);
	else
		cut_lines(data, size, true, balloon != NULL);

	event_loop_run_once(&vm.loop, 0);
	for (int i = 0; i < devs.nr; i++) {
		struct virtio_slot *s = &devs.slots[i];
		virtio_dev_set_status(&s->dev, 0);
		if (s->cfg == &balloon_cfg)
			virtio_balloon_destroy(balloon);
		else
			virtio_rng_destroy(rng);
		pthread_mutex_destroy(&s->dev.lock);
	}
	return 0;
}
