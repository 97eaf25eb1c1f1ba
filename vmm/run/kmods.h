/* What `minivmm run` needs of the guest kernel's modules: the kernel's version (read from its
 * bzImage header, so the right /lib/modules/VERSION is found without booting it), and which
 * module files to load, in what order, for the drivers the run uses (modules.dep, with what
 * modules.builtin says is built in). */
#ifndef MINIVMM_KMODS_H
#define MINIVMM_KMODS_H

#include <stddef.h>

#define KMODS_MAX 64

/* The version a bzImage states ("6.1.0-27-cloud-amd64"), the first word of its header's
 * kernel_version string. 0, or -1 with a one-line reason in err (not a bzImage, no version). */
int kmods_kernel_version(const char *bzimage_path, char *out, size_t len, char *err, size_t errlen);

struct kmods {
	int n;
	char path[KMODS_MAX][256]; /* relative to the modules directory, load order */
};

/* The module files under dir (a /lib/modules/VERSION: its modules.dep and modules.builtin)
 * that give the drivers named in want (module names, '-' and '_' alike), each after what it
 * depends on, each once; built-in drivers need none. 0, or -1 with a one-line reason naming
 * the first driver that is neither built in nor a module there. */
int kmods_resolve(const char *dir, const char *const *want, int nwant, struct kmods *out, char *err,
		  size_t errlen);

#endif
