#include "blk_io.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/thread_sandbox.h"
#include "base/user_file.h"

/* Drop the first n bytes of an iovec array in place (after a short transfer). */
static void iov_advance(struct blk_io *io, uint64_t n)
{
	while (n && io->iovcnt) {
		if (n < io->iov->iov_len) {
			io->iov->iov_base = (uint8_t *)io->iov->iov_base + n;
			io->iov->iov_len -= n;
			return;
		}
		n -= io->iov->iov_len;
		io->iov++;
		io->iovcnt--;
	}
}

/* Account for res bytes of a READ/WRITE; true when the remainder must be issued again. A
 * zero-byte transfer (end of file: the image shrank under us) becomes -EIO. */
static bool short_transfer(struct blk_io *io, int64_t *res)
{
	if ((io->op != BLK_IO_READ && io->op != BLK_IO_WRITE) || *res < 0)
		return false;
	if (*res == 0 && io->done < io->len) {
		*res = -EIO;
		return false;
	}
	io->done += (uint64_t)*res;
	if (io->done < io->len) {
		iov_advance(io, (uint64_t)*res);
		return true;
	}
	*res = (int64_t)io->done;
	return false;
}

/* One operation, synchronously (worker engine). */
static int64_t run_sync(struct blk_image *img, struct blk_io *io)
{
	for (;;) {
		int64_t res;
		off_t off = (off_t)(io->offset + io->done);
		switch (io->op) {
		case BLK_IO_READ:
			res = preadv(img->fd, io->iov, io->iovcnt, off);
			break;
		case BLK_IO_WRITE:
			res = pwritev(img->fd, io->iov, io->iovcnt, off);
			break;
		case BLK_IO_FLUSH:
			res = fdatasync(img->fd);
			break;
		default:
			res = fallocate(img->fd, io->mode, (off_t)io->offset, (off_t)io->len);
			break;
		}
		if (res < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!short_transfer(io, &res))
			return res;
	}
}

static void signal_efd(struct blk_image *img)
{
	uint64_t one = 1;
	while (write(img->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

static void *worker_main(void *opaque)
{
	struct blk_image *img = opaque;
	pthread_setname_np(pthread_self(), "blk-worker");
	pthread_mutex_lock(&img->lock);
	for (;;) {
		while (!img->todo && !img->stop)
			pthread_cond_wait(&img->work, &img->lock);
		if (img->stop)
			break;
		struct blk_io *io = img->todo;
		img->todo = io->next;
		if (!img->todo)
			img->todo_tail = &img->todo;
		pthread_mutex_unlock(&img->lock);
		/* Guest requests run under the worker's own filter only: never under the wider
		 * process-wide one (started before it, the worker narrows at its first request). */
		io->res = thread_sandbox_narrow(SANDBOX_BLK_WORKER) ? -EIO : run_sync(img, io);
		pthread_mutex_lock(&img->lock);
		io->next = NULL;
		*img->done_tail = io;
		img->done_tail = &io->next;
		if (--img->busy == 0)
			pthread_cond_broadcast(&img->idle);
		signal_efd(img);
	}
	pthread_mutex_unlock(&img->lock);
	return NULL;
}

static int start_workers(struct blk_image *img)
{
	img->todo_tail = &img->todo;
	img->done_tail = &img->done;
	for (int i = 0; i < BLK_IO_WORKERS; i++) {
		if (pthread_create(&img->workers[i], NULL, worker_main, img))
			return -1;
		img->nworkers++;
	}
	return 0;
}

static uint64_t image_size(int fd, const struct stat *st)
{
	uint64_t size = (uint64_t)st->st_size;
	if (S_ISBLK(st->st_mode) && ioctl(fd, BLKGETSIZE64, &size) < 0)
		size = 0;
	return size;
}

uint64_t blk_image_fd_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) < 0 ? 0 : image_size(fd, &st);
}

/* A ring that can only do what prep() issues. It starts disabled so that, before anything can
 * be submitted, it is bound to the completion eventfd and restricted: READV, WRITEV, FSYNC and
 * FALLOCATE SQEs only, no SQE flags, no further io_uring_register calls. Whoever takes over the
 * VMM cannot then use the ring to open, connect or unlink behind the seccomp filter's back. */
static int restricted_ring_init(struct io_uring *ring, unsigned entries, int efd)
{
	static const uint8_t ops[] = {IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC,
				      IORING_OP_FALLOCATE};
	struct io_uring_restriction res[sizeof(ops)];
	memset(res, 0, sizeof(res));
	for (size_t i = 0; i < sizeof(ops); i++) {
		res[i].opcode = IORING_RESTRICTION_SQE_OP;
		res[i].sqe_op = ops[i];
	}
	int rc = io_uring_queue_init(entries, ring, IORING_SETUP_R_DISABLED);
	if (rc < 0)
		return rc;
	/* Debian 12's liburing 2.3 declares io_uring_register_restrictions() and
	 * io_uring_enable_rings() but does not export them: the raw register call does the same. */
	if ((rc = io_uring_register_eventfd(ring, efd)) < 0 ||
	    (rc = io_uring_register(ring->ring_fd, IORING_REGISTER_RESTRICTIONS, res,
				    sizeof(ops))) < 0 ||
	    (rc = io_uring_register(ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0)) < 0)
		io_uring_queue_exit(ring);
	return rc;
}

int blk_image_open_flags(bool readonly, bool direct)
{
	return (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | (direct ? O_DIRECT : 0);
}

int blk_image_open(struct blk_image *img, const char *path, bool readonly, bool direct,
		   bool use_uring, unsigned queue_depth, char *err, size_t errlen)
{
	struct stat st;
	int fd = open_user_file(path, blk_image_open_flags(readonly, direct), 0,
				USER_FILE_REG | USER_FILE_BLK, &st);
	if (fd == USER_FILE_WRONG_KIND) {
		memset(img, 0, sizeof(*img));
		img->fd = img->efd = -1;
		snprintf(err, errlen, "'%s' is %s: neither a regular file nor a block device", path,
			 user_file_kind(st.st_mode));
		return -1;
	}
	return blk_image_open_fd(img, fd, path, readonly, direct, use_uring, queue_depth, err,
				 errlen);
}

int blk_image_open_fd(struct blk_image *img, int fd, const char *path, bool readonly, bool direct,
		      bool use_uring, unsigned queue_depth, char *err, size_t errlen)
{
	int saved_errno = errno;
	memset(img, 0, sizeof(*img));
	img->fd = fd;
	img->efd = -1;
	pthread_mutex_init(&img->lock, NULL);
	pthread_cond_init(&img->work, NULL);
	pthread_cond_init(&img->idle, NULL);
	img->readonly = readonly;
	img->direct = direct;
	errno = saved_errno;
	struct stat st;
	if (img->fd < 0 || fstat(img->fd, &st) < 0) {
		snprintf(err, errlen, "cannot open '%s'%s: %s", path,
			 direct && errno == EINVAL ? " with O_DIRECT (cache=none)" : "",
			 strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		snprintf(err, errlen, "'%s' is neither a regular file nor a block device", path);
		goto fail;
	}
	img->size = image_size(img->fd, &st);
	img->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (img->efd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	if (use_uring) {
		int rc = restricted_ring_init(&img->ring, queue_depth, img->efd);
		if (rc == 0)
			img->uring = true;
		else
			log_info("io_uring unavailable (%s): using %d I/O worker threads",
				 strerror(-rc), BLK_IO_WORKERS);
	}
	if (!img->uring && start_workers(img)) {
		snprintf(err, errlen, "cannot start I/O worker threads");
		goto fail;
	}
	return 0;
fail:
	blk_image_close(img);
	return -1;
}

void blk_image_close(struct blk_image *img)
{
	if (img->uring) {
		io_uring_queue_exit(&img->ring);
		img->uring = false;
	}
	pthread_mutex_lock(&img->lock);
	img->stop = true;
	pthread_cond_broadcast(&img->work);
	pthread_mutex_unlock(&img->lock);
	for (int i = 0; i < img->nworkers; i++)
		pthread_join(img->workers[i], NULL);
	img->nworkers = 0;
	if (img->efd >= 0)
		close(img->efd);
	if (img->fd >= 0)
		close(img->fd);
	img->fd = img->efd = -1;
	pthread_mutex_destroy(&img->lock);
	pthread_cond_destroy(&img->work);
	pthread_cond_destroy(&img->idle);
}

const char *blk_image_engine(const struct blk_image *img)
{
	return img->uring ? "io_uring" : "worker threads";
}

static void prep(struct blk_image *img, struct blk_io *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&img->ring);
	if (!sqe) {
		/* Submission ring full: start what is queued to make room (the ring has as
		 * many entries as the virtqueue, so this is rare). */
		io_uring_submit(&img->ring);
		sqe = io_uring_get_sqe(&img->ring);
	}
	off_t off = (off_t)(io->offset + io->done);
	switch (io->op) {
	case BLK_IO_READ:
		io_uring_prep_readv(sqe, img->fd, io->iov, (unsigned)io->iovcnt, off);
		break;
	case BLK_IO_WRITE:
		io_uring_prep_writev(sqe, img->fd, io->iov, (unsigned)io->iovcnt, off);
		break;
	case BLK_IO_FLUSH:
		io_uring_prep_fsync(sqe, img->fd, IORING_FSYNC_DATASYNC);
		break;
	default:
		io_uring_prep_fallocate(sqe, img->fd, io->mode, (off_t)io->offset, (off_t)io->len);
		break;
	}
	io_uring_sqe_set_data(sqe, io);
}

void blk_image_submit(struct blk_image *img, struct blk_io *io)
{
	io->done = 0;
	io->next = NULL;
	img->inflight++;
	if (img->uring) {
		prep(img, io);
		return;
	}
	pthread_mutex_lock(&img->lock);
	*img->todo_tail = io;
	img->todo_tail = &io->next;
	img->busy++;
	pthread_cond_signal(&img->work);
	pthread_mutex_unlock(&img->lock);
}

void blk_image_kick(struct blk_image *img)
{
	if (img->uring && io_uring_sq_ready(&img->ring))
		io_uring_submit(&img->ring);
}

/* One io_uring completion: hand it back, or reissue the rest of a short transfer. */
static unsigned complete_cqe(struct blk_image *img, struct io_uring_cqe *cqe, blk_io_done_fn fn,
			     void *opaque)
{
	struct blk_io *io = io_uring_cqe_get_data(cqe);
	int64_t res = cqe->res;
	io_uring_cqe_seen(&img->ring, cqe);
	if (short_transfer(io, &res)) {
		prep(img, io);
		return 0;
	}
	img->inflight--;
	fn(opaque, io, res);
	return 1;
}

static unsigned reap_workers(struct blk_image *img, blk_io_done_fn fn, void *opaque)
{
	pthread_mutex_lock(&img->lock);
	struct blk_io *list = img->done;
	img->done = NULL;
	img->done_tail = &img->done;
	pthread_mutex_unlock(&img->lock);
	unsigned n = 0;
	while (list) {
		struct blk_io *io = list;
		list = io->next;
		img->inflight--;
		fn(opaque, io, io->res);
		n++;
	}
	return n;
}

unsigned blk_image_reap(struct blk_image *img, blk_io_done_fn fn, void *opaque)
{
	uint64_t count;
	if (read(img->efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		log_warn("blk: reading the completion eventfd: %s", strerror(errno));
	if (!img->uring)
		return reap_workers(img, fn, opaque);
	unsigned n = 0;
	struct io_uring_cqe *cqe;
	while (io_uring_peek_cqe(&img->ring, &cqe) == 0)
		n += complete_cqe(img, cqe, fn, opaque);
	blk_image_kick(img); /* reissued short transfers */
	return n;
}

void blk_image_drain(struct blk_image *img, blk_io_done_fn fn, void *opaque)
{
	if (!img->uring) {
		pthread_mutex_lock(&img->lock);
		while (img->busy)
			pthread_cond_wait(&img->idle, &img->lock);
		pthread_mutex_unlock(&img->lock);
		reap_workers(img, fn, opaque);
		return;
	}
	blk_image_kick(img);
	while (img->inflight) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_wait_cqe(&img->ring, &cqe);
		if (rc == -EINTR)
			continue;
		if (rc < 0) {
			/* Cannot happen with a live ring; never spin. */
			log_error("blk: io_uring_wait_cqe: %s", strerror(-rc));
			return;
		}
		complete_cqe(img, cqe, fn, opaque);
		blk_image_kick(img);
	}
}
