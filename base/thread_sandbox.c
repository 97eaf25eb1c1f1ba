#include "thread_sandbox.h"

#include <stdatomic.h>
#include <stdbool.h>

static _Atomic(sandbox_narrow_fn) hook;
static _Thread_local bool narrowed;

void thread_sandbox_set_hook(sandbox_narrow_fn fn)
{
	atomic_store_explicit(&hook, fn, memory_order_release);
}

int thread_sandbox_narrow(enum sandbox_thread thread)
{
	if (narrowed)
		return 0;
	sandbox_narrow_fn fn = atomic_load_explicit(&hook, memory_order_acquire);
	if (!fn)
		return 0;
	if (fn(thread))
		return -1;
	narrowed = true;
	return 0;
}
