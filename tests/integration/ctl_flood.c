/* A hostile control-socket client: send COUNT status requests on one connection, half-close
 * it (shutdown SHUT_WR), say "flooded" on stdout, then hold the connection without ever
 * reading a reply until killed. Usage: ctl_flood SOCKET COUNT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SOCKET COUNT\n", argv[0]);
		return 2;
	}
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror("connect");
		return 1;
	}
	/* One write: each small write would cost a whole socket buffer's worth of overhead. */
	static const char req[] = "{\"cmd\":\"status\"}\n";
	size_t n = (size_t)atol(argv[2]), len = n * (sizeof(req) - 1);
	char *buf = malloc(len);
	if (!buf)
		return 1;
	for (size_t i = 0; i < n; i++)
		memcpy(buf + i * (sizeof(req) - 1), req, sizeof(req) - 1);
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, buf + off, len - off);
		if (w <= 0) {
			perror("write");
			return 1;
		}
		off += (size_t)w;
	}
	if (shutdown(fd, SHUT_WR) < 0) {
		perror("shutdown");
		return 1;
	}
	printf("flooded\n");
	fflush(stdout);
	for (;;)
		pause();
}
