/* inspect.h - the schedule for people and tools: --emit=graph|schedule|json|dot|svg.
 * All output is byte-stable: same input, same bytes. */
#ifndef MK_INSPECT_H
#define MK_INSPECT_H

#include "../base/strbuf.h"
#include "ir.h"

void inspect_graph(const ir_sched *s, strbuf *out);
void inspect_schedule(const ir_sched *s, strbuf *out);
void inspect_json(const ir_sched *s, strbuf *out);
void inspect_dot(const ir_sched *s, strbuf *out);
void inspect_svg(const ir_sched *s, strbuf *out);
/* "Ag@1[0:64, 0:512]" */
void inspect_region(const ir_prog *p, const ir_region *g, strbuf *out);

#endif
