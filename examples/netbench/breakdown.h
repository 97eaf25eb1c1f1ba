// breakdown.h: netbench --breakdown's sampler, included by udpperf.c. At the first datagram
// of the measured interval and then every BD_PERIOD_S while datagrams move, it reads every
// thread of the VMM (or stand-in: --cpu-pid-file) and of this tool from /proc (comm, stat's
// utime and stime, schedstat's run time, status's context switches), with the count of
// datagrams (or transactions) moved so far, and, with a control socket, minivmm's status
// line. The first and the latest samples (the latest while the VMM still runs) go to the
// --breakdown-file at the end:
//   window SECS COUNT                       (between the two samples)
//   B|E vmm|host TID RUN_NS UTIME STIME VOL INVOL COMM    (RUN_NS -1: no schedstat)
//   SB|SE JSON                              (status before and after; absent if unread)
// netbench.sh turns it into busy %, CPU and switches per packet (breakdown_format).
#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>

#define BD_PERIOD_S   0.05 // the window ends at most this long before the last datagram
#define BD_MAX_THREAD 256
#define BD_STATUS_MAX 16384

struct bd_thread {
	long tid;
	long long run_ns;
	unsigned long long ut, st, vol, invol;
	char comm[32];
};

struct bd_proc {
	int n;
	struct bd_thread th[BD_MAX_THREAD];
};

struct bd_sample {
	bool taken;
	double t;
	unsigned long long count;
	struct bd_proc proc[2]; // 0: the VMM, 1: this tool
	char status[BD_STATUS_MAX];
};

struct breakdown {
	const char *file, *sock_path;
	int sock_fd;
	double next_t;
	struct bd_sample begin, end;
};

// Where the threads are read from (a test points it at a made-up tree).
static const char *bd_proc_root = "/proc";

// read_small PATH BUF LEN: the file's start as a string; false if it cannot be read
static bool read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return true;
}

static unsigned long long status_field(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

// One thread's counters; false if any of its files cannot be read (the thread or its process
// exited between two reads: counts read as 0 then would make its switches go backwards).
static bool bd_read_thread(long pid, long tid, struct bd_thread *t)
{
	char path[256], buf[4096];
	*t = (struct bd_thread){.tid = tid, .run_ns = -1};
	snprintf(path, sizeof(path), "%s/%ld/task/%ld/stat", bd_proc_root, pid, tid);
	if (!read_small(path, buf, sizeof(buf)))
		return false;
	char *p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &t->ut,
			 &t->st) != 2)
		return false;
	snprintf(path, sizeof(path), "%s/%ld/task/%ld/comm", bd_proc_root, pid, tid);
	if (!read_small(path, t->comm, sizeof(t->comm)))
		return false;
	t->comm[strcspn(t->comm, "\n")] = 0;
	snprintf(path, sizeof(path), "%s/%ld/task/%ld/schedstat", bd_proc_root, pid, tid);
	if (read_small(path, buf, sizeof(buf))) // absent without CONFIG_SCHEDSTATS: ticks then
		t->run_ns = strtoll(buf, NULL, 10);
	snprintf(path, sizeof(path), "%s/%ld/task/%ld/status", bd_proc_root, pid, tid);
	if (!read_small(path, buf, sizeof(buf)) || !strstr(buf, "\nvoluntary_ctxt_switches:"))
		return false;
	t->vol = status_field(buf, "\nvoluntary_ctxt_switches:");
	t->invol = status_field(buf, "\nnonvoluntary_ctxt_switches:");
	return true;
}

static void bd_read_proc(long pid, struct bd_proc *p)
{
	char path[256];
	p->n = 0;
	snprintf(path, sizeof(path), "%s/%ld/task", bd_proc_root, pid);
	DIR *d = pid > 0 ? opendir(path) : NULL;
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && p->n < BD_MAX_THREAD) {
		long tid = strtol(e->d_name, NULL, 10);
		if (tid > 0 && bd_read_thread(pid, tid, &p->th[p->n]))
			p->n++;
	}
	closedir(d);
}

// One status request on the control socket (connected once, kept); "" if it fails.
static void bd_status(struct breakdown *b, char *out)
{
	out[0] = 0;
	if (!b->sock_path)
		return;
	if (b->sock_fd < 0) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		if (strlen(b->sock_path) >= sizeof(a.sun_path))
			return;
		strcpy(a.sun_path, b->sock_path);
		b->sock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (b->sock_fd < 0)
			return;
		if (connect(b->sock_fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(b->sock_fd);
			b->sock_fd = -1;
			return;
		}
	}
	static const char req[] = "{\"cmd\":\"status\"}\n";
	size_t len = 0;
	/* Not write(): once the VMM has exited (h2g: the guest stops counting before the host
	 * stops sending) the request would raise SIGPIPE and kill the host tool, results unsaid. */
	if (send(b->sock_fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1)
		goto fail;
	while (len < BD_STATUS_MAX - 1) {
		struct pollfd p = {.fd = b->sock_fd, .events = POLLIN};
		if (poll(&p, 1, 200) <= 0)
			goto fail;
		ssize_t n = read(b->sock_fd, out + len, BD_STATUS_MAX - 1 - len);
		if (n <= 0)
			goto fail;
		len += (size_t)n;
		out[len] = 0;
		char *nl = strchr(out, '\n');
		if (nl) {
			*nl = 0;
			return;
		}
	}
fail:
	out[0] = 0;
	close(b->sock_fd);
	b->sock_fd = -1;
}

static void bd_take(struct breakdown *b, struct bd_sample *s, long pid, double t,
		    unsigned long long count)
{
	s->taken = true;
	s->t = t;
	s->count = count;
	bd_read_proc(pid, &s->proc[0]);
	bd_read_proc(getpid(), &s->proc[1]);
	bd_status(b, s->status);
}

// Whether a later sample may end the window: the VMM still whole (exiting, its threads leave
// /proc one by one, and a window ended on what is left of it would drop the busy ones), and its
// status read if the first sample had one.
static bool bd_sample_complete(const struct breakdown *b, const struct bd_sample *s)
{
	return s->proc[0].n > 0 && s->proc[0].n >= b->begin.proc[0].n &&
	       (s->status[0] || !b->begin.status[0]);
}

// Called whenever datagrams moved at time t, count of them so far; pid: the VMM's (0: unknown).
static void bd_tick(struct breakdown *b, long pid, double t, unsigned long long count)
{
	if (!b->file || pid <= 0)
		return;
	static struct bd_sample next;
	if (!b->begin.taken) {
		bd_take(b, &b->begin, pid, t, count);
	} else if (t >= b->next_t) {
		// Once the VMM is gone (h2g: the guest stopped counting and exited) the window
		// ends.
		bd_take(b, &next, pid, t, count);
		if (bd_sample_complete(b, &next))
			b->end = next;
	} else {
		return;
	}
	b->next_t = t + BD_PERIOD_S;
}

static void bd_write_sample(FILE *f, const char *tag, const struct bd_sample *s)
{
	static const char *const who[] = {"vmm", "host"};
	for (int w = 0; w < 2; w++)
		for (int i = 0; i < s->proc[w].n; i++) {
			const struct bd_thread *t = &s->proc[w].th[i];
			fprintf(f, "%s %s %ld %lld %llu %llu %llu %llu %s\n", tag, who[w], t->tid,
				t->run_ns, t->ut, t->st, t->vol, t->invol, t->comm);
		}
	if (s->status[0])
		fprintf(f, "S%s %s\n", tag, s->status);
}

static void bd_finish(struct breakdown *b)
{
	if (b->sock_fd >= 0)
		close(b->sock_fd);
	if (!b->file)
		return;
	FILE *f = fopen(b->file, "w");
	if (!f)
		die("breakdown file");
	if (b->begin.taken && b->end.taken) {
		fprintf(f, "window %.6f %llu\n", b->end.t - b->begin.t,
			b->end.count - b->begin.count);
		bd_write_sample(f, "B", &b->begin);
		bd_write_sample(f, "E", &b->end);
	}
	fclose(f);
}
