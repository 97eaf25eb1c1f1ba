#include "vport_host.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "console_input.h"

/* The queue's thread: the bytes as they are, up to the cap. */
static void sink(void *opaque, const uint8_t *buf, size_t len)
{
	struct vport_host *h = opaque;
	const struct vport_config *cfg = h->cfg;
	if (h->failed)
		return;
	if (cfg->out_max && h->written + len > cfg->out_max) {
		/* The guest decides how much it writes; the host's disk is not its to fill. */
		if (!h->capped)
			log_warn("vport %s: its output reached max-size (%llu bytes): further "
				 "guest output is dropped",
				 cfg->name, (unsigned long long)cfg->out_max);
		h->capped = true;
		len = (size_t)(cfg->out_max - h->written);
	}
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(cfg->out_fd, buf + done, len - done);
		if (n > 0) {
			done += (size_t)n;
			h->written += (uint64_t)n;
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			/* A closed reader must not stop the guest: its writes go on, to nowhere. */
			log_warn("vport %s: cannot write its output (%s): further guest output is "
				 "dropped",
				 cfg->name, n ? strerror(errno) : "nothing written");
			h->failed = true;
			return;
		}
	}
}

int vport_host_start_output(struct vport_host *h, const struct vport_config *cfg,
			    void (*room)(void *), void *room_opaque)
{
	h->cfg = cfg;
	if (cfg->out_fd < 0)
		return 0;
	if (console_queue_start(&h->out, CONSOLE_QUEUE_BYTES, sink, h))
		return -1;
	h->queued = true;
	h->out.room = room;
	h->out.room_opaque = room_opaque;
	return 0;
}

size_t vport_host_output(struct vport_host *h, const uint8_t *buf, size_t len)
{
	return h->queued ? console_queue_put(&h->out, buf, len) : len;
}

void vport_host_input_room(struct vport_host *h)
{
	uint64_t one = 1;
	if (h->input && write(h->room_fd, &one, sizeof(one)) < 0)
		log_warn("vport %s: cannot wake its input thread", h->cfg->name);
}

/* Wait until the device takes more input or we are stopped (false). */
static bool wait_room(struct vport_host *h)
{
	struct pollfd fds[2] = {{.fd = h->room_fd, .events = POLLIN},
				{.fd = h->wake_fd, .events = POLLIN}};
	if (poll(fds, 2, -1) < 0)
		return errno == EINTR;
	if (fds[1].revents)
		return false;
	uint64_t v;
	if (fds[0].revents && read(h->room_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return false;
	return true;
}

static void *input_thread(void *arg)
{
	struct vport_host *h = arg;
	pthread_setname_np(pthread_self(), "vport-in");
	uint8_t buf[4096];
	for (;;) {
		ssize_t n = console_input_read(h->cfg->in_fd, h->wake_fd, buf, sizeof(buf));
		if (n == CONSOLE_INPUT_STOP)
			break;
		if (n <= 0) {
			if (n < 0)
				log_warn("vport %s: its input failed (%s): taken as its end",
					 h->cfg->name, strerror(errno));
			h->end(h);
			break;
		}
		/* The device holds a few KiB: the rest once the guest has read some. */
		size_t done = 0;
		while (done < (size_t)n) {
			done += h->deliver(h, buf + done, (unsigned)((size_t)n - done));
			if (done < (size_t)n && !wait_room(h))
				return NULL;
		}
	}
	return NULL;
}

int vport_host_start_input(struct vport_host *h)
{
	if (h->cfg->in_fd < 0)
		return 0;
	h->wake_fd = eventfd(0, EFD_CLOEXEC);
	h->room_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->wake_fd < 0 || h->room_fd < 0) {
		log_error("vport %s: eventfd: %s", h->cfg->name, strerror(errno));
		if (h->wake_fd >= 0)
			close(h->wake_fd);
		if (h->room_fd >= 0)
			close(h->room_fd);
		return -1;
	}
	h->input = true;
	int rc = pthread_create(&h->in_thread, NULL, input_thread, h);
	if (rc) {
		log_error("vport %s: cannot start its input thread: %s", h->cfg->name,
			  strerror(rc));
		return -1;
	}
	h->in_running = true;
	return 0;
}

void vport_host_stop(struct vport_host *h)
{
	if (h->in_running) {
		uint64_t one = 1;
		if (write(h->wake_fd, &one, sizeof(one)) < 0)
			log_warn("vport %s: cannot wake its input thread", h->cfg->name);
		pthread_join(h->in_thread, NULL);
		h->in_running = false;
	}
	if (h->input) {
		close(h->wake_fd);
		close(h->room_fd);
		h->input = false;
	}
	if (h->queued)
		console_queue_stop(&h->out); /* writes what the guest wrote last */
	h->queued = false;
}
