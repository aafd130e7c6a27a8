/* inspect.h - the plans and the schedule for people and tools:
 * --emit=plan|graph|schedule|json|dot|svg.  All output is byte-stable:
 * same input, same bytes. */
#ifndef MK_INSPECT_H
#define MK_INSPECT_H

#include "../base/strbuf.h"
#include "ir.h"

/* Each op's kernel plan (plan.c), one line an op, and the kernel's. */
void inspect_plans(const ir_prog *p, strbuf *out);
void inspect_graph(const ir_sched *s, strbuf *out);
void inspect_schedule(const ir_sched *s, strbuf *out);
void inspect_json(const ir_sched *s, strbuf *out);
void inspect_dot(const ir_sched *s, strbuf *out);
void inspect_svg(const ir_sched *s, strbuf *out);
/* "Ag@1[0:64, 0:512]" */
void inspect_region(const ir_prog *p, const ir_region *g, strbuf *out);

#endif
