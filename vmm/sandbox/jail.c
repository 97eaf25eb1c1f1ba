#include "jail.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/cli/options.h"

/* A decimal id, 1 to 2^32-2 (-1 means "unchanged" to setresuid). */
static int parse_id(const struct option_kv *kv, unsigned *out, char *err, size_t errlen)
{
	const char *v = kv->value;
	char *end;
	errno = 0;
	unsigned long long n = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
	if (!kv->has_value || v[0] < '0' || v[0] > '9' || *end || errno || n >= 0xffffffffULL) {
		snprintf(err, errlen, "--jail: invalid %s '%s' (expected a number)", kv->key, v);
		return -1;
	}
	if (n == 0) {
		snprintf(err, errlen, "--jail: %s=0 would leave the VMM root", kv->key);
		return -1;
	}
	*out = (unsigned)n;
	return 0;
}

/* The jail must hold nothing, and its future inhabitant must not be able to change that. */
static int check_dir(const struct jail_config *j, char *err, size_t errlen)
{
	struct stat st;
	if (stat(j->dir, &st) < 0) {
		snprintf(err, errlen, "--jail %s: %s", j->dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--jail %s: not a directory", j->dir);
		return -1;
	}
	if (st.st_uid == j->uid || (st.st_gid == j->gid && (st.st_mode & S_IWGRP)) ||
	    (st.st_mode & S_IWOTH)) {
		snprintf(err, errlen,
			 "--jail %s: owned or writable by the jail's uid/gid (make it root's, "
			 "mode 755)",
			 j->dir);
		return -1;
	}
	DIR *d = opendir(j->dir);
	if (!d) {
		snprintf(err, errlen, "--jail %s: %s", j->dir, strerror(errno));
		return -1;
	}
	const struct dirent *e;
	while ((e = readdir(d)) && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")))
		;
	closedir(d);
	if (e) {
		snprintf(err, errlen, "--jail %s: not empty", j->dir);
		return -1;
	}
	return 0;
}

int jail_parse(const char *arg, struct jail_config *out, char *err, size_t errlen)
{
	struct jail_config j = {.enabled = true};
	const char *comma = strchr(arg, ',');
	size_t dir_len = comma ? (size_t)(comma - arg) : strlen(arg);
	if (dir_len == 0 || arg[0] != '/') {
		snprintf(err, errlen, "--jail needs an absolute directory: --jail DIR,uid=N,gid=N");
		return -1;
	}
	if (dir_len >= sizeof(j.dir)) {
		snprintf(err, errlen, "--jail: directory path too long (at most %zu bytes)",
			 sizeof(j.dir) - 1);
		return -1;
	}
	memcpy(j.dir, arg, dir_len);
	struct option_list opts = {0};
	if (comma && options_split(comma + 1, "--jail", &opts, err, errlen))
		return -1;
	bool have_uid = false, have_gid = false;
	for (int i = 0; i < opts.n; i++) {
		const struct option_kv *kv = &opts.kv[i];
		unsigned id;
		if (strcmp(kv->key, "uid") && strcmp(kv->key, "gid"))
			return option_unknown(kv, "--jail", "uid, gid", err, errlen);
		if (parse_id(kv, &id, err, errlen))
			return -1;
		if (!strcmp(kv->key, "uid")) {
			j.uid = (uid_t)id;
			have_uid = true;
		} else {
			j.gid = (gid_t)id;
			have_gid = true;
		}
	}
	if (!have_uid || !have_gid) {
		snprintf(err, errlen, "--jail %s: needs uid=N and gid=N (an unprivileged user)",
			 j.dir);
		return -1;
	}
	if (check_dir(&j, err, errlen))
		return -1;
	*out = j;
	return 0;
}

int jail_enter(const struct jail_config *j, char *err, size_t errlen)
{
	if (chdir(j->dir) < 0 || chroot(".") < 0 || chdir("/") < 0) {
		snprintf(err, errlen, "--jail %s: cannot chroot: %s (minivmm must start as root)",
			 j->dir, strerror(errno));
		return -1;
	}
	/* Groups first: once the uid is dropped, the gid can no longer be changed. */
	if (setgroups(0, NULL) < 0 || setresgid(j->gid, j->gid, j->gid) < 0 ||
	    setresuid(j->uid, j->uid, j->uid) < 0) {
		snprintf(err, errlen, "--jail: cannot drop to uid %u gid %u: %s", (unsigned)j->uid,
			 (unsigned)j->gid, strerror(errno));
		return -1;
	}
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	bool dropped = getresuid(&ruid, &euid, &suid) == 0 && getresgid(&rgid, &egid, &sgid) == 0 &&
		       ruid == j->uid && euid == j->uid && suid == j->uid && rgid == j->gid &&
		       egid == j->gid && sgid == j->gid && getgroups(0, NULL) == 0;
	/* No way back: neither the ids nor the capabilities (chroot needs CAP_SYS_CHROOT). */
	if (!dropped || setuid(0) == 0 || setgid(0) == 0 || chroot("/") == 0) {
		snprintf(err, errlen, "--jail: root could be regained after dropping privileges");
		return -1;
	}
	return 0;
}
