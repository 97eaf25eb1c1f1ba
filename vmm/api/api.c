#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sock_reaper.h"
#include "vmm/kvm/vm.h"
#include "base/clock.h"
#include "fd_passing.h"
#include "base/log.h"

#define API_MAX_CLIENTS 16
/* A client that never reads its responses is dropped past this much queued output. (Requests
 * are not read while output is queued, so one read's worth of requests bounds it anyway.) */
#define API_MAX_PENDING (1u << 20)
#define NS_PER_S	1000000000ULL
/* A client with no complete request and no reply bytes taken for this long is dropped. */
#define API_IDLE_TIMEOUT_NS (10 * NS_PER_S)
/* accept() out of descriptors with no spare to free: stop accepting for this long. */
#define API_ACCEPT_PAUSE_NS (NS_PER_S / 5)

struct api_client {
	struct api_server *server;
	struct event_source src;
	int fd;
	bool closing;		 /* flush what is queued, then close */
	uint64_t last_active_ns; /* last complete request or reply bytes sent */
	struct api_client *next_closed;
	char in[API_MAX_LINE + 1];
	size_t in_len;
	/* Descriptors received since the last request: they belong to the next one, and are
	 * closed once it is handled. nfds -1: more than API_MAX_FDS came (closed). */
	int fds[API_MAX_FDS];
	int nfds;
	char *out;
	size_t out_len, out_off;
};

struct api_server {
	struct vm *vm;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *name; /* path's last component, the socket's name in its directory */
	/* The socket's directory, pinned before the socket is claimed: the stale socket's
	 * removal, the bind and the removal at exit all happen in it, whatever a user who owns
	 * a directory on the way renames meanwhile (swapping one for a symlink to a root-owned
	 * directory). Kept here only when unreaped: no directory descriptor stays open under
	 * the seccomp filters or in a jail (seccomp_rules.c, the stat family). */
	int dir_fd;
	/* Removes the socket's file at exit where no VMM thread can: under the seccomp filters or
	 * in a jail. Otherwise the main thread unlinks it. */
	struct sock_reaper reaper;
	bool reaped;
	int fd;
	uid_t euid;	    /* peers must run as this user (or root) */
	int spare_fd;	    /* given up at EMFILE to accept and refuse a connection */
	bool accept_paused; /* out of descriptors with no spare: retried by the timer */
	uint64_t accept_resume_ns;
	struct event_source src;
	struct event_timer timer; /* idle clients and a paused accept */
	/* Clients are freed only after the current epoll batch, which may still name them. */
	struct bottom_half reap_bh;
	struct api_client *clients[API_MAX_CLIENTS];
	struct api_client *closed;
	bool stopping; /* the loop no longer runs bottom halves */
	struct log_ratelimit accept_log, refused_log, evicted_log;
};

/* ---- connections ---- */

static void client_drop_fds(struct api_client *c)
{
	for (int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
}

/* recv() that also takes the descriptors passed with the bytes: they add up until the next
 * request line is handled; more than API_MAX_FDS poison it (nfds -1). */
static ssize_t client_recv(struct api_client *c, void *buf, size_t len)
{
	int got[API_MAX_FDS], n_got;
	ssize_t n = recv_with_fds(c->fd, buf, len, 0, got, API_MAX_FDS, &n_got);
	if (n_got < 0 || (n_got > 0 && (c->nfds < 0 || c->nfds + n_got > API_MAX_FDS))) {
		for (int i = 0; i < n_got; i++)
			close(got[i]);
		client_drop_fds(c);
		c->nfds = -1;
	} else {
		for (int i = 0; i < n_got; i++)
			c->fds[c->nfds++] = got[i];
	}
	return n;
}

static void client_close(struct api_client *c)
{
	struct api_server *s = c->server;
	client_drop_fds(c);
	for (int i = 0; i < API_MAX_CLIENTS; i++)
		if (s->clients[i] == c)
			s->clients[i] = NULL;
	event_loop_del_fd(&s->vm->loop, &c->src);
	close(c->fd);
	c->fd = -1;
	free(c->out);
	c->out = NULL;
	c->next_closed = s->closed;
	s->closed = c;
	if (!s->stopping)
		bottom_half_schedule(&s->vm->loop, &s->reap_bh);
}

static void reap_closed(void *opaque)
{
	struct api_server *s = opaque;
	while (s->closed) {
		struct api_client *c = s->closed;
		s->closed = c->next_closed;
		free(c);
	}
}

/* Write what is queued; returns -1 if the connection is gone. */
static int client_flush(struct api_client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return -1;
		c->out_off += (size_t)n;
		c->last_active_ns = clock_monotonic_ns();
	}
	if (c->out_off == c->out_len) {
		free(c->out);
		c->out = NULL;
		c->out_len = c->out_off = 0;
	}
	/* No EPOLLRDHUP: a half-close shows as EOF once requests are read again, and watching
	 * it while replies wait for a client that does not read would wake the loop forever. */
	uint32_t ev = c->out ? EPOLLOUT : (c->closing ? 0 : EPOLLIN);
	event_loop_mod_fd(&c->server->vm->loop, &c->src, ev);
	return 0;
}

/* Queue one response line (response is consumed; NULL means out of memory). */
static void client_reply(struct api_client *c, char *response)
{
	static const char oom[] = "{\"ok\":false,\"error\":\"out of memory\"}";
	const char *r = response ? response : oom;
	size_t n = strlen(r);
	char *b = c->out_len + n < API_MAX_PENDING ? realloc(c->out, c->out_len + n + 1) : NULL;
	if (!b) {
		c->closing = true;
	} else {
		memcpy(b + c->out_len, r, n);
		b[c->out_len + n] = '\n';
		c->out = b;
		c->out_len += n + 1;
	}
	free(response);
}

static void client_lines(struct api_client *c)
{
	size_t start = 0;
	for (size_t i = 0; i < c->in_len && !c->closing; i++) {
		if (c->in[i] != '\n')
			continue;
		size_t len = i - start;
		if (len && c->in[start + len - 1] == '\r')
			len--; /* tolerate CRLF clients */
		client_reply(
		    c, api_handle_request(c->server->vm, c->in + start, len, c->fds, c->nfds));
		client_drop_fds(c);
		c->last_active_ns = clock_monotonic_ns();
		start = i + 1;
	}
	memmove(c->in, c->in + start, c->in_len - start);
	c->in_len -= start;
	if (c->in_len >= API_MAX_LINE && !c->closing) {
		char msg[64];
		snprintf(msg, sizeof(msg), "request line longer than %d bytes", API_MAX_LINE);
		client_reply(c, api_error_response(msg));
		c->closing = true;
	}
}

static void client_event(void *opaque, uint32_t events)
{
	struct api_client *c = opaque;
	if (c->fd < 0)
		return; /* closed earlier in this batch (evicted or timed out) */
	if (events & EPOLLIN) {
		for (;;) {
			ssize_t n = client_recv(c, c->in + c->in_len, API_MAX_LINE - c->in_len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n <= 0) {
				/* EOF (maybe only a half-close: answers already queued still go
				 * out) or error. A half-sent request is dropped with the client. */
				c->closing = true;
				break;
			}
			c->in_len += (size_t)n;
			client_lines(c);
			if (c->closing || c->out)
				break; /* no more requests until the client takes its replies */
		}
	} else if (events & (EPOLLERR | EPOLLHUP)) {
		c->closing = true;
	}
	if (client_flush(c) < 0 || (c->closing && !c->out))
		client_close(c);
}

/* Arm the timer for the next idle deadline or the end of an accept pause; now_ns is now. */
static void server_timer_rearm(struct api_server *s, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;
	for (int i = 0; i < API_MAX_CLIENTS; i++)
		if (s->clients[i] && s->clients[i]->last_active_ns + API_IDLE_TIMEOUT_NS < next)
			next = s->clients[i]->last_active_ns + API_IDLE_TIMEOUT_NS;
	if (s->accept_paused && s->accept_resume_ns < next)
		next = s->accept_resume_ns;
	if (next == UINT64_MAX)
		event_timer_cancel(&s->timer);
	else
		event_timer_arm(&s->timer, next > now_ns ? next - now_ns : 1);
}

static void server_timer_fired(void *opaque)
{
	struct api_server *s = opaque;
	uint64_t now = clock_monotonic_ns();
	for (int i = 0; i < API_MAX_CLIENTS; i++) {
		struct api_client *c = s->clients[i];
		if (c && now - c->last_active_ns >= API_IDLE_TIMEOUT_NS)
			client_close(c);
	}
	if (s->accept_paused && now >= s->accept_resume_ns) {
		s->accept_paused = false;
		event_loop_mod_fd(&s->vm->loop, &s->src, EPOLLIN);
	}
	server_timer_rearm(s, now);
}

/* Best effort: tell a refused client why before closing it. */
static void refuse(int fd, const char *why)
{
	char msg[96];
	int n = snprintf(msg, sizeof(msg), "{\"ok\":false,\"error\":\"%s\"}\n", why);
	if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* The client goes away without the message. */
	}
	close(fd);
}

/* accept() found no descriptor left. Give up the spare one to take the connection off the
 * queue and refuse it (else the listening socket stays readable and the loop spins); with no
 * spare, stop accepting for a while. */
static void accept_out_of_fds(struct api_server *s, int err)
{
	log_warn_ratelimited(&s->accept_log, "control socket: accept: %s; refusing clients",
			     strerror(err));
	if (s->spare_fd >= 0) {
		close(s->spare_fd);
		s->spare_fd = -1;
		int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			refuse(fd, "minivmm is out of file descriptors");
		s->spare_fd = eventfd(0, EFD_CLOEXEC);
		if (fd >= 0 && s->spare_fd >= 0)
			return;
	}
	s->accept_paused = true;
	s->accept_resume_ns = clock_monotonic_ns() + API_ACCEPT_PAUSE_NS;
	event_loop_mod_fd(&s->vm->loop, &s->src, 0);
	server_timer_rearm(s, clock_monotonic_ns());
}

/* Only minivmm's own user (and root) may drive it, whatever the socket file's mode. */
static bool peer_allowed(struct api_server *s, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warn_ratelimited(&s->refused_log, "control socket: SO_PEERCRED: %s",
				     strerror(errno));
		return false;
	}
	if (cred.uid == s->euid || cred.uid == 0)
		return true;
	log_warn_ratelimited(&s->refused_log,
			     "control socket: refused a client running as uid %u (pid %d); "
			     "minivmm runs as uid %u",
			     (unsigned)cred.uid, (int)cred.pid, (unsigned)s->euid);
	return false;
}

/* A free slot, or the one of the longest-idle client, which is dropped for the newcomer. */
static struct api_client **free_slot(struct api_server *s)
{
	struct api_client **idlest = NULL;
	for (int i = 0; i < API_MAX_CLIENTS; i++) {
		if (!s->clients[i])
			return &s->clients[i];
		if (!idlest || s->clients[i]->last_active_ns < (*idlest)->last_active_ns)
			idlest = &s->clients[i];
	}
	log_warn_ratelimited(&s->evicted_log,
			     "control socket: %d clients connected; dropping the longest idle",
			     API_MAX_CLIENTS);
	client_close(*idlest); /* clears the slot */
	return idlest;
}

static void accept_event(void *opaque, uint32_t events)
{
	(void)events;
	struct api_server *s = opaque;
	for (;;) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				accept_out_of_fds(s, errno);
			else if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn_ratelimited(&s->accept_log, "control socket: accept: %s",
						     strerror(errno));
			return;
		}
		if (!peer_allowed(s, fd)) {
			close(fd);
			continue;
		}
		struct api_client *c = calloc(1, sizeof(*c));
		if (!c) {
			refuse(fd, "out of memory");
			continue;
		}
		c->server = s;
		c->fd = fd;
		c->last_active_ns = clock_monotonic_ns();
		if (event_loop_add_fd(&s->vm->loop, &c->src, fd, EPOLLIN, client_event, c)) {
			free(c);
			refuse(fd, "internal error");
			continue;
		}
		*free_slot(s) = c;
		if (!s->timer.armed)
			server_timer_rearm(s, c->last_active_ns);
	}
}

/* Open path's directory (O_PATH: no permission on it needed beyond the lookup) and point
 * s->name at path's last component; -1 (logged) if path names no file ("dir/", "..").
 * (s->path is a copy of path.) */
static int pin_dir(struct api_server *s, const char *path)
{
	const char *slash = strrchr(s->path, '/');
	s->name = slash ? slash + 1 : s->path;
	if (!*s->name || !strcmp(s->name, ".") || !strcmp(s->name, "..")) {
		log_error("--api-sock %s: expected a file name after the last '/'", path);
		return -1;
	}
	char dir[sizeof(s->path)] = ".";
	if (slash) {
		size_t len = slash == s->path ? 1 : (size_t)(slash - s->path);
		memcpy(dir, s->path, len);
		dir[len] = '\0';
	}
	s->dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->dir_fd < 0) {
		log_error("--api-sock %s: %s: %s", path, dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* A socket file of that name in s's directory (the working directory for now): replace it if
 * nobody listens, refuse otherwise. */
static int claim_name(const struct api_server *s, const struct sockaddr_un *addr)
{
	const char *path = s->path;
	struct stat st;
	if (fstatat(s->dir_fd, s->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT
			   ? 0
			   : (log_error("--api-sock %s: %s", path, strerror(errno)), -1);
	if (!S_ISSOCK(st.st_mode)) {
		log_error("--api-sock %s: exists and is not a socket", path);
		return -1;
	}
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0) {
		log_error("socket: %s", strerror(errno));
		return -1;
	}
	int rc = connect(probe, (const struct sockaddr *)addr, sizeof(*addr));
	int e = errno;
	close(probe);
	if (rc == 0) {
		log_error("--api-sock %s: another process (minivmm?) is listening on it", path);
		return -1;
	}
	if (e != ECONNREFUSED) {
		log_error("--api-sock %s: %s", path, strerror(e));
		return -1;
	}
	log_info("control socket: replacing stale %s", path);
	if (unlinkat(s->dir_fd, s->name, 0) < 0 && errno != ENOENT) {
		log_error("--api-sock %s: cannot remove the stale socket: %s", path,
			  strerror(errno));
		return -1;
	}
	return 0;
}

/* Claim s->name in s's directory and bind s->fd to it. connect and bind take a path, not a
 * directory descriptor: they are given the bare name with the working directory moved to the
 * pinned one for the moment (no other thread resolves a relative path at set-up). */
static int bind_in_dir(struct api_server *s)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	memcpy(addr.sun_path, s->name, strlen(s->name) + 1);
	int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || fchdir(s->dir_fd) < 0) {
		log_error("--api-sock %s: cannot enter its directory: %s", s->path,
			  strerror(errno));
		if (cwd >= 0)
			close(cwd);
		return -1;
	}
	int rc = claim_name(s, &addr);
	if (rc == 0) {
		/* bind() creates the file with the umask applied: owner-only from its first
		 * moment. (No other thread runs yet, so the process-wide umask change affects
		 * nothing else.) */
		mode_t old_umask = umask(0177);
		rc = bind(s->fd, (struct sockaddr *)&addr, sizeof(addr));
		int bind_errno = errno;
		umask(old_umask);
		if (rc < 0)
			log_error("--api-sock %s: %s", s->path, strerror(bind_errno));
	}
	if (fchdir(cwd) < 0) {
		log_error("--api-sock %s: cannot return to the working directory: %s", s->path,
			  strerror(errno));
		if (rc == 0)
			unlinkat(s->dir_fd, s->name, 0);
		rc = -1;
	}
	close(cwd);
	return rc;
}

struct api_server *api_server_start(struct vm *vm, const char *path)
{
	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		log_error("--api-sock %s: path too long (at most %zu bytes)", path,
			  sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return NULL;
	}
	struct api_server *s = calloc(1, sizeof(*s));
	if (!s) {
		log_error("out of memory");
		return NULL;
	}
	s->vm = vm;
	memcpy(s->path, path, strlen(path) + 1);
	s->euid = geteuid();
	bottom_half_init(&s->reap_bh, reap_closed, s);
	s->fd = s->spare_fd = s->dir_fd = -1;
	if (pin_dir(s, path))
		goto fail;
	s->spare_fd = eventfd(0, EFD_CLOEXEC);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->spare_fd < 0 || s->fd < 0) {
		log_error("--api-sock %s: %s", path, strerror(errno));
		goto fail;
	}
	if (bind_in_dir(s))
		goto fail;
	if (listen(s->fd, 8) < 0) {
		log_error("--api-sock %s: %s", path, strerror(errno));
		unlinkat(s->dir_fd, s->name, 0);
		goto fail;
	}
	if (event_timer_init(&vm->loop, &s->timer, server_timer_fired, s) ||
	    event_loop_add_fd(&vm->loop, &s->src, s->fd, EPOLLIN, accept_event, s)) {
		event_timer_destroy(&vm->loop, &s->timer);
		unlinkat(s->dir_fd, s->name, 0);
		goto fail;
	}
	s->reaped = vm->cfg->seccomp || vm->cfg->jail.enabled;
	if (s->reaped) {
		sock_reaper_start(&s->reaper, s->path, s->dir_fd, s->name);
		close(s->dir_fd); /* the helper has its own */
		s->dir_fd = -1;
	}
	log_info("control socket: %s", path);
	return s;
fail:
	if (s->fd >= 0)
		close(s->fd);
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	free(s);
	return NULL;
}

void api_server_stop(struct api_server *s)
{
	if (!s)
		return;
	s->stopping = true;
	for (int i = 0; i < API_MAX_CLIENTS; i++)
		if (s->clients[i]) {
			client_flush(s->clients[i]); /* e.g. the answer to "shutdown" */
			client_close(s->clients[i]);
		}
	reap_closed(s); /* the loop has stopped: its bottom halves no longer run */
	event_timer_destroy(&s->vm->loop, &s->timer);
	event_loop_del_fd(&s->vm->loop, &s->src);
	close(s->fd);
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	if (s->reaped)
		sock_reaper_stop(&s->reaper);
	else {
		if (unlinkat(s->dir_fd, s->name, 0) < 0)
			log_warn("control socket %s left behind: %s", s->path, strerror(errno));
		close(s->dir_fd);
	}
	free(s);
}
