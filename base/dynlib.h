/* dynlib.h - a shared library opened at run time, once per process.
 *
 * mk loads the CUDA driver, NVRTC, libibverbs and libfabric with dlopen so
 * that its binaries start where they are missing and can say so.  Each user
 * describes its library in a static dynlib: the files to try, an
 * environment variable that names another file, and the table of entry
 * points.  The first dynlib_open opens the first file that loads and
 * resolves every entry point; the outcome is kept, and every later call
 * (from any thread) returns it without trying again.  The library stays open
 * for the life of the process.
 *
 *   static struct { int (*init)(void); void (*new_call)(int); } foo;
 *   static const char *const syms[] = {"foo_init", "?foo_new_call", NULL};
 *   static dynlib foo_dl = {.names = (const char *const[]){"libfoo.so.1", NULL},
 *                           .env = "MK_LIBFOO", .syms = syms, .table = &foo};
 *   if (!dynlib_open(&foo_dl)) ... foo_dl.why says why
 *   foo.init();
 *
 * Nothing here prints or exits.
 */
#ifndef MK_DYNLIB_H
#define MK_DYNLIB_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct dynlib {
	/* the description */
	const char *const *names;   /* sonames or paths, tried in order; NULL-terminated */
	const char *env;            /* when this variable is set and not empty, the one file
	                               to open instead of names; NULL: none */
	const char *const *syms;    /* entry points, NULL-terminated; "?name": optional */
	void *table;                /* where the addresses go, one pointer-sized slot per
	                               entry of syms, in order (NULL: a missing optional
	                               one): an array of void *, or a struct whose members
	                               are all function pointers (POSIX gives them the
	                               representation of void *, as dlsym needs) */
	/* asked for an entry point that dlsym does not find (NULL: none) */
	void *(*find)(void *handle, const char *sym);

	/* the outcome, set by the first dynlib_open (zero before) */
	atomic_int state;           /* 0 not tried, 1 open, -1 failed */
	void *handle;
	char path[256];             /* the file opened, else the first one tried */
	int missing;                /* index in syms of the entry point not found, or -1 */
	/* on failure, one line: dlerror() of the first file tried (it names the
	 * file), or "<path> has no <entry point>" */
	char why[512];
} dynlib;

/* 1 when the library is open and every required entry point was found,
 * else 0 with l->why (and l->missing for an entry point).  The table is
 * complete before any caller sees 1. */
int dynlib_open(dynlib *l);
/* dynlib_open, and on failure a message in why[n]: "<what> not found
 * (<dlerror>)" when no file opened, else "<file> has no <entry point>". */
int dynlib_need(dynlib *l, const char *what, char *why, size_t n);

/* For a table of entry points as an X-macro list X(field, "entry point",
 * return type, (parameters)): its struct members, its syms[] entries, and
 * a check that the struct holds one pointer per entry point. */
#define DYNLIB_FIELD(field, sym, ret, params) ret(*field) params;
#define DYNLIB_NAME(field, sym, ret, params) sym,
#define DYNLIB_CHECK(table, syms)                                           \
	_Static_assert(sizeof(table) ==                                     \
		       (sizeof(syms) / sizeof(syms)[0] - 1) * sizeof(void *), \
		       "one function pointer per entry point")

#endif
