/* The tap backend: a Linux tap device with IFF_VNET_HDR, read and written on the I/O thread. */
#ifndef MINIVMM_NET_TAP_H
#define MINIVMM_NET_TAP_H

#include <stdbool.h>
#include <stddef.h>

#include "devices/backends/net_backend.h"

/* io_uring for the tap (falls back, with a warning, where the kernel refuses the ring). */
#define TAP_URING_TX 1u /* send_batch writes each batch in one system call (tx-uring=on) */

/* Open tap NAME (creating it when it does not exist and we may). Returns NULL with a one-line
 * reason in err. The client's callbacks run on loop. uring: TAP_URING_* flags. The ring is
 * entered only by the thread of the first batch (the I/O thread). */
struct net_backend *tap_backend_open(const char *name, struct event_loop *loop,
				     const struct net_backend_client *client, unsigned uring,
				     char *err, size_t errlen);

#endif
