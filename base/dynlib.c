/* dynlib.c - opening a shared library once per process; see dynlib.h.
 *
 * The once-per-library guard is a flag in the dynlib, read with acquire
 * ordering, and one lock for all libraries taken only until the flag is
 * set: loading is rare and quick, and the lock lets any static dynlib
 * serve as its own once-control (pthread_once has no argument to say which
 * library it runs for).
 */
#include "dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *open_first(dynlib *l)
{
	const char *over = l->env ? getenv(l->env) : NULL;
	const char *one[2] = {over, NULL};
	const char *const *names = over && *over ? one : l->names;
	void *h;

	for (int i = 0; names && names[i]; i++) {
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) != NULL) {
			snprintf(l->path, sizeof l->path, "%s", names[i]);
			return h;
		}
		if (i == 0) {
			const char *e = dlerror();
			snprintf(l->path, sizeof l->path, "%s", names[0]);
			if (e)
				snprintf(l->why, sizeof l->why, "%s", e);
			else
				snprintf(l->why, sizeof l->why, "%s: cannot be loaded", names[0]);
		}
	}
	if (!names || !names[0])
		snprintf(l->why, sizeof l->why, "no library to open");
	return NULL;
}

static int load(dynlib *l)
{
	l->missing = -1;
	if (!(l->handle = open_first(l)))
		return 0;
	l->why[0] = 0;
	for (int i = 0; l->syms[i]; i++) {
		const char *name = l->syms[i] + (l->syms[i][0] == '?');
		void *p = dlsym(l->handle, name);
		if (!p && l->find)
			p = l->find(l->handle, name);
		memcpy((char *)l->table + i * sizeof p, &p, sizeof p);
		if (!p && l->syms[i][0] != '?') {
			l->missing = i;
			snprintf(l->why, sizeof l->why, "%s has no %s", l->path, name);
			return 0;   /* kept open: a half-resolved library is not unloaded */
		}
	}
	return 1;
}

int dynlib_open(dynlib *l)
{
	int s = atomic_load_explicit(&l->state, memory_order_acquire);
	if (s)
		return s > 0;
	pthread_mutex_lock(&lock);
	s = atomic_load_explicit(&l->state, memory_order_relaxed);
	if (!s) {
		s = load(l) ? 1 : -1;
		atomic_store_explicit(&l->state, s, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
	return s > 0;
}

int dynlib_need(dynlib *l, const char *what, char *why, size_t n)
{
	if (dynlib_open(l))
		return 1;
	if (l->missing >= 0)
		snprintf(why, n, "%s", l->why);
	else
		snprintf(why, n, "%s not found (%s)", what, l->why);
	return 0;
}
