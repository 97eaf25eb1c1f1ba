/* Named ports of the virtio console beyond hvc0: the guest sees each one by its name
 * (/sys/class/virtio-ports/vportNpM/name, udev's /dev/virtio-ports/NAME). What a VM gets is
 * cfg->vports: from the command line (--vport NAME:OUTPUT) or from a caller that runs a command
 * in the VM (vport_add with its own descriptors). vport_host.h is their host end. */
#ifndef MINIVMM_VPORT_H
#define MINIVMM_VPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* Add a port named name (1 to VPORT_NAME_MAX - 1 bytes of A-Z a-z 0-9 . _ -, not starting with
 * '.' or '-'; unique) to cfg: the guest's writes on it go to out_fd (through their own queue
 * and thread: never blocking the guest's vCPUs or the I/O thread, in order, every byte once),
 * what is read from in_fd goes to the guest, and in_fd's end of file is the port's end (the
 * guest's read() returns 0) when the port has no output; -1 for either: none. The descriptors
 * stay the caller's, open until the VM is destroyed. The VM also needs a virtio console
 * (cli_add_device(cfg, "virtio-console", "")); a VM with such ports cannot be snapshotted.
 * 0, or -1 with a one-line reason in err. */
int vport_add(struct vm_config *cfg, const char *name, int out_fd, int in_fd, char *err,
	      size_t errlen);

/* --vport NAME:HOST, HOST one of stdout, stderr or file=PATH[,max-size=SIZE] (the guest's
 * writes; the file opened now: created or truncated; max-size as --console file's, default 64M,
 * 0: no cap), or stdin (the guest reads minivmm's stdin, its end of file included). */
int vport_parse(const char *arg, struct vm_config *cfg, char *err, size_t errlen);
/* Once every flag is seen: ports need a virtio console, stdin is read by one reader only. */
int vport_check(const struct vm_config *cfg, bool virtio_console, char *err, size_t errlen);

/* Close what vport_parse opened. */
void vport_free_config(struct vm_config *cfg);

#endif
