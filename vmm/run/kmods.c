#include "kmods.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/byteorder.h"

int kmods_kernel_version(const char *bzimage_path, char *out, size_t len, char *err, size_t errlen)
{
	int fd = open(bzimage_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s", bzimage_path, strerror(errno));
		return -1;
	}
	uint8_t hdr[0x210];
	char ver[128];
	ssize_t n = pread(fd, hdr, sizeof(hdr), 0);
	int rc = -1;
	if (n != (ssize_t)sizeof(hdr) || memcmp(hdr + 0x202, "HdrS", 4)) {
		snprintf(err, errlen, "'%s' is not a bzImage (no HdrS header)", bzimage_path);
		goto out;
	}
	/* kernel_version (boot protocol 2.00+): its string is at this offset + 0x200. */
	uint16_t at = get_le16(hdr + 0x20e);
	n = at ? pread(fd, ver, sizeof(ver) - 1, (off_t)at + 0x200) : -1;
	if (n <= 0) {
		snprintf(err, errlen, "'%s' does not say its version", bzimage_path);
		goto out;
	}
	ver[n] = '\0';
	size_t w = strcspn(ver, " \n");
	if (w == 0 || w >= len || ver[w] == '\0') {
		snprintf(err, errlen, "'%s' does not say its version", bzimage_path);
		goto out;
	}
	memcpy(out, ver, w);
	out[w] = '\0';
	rc = 0;
out:
	close(fd);
	return rc;
}

/* "kernel/fs/fuse/virtiofs.ko" -> "virtiofs"; '-' read as '_'. */
static void name_of(const char *path, size_t len, char *out, size_t outlen)
{
	const char *base = path;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			base = path + i + 1;
	size_t n = (size_t)(path + len - base);
	const char *dot = memchr(base, '.', n);
	if (dot)
		n = (size_t)(dot - base);
	if (n >= outlen)
		n = outlen - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = base[i] == '-' ? '_' : base[i];
	out[n] = '\0';
}

static char *slurp(const char *dir, const char *file, char *err, size_t errlen)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		len += fread(buf + len, 1, cap - 1 - len, f);
		if (len < cap - 1)
			break;
		char *b = realloc(buf, cap * 2);
		if (!b) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = b;
		cap *= 2;
	}
	fclose(f);
	if (!buf)
		snprintf(err, errlen, "out of memory reading %s", path);
	else
		buf[len] = '\0';
	return buf;
}

/* The modules.dep line of module name, or NULL. */
static const char *dep_line(const char *dep, const char *name)
{
	for (const char *l = dep; *l;) {
		const char *colon = strchr(l, ':'), *nl = strchr(l, '\n');
		if (!nl)
			nl = l + strlen(l);
		if (colon && colon < nl) {
			char n[64];
			name_of(l, (size_t)(colon - l), n, sizeof(n));
			if (!strcmp(n, name))
				return l;
		}
		l = *nl ? nl + 1 : nl;
	}
	return NULL;
}

static bool builtin(const char *list, const char *name)
{
	for (const char *l = list; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		char n[64];
		name_of(l, len, n, sizeof(n));
		if (len && !strcmp(n, name))
			return true;
		l += len + (nl ? 1 : 0);
	}
	return false;
}

static bool have(const struct kmods *m, const char *path, size_t len)
{
	for (int i = 0; i < m->n; i++)
		if (strlen(m->path[i]) == len && !strncmp(m->path[i], path, len))
			return true;
	return false;
}

static int add(struct kmods *m, const char *path, size_t len, char *err, size_t errlen)
{
	if (have(m, path, len))
		return 0;
	if (m->n == KMODS_MAX || len >= sizeof(m->path[0])) {
		snprintf(err, errlen, "too many modules, or a path too long, in modules.dep");
		return -1;
	}
	memcpy(m->path[m->n], path, len);
	m->path[m->n++][len] = '\0';
	return 0;
}

/* A module's dependencies are listed so that the last one is loaded first (as modprobe does);
 * modules.dep lists each module's whole closure on its own line. */
static int add_with_deps(struct kmods *m, const char *line, char *err, size_t errlen)
{
	const char *colon = strchr(line, ':'), *nl = strchr(line, '\n');
	if (!nl)
		nl = line + strlen(line);
	const char *deps[KMODS_MAX];
	size_t lens[KMODS_MAX];
	int nd = 0;
	for (const char *p = colon + 1; p < nl;) {
		while (p < nl && *p == ' ')
			p++;
		const char *e = p;
		while (e < nl && *e != ' ')
			e++;
		if (e > p) {
			if (nd == KMODS_MAX) {
				snprintf(err, errlen, "a module with too many dependencies");
				return -1;
			}
			deps[nd] = p;
			lens[nd++] = (size_t)(e - p);
		}
		p = e;
	}
	for (int i = nd - 1; i >= 0; i--)
		if (add(m, deps[i], lens[i], err, errlen))
			return -1;
	return add(m, line, (size_t)(colon - line), err, errlen);
}

int kmods_resolve(const char *dir, const char *const *want, int nwant, struct kmods *out, char *err,
		  size_t errlen)
{
	out->n = 0;
	char *dep = slurp(dir, "modules.dep", err, errlen);
	if (!dep)
		return -1;
	char e2[64];
	char *built = slurp(dir, "modules.builtin", e2, sizeof(e2));
	int rc = 0;
	for (int i = 0; i < nwant && rc == 0; i++) {
		char name[64];
		name_of(want[i], strlen(want[i]), name, sizeof(name));
		const char *line = dep_line(dep, name);
		if (line)
			rc = add_with_deps(out, line, err, errlen);
		else if (!built || !builtin(built, name)) {
			snprintf(
			    err, errlen,
			    "the kernel has no %s driver: not built in, and not a module in %s",
			    name, dir);
			rc = -1;
		}
	}
	free(dep);
	free(built);
	return rc;
}
