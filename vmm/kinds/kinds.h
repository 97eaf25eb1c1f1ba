/* The device kinds of the command line (vmm/device_registry.h): each one's options, and the glue
 * that creates its model in devices/virtio/ from them. */
#ifndef MINIVMM_KINDS_H
#define MINIVMM_KINDS_H

#include <stddef.h>

#include "devices/virtio/balloon.h"
#include "devices/virtio/blk.h"
#include "devices/virtio/net.h"

struct device_kind_desc;
struct virtio_slot;

/* --rng: no options of its own. */
extern const struct device_kind_desc virtio_rng_kind;
/* --net tap=NAME|user[,...] */
extern const struct device_kind_desc virtio_net_kind;
/* --balloon[,deflate-on-oom=on][,free-page-reporting=on] */
extern const struct device_kind_desc virtio_balloon_kind;
/* --disk path=IMAGE[,readonly=on][,cache=none|writeback][,serial=ID] */
extern const struct device_kind_desc virtio_blk_kind;

struct option_list;
int net_config_parse(const struct option_list *opts, struct net_config *cfg, char *err,
		     size_t errlen);
/* Parse --disk's options (without transport=) and open the image as they ask: *fd, the
 * caller's to close or to hand to virtio_blk_create_on. */
int virtio_blk_parse_options(const struct option_list *opts, struct virtio_blk_options *out,
			     int *fd, char *err, size_t errlen);
/* The balloon model of a slot, or NULL if the slot holds another kind of device. */
struct virtio_balloon *virtio_balloon_of(struct virtio_slot *slot);

#endif
