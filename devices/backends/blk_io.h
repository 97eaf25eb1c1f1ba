/* The disk image behind a virtio-blk device: asynchronous reads, writes, flushes and
 * fallocate()s that never run on a vCPU thread and never block the I/O thread.
 *
 * Engine: io_uring (liburing) with its completion eventfd watched by the I/O thread. Where
 * io_uring cannot be set up (old kernel, before 5.10 without ring restrictions, seccomp,
 * io_uring_disabled sysctl), a small pool of
 * worker threads runs the same operations with preadv/pwritev/fdatasync/fallocate and signals
 * an eventfd the same way, so the device model sees one interface.
 *
 * Not thread-safe by itself: the caller serialises submit, reap and drain (virtio-blk holds its
 * device lock around each). The workers only touch their own queues under img->lock. */
#ifndef MINIVMM_BLK_IO_H
#define MINIVMM_BLK_IO_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define BLK_IO_WORKERS 4

enum blk_io_op { BLK_IO_READ, BLK_IO_WRITE, BLK_IO_FLUSH, BLK_IO_FALLOCATE };

/* One operation; owned by the caller until it is handed back by reap or drain. */
struct blk_io {
	enum blk_io_op op;
	uint64_t offset, len; /* bytes; len is the transfer length of READ/WRITE/FALLOCATE */
	struct iovec *iov;    /* READ/WRITE; advanced in place after a short transfer */
	int iovcnt;
	int mode;      /* FALLOCATE mode */
	uint64_t done; /* bytes transferred so far (READ/WRITE) */
	int64_t res;   /* worker engine: the syscall result */
	struct blk_io *next;
};

struct blk_image {
	int fd;
	int efd; /* completion eventfd (both engines) */
	uint64_t size;
	bool readonly, direct;
	bool uring;
	struct io_uring ring;
	unsigned inflight; /* submitted, not yet handed back */
	/* Worker engine. */
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	struct blk_io *todo, **todo_tail, *done, **done_tail;
	unsigned busy; /* queued or executing, not yet on the done list */
	bool stop;
	int nworkers;
	pthread_t workers[BLK_IO_WORKERS];
};

/* Open path (O_RDWR, or O_RDONLY; O_DIRECT for direct) and start an engine: io_uring with
 * queue_depth entries when use_uring, else (or when it fails) the worker pool. Returns 0, or
 * -1 with a reason in err. */
/* open(2) flags for an image: read-only or read-write, O_DIRECT for cache=none. */
int blk_image_open_flags(bool readonly, bool direct);
/* The size in bytes of an image open on fd (a regular file or a block device); 0 if unknown. */
uint64_t blk_image_fd_size(int fd);
int blk_image_open(struct blk_image *img, const char *path, bool readonly, bool direct,
		   bool use_uring, unsigned queue_depth, char *err, size_t errlen);
/* The same on fd, already open as readonly and direct ask for (taken over: closed on failure;
 * a negative fd is a failed open() whose errno is still set). path is for messages. */
int blk_image_open_fd(struct blk_image *img, int fd, const char *path, bool readonly, bool direct,
		      bool use_uring, unsigned queue_depth, char *err, size_t errlen);
void blk_image_close(struct blk_image *img);
const char *blk_image_engine(const struct blk_image *img);

/* Queue io (not yet started: call blk_image_kick after a batch). */
void blk_image_submit(struct blk_image *img, struct blk_io *io);
/* Start everything queued since the last kick: one io_uring_enter per batch. */
void blk_image_kick(struct blk_image *img);

/* Called for each finished operation with its result: bytes or 0 on success, -errno. */
typedef void (*blk_io_done_fn)(void *opaque, struct blk_io *io, int64_t res);
/* Hand back every finished operation without waiting (the eventfd is consumed first, so a
 * completion racing with this call raises it again). Returns how many. */
unsigned blk_image_reap(struct blk_image *img, blk_io_done_fn fn, void *opaque);
/* Wait until nothing is in flight, handing back each operation as it ends. */
void blk_image_drain(struct blk_image *img, blk_io_done_fn fn, void *opaque);

#endif
