/* The control socket's requests: each line parsed, dispatched to its command (the VM's own:
 * status, pause, resume, snapshot, shutdown; the device kinds': device_command), and answered
 * with one JSON line. The socket itself, its connections and who may use it: api.c. */
#include "requests.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "json.h"
#include "vmm/cli/cli.h"
#include "vmm/kinds/device_registry.h"
#include "vmm/kvm/vcpu.h"
#include "vmm/kvm/virtio_devices.h"
#include "vmm/kvm/vm.h"
#include "vmm/snapshot/snapshot.h"

#define PAUSE_WAIT_MS 1000

char *api_error_response(const char *msg)
{
	struct json_writer w;
	json_writer_init(&w);
	json_begin_object(&w);
	json_member_bool(&w, "ok", false);
	json_member_string(&w, "error", msg);
	json_end_object(&w);
	return json_writer_finish(&w, NULL);
}

static void cpus_of(pid_t tid, char *buf, size_t len)
{
	cpu_set_t set;
	snprintf(buf, len, "?");
	if (tid > 0 && sched_getaffinity(tid, sizeof(set), &set) == 0)
		format_cpu_list(&set, buf, len);
}

static void status_vcpus(struct json_writer *w, struct vm *vm)
{
	json_key(w, "vcpus");
	json_begin_array(w);
	for (int i = 0; i < vm->nr_vcpus; i++) {
		const struct vcpu *v = &vm->vcpus[i];
		char cpus[256];
		cpus_of(v->tid, cpus, sizeof(cpus));
		json_begin_object(w);
		json_member_int(w, "index", i);
		json_member_int(w, "tid", v->tid);
		json_member_string(w, "cpus", cpus);
		json_member_bool(w, "pinned", vm->cfg->pinned[i]);
		json_member_string(w, "state", vcpu_is_paused(vm, i) ? "paused" : "running");
		json_key(w, "exits");
		json_begin_object(w);
		json_member_uint(w, "io", vcpu_exits(v, VCPU_EXIT_IO));
		json_member_uint(w, "mmio", vcpu_exits(v, VCPU_EXIT_MMIO));
		json_member_uint(w, "hlt", vcpu_exits(v, VCPU_EXIT_HLT));
		json_member_uint(w, "other", vcpu_exits(v, VCPU_EXIT_OTHER));
		json_end_object(w);
		json_end_object(w);
	}
	json_end_array(w);
	char cpus[256];
	cpus_of(vm->loop.tid, cpus, sizeof(cpus));
	json_key(w, "io_thread");
	json_begin_object(w);
	json_member_int(w, "tid", vm->loop.tid);
	json_member_string(w, "cpus", cpus);
	json_member_bool(w, "pinned", vm->cfg->io_pinned);
	json_end_object(w);
}

/* The VM's first device of kind, or NULL. */
static struct virtio_slot *first_of(struct vm *vm, const struct device_kind_desc *kind)
{
	for (int i = 0; vm->virtio && i < vm->virtio->nr; i++)
		if (vm->virtio->slots[i].cfg->kind == kind)
			return &vm->virtio->slots[i];
	return NULL;
}

static struct device_env device_env_of(struct vm *vm)
{
	return (struct device_env){
	    .mem = &vm->mem, .loop = &vm->loop, .ram_bytes = vm->cfg->memory_bytes};
}

static char *status_response(struct vm *vm)
{
	struct json_writer w;
	json_writer_init(&w);
	json_begin_object(&w);
	json_member_bool(&w, "ok", true);
	int paused = 0;
	for (int i = 0; i < vm->nr_vcpus; i++)
		paused += vcpu_is_paused(vm, i);
	/* Paused as soon as a pause is asked for: a --restore --paused VM whose vCPU threads
	 * have not parked yet has not run either. */
	if (__atomic_load_n(&vm->pause_requested, __ATOMIC_SEQ_CST))
		paused++;
	const char *state = vm_is_stopping(vm) ? "stopping" : paused ? "paused" : "running";
	json_member_string(&w, "state", state);
	json_member_uint(&w, "memory_mib", vm->cfg->memory_bytes >> 20);
	status_vcpus(&w, vm);
	json_key(&w, "devices");
	json_begin_array(&w);
	for (int i = 0; vm->virtio && i < vm->virtio->nr; i++) {
		struct virtio_slot *slot = &vm->virtio->slots[i];
		struct virtio_dev *dev = &slot->dev;
		virtio_dev_lock(dev);
		bool needs_reset = dev->broken || (dev->status & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
		uint64_t kicks = dev->kicks, wakeups = dev->notifications, irqs = dev->interrupts;
		uint64_t taken = dev->lock_taken, contended = dev->lock_contended;
		uint64_t wait_ns = dev->lock_wait_ns, held = dev->lock_hold_samples;
		uint64_t hold_ns = dev->lock_hold_ns, hold_max_ns = dev->lock_hold_max_ns;
		virtio_dev_unlock(dev);
		json_begin_object(&w);
		json_member_string(&w, "label", dev->label);
		json_member_string(&w, "transport",
				   slot->cfg->transport == TRANSPORT_MMIO ? "mmio" : "pci");
		json_member_uint(&w, "kicks", kicks);
		json_member_uint(&w, "wakeups", wakeups);
		json_member_uint(&w, "interrupts", irqs);
		json_member_bool(&w, "needs_reset", needs_reset);
		/* the device lock: taken, found held, time waited for it (all threads) */
		json_key(&w, "lock");
		json_begin_object(&w);
		json_member_uint(&w, "taken", taken);
		json_member_uint(&w, "contended", contended);
		json_member_uint(&w, "wait_us", wait_ns / 1000);
		/* hold times of every VIRTIO_LOCK_HOLD_SAMPLE-th take */
		json_member_uint(&w, "hold_samples", held);
		json_member_uint(&w, "hold_avg_ns", held ? hold_ns / held : 0);
		json_member_uint(&w, "hold_max_ns", hold_max_ns);
		json_end_object(&w);
		json_end_object(&w);
	}
	json_end_array(&w);
	/* Adaptive polling on the I/O thread (--net poll-us=; this request runs there too). */
	const struct adaptive_poll *ap = &vm->loop.poll;
	json_key(&w, "io_poll");
	json_begin_object(&w);
	json_member_uint(&w, "max_ns", ap->max_ns);
	json_member_uint(&w, "window_ns", ap->window_ns);
	json_member_uint(&w, "polls", ap->polls);
	json_member_uint(&w, "polls_found", ap->polls_found);
	json_member_uint(&w, "poll_ns", ap->poll_ns);
	json_member_uint(&w, "grows", ap->grows);
	json_member_uint(&w, "shrinks", ap->shrinks);
	json_end_object(&w);
	for (int k = 0; device_kinds[k]; k++) {
		struct virtio_slot *slot = first_of(vm, device_kinds[k]);
		if (slot && device_kinds[k]->status)
			device_kinds[k]->status(slot, &w);
	}
	json_end_object(&w);
	return json_writer_finish(&w, NULL);
}

char *api_ok_response(const char *key, int64_t value)
{
	struct json_writer w;
	json_writer_init(&w);
	json_begin_object(&w);
	json_member_bool(&w, "ok", true);
	if (key)
		json_member_int(&w, key, value);
	json_end_object(&w);
	return json_writer_finish(&w, NULL);
}

/* A command one of the device kinds serves, or NULL. */
static const struct device_command *find_command(const char *name,
						 const struct device_kind_desc **kind)
{
	for (int k = 0; device_kinds[k]; k++)
		for (const struct device_command *c = device_kinds[k]->commands; c && c->name; c++)
			if (!strcmp(c->name, name)) {
				*kind = device_kinds[k];
				return c;
			}
	return NULL;
}

/* {"cmd":"snapshot"[,"path":DIR]} with the three files attached, in snapshot_file_names' order;
 * "path" only names them in the log. The VM is paused and stays paused (snapshot.h). The
 * sandboxed VMM creates no file: the client does (`minivmm ctl snapshot DIR`). */
static char *snapshot_request(struct vm *vm, const struct json_object *req, const int *fds,
			      int nfds)
{
	const struct json_member *path = json_get(req, "path");
	if (path && path->type != JSON_STRING)
		return api_error_response("snapshot: \"path\" must be a string");
	if (nfds != SNAPSHOT_NR_FILES)
		return api_error_response(
		    "snapshot needs its three files passed with the request (SCM_RIGHTS: memory, "
		    "state.bin, snapshot.json, each new and empty): use minivmm ctl snapshot DIR");
	char err[512];
	uint64_t t0 = clock_monotonic_ns();
	if (snapshot_save(vm, fds, err, sizeof(err))) {
		log_warn("%s", err);
		return api_error_response(err);
	}
	log_info("snapshot written%s%.256s in %.1f ms; the VM is paused", path ? " to " : "",
		 path ? path->str : "", (double)(clock_monotonic_ns() - t0) / 1e6);
	return api_ok_response(NULL, 0);
}

char *api_handle_request(struct vm *vm, const char *line, size_t len, const int *fds, int nfds)
{
	struct json_object req;
	char err[160], msg[200];
	if (json_parse_object(line, len, &req, err, sizeof(err))) {
		snprintf(msg, sizeof(msg), "malformed request: %s", err);
		return api_error_response(msg);
	}
	const struct json_member *cmd = json_get(&req, "cmd");
	if (!cmd || cmd->type != JSON_STRING)
		return api_error_response("request needs a string \"cmd\"");
	if (nfds < 0)
		return api_error_response("more than 3 file descriptors came with the request");
	if (nfds && strcmp(cmd->str, "snapshot")) {
		snprintf(msg, sizeof(msg), "\"%.64s\" takes no file descriptors", cmd->str);
		return api_error_response(msg);
	}
	const struct device_kind_desc *kind = NULL;
	const struct device_command *dc = find_command(cmd->str, &kind);
	for (int i = 0; i < req.n; i++)
		if (strcmp(req.m[i].key, "cmd") &&
		    !(dc && dc->member && !strcmp(req.m[i].key, dc->member)) &&
		    !(!strcmp(cmd->str, "snapshot") && !strcmp(req.m[i].key, "path"))) {
			snprintf(msg, sizeof(msg), "unexpected member \"%.64s\" for \"%.64s\"",
				 req.m[i].key, cmd->str);
			return api_error_response(msg);
		}
	if (!strcmp(cmd->str, "status"))
		return status_response(vm);
	if (dc) {
		const struct device_env env = device_env_of(vm);
		return dc->run(first_of(vm, kind), &env, &req);
	}
	if (!strcmp(cmd->str, "pause")) {
		int n = vcpus_pause(vm, PAUSE_WAIT_MS);
		if (n < vm->nr_vcpus && !vm_is_stopping(vm)) {
			/* All or nothing: let the parked ones go again. */
			vcpus_resume(vm);
			snprintf(msg, sizeof(msg), "only %d of %d vCPUs paused in time", n,
				 vm->nr_vcpus);
			return api_error_response(msg);
		}
		log_info("paused by the control socket");
		return api_ok_response("paused_vcpus", n);
	}
	if (!strcmp(cmd->str, "resume")) {
		vcpus_resume(vm);
		log_info("resumed by the control socket");
		return api_ok_response(NULL, 0);
	}
	if (!strcmp(cmd->str, "snapshot"))
		return snapshot_request(vm, &req, fds, nfds);
	if (!strcmp(cmd->str, "shutdown")) {
		log_info("shutdown requested by the control socket");
		vm_request_stop(vm, 0);
		return api_ok_response(NULL, 0);
	}
	char names[128] = "status";
	for (int k = 0; device_kinds[k]; k++)
		for (const struct device_command *c = device_kinds[k]->commands; c && c->name; c++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), ", %s",
				 c->name);
	snprintf(msg, sizeof(msg),
		 "unknown command \"%.64s\" (expected %s, pause, resume, snapshot or shutdown)",
		 cmd->str, names);
	return api_error_response(msg);
}
