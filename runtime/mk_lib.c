/* mk_lib.c - what every file of libmk uses: status names and messages,
 * and how a failure is recorded on the context. */
#include <stdarg.h>
#include <stdio.h>

#include "mk_lib.h"

static const struct {
	const char *name, *msg;
} statuses[] = {
#define X(name, value, msg) [value] = {#name, msg},
	MK_STATUS_LIST(X)
#undef X
};

const char *mk_strerror(mk_status s)
{
	if ((unsigned)s >= sizeof statuses / sizeof statuses[0] || !statuses[s].msg)
		return "unknown status";
	return statuses[s].msg;
}

const char *mk_status_name(mk_status s)
{
	if ((unsigned)s >= sizeof statuses / sizeof statuses[0] || !statuses[s].name)
		return "MK_UNKNOWN";
	return statuses[s].name;
}

const char *mk_version(void) { return MK_VERSION; }

mk_status mk_fail(mk_ctx *c, mk_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	return st;
}

mk_status mk_cufail(mk_pipeline *p, mk_status st, const char *what, CUresult r)
{
	return mk_fail(p->c, st, "%s: %s", what, cudrv_errstr(r));
}
