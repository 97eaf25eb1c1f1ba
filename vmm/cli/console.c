#include "console.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "base/log.h"
#include "base/user_file.h"
#include "console_input.h"

#define CTRL_A 0x01

/* The terminal state to restore. Process-wide because a fatal signal handler needs it. */
static struct termios saved_termios;
static volatile sig_atomic_t termios_saved;

static void restore_terminal(void)
{
	if (termios_saved) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_termios);
		termios_saved = 0;
	}
}

void console_restore_terminal(void)
{
	restore_terminal();
}

static void fatal_signal(int sig)
{
	restore_terminal();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int enter_raw_mode(void)
{
	if (tcgetattr(STDIN_FILENO, &saved_termios) < 0)
		return -1;
	termios_saved = 1;
	atexit(restore_terminal);
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], fatal_signal);
	struct termios raw = saved_termios;
	/* Every key goes to the guest (Ctrl-C too); output post-processing stays on. */
	raw.c_iflag &=
	    ~(unsigned)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
	raw.c_lflag &= ~(unsigned)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	return tcsetattr(STDIN_FILENO, TCSANOW, &raw);
}

int console_open(struct console *c, const struct vm_config *cfg)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->out_lock, NULL);
	c->out_fd = -1;
	c->in_fd = -1;
	c->wake_fd = -1;
	switch (cfg->console) {
	case CONSOLE_NONE:
		return 0;
	case CONSOLE_FILE: {
		char path[PATH_MAX];
		if (cfg->console_path_len >= sizeof(path)) {
			log_error("console file path too long");
			return -1;
		}
		memcpy(path, cfg->console_path, cfg->console_path_len);
		path[cfg->console_path_len] = '\0';
		/* A terminal or /dev/null is fine; a FIFO could stall the guest's output. */
		struct stat st;
		c->out_fd = open_user_file(path, O_WRONLY | O_CREAT | O_TRUNC, 0644,
					   USER_FILE_REG | USER_FILE_CHR, &st);
		if (c->out_fd == USER_FILE_WRONG_KIND) {
			c->out_fd = -1;
			log_error("console file '%s' is %s, not a regular file or a character "
				  "device",
				  path, user_file_kind(st.st_mode));
			return -1;
		}
		if (c->out_fd < 0) {
			log_error("cannot open console file %s: %s", path, strerror(errno));
			return -1;
		}
		c->owns_out = true;
		c->out_max = cfg->console_max_bytes;
		c->filter = isatty(c->out_fd); /* a file that is a terminal is one too */
		return 0;
	}
	case CONSOLE_STDIO:
		c->out_fd = STDOUT_FILENO;
		c->in_fd = STDIN_FILENO;
		c->filter = cfg->console_filter == CONSOLE_FILTER_ON ||
			    (cfg->console_filter == CONSOLE_FILTER_AUTO && isatty(STDOUT_FILENO));
		if (isatty(STDIN_FILENO)) {
			if (enter_raw_mode() < 0)
				log_warn("cannot put the terminal in raw mode: %s",
					 strerror(errno));
			else
				c->raw_tty = true;
		}
		return 0;
	}
	return 0;
}

/* Write len bytes as they are, up to the file's cap. out_lock held. */
static void write_capped(struct console *c, const uint8_t *buf, size_t len)
{
	if (c->out_max && c->out_bytes + len > c->out_max) {
		/* The guest decides how much it prints; the host's disk is not its to fill. */
		if (!c->out_capped)
			log_warn("console file reached its max-size (%llu bytes): further guest "
				 "output is dropped",
				 (unsigned long long)c->out_max);
		c->out_capped = true;
		len = (size_t)(c->out_max - c->out_bytes);
	}
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(c->out_fd, buf + done, len - done);
		if (n > 0) {
			done += (size_t)n;
			c->out_bytes += (uint64_t)n;
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			return; /* a closed or failing console must not stop the guest */
		}
	}
}

void console_write_buf(struct console *c, const uint8_t *buf, size_t len)
{
	if (c->out_fd < 0)
		return;
	pthread_mutex_lock(&c->out_lock);
	if (!c->filter) {
		write_capped(c, buf, len);
	} else {
		uint8_t out[1024];
		size_t used = 0;
		for (size_t i = 0; i < len; i++) {
			if (used + CONSOLE_FILTER_MAX_OUT > sizeof(out)) {
				write_capped(c, out, used);
				used = 0;
			}
			used += console_filter_byte(&c->filt, buf[i], out + used);
		}
		write_capped(c, out, used);
	}
	pthread_mutex_unlock(&c->out_lock);
}

void console_write(struct console *c, uint8_t byte)
{
	console_write_buf(c, &byte, 1);
}

bool console_take_input(struct console *c, unsigned (*deliver)(void *, const uint8_t *, unsigned),
			void *opaque)
{
	if (c->deliver)
		return false;
	c->deliver = deliver;
	c->deliver_opaque = opaque;
	return true;
}

/* Returns false when the user asked to quit. */
static bool handle_input(struct console *c, const uint8_t *buf, ssize_t n)
{
	uint8_t out[256];
	unsigned used = 0;
	for (ssize_t i = 0; i < n; i++) {
		uint8_t b = buf[i];
		if (c->raw_tty && c->escape) {
			c->escape = false;
			if (b == 'x' || b == 'X')
				return false;
			if (b != CTRL_A)
				continue; /* unknown escape: swallow it, as QEMU does */
		} else if (c->raw_tty && b == CTRL_A) {
			c->escape = true;
			continue;
		}
		out[used++] = b;
	}
	/* The UART FIFO is small (and hvc0's holding buffer bounded): retry until the guest
	 * drained it or we are stopped. */
	unsigned done = 0;
	while (done < used) {
		done += c->deliver(c->deliver_opaque, out + done, used - done);
		if (done < used) {
			struct pollfd p = {.fd = c->wake_fd, .events = POLLIN};
			if (poll(&p, 1, 10) > 0)
				return true;
		}
	}
	return true;
}

static void *input_thread(void *arg)
{
	struct console *c = arg;
	pthread_setname_np(pthread_self(), "console-in");
	for (;;) {
		uint8_t buf[256];
		ssize_t n = console_input_read(c->in_fd, c->wake_fd, buf, sizeof(buf));
		if (n <= 0)
			break; /* end of input (or stopped): the guest keeps running */
		if (!handle_input(c, buf, n)) {
			c->quit(c->opaque);
			break;
		}
	}
	return NULL;
}

int console_start_input(struct console *c)
{
	if (c->in_fd < 0)
		return 0;
	c->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (c->wake_fd < 0) {
		log_error("eventfd: %s", strerror(errno));
		return -1;
	}
	int rc = pthread_create(&c->input_thread, NULL, input_thread, c);
	if (rc) {
		log_error("cannot start console thread: %s", strerror(rc));
		return -1;
	}
	c->input_running = true;
	return 0;
}

void console_stop_input(struct console *c)
{
	if (c->input_running) {
		uint64_t one = 1;
		if (write(c->wake_fd, &one, sizeof(one)) < 0)
			log_warn("cannot wake the console thread");
		pthread_join(c->input_thread, NULL);
		c->input_running = false;
	}
}

void console_close(struct console *c)
{
	console_stop_input(c);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	c->wake_fd = -1;
	if (c->owns_out && c->out_fd >= 0)
		close(c->out_fd);
	c->out_fd = -1;
	if (c->raw_tty)
		restore_terminal();
	c->raw_tty = false;
}
