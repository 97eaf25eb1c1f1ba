#include "vport.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/user_file.h"
#include "cli.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* What udev and sysfs take without surprise: no '/', no spaces, no leading dot or dash. */
static bool valid_name(const char *name, size_t len)
{
	if (!len || len >= VPORT_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];
		if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') &&
		    !(ch >= '0' && ch <= '9') && ch != '.' && ch != '_' && ch != '-')
			return false;
	}
	return true;
}

/* The checks vport_add and --vport share; the name is len bytes (not NUL-terminated). */
static struct vport_config *new_port(struct vm_config *cfg, const char *what, const char *name,
				     size_t len, char *err, size_t errlen)
{
	if (!valid_name(name, len)) {
		fail(err, errlen,
		     "%s: invalid port name '%.*s' (1 to %d of A-Z a-z 0-9 . _ -, not starting "
		     "with . or -)",
		     what, (int)(len < 64 ? len : 64), name, VPORT_NAME_MAX - 1);
		return NULL;
	}
	for (int i = 0; i < cfg->nr_vports; i++)
		if (strlen(cfg->vports[i].name) == len && !memcmp(cfg->vports[i].name, name, len)) {
			fail(err, errlen, "%s: port '%.*s' given twice", what, (int)len, name);
			return NULL;
		}
	if (cfg->nr_vports == MAX_VPORTS) {
		fail(err, errlen, "%s: too many ports (at most %d besides hvc0)", what, MAX_VPORTS);
		return NULL;
	}
	struct vport_config *p = &cfg->vports[cfg->nr_vports];
	*p = (struct vport_config){.out_fd = -1, .in_fd = -1};
	memcpy(p->name, name, len);
	return p;
}

int vport_add(struct vm_config *cfg, const char *name, int out_fd, int in_fd, char *err,
	      size_t errlen)
{
	struct vport_config *p = new_port(cfg, "vport", name, strlen(name), err, errlen);
	if (!p)
		return -1;
	p->out_fd = out_fd < 0 ? -1 : out_fd;
	p->in_fd = in_fd < 0 ? -1 : in_fd;
	cfg->nr_vports++;
	return 0;
}

/* file=PATH[,max-size=SIZE]: the last ",max-size=" ends the path (as --console file=). */
static int open_file(struct vport_config *p, const char *arg, char *err, size_t errlen)
{
	static const char opt[] = ",max-size=";
	const char *max = NULL;
	for (const char *q = strstr(arg, opt); q; q = strstr(q + 1, opt))
		max = q;
	size_t len = max ? (size_t)(max - arg) : strlen(arg);
	char path[4096];
	if (!len)
		return fail(err, errlen, "--vport %s: file= needs a path", p->name);
	if (len >= sizeof(path))
		return fail(err, errlen, "--vport %s: the file's path is too long", p->name);
	memcpy(path, arg, len);
	path[len] = '\0';
	p->out_max = CONSOLE_FILE_DEFAULT_MAX;
	if (max && parse_size(max + strlen(opt), &p->out_max, err, errlen))
		return -1;
	/* A terminal or /dev/null is fine; a FIFO could stall the port's output for good. */
	struct stat st;
	int fd = open_user_file(path, O_WRONLY | O_CREAT | O_TRUNC, 0644,
				USER_FILE_REG | USER_FILE_CHR, &st);
	if (fd == USER_FILE_WRONG_KIND)
		return fail(err, errlen,
			    "--vport %s: '%s' is %s, not a regular file or a character device",
			    p->name, path, user_file_kind(st.st_mode));
	if (fd < 0)
		return fail(err, errlen, "--vport %s: cannot open '%s': %s", p->name, path,
			    strerror(errno));
	p->out_fd = fd;
	p->owns_out = true;
	return 0;
}

int vport_parse(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	const char *colon = strchr(arg, ':');
	if (!colon)
		return fail(err, errlen,
			    "invalid --vport '%s' (expected NAME:stdout, NAME:stderr, "
			    "NAME:file=PATH[,max-size=SIZE] or NAME:stdin)",
			    arg);
	struct vport_config *p = new_port(cfg, "--vport", arg, (size_t)(colon - arg), err, errlen);
	if (!p)
		return -1;
	const char *out = colon + 1;
	if (!strcmp(out, "stdout"))
		p->out_fd = STDOUT_FILENO;
	else if (!strcmp(out, "stderr"))
		p->out_fd = STDERR_FILENO;
	else if (!strcmp(out, "stdin")) {
		for (int i = 0; i < cfg->nr_vports; i++)
			if (cfg->vports[i].in_fd == STDIN_FILENO)
				return fail(err, errlen,
					    "--vport %s: port '%s' reads stdin already", arg,
					    cfg->vports[i].name);
		p->in_fd = STDIN_FILENO;
	} else if (!strncmp(out, "file=", 5)) {
		if (open_file(p, out + 5, err, errlen))
			return -1;
	} else
		return fail(err, errlen,
			    "invalid --vport '%s' (after the name: stdout, stderr, "
			    "file=PATH[,max-size=SIZE] or stdin)",
			    arg);
	cfg->nr_vports++;
	return 0;
}

int vport_check(const struct vm_config *cfg, bool virtio_console, char *err, size_t errlen)
{
	if (cfg->nr_vports && !virtio_console)
		return fail(
		    err, errlen,
		    "--vport needs a virtio console (--console virtio or --virtio-console)");
	for (int i = 0; i < cfg->nr_vports; i++)
		if (cfg->vports[i].in_fd == STDIN_FILENO && cfg->console == CONSOLE_STDIO)
			return fail(err, errlen,
				    "--vport %s:stdin: the console reads stdin (give --console "
				    "virtio,none or virtio,file=PATH)",
				    cfg->vports[i].name);
	return 0;
}

void vport_free_config(struct vm_config *cfg)
{
	for (int i = 0; i < cfg->nr_vports; i++) {
		struct vport_config *p = &cfg->vports[i];
		if (p->owns_out && p->out_fd >= 0)
			close(p->out_fd);
		p->out_fd = -1;
		p->owns_out = false;
	}
	cfg->nr_vports = 0;
}
