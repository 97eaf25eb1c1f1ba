/* --console virtio (or --virtio-console): the device-kind entry for virtio-console. Port 0 is
 * the guest's hvc0, on the host's console (vmm/cli/console.h): its output through a queue with
 * its own writer thread (console_queue.h), the console's input to it instead of COM1. The VM's
 * named ports (--vport, vmm/cli/vport.h) follow as ports 1..N, each on its own host end
 * (vport_host.h). */
#include "vmm/kinds/kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "devices/virtio/console.h"
#include "device_registry.h"
#include "vmm/cli/console.h"
#include "vmm/cli/console_queue.h"
#include "vmm/cli/options.h"
#include "vmm/cli/vport_host.h"
#include "vmm/kvm/virtio_devices.h"

static const struct option_desc console_options[] = {{NULL}};

/* slot->model */
struct vconsole {
	struct virtio_console *model;
	struct console *host;
	struct console_queue out; /* port 0's output, when the console has one */
	bool queued;
	struct vport_host vports[MAX_VPORTS]; /* port i + 1 */
	int nr_vports;
};

_Static_assert(MAX_VPORTS + 1 <= VIRTIO_CONSOLE_MAX_PORTS, "hvc0 and the named ports fit");
_Static_assert(VPORT_NAME_MAX <= VIRTIO_CONSOLE_NAME_MAX, "a port's name fits the model's");

/* A named port's device (vport_host.opaque) and port number. */
static struct vconsole *vport_owner(struct vport_host *h)
{
	return h->opaque;
}

static unsigned vport_index(struct vport_host *h)
{
	return (unsigned)(h - vport_owner(h)->vports) + 1;
}

static size_t vport_output(void *opaque, const uint8_t *buf, size_t len)
{
	return vport_host_output(opaque, buf, len);
}

static void vport_input_room(void *opaque)
{
	vport_host_input_room(opaque);
}

static void vport_room(void *opaque)
{
	struct vport_host *h = opaque;
	virtio_console_output_room(vport_owner(h)->model);
}

static unsigned vport_deliver(struct vport_host *h, const uint8_t *buf, unsigned len)
{
	return virtio_console_input(vport_owner(h)->model, vport_index(h), buf, len);
}

/* The port's input ended: the guest reads end of file. A port the guest also writes keeps its
 * host end open (Linux's write() waits while it is closed). */
static void vport_end(struct vport_host *h)
{
	if (h->cfg->out_fd < 0)
		virtio_console_host_close(vport_owner(h)->model, vport_index(h));
}

static int console_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	*parsed = NULL;
	return options_parse(console_options, opts, "--virtio-console", "transport=", NULL, err,
			     errlen);
}

static size_t port0_output(void *opaque, const uint8_t *buf, size_t len)
{
	struct vconsole *k = opaque;
	return console_queue_put(&k->out, buf, len);
}

static void port0_sink(void *opaque, const uint8_t *buf, size_t len)
{
	console_write_buf(opaque, buf, len);
}

static void port0_room(void *opaque)
{
	struct vconsole *k = opaque;
	virtio_console_output_room(k->model);
}

static unsigned port0_input(void *opaque, const uint8_t *buf, unsigned len)
{
	struct vconsole *k = opaque;
	return virtio_console_input(k->model, 0, buf, len);
}

static void console_destroy(struct virtio_slot *slot)
{
	struct vconsole *k = slot->model;
	if (!k)
		return;
	if (k->queued)
		console_queue_stop(&k->out); /* writes what the guest printed last */
	for (int i = 0; i < k->nr_vports; i++)
		vport_host_stop(&k->vports[i]); /* its input feeds the model, freed next */
	virtio_console_destroy(k->model);
	free(k);
	slot->model = NULL;
}

static int console_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	struct vconsole *k = calloc(1, sizeof(*k));
	if (!k) {
		log_error("%s: out of memory", label);
		return -1;
	}
	slot->model = k;
	k->host = env->console;
	struct virtio_console_port port0 = {.name = ""};
	if (k->host && k->host->out_fd >= 0) {
		if (console_queue_start(&k->out, CONSOLE_QUEUE_BYTES, port0_sink, k->host))
			goto fail;
		k->queued = true;
		k->out.room = port0_room;
		k->out.room_opaque = k;
		port0.output = port0_output;
		port0.opaque = k;
	}
	struct virtio_console_port ports[1 + MAX_VPORTS] = {port0};
	if (env->nr_vports > MAX_VPORTS) {
		log_error("%s: %d named ports (at most %d)", label, env->nr_vports, MAX_VPORTS);
		goto fail;
	}
	for (int i = 0; i < env->nr_vports; i++) {
		struct vport_host *h = &k->vports[i];
		const struct vport_config *cfg = &env->vports[i];
		h->opaque = k;
		k->nr_vports = i + 1;
		if (vport_host_start_output(h, cfg, vport_room, h))
			goto fail;
		h->deliver = vport_deliver;
		h->end = vport_end;
		struct virtio_console_port *p = &ports[1 + i];
		memcpy(p->name, cfg->name, sizeof(cfg->name));
		p->name[VPORT_NAME_MAX - 1] = '\0';
		p->output = cfg->out_fd >= 0 ? vport_output : NULL;
		p->input_room = vport_input_room;
		p->opaque = h;
	}
	k->model = virtio_console_create(&slot->dev, env->mem, env->loop, label, ports,
					 1 + (unsigned)env->nr_vports);
	if (!k->model)
		goto fail;
	for (int i = 0; i < k->nr_vports; i++)
		if (vport_host_start_input(&k->vports[i]))
			goto fail;
	if (k->host && !console_take_input(k->host, port0_input, k)) {
		log_error("%s: the console's input goes to another virtio console already (one "
			  "per VM)",
			  label);
		goto fail;
	}
	return 0;
fail:
	console_destroy(slot);
	return -1;
}

/* What a named port's host end is (a caller's descriptor, a file) a snapshot cannot name, and
 * its input and output in flight are not the guest's: such a VM is not saved. */
static int console_quiesce(struct virtio_slot *slot, char *err, size_t errlen)
{
	struct vconsole *k = slot->model;
	if (k->nr_vports) {
		snprintf(err, errlen,
			 "a virtio console with named ports (--vport) cannot be snapshotted");
		return -1;
	}
	return 0;
}

static int console_save(struct virtio_slot *slot, uint8_t **buf, size_t *len)
{
	struct vconsole *k = slot->model;
	struct virtio_console_state *st = malloc(sizeof(*st));
	if (!st)
		return -1;
	virtio_console_save(k->model, st);
	*buf = (uint8_t *)st;
	*len = sizeof(*st);
	return 0;
}

static int console_restore(struct virtio_slot *slot, const uint8_t *buf, size_t len, char *err,
			   size_t errlen)
{
	struct vconsole *k = slot->model;
	struct virtio_console_state st;
	if (len != sizeof(st)) {
		snprintf(err, errlen, "the saved console state is %zu bytes, expected %zu", len,
			 sizeof(st));
		return -1;
	}
	memcpy(&st, buf, sizeof(st));
	return virtio_console_restore(k->model, &st, err, errlen);
}

static void console_resignal(struct virtio_slot *slot)
{
	struct vconsole *k = slot->model;
	virtio_console_resume(k->model);
}

/* Nothing is in flight at a save: a transmit chain is output whole or put back (how much of
 * it went out is in the state); what the writer thread has not written yet is the host's. */
static const struct device_snapshot_ops console_snapshot = {
    .quiesce = console_quiesce,
    .save = console_save,
    .restore = console_restore,
    .resignal = console_resignal,
};

const struct device_kind_desc virtio_console_kind = {
    .flag = "virtio-console",
    .label = "virtio-console",
    .help = "a virtio console (hvc0) on --console's output, taking its input\n"
	    "(the same as --console virtio)",
    .options = console_options,
    .parse = console_parse,
    .create = console_create,
    .destroy = console_destroy,
    .snapshot = &console_snapshot,
};
