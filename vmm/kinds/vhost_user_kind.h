/* What every vhost-user device kind (--fs, --share, --disk vhost-user=) does with a back end's
 * connection before its device exists. */
#ifndef MINIVMM_VHOST_USER_KIND_H
#define MINIVMM_VHOST_USER_KIND_H

#include <stddef.h>

struct vhost_user;
struct vhost_user_info;

/* Move the socket to the descriptors the seccomp filters name (SECCOMP_VHOST_USER_FD_BASE),
 * shake hands, and check the back end offers VIRTIO_F_VERSION_1. what names the flag and where
 * the back end in messages ("--fs", "at '/run/fs.sock'"). 0, or -1 with one line in err. */
int vhost_user_kind_ready(struct vhost_user *vu, const char *what, const char *where,
			  struct vhost_user_info *info, char *err, size_t errlen);

#endif
