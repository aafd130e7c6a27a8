/* fuzz_frontend.c - libFuzzer harness: arbitrary bytes through the front end.
 *
 * Parses the input, lists the tree, checks it under a few -D bindings
 * (1 x 1, 2 x 8, an odd mesh with parameter overrides that may or may not
 * exist), lists the checked program and renders every diagnostic.  Sema also
 * runs on the partial tree of an input with syntax errors, which mkc never
 * does, so its robustness does not lean on the parser's.  Anything but a
 * clean return (a crash, a sanitizer report, a hang) is a bug.
 *
 * Build and run: tools/fuzz.sh SECONDS (or make fuzz).
 */
#include <stddef.h>
#include <stdint.h>

#include "compiler/compile.h"
#include "compiler/inspect.h"
#include "grammar/ast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const mk_define mesh_2x8[] = {{"nodes", 2}, {"gpus", 8}};
static const mk_define odd[] = {{"nodes", 3}, {"gpus", 5}, {"M", 1000},
				{"T", 48}, {"E", 6}, {"world", 4}, {"N", -1}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	srcset src;
	src_init(&src);
	int f = src_add(&src, "fuzz.mk", (const char *)data, size);
	if (f < 0) {
		src_free(&src);
		return 0;
	}
	arena a;
	arena_init(&a);
	diags d;
	diag_init(&d, &src, &a);
	strbuf out;
	sb_init(&out);

	struct ast_pipeline *p = parse_source(&src, f, &d, &a);
	ast_dump(p, &src, &out);
	diag_render(&d, &out, 0);

	const struct { const mk_define *defs; int n; } binds[] = {
		{NULL, 0}, {mesh_2x8, 2}, {odd, 7},
	};
	for (size_t i = 0; p && i < sizeof binds / sizeof binds[0]; i++) {
		diags d2;
		diag_init(&d2, &src, &a);
		compile_opts o = {.defs = binds[i].defs, .ndefs = binds[i].n,
				  .ranks_per_gpu = 1};
		ir_prog *prog = sema_check(p, &o, &d2, &a);
		inspect_program(prog, &out);
		diag_render(&d2, &out, i == 1);
		if (prog && diag_has_errors(&d2))
			__builtin_trap();   /* a program is only made when all is well */
	}
	sb_free(&out);
	arena_free(&a);
	src_free(&src);
	return 0;
}
