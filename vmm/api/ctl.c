#include "ctl.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "json.h"
#include "vmm/snapshot/snapshot_files.h"
#include "fd_passing.h"

#define CTL_TIMEOUT_S 10
/* A snapshot writes all of guest RAM before it answers. */
#define CTL_SNAPSHOT_TIMEOUT_S 3600
#define CTL_MAX_RESPONSE       (1u << 20)

static int usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "minivmm ctl: %s\n", msg);
	fprintf(stderr,
		"usage: minivmm ctl --sock PATH COMMAND [ARGS]\n"
		"commands: status | balloon-set MIB | pause | resume | snapshot DIR | shutdown\n");
	return 2;
}

/* The request line for argv, or NULL (message printed). */
static char *build_request(int argc, char **argv)
{
	const char *cmd = argv[0];
	bool snapshot = !strcmp(cmd, "snapshot");
	int want = !strcmp(cmd, "balloon-set") || snapshot ? 1 : 0;
	if (strcmp(cmd, "status") && strcmp(cmd, "balloon-set") && strcmp(cmd, "pause") &&
	    strcmp(cmd, "resume") && strcmp(cmd, "shutdown") && !snapshot) {
		fprintf(stderr, "minivmm ctl: unknown command '%s'\n", cmd);
		return NULL;
	}
	if (argc - 1 != want) {
		fprintf(stderr, "minivmm ctl: %s takes %s\n", cmd,
			snapshot ? "one argument (a directory to create)"
			: want	 ? "one argument (MiB)"
				 : "no arguments");
		return NULL;
	}
	struct json_writer w;
	json_writer_init(&w);
	json_begin_object(&w);
	json_member_string(&w, "cmd", cmd);
	if (snapshot) {
		/* Only for the VMM's log: the files themselves go with the request. */
		char *abs = argv[1][0] == '/' ? strdup(argv[1]) : NULL;
		if (!abs) {
			char cwd[4096];
			if (getcwd(cwd, sizeof(cwd)) && asprintf(&abs, "%s/%s", cwd, argv[1]) < 0)
				abs = NULL;
		}
		if (abs && strlen(abs) < 256)
			json_member_string(&w, "path", abs);
		free(abs);
	} else if (want) {
		char *end;
		errno = 0;
		long long mib = strtoll(argv[1], &end, 10);
		if (errno || *end || end == argv[1] || mib < 0) {
			fprintf(stderr, "minivmm ctl: invalid size '%s' (MiB)\n", argv[1]);
			json_writer_free(&w);
			return NULL;
		}
		json_member_int(&w, "mib", mib);
	}
	json_end_object(&w);
	return json_writer_finish(&w, NULL);
}

static int connect_to(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "minivmm ctl: socket path too long\n");
		return -1;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, "minivmm ctl: cannot connect to %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct timeval tv = {.tv_sec = CTL_TIMEOUT_S};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Send buf; the nfds descriptors in fds go with its first bytes (SCM_RIGHTS). */
static int send_all(int fd, const char *buf, size_t len, const int *fds, int nfds)
{
	while (len) {
		ssize_t n = send_with_fds(fd, buf, len, fds, nfds);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
		nfds = 0; /* sent with the first bytes */
	}
	return 0;
}

/* Read one line (without its newline) into a malloc'd buffer; NULL on error or EOF first. */
static char *recv_line(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (len + 1 == cap) {
			char *b = cap < CTL_MAX_RESPONSE ? realloc(buf, cap * 2) : NULL;
			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		ssize_t n = recv(fd, buf + len, 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (buf[len] == '\n') {
			buf[len] = '\0';
			return buf;
		}
		len++;
	}
	free(buf);
	return NULL;
}

int ctl_main(int argc, char **argv)
{
	const char *sock = NULL;
	int i = 1;
	while (i < argc && !strncmp(argv[i], "--", 2)) {
		if (!strcmp(argv[i], "--sock") && i + 1 < argc) {
			sock = argv[i + 1];
			i += 2;
		} else if (!strncmp(argv[i], "--sock=", 7)) {
			sock = argv[i] + 7;
			i++;
		} else if (!strcmp(argv[i], "--help")) {
			usage(NULL);
			return 0;
		} else {
			return usage("unknown option or missing value");
		}
	}
	if (!sock || !*sock)
		return usage("--sock PATH is required");
	if (i >= argc)
		return usage("no command");
	char *req = build_request(argc - i, argv + i);
	if (!req)
		return usage(NULL);
	int fd = connect_to(sock);
	if (fd < 0) {
		free(req);
		return 2;
	}
	/* The snapshot's files are made here, by the user, and passed with the request: the
	 * sandboxed VMM creates no file (snapshot_files.h). */
	bool snapshot = !strcmp(argv[i], "snapshot");
	int files[SNAPSHOT_NR_FILES] = {-1, -1, -1};
	char err[512];
	if (snapshot) {
		if (snapshot_create_files(argv[i + 1], files, err, sizeof(err))) {
			fprintf(stderr, "minivmm ctl: %s\n", err);
			free(req);
			close(fd);
			return 2;
		}
		struct timeval tv = {.tv_sec = CTL_SNAPSHOT_TIMEOUT_S};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	size_t len = strlen(req);
	req[len] = '\n'; /* the writer's buffer has room for the NUL it replaces */
	int rc = send_all(fd, req, len + 1, files, snapshot ? SNAPSHOT_NR_FILES : 0);
	free(req);
	if (snapshot)
		for (int f = 0; f < SNAPSHOT_NR_FILES; f++)
			close(files[f]);
	char *resp = rc ? NULL : recv_line(fd);
	close(fd);
	/* The server always writes "ok" first. */
	int status = !resp ? 2 : !strncmp(resp, "{\"ok\":true", 10) ? 0 : 1;
	if (snapshot && status) /* a snapshot that failed leaves nothing behind */
		snapshot_remove_files(argv[i + 1]);
	if (!resp) {
		fprintf(stderr, "minivmm ctl: no response from %s\n", sock);
		return 2;
	}
	printf("%s\n", resp);
	free(resp);
	return status;
}
