/* sema.h - the checks (AST -> ir_prog) and their listing.
 *
 * sema_check itself is declared in compile.h with the other passes.
 * sema_dump prints what mkc understood (mkc --emit=check): the mesh, the
 * parameters with their values (-D overrides marked), every tensor with its
 * kind, element type, logical shape, placement and per-rank shape, the ops
 * in execution order with their stages, operands and hints, and the roles
 * hint.  Stable text: the same program prints the same bytes.
 */
#ifndef MK_SEMA_H
#define MK_SEMA_H

#include "../base/strbuf.h"
#include "ir.h"

void sema_dump(const ir_prog *p, strbuf *out);

/* "local", "partial", "split(0)", "split(1, gpus)" */
const char *sema_place_name(ir_place pl, char *buf, int n);

#endif
