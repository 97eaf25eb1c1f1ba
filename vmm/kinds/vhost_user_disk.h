/* --disk vhost-user=PATH: a virtio-blk whose requests a vhost-user back end serves
 * (qemu-storage-daemon), the image being the back end's. disk.c's kind calls these when the
 * option is given; the back end is connected to while the command line is parsed, so a missing
 * or unusable one is a command-line error. */
#ifndef MINIVMM_VHOST_USER_DISK_H
#define MINIVMM_VHOST_USER_DISK_H

#include <stddef.h>

struct device_env;
struct virtio_slot;
struct vhost_user_disk;

/* Connect to the back end at path, move its socket where the seccomp filters name it, do the
 * handshake and read what the device needs of it (devices/virtio/vhost_user_blk.h). what names
 * the flag for messages. NULL with a one-line reason in err. */
struct vhost_user_disk *vhost_user_disk_open(const char *path, const char *what, char *err,
					     size_t errlen);
/* Close the connection if the device did not take it. NULL is fine. */
void vhost_user_disk_free(struct vhost_user_disk *d);
/* The device on d's connection (it takes the connection). 0, or -1 (logged). */
int vhost_user_disk_create(struct vhost_user_disk *d, struct virtio_slot *slot,
			   const struct device_env *env, const char *label);
void vhost_user_disk_destroy(struct virtio_slot *slot);
/* The capacity the back end gave, in 512-byte sectors. */
unsigned long long vhost_user_disk_sectors(const struct vhost_user_disk *d);

#endif
