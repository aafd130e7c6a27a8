/* inspect.h - the program, the plans and the schedule for people and
 * tools: --emit=check|expand|plan|graph|schedule|json|dot|svg.  All output
 * is byte-stable: same input, same bytes. */
#ifndef MK_INSPECT_H
#define MK_INSPECT_H

#include "../base/strbuf.h"
#include "ir.h"

/* What mkc understood (--emit=check), or the program after the expansion:
 * the mesh, the parameters with their values (-D overrides marked), every
 * tensor with its kind, element type, logical shape, placement, per-rank
 * shape, producer and uses (and "folded" when the expansion removed it),
 * the ops in execution order with their stages, operands and hints (and a
 * fused epilogue), and the roles hint. */
void inspect_program(const ir_prog *p, strbuf *out);
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
