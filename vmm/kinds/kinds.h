/* The device kinds of the command line (vmm/kinds/device_registry.h): each one's options, and the
 * glue that creates its model in devices/virtio/ from them. */
#ifndef MINIVMM_KINDS_H
#define MINIVMM_KINDS_H

#include <stddef.h>

#include "devices/virtio/balloon.h"
#include "devices/virtio/blk.h"
#include "devices/virtio/net.h"

struct device_kind_desc;

/* --rng: no options of its own. */
extern const struct device_kind_desc virtio_rng_kind;
/* --net tap=NAME|user[,...] */
extern const struct device_kind_desc virtio_net_kind;
/* --balloon[,deflate-on-oom=on][,free-page-reporting=on] */
extern const struct device_kind_desc virtio_balloon_kind;
/* --fs socket=PATH,tag=TAG[,queues=N] */
extern const struct device_kind_desc virtio_fs_kind;
/* --share DIR[,tag=TAG][,readonly=on] */
extern const struct device_kind_desc virtio_share_kind;
/* --disk path=IMAGE[,readonly=on][,cache=none|writeback][,serial=ID], or
 * --disk vhost-user=PATH (a vhost-user-blk back end: vhost_user_disk.h) */
extern const struct device_kind_desc virtio_blk_kind;
/* --virtio-console, or --console virtio: hvc0 on the host's console */
extern const struct device_kind_desc virtio_console_kind;

/* Each kind's options parser, <kind>_options_parse: the flag's option list (without
 * transport=) into its <kind>_options, defaults first; -1 with a one-line reason in err. */
struct option_list;
int net_options_parse(const struct option_list *opts, struct net_options *out, char *err,
		      size_t errlen);
/* Also opens the image as the options ask: *fd, the caller's to close or to hand to
 * virtio_blk_create_on. */
int blk_options_parse(const struct option_list *opts, struct blk_options *out, int *fd, char *err,
		      size_t errlen);
int balloon_options_parse(const struct option_list *opts, struct balloon_options *out, char *err,
			  size_t errlen);

#endif
