/*
 * first-byte: start a VMM, report how long until the first byte of its console output, and
 * what its memory looked like at that moment. A benchmark helper for examples/bench-boot.sh.
 *
 *   first-byte [--timeout SEC] [--first-timeout SEC] [--ram BYTES] [--out FILE] [--err FILE]
 *              [--until TEXT] -- COMMAND [ARG...]
 *
 * It takes a CLOCK_MONOTONIC timestamp, fork/execs COMMAND with stdout on a pipe (stdin from
 * /dev/null, stderr to --err FILE or inherited), and blocks until the first byte arrives on the
 * pipe. At that moment it reads /proc/PID/smaps of the child: total Rss, and the Rss of the
 * guest-RAM mapping (the anonymous mapping whose size equals --ram BYTES; the largest one if
 * several match). If the child is already exiting by then (a loaded machine can wake this
 * helper late), the memory figures are -1: no valid sample. Then it keeps draining the pipe (into
 * --out FILE if given) until EOF and reaps the child, killing it after --timeout seconds (default
 * 30), or already after --first-timeout seconds when no byte has come by then (a silent guest:
 * first_byte_us=-1 timed_out=1). The child gets that timestamp (nanoseconds) in MINIVMM_T0_NS,
 * so minivmm --timing and examples/startup-floor count their start-up steps from the same
 * instant. One line on stdout:
 *
 *   first_byte_us=N exit=S rss_kb=N ram_rss_kb=N ram_map_kb=N maxrss_kb=N bytes=N timed_out=0|1
 *   [until_us=N]
 *
 * With --until TEXT, until_us is the time from the same start to the first appearance of TEXT
 * in the output (-1 if it never came): how long until the guest got somewhere (bench-snapshot.sh:
 * its first counter line, for a cold boot and for a restore alike).
 *
 * With --udp HOST:PORT it also sends a small datagram to HOST:PORT every --udp-every-us
 * microseconds (default 500) from the start, and answer_us is the time to the first datagram
 * that comes back holding the same bytes (-1 if none did): how long until the guest answered
 * on the network (bench-snapshot.sh --net: a UDP echo service behind a hostfwd rule). With
 * --stop, the child is killed once everything asked for (TEXT, the answer; the first byte when
 * neither is) has been seen: for a guest that would run on.
 * exit is the child's exit status, or 128+signal. ram_rss_kb and ram_map_kb are -1 when no
 * mapping of that size was found (or --ram was not given); rss_kb is -1 when the child was
 * already exiting. maxrss_kb is the child's peak RSS (wait4 rusage). Exit status: 0 if a
 * measurement was made (whatever the child's status), 1 on timeout or no output (with --udp:
 * no answer), 2 on usage or
 * set-up errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;

static void on_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: first-byte [--timeout SEC] [--first-timeout SEC] [--ram BYTES] "
		"[--out FILE] [--err FILE] [--until TEXT] [--udp HOST:PORT [--udp-every-us N]] "
		"[--stop] -- COMMAND [ARG...]\n");
	exit(2);
}

/* Is this smaps header line's mapping anonymous (no path, or a "[anon:...]"-style name)? */
static int is_anon(const char *line)
{
	/* "start-end perms offset dev inode   [path]": path is the 6th field */
	const char *p = line;
	for (int field = 0; field < 5; field++) {
		while (*p && *p != ' ')
			p++;
		while (*p == ' ')
			p++;
	}
	return *p == '\0' || *p == '\n' || !strncmp(p, "[anon", 5);
}

/* Is the process gone or on its way out (zombie, or PF_EXITING in its flags)? */
static int exiting(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char state;
	unsigned long flags;
	const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return 1;
	return state == 'Z' || state == 'X' || (flags & 0x4 /* PF_EXITING */);
}

/* Read /proc/PID/smaps: total Rss, and Rss of the anonymous mapping of exactly ram bytes. */
static void read_smaps(pid_t pid, uint64_t ram, long *rss_kb, long *ram_rss_kb, long *ram_map_kb)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	*rss_kb = *ram_rss_kb = *ram_map_kb = -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	long total = 0, cur_size = -1;
	int cur_match = 0, seen = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		long kb;
		/* header lines start with a lower-case hex address, field lines with a name */
		if (strchr("0123456789abcdef", line[0]) &&
		    sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			cur_size = (long)((end - start) / 1024);
			cur_match = ram && end - start == ram && is_anon(line);
			continue;
		}
		if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
			seen = 1;
			total += kb;
			if (cur_match && kb > *ram_rss_kb) {
				*ram_rss_kb = kb;
				*ram_map_kb = cur_size;
			}
		}
	}
	fclose(f);
	if (seen)
		*rss_kb = total;
}

/* A UDP socket connected to HOST:PORT (IPv4), or -1. */
static int udp_connect(const char *spec)
{
	char host[64];
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host))
		return -1;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	char *end;
	long port = strtol(colon + 1, &end, 10);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (*end || port <= 0 || port > 65535 || inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	double timeout = 30, first_timeout = 0;
	uint64_t ram = 0;
	const char *out_path = NULL, *err_path = NULL, *until = NULL, *udp = NULL;
	long udp_every_us = 500;
	int stop = 0;
	int i;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "--stop")) {
			stop = 1;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--timeout"))
			timeout = atof(argv[++i]);
		else if (!strcmp(argv[i], "--first-timeout"))
			first_timeout = atof(argv[++i]);
		else if (!strcmp(argv[i], "--ram"))
			ram = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--out"))
			out_path = argv[++i];
		else if (!strcmp(argv[i], "--err"))
			err_path = argv[++i];
		else if (!strcmp(argv[i], "--until"))
			until = argv[++i];
		else if (!strcmp(argv[i], "--udp"))
			udp = argv[++i];
		else if (!strcmp(argv[i], "--udp-every-us"))
			udp_every_us = atol(argv[++i]);
		else
			usage();
	}
	if (i >= argc || timeout <= 0 || first_timeout < 0 ||
	    (until && (!*until || strlen(until) > 255)) || udp_every_us <= 0)
		usage();
	int udpfd = -1;
	if (udp && (udpfd = udp_connect(udp)) < 0) {
		fprintf(stderr, "first-byte: --udp %s: not an IPv4 HOST:PORT, or no socket\n", udp);
		return 2;
	}

	FILE *out = NULL;
	if (out_path && !(out = fopen(out_path, "w"))) {
		perror(out_path);
		return 2;
	}
	int errfd = -1;
	if (err_path &&
	    (errfd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		perror(err_path);
		return 2;
	}
	int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int pfd[2];
	if (nullfd < 0 || pipe2(pfd, O_CLOEXEC) < 0) {
		perror("first-byte: set-up");
		return 2;
	}

	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	pid_t parent = getpid();
	int64_t t0 = now_ns();
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		dup2(nullfd, 0);
		dup2(pfd[1], 1);
		if (errfd >= 0)
			dup2(errfd, 2);
		/* The start the child's own start-up timing counts from (minivmm --timing,
		 * startup-floor): the same t0 as first_byte_us. */
		char t0_text[24];
		snprintf(t0_text, sizeof(t0_text), "%lld", (long long)t0);
		setenv("MINIVMM_T0_NS", t0_text, 1);
		execvp(argv[i], argv + i);
		fprintf(stderr, "first-byte: %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	close(pfd[1]);

	int64_t deadline = t0 + (int64_t)(timeout * 1e9), first = -1, until_at = -1;
	/* Until the first byte: the earlier of the two limits. */
	int64_t first_deadline = first_timeout > 0 ? t0 + (int64_t)(first_timeout * 1e9) : deadline;
	int64_t answer_at = -1, next_send = t0;
	/* What the datagrams carry: this run's start, so a late echo of another run's is no
	 * answer. */
	char token[32];
	int token_len = snprintf(token, sizeof(token), "first-byte %lld", (long long)t0);
	/* The output's last bytes, so that TEXT is found across reads too. */
	char seen[4096 + 256];
	size_t kept = 0, until_len = until ? strlen(until) : 0;
	long rss_kb = -1, ram_rss_kb = -1, ram_map_kb = -1, bytes = 0;
	int timed_out = 0;
	char buf[4096];
	int out_open = 1;
	for (;;) {
		int64_t now = now_ns();
		int64_t left =
		    (first < 0 && first_deadline < deadline ? first_deadline : deadline) - now;
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		/* A restored guest may print nothing: with --udp the answer is what counts. */
		if (stop && (first >= 0 || until || udpfd >= 0) && (!until || until_at >= 0) &&
		    (udpfd < 0 || answer_at >= 0)) {
			kill(pid, SIGKILL);
			break;
		}
		int waiting_answer = udpfd >= 0 && answer_at < 0;
		if (waiting_answer && now >= next_send) {
			/* A full socket buffer or an ICMP error from a port not yet forwarded: just
			 * try again next time. */
			if (send(udpfd, token, (size_t)token_len, 0) < 0 && errno != EAGAIN &&
			    errno != ECONNREFUSED && errno != EINTR) {
				perror("first-byte: send");
				break;
			}
			next_send = now + udp_every_us * 1000;
		}
		if (!out_open && (!waiting_answer || exiting(pid)))
			break; /* nothing more can come */
		int64_t wait_ns = waiting_answer && next_send - now < left ? next_send - now : left;
		struct pollfd p[2] = {{.fd = out_open ? pfd[0] : -1, .events = POLLIN},
				      {.fd = waiting_answer ? udpfd : -1, .events = POLLIN}};
		struct timespec ts = {.tv_sec = wait_ns / 1000000000,
				      .tv_nsec = wait_ns % 1000000000};
		int r = ppoll(p, 2, &ts, NULL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			perror("poll");
			break;
		}
		if (r == 0)
			continue;
		if (p[1].revents) {
			char reply[64];
			ssize_t got = recv(udpfd, reply, sizeof(reply), 0);
			if (got == token_len && !memcmp(reply, token, (size_t)token_len))
				answer_at = now_ns() - t0;
		}
		if (!p[0].revents)
			continue;
		ssize_t n = read(pfd[0], buf, first < 0 ? 1 : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			out_open = 0; /* the child is done with its output; an answer may be due */
			continue;
		}
		if (first < 0) {
			first = now_ns() - t0;
			read_smaps(pid, ram, &rss_kb, &ram_rss_kb, &ram_map_kb);
			/* Too late (a loaded machine can wake us after the VMM is done): no sample.
			 */
			if (exiting(pid))
				rss_kb = ram_rss_kb = ram_map_kb = -1;
		}
		if (until && until_at < 0) {
			memcpy(seen + kept, buf, (size_t)n);
			size_t have = kept + (size_t)n;
			if (memmem(seen, have, until, until_len))
				until_at = now_ns() - t0;
			kept = have < until_len - 1 ? have : until_len - 1;
			memmove(seen, seen + have - kept, kept);
		}
		bytes += n;
		if (out)
			fwrite(buf, 1, (size_t)n, out);
	}
	if (timed_out)
		kill(pid, SIGKILL);

	int status = 0;
	struct rusage ru = {0};
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	child_pid = 0;
	if (out)
		fclose(out);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("first_byte_us=%" PRId64 " exit=%d rss_kb=%ld ram_rss_kb=%ld ram_map_kb=%ld "
	       "maxrss_kb=%ld bytes=%ld timed_out=%d\n",
	       first < 0 ? (int64_t)-1 : first / 1000, code, rss_kb, ram_rss_kb, ram_map_kb,
	       ru.ru_maxrss, bytes, timed_out);
	if (until)
		printf("until_us=%" PRId64 "\n", until_at < 0 ? (int64_t)-1 : until_at / 1000);
	if (udpfd >= 0)
		printf("answer_us=%" PRId64 "\n", answer_at < 0 ? (int64_t)-1 : answer_at / 1000);
	return (udpfd >= 0 ? answer_at < 0 : first < 0) || timed_out ? 1 : 0;
}
