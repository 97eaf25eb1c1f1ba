/* The tap backend: a Linux tap device with IFF_VNET_HDR, read and written on the I/O thread. */
#ifndef MINIVMM_NET_TAP_H
#define MINIVMM_NET_TAP_H

#include <stdbool.h>
#include <stddef.h>

#include "devices/backends/net_backend.h"

/* Open tap NAME (creating it when it does not exist and we may). Returns NULL with a one-line
 * reason in err. The client's callbacks run on loop. tx_uring: send_batch writes each batch
 * through io_uring, one system call (falls back to writev, with a warning, where the kernel
 * refuses the ring); the first batch must come from the thread that sends all later ones. */
struct net_backend *tap_backend_open(const char *name, struct event_loop *loop,
				     const struct net_backend_client *client, bool tx_uring,
				     char *err, size_t errlen);

#endif
