/* Where a virtio-net device's frames go: a tap device, or the user-mode (slirp) stack. Frames
 * cross this interface with the 12-byte virtio_net_hdr_v1 in front (the tap's vnet header). */
#ifndef MINIVMM_NET_BACKEND_H
#define MINIVMM_NET_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct event_loop;

#define NET_HDR_LEN 12 /* struct virtio_net_hdr_v1 */
/* The largest frame recv hands over: header, 64 KiB of GSO frame, room for the link header. */
#define NET_RX_FRAME_MAX (NET_HDR_LEN + 65536 + 64)

/* Offloads a backend can take from (tx) and hand to (rx) the guest. */
struct net_offloads {
	bool csum; /* partial checksums */
	bool tso4, tso6, ecn;
	bool uso; /* UDP segmentation (USO4/6) */
};

struct net_backend;

/* One frame of a batch (header + frame in iov) and, once the backend took it, its result. */
struct net_frame {
	const struct iovec *iov;
	int iovcnt;
	int rc; /* 0: sent; -errno: dropped */
};

struct net_backend_ops {
	const char *name;
	/* Send one frame (header + frame in iov). Returns 0, -EAGAIN (full: retry when the
	 * backend calls tx_ready) or another -errno (the frame is dropped). */
	int (*send)(struct net_backend *be, const struct iovec *iov, int iovcnt);
	/* Optional: send n frames in order, in as few system calls as the backend can. Returns
	 * how many it took (each frame's rc: 0 or a -errno that dropped it); if fewer than n,
	 * the next frame met a full backend (-EAGAIN: retry it after tx_ready) and no frame
	 * after it was sent. */
	int (*send_batch)(struct net_backend *be, struct net_frame *frames, int n);
	/* Optional: how frames are written ("writev", "io_uring") and read ("read"), for status
	 * and logs. */
	const char *(*tx_path)(struct net_backend *be);
	const char *(*rx_path)(struct net_backend *be);
	/* Receive one frame (header + frame) into buf. Returns its length, 0 when nothing is
	 * pending, or -errno when the backend is gone. */
	ssize_t (*recv)(struct net_backend *be, uint8_t *buf, size_t len);
	/* Which offloads the backend supports at all (for feature negotiation). */
	void (*offloads_supported)(struct net_backend *be, struct net_offloads *out);
	/* Ask the backend to deliver offloaded (large, partially checksummed) frames to us. */
	int (*set_rx_offloads)(struct net_backend *be, const struct net_offloads *o);
	/* Start or stop watching for received frames (flow control: the guest has no buffers). */
	void (*set_rx_enabled)(struct net_backend *be, bool enabled);
	void (*destroy)(struct net_backend *be);
};

/* Callbacks into the device, on the I/O thread. */
struct net_backend_client {
	void (*rx_ready)(void *opaque); /* frames can be received */
	void (*tx_ready)(void *opaque); /* a send that returned -EAGAIN can be retried */
	void (*link_down)(void *opaque, const char *why); /* the backend went away */
	void *opaque;
};

struct net_backend {
	const struct net_backend_ops *ops;
	struct net_backend_client client;
	struct event_loop *loop;
};

#endif
