/* findlib.h - where the GPU programs look for the vendor libraries the CUDA
 * toolkit or a Python wheel installs (cuBLAS, NCCL), for base/dynlib.
 *
 * dynlib tries a list of files in order; this builds that list from a
 * directory named by an environment variable, the loader's path and a few
 * install directories (glob patterns), and says which file opened.
 * Header-only: each tests/gpu/ source is its own program.
 */
#ifndef MKT_FINDLIB_H
#define MKT_FINDLIB_H

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynlib.h"

/* appends "dir/name" (dir NULL: name) to *list; 0, or -1 out of memory */
static __attribute__((unused)) int mkt_findlib_add(char ***list, int *n, const char *dir,
						    const char *name)
{
	char p[1024], **l = realloc(*list, (size_t)(*n + 2) * sizeof *l);
	if (!l)
		return -1;
	*list = l;
	if (dir)
		snprintf(p, sizeof p, "%s/%s", dir, name);
	else
		snprintf(p, sizeof p, "%s", name);
	if (!(l[*n] = strdup(p)))
		return -1;
	l[++*n] = NULL;
	return 0;
}

/* Opens l (its syms and table set; names and env unset) from the first of
 * names[] that loads: in the directory env_dir (when set and not empty),
 * then on the loader's path, then in each directory matching a pattern of
 * dirs[] (NULL-terminated).  1 when it is open with every entry point, 0
 * when no file opened, -1 when one opened without an entry point
 * (mkt_findlib_missing names it).  path[n]: the file opened (found on the
 * loader's path: its directory and name), also when one is missing. */
static __attribute__((unused)) int mkt_findlib(dynlib *l, const char *const *names,
					       const char *env_dir, const char *const *dirs,
					       char *path, size_t n)
{
	char **list = NULL;
	int nl = 0, bad = 0;
	for (int i = 0; names[i] && env_dir && *env_dir; i++)
		bad |= mkt_findlib_add(&list, &nl, env_dir, names[i]);
	for (int i = 0; names[i]; i++)
		bad |= mkt_findlib_add(&list, &nl, NULL, names[i]);
	for (int d = 0; dirs[d]; d++) {
		glob_t g;
		if (glob(dirs[d], GLOB_NOSORT, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++)
			for (int i = 0; names[i]; i++)
				bad |= mkt_findlib_add(&list, &nl, g.gl_pathv[k], names[i]);
		globfree(&g);
	}
	int ok = 0;
	if (!bad) {
		l->names = (const char *const *)list;
		ok = dynlib_open(l) ? 1 : l->handle ? -1 : 0;
		l->names = NULL;  /* only the first dynlib_open reads it */
	}
	path[0] = 0;
	if (ok && !strchr(l->path, '/')) {  /* found on the loader's path */
		char dir[4096] = "";
		if (dlinfo(l->handle, RTLD_DI_ORIGIN, dir) != 0 || !dir[0])
			snprintf(dir, sizeof dir, "(the loader's path)");
		snprintf(path, n, "%.500s/%s", dir, l->path);
	} else if (ok) {  /* the candidate dynlib kept (it keeps 255 bytes of it) */
		for (int i = 0; i < nl && !path[0]; i++)
			if (!strncmp(list[i], l->path, sizeof l->path - 1))
				snprintf(path, n, "%s", list[i]);
	}
	for (int i = 0; i < nl; i++)
		free(list[i]);
	free(list);
	return ok;
}

/* the entry point l lacks, without dynlib's '?' */
static __attribute__((unused)) const char *mkt_findlib_missing(const dynlib *l)
{
	const char *s = l->missing >= 0 ? l->syms[l->missing] : "";
	return s + (s[0] == '?');
}

#endif
