/* tp_core.c - what the transport and its backends share beyond the types of
 * tp_core.h: the one way they record a failure.
 */
#include "tp_core.h"

#include <stdarg.h>
#include <stdio.h>

void tp_fail(transport *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof t->err, fmt, ap);
	va_end(ap);
}
