#include "vhost_user_kind.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "devices/backends/vhost_user.h"
#include "devices/virtio/virtio.h"
#include "vmm/sandbox/seccomp.h"

int vhost_user_kind_ready(struct vhost_user *vu, const char *what, const char *where,
			  struct vhost_user_info *info, char *err, size_t errlen)
{
	if (vhost_user_move_fd(vu, SECCOMP_VHOST_USER_FD_BASE, SECCOMP_VHOST_USER_FDS)) {
		snprintf(err, errlen,
			 "%s: no descriptor left in %d..%d for the back end's socket: %s", what,
			 SECCOMP_VHOST_USER_FD_BASE,
			 SECCOMP_VHOST_USER_FD_BASE + SECCOMP_VHOST_USER_FDS - 1, strerror(errno));
		return -1;
	}
	if (vhost_user_handshake(vu, VHOST_USER_PROTOCOL_KNOWN, info)) {
		snprintf(err, errlen, "%s: vhost-user back end %s: %s", what, where,
			 vhost_user_error(vu));
		return -1;
	}
	if (!(info->features >> VIRTIO_F_VERSION_1 & 1)) {
		snprintf(err, errlen, "%s: the back end %s does not offer VIRTIO_F_VERSION_1", what,
			 where);
		return -1;
	}
	return 0;
}
