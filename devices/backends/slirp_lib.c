#include "slirp_lib.h"

#include <dlfcn.h>
#include <stdio.h>

/* The soname libslirp-dev's libslirp.so links to (Debian's libslirp0). */
#define SLIRP_SONAME "libslirp.so.0"

static struct slirp_lib lib;
static int loaded;

/* dlsym into *slot; -1 with err set if the symbol is missing. */
static int bind_symbol(void *handle, const char *name, void *slot, char *err, size_t errlen)
{
	void *sym = dlsym(handle, name);
	if (!sym) {
		snprintf(err, errlen, "%s has no %s", SLIRP_SONAME, name);
		return -1;
	}
	*(void **)slot = sym;
	return 0;
}

const struct slirp_lib *slirp_lib_get(char *err, size_t errlen)
{
	if (loaded)
		return &lib;
	void *h = dlopen(SLIRP_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "cannot load libslirp (%s): install libslirp0", dlerror());
		return NULL;
	}
	struct slirp_lib l;
	if (bind_symbol(h, "slirp_new", &l.new_instance, err, errlen) ||
	    bind_symbol(h, "slirp_cleanup", &l.cleanup, err, errlen) ||
	    bind_symbol(h, "slirp_input", &l.input, err, errlen) ||
	    bind_symbol(h, "slirp_pollfds_fill", &l.pollfds_fill, err, errlen) ||
	    bind_symbol(h, "slirp_pollfds_poll", &l.pollfds_poll, err, errlen) ||
	    bind_symbol(h, "slirp_handle_timer", &l.handle_timer, err, errlen) ||
	    bind_symbol(h, "slirp_add_hostfwd", &l.add_hostfwd, err, errlen)) {
		dlclose(h);
		return NULL;
	}
	lib = l;
	loaded = 1; /* the handle stays open for the process's life */
	return &lib;
}
