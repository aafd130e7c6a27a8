/* test_frontend.c - the front end, for what golden files cannot show.
 *
 *   - every sample parses and checks cleanly at meshes 1x1, 1x8, 2x8, 4x8;
 *   - every span of the tree lies within the file and within its parent;
 *     every tensor and op of the checked program points into the file;
 *   - the checked program keeps its promises: producers before consumers,
 *     writer and use counts, per-rank shapes that match the placement;
 *   - the listings are stable (same input, same bytes);
 *   - assignments written backwards come out in dependency order, and a
 *     2000-op chain checks quickly, in order, without deep recursion;
 *   - error recovery reports each broken statement once; hostile bytes
 *     (NUL, invalid UTF-8, deep nesting, huge numbers) are diagnosed;
 *   - the time of parse + check of each sample, median of many runs
 *     (printed, not a pass/fail test).
 *
 * Run from the repository root (tests/run.sh does).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/compile.h"
#include "compiler/inspect.h"
#include "grammar/ast.h"

#include "check.h"

/* ---- one compile ---------------------------------------------------------- */

typedef struct fe {
	srcset src;
	arena a;
	diags d;
	int file;
	struct ast_pipeline *ast;
	ir_prog *prog;
} fe;

static void fe_text(fe *f, const char *name, const char *text, size_t n,
		    const mk_define *defs, int ndefs)
{
	src_init(&f->src);
	arena_init(&f->a);
	f->file = src_add(&f->src, name, text, n);
	diag_init(&f->d, &f->src, &f->a);
	f->ast = parse_source(&f->src, f->file, &f->d, &f->a);
	f->prog = NULL;
	if (f->ast && !diag_has_errors(&f->d)) {
		compile_opts o = {.defs = defs, .ndefs = ndefs, .ranks_per_gpu = 1};
		f->prog = sema_check(f->ast, &o, &f->d, &f->a);
	}
}

static void fe_free(fe *f)
{
	arena_free(&f->a);
	src_free(&f->src);
}

static char *diag_text(const fe *f)
{
	strbuf b;
	sb_init(&b);
	diag_render(&f->d, &b, 0);
	return sb_take(&b);
}

/* ---- spans ------------------------------------------------------------------ */

static int within(span in, span outer)
{
	return in.file == outer.file && in.start >= outer.start && in.end <= outer.end &&
	       in.start <= in.end;
}

static void spans_expr(const ast_expr *e, span parent, uint32_t len, const char *what)
{
	if (!e)
		return;
	CHECK(within(e->where, parent) && e->where.end <= len,
	      "%s: expression [%u,%u) outside [%u,%u)", what, e->where.start,
	      e->where.end, parent.start, parent.end);
	if (e->kind == AST_E_NEG || e->kind == AST_E_BIN)
		spans_expr(e->lhs, e->where, len, what);
	if (e->kind == AST_E_BIN)
		spans_expr(e->rhs, e->where, len, what);
}

static void spans_ident(ast_ident id, span parent, const char *what)
{
	CHECK(within(id.where, parent), "%s: name '%s' outside its statement", what,
	      id.name);
}

static void spans_attrs(const ast_attrs *v, span parent, uint32_t len, const char *what)
{
	for (int i = 0; i < v->n; i++) {
		CHECK(within(v->v[i].where, parent), "%s: attribute outside", what);
		spans_ident(v->v[i].name, v->v[i].where, what);
		for (int j = 0; j < v->v[i].args.n; j++)
			spans_expr(v->v[i].args.v[j], v->v[i].where, len, what);
	}
}

static void check_spans(const fe *f, const char *what)
{
	const struct ast_pipeline *p = f->ast;
	uint32_t len = f->src.files[f->file].len;
	span file = {f->file, 0, len};
	CHECK(within(p->where, file), "%s: pipeline span", what);
	spans_ident(p->name, p->where, what);
	for (int i = 0; i < p->nstmts; i++) {
		const ast_stmt *s = p->stmts[i];
		span w = s->where;
		CHECK(within(w, p->where), "%s: statement %d outside the pipeline", what, i);
		switch (s->kind) {
		case AST_MESH:
			spans_expr(s->u.mesh.nodes, w, len, what);
			spans_expr(s->u.mesh.gpus, w, len, what);
			break;
		case AST_PARAM:
			spans_ident(s->u.param.name, w, what);
			spans_expr(s->u.param.value, w, len, what);
			break;
		case AST_DECL:
			spans_ident(s->u.decl.name, w, what);
			spans_ident(s->u.decl.dtype, w, what);
			CHECK(within(s->u.decl.dims_where, w), "%s: dims", what);
			for (int j = 0; j < s->u.decl.dims.n; j++)
				spans_expr(s->u.decl.dims.v[j], s->u.decl.dims_where, len, what);
			spans_attrs(&s->u.decl.attrs, w, len, what);
			break;
		case AST_ASSIGN:
		case AST_PUT:
			spans_ident(s->u.op.target, w, what);
			if (s->u.op.staged) {
				spans_ident(s->u.op.stage, w, what);
				spans_ident(s->u.op.how, w, what);
			}
			if (s->kind == AST_ASSIGN) {
				CHECK(within(s->u.op.call.where, w), "%s: call", what);
				for (int j = 0; j < s->u.op.call.args.n; j++)
					spans_expr(s->u.op.call.args.v[j], s->u.op.call.where,
						   len, what);
			} else {
				spans_ident(s->u.op.part, w, what);
				spans_ident(s->u.op.src, w, what);
				spans_ident(s->u.op.set, w, what);
			}
			spans_attrs(&s->u.op.hints, w, len, what);
			break;
		case AST_ROLES:
			for (int j = 0; j < s->u.roles.n; j++) {
				CHECK(within(s->u.roles.v[j].where, w), "%s: role", what);
				spans_expr(s->u.roles.v[j].count, s->u.roles.v[j].where, len, what);
			}
			break;
		}
	}
	if (!f->prog)
		return;
	for (int i = 0; i < f->prog->ntensors; i++)
		CHECK(within(f->prog->tensors[i].where, file), "%s: tensor span", what);
	for (int i = 0; i < f->prog->nops; i++)
		CHECK(within(f->prog->ops[i].where, file), "%s: op span", what);
}

/* ---- the checked program's promises ------------------------------------------ */

static void check_prog(const ir_prog *p, const char *what)
{
	CHECK(p->world == p->nodes * p->gpus, "%s: world", what);
	int *writers = calloc((size_t)p->ntensors + 1, sizeof *writers);
	int *uses = calloc((size_t)p->ntensors + 1, sizeof *uses);
	for (int k = 0; k < p->nops; k++) {
		const ir_op *op = &p->ops[k];
		CHECK(op->out >= 0 && op->out < p->ntensors, "%s: op %d out", what, k);
		CHECK(op->stage && *op->stage, "%s: op %d has no stage name", what, k);
		writers[op->out]++;
		for (int j = 0; j < op->nin; j++) {
			const ir_tensor *t = &p->tensors[op->in[j]];
			CHECK(t->kind == TK_IN || (t->producer >= 0 && t->producer < k),
			      "%s: op %d reads '%s' before it is produced", what, k, t->name);
			int dup = 0;
			for (int i = 0; i < j; i++)
				dup |= op->in[i] == op->in[j];
			if (!dup)
				uses[op->in[j]]++;
		}
	}
	for (int i = 0; i < p->ntensors; i++) {
		const ir_tensor *t = &p->tensors[i];
		CHECK(writers[i] == t->nwriters, "%s: '%s' nwriters %d, counted %d", what,
		      t->name, t->nwriters, writers[i]);
		CHECK(uses[i] == t->nuses, "%s: '%s' nuses %d, counted %d", what, t->name,
		      t->nuses, uses[i]);
		CHECK((t->kind == TK_IN) == (t->producer < 0), "%s: '%s' producer", what,
		      t->name);
		CHECK(t->ndim >= 1 && t->ndim <= IR_MAXDIM, "%s: '%s' ndim", what, t->name);
		for (int d = 0; d < t->ndim; d++) {
			int64_t want = t->shape[d];
			if (t->place.kind == PL_SPLIT && t->place.dim == d) {
				int g = t->place.group == GRP_GPUS ? p->gpus
				      : t->place.group == GRP_NODES ? p->nodes : p->world;
				CHECK(t->shape[d] % g == 0, "%s: '%s' indivisible", what, t->name);
				want = t->shape[d] / g;
			}
			CHECK(t->local[d] == want && want > 0, "%s: '%s' local[%d]", what,
			      t->name, d);
			CHECK(t->rot[d].unit == 0, "%s: rot set by sema", what);
		}
	}
	free(writers);
	free(uses);
}

/* ---- samples ------------------------------------------------------------------ */

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmpdbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void test_samples(void)
{
	DIR *dir = opendir("samples");
	CHECK(dir != NULL, "no samples/ (run from the repository root)");
	if (!dir)
		return;
	char *names[256];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dir)) && n < 256) {
		size_t l = strlen(e->d_name);
		if (l > 3 && !strcmp(e->d_name + l - 3, ".mk"))
			names[n++] = strdup(e->d_name);
	}
	closedir(dir);
	qsort(names, (size_t)n, sizeof names[0], cmpstr);
	CHECK(n >= 9, "only %d samples", n);

	static const mk_define meshes[][2] = {
		{{"nodes", 1}, {"gpus", 1}}, {{"nodes", 1}, {"gpus", 8}},
		{{"nodes", 2}, {"gpus", 8}}, {{"nodes", 4}, {"gpus", 8}},
	};
	for (int i = 0; i < n; i++) {
		char path[512];
		snprintf(path, sizeof path, "samples/%s", names[i]);
		srcset file;
		src_init(&file);
		int err, id = src_load(&file, path, &err);
		CHECK(id >= 0, "cannot read %s", path);
		if (id < 0) {
			src_free(&file);
			continue;
		}
		const char *text = file.files[id].text;
		size_t len = file.files[id].len;
		for (int m = 0; m < 4; m++) {
			fe f;
			fe_text(&f, path, text, len, meshes[m], 2);
			char what[600];
			snprintf(what, sizeof what, "%s at %lldx%lld", path,
				 (long long)meshes[m][0].value, (long long)meshes[m][1].value);
			char *msg = diag_text(&f);
			CHECK(f.prog && f.d.nerrors == 0 && f.d.nwarnings == 0,
			      "%s does not check cleanly:\n%s", what, msg);
			free(msg);
			if (f.ast)
				check_spans(&f, what);
			if (f.prog)
				check_prog(f.prog, what);
			fe_free(&f);
		}

		/* stable listings */
		strbuf a1, a2, c1, c2;
		sb_init(&a1), sb_init(&a2), sb_init(&c1), sb_init(&c2);
		fe f1, f2;
		fe_text(&f1, path, text, len, NULL, 0);
		fe_text(&f2, path, text, len, NULL, 0);
		ast_dump(f1.ast, &f1.src, &a1);
		ast_dump(f2.ast, &f2.src, &a2);
		inspect_program(f1.prog, &c1);
		inspect_program(f2.prog, &c2);
		CHECK(a1.len > 0 && !strcmp(sb_str(&a1), sb_str(&a2)), "%s: ast listing", path);
		CHECK(c1.len > 0 && !strcmp(sb_str(&c1), sb_str(&c2)), "%s: check listing", path);
		sb_free(&a1), sb_free(&a2), sb_free(&c1), sb_free(&c2);
		fe_free(&f1);
		fe_free(&f2);

		/* timing: parse + check, median of many runs */
		enum { RUNS = 401 };
		static double t[RUNS];
		for (int r = 0; r < RUNS; r++) {
			double t0 = now_us();
			fe f;
			fe_text(&f, path, text, len, meshes[2], 2);
			t[r] = now_us() - t0;
			fe_free(&f);
		}
		qsort(t, RUNS, sizeof t[0], cmpdbl);
		printf("time %-28s %5zu bytes  parse+check median %6.1f us  (min %.1f, max %.1f)\n",
		       names[i], len, t[RUNS / 2], t[0], t[RUNS - 1]);
		CHECK(t[RUNS / 2] < 20000, "%s: front end takes %.0f us", path, t[RUNS / 2]);
		src_free(&file);
		free(names[i]);
	}
}

/* ---- order, scale ---------------------------------------------------------------- */

static void test_order(void)
{
	/* written consumers first */
	const char *src =
		"pipeline back {\n"
		"  in X : bf16[64, 64]\n"
		"  out Y : bf16[64, 64]\n"
		"  Y = relu(C)\n"
		"  C = add(B, A)\n"
		"  B = gelu(A)\n"
		"  A = scale(X, 2)\n"
		"}\n";
	fe f;
	fe_text(&f, "back.mk", src, strlen(src), NULL, 0);
	CHECK(f.prog && f.prog->nops == 4, "backwards pipeline");
	if (f.prog) {
		const char *want[] = {"A", "B", "C", "Y"};
		for (int k = 0; k < 4; k++)
			CHECK(!strcmp(f.prog->tensors[f.prog->ops[k].out].name, want[k]),
			      "op %d writes %s", k, f.prog->tensors[f.prog->ops[k].out].name);
		check_prog(f.prog, "back.mk");
	}
	fe_free(&f);

	/* a long chain, written backwards: no deep recursion, near-linear time */
	enum { N = 2000 };
	strbuf b;
	sb_init(&b);
	sb_puts(&b, "pipeline long {\n  in T0 : f32[64]\n  out Y : f32[64]\n");
	sb_printf(&b, "  Y = relu(T%d)\n", N);
	for (int i = N; i >= 1; i--)
		sb_printf(&b, "  T%d = %s(T%d)\n", i, i % 2 ? "relu" : "gelu", i - 1);
	sb_puts(&b, "}\n");
	double t0 = now_us();
	fe_text(&f, "long.mk", b.s, b.len, NULL, 0);
	double dt = now_us() - t0;
	CHECK(f.prog && f.prog->nops == N + 1, "long chain");
	if (f.prog)
		check_prog(f.prog, "long.mk");
	printf("time %d-op chain, written backwards: %.1f ms\n", N + 1, dt / 1000);
	CHECK(dt < 2e6, "long chain takes %.0f ms", dt / 1000);
	fe_free(&f);
	sb_free(&b);
}

/* Big inputs of the shapes that could go quadratic: each must stay fast. */
static void test_scale(void)
{
	enum { N = 10000 };
	const char *what[] = {"unused inputs", "unknown names", "put stages",
			      "one long cycle", "staged ops", "params"};
	for (int kind = 0; kind < 6; kind++) {
		strbuf b;
		sb_init(&b);
		sb_puts(&b, "pipeline big {\n  in A : f32[64, 8] split(0)\n");
		for (int i = 0; i < N; i++)
			switch (kind) {
			case 0: sb_printf(&b, "  in I%d : f32[8]\n", i); break;
			case 1: sb_printf(&b, "  T%d = relu(Nope%d)\n", i, i); break;
			case 2: sb_printf(&b, "  stage s%d : nvlink G%d[rows of p] <- A@p "
					  "for p in world\n", i, i); break;
			case 3: sb_printf(&b, "  T%d = relu(T%d)\n", i, (i + 1) % N); break;
			case 4: sb_printf(&b, "  stage s%d : compute T%d = relu(A)\n", i, i); break;
			case 5: sb_printf(&b, "  param P%d = %s%d + 1\n", i, i ? "P" : "",
					  i ? i - 1 : 0); break;
			}
		sb_puts(&b, "}\n");
		double t0 = now_us();
		fe f;
		fe_text(&f, "big.mk", b.s, b.len, NULL, 0);
		strbuf r;
		sb_init(&r);
		diag_render(&f.d, &r, 0);
		double dt = now_us() - t0;
		printf("time %d-statement file of %s: %.1f ms, %d errors, %d warnings\n",
		       N, what[kind], dt / 1000, f.d.nerrors, f.d.nwarnings);
		CHECK(dt < 3e6, "%s: %.0f ms", what[kind], dt / 1000);
		sb_free(&r);
		fe_free(&f);
		sb_free(&b);
	}
}

/* ---- errors --------------------------------------------------------------------- */

static int count_errors(const char *text, size_t n, int *nerr)
{
	fe f;
	fe_text(&f, "t.mk", text, n, NULL, 0);
	*nerr = f.d.nerrors;
	int ok = f.prog == NULL;
	char *msg = diag_text(&f);   /* rendering must not crash either */
	free(msg);
	fe_free(&f);
	return ok;
}

static void test_errors(void)
{
	int n;
	const char *three =
		"pipeline p {\n"
		"  param M = 64 *\n"          /* continues: next line is the operand */
		"  , N = 1\n"
		"  in A : bf16[M N]\n"
		"  C = matmul(A B)\n"
		"}\n";
	CHECK(count_errors(three, strlen(three), &n) && n == 3, "three errors, got %d", n);

	const char hostile[] = "pipeline p {\n in A\0 : bf16[4] \xff\xfe\n}\n";
	CHECK(count_errors(hostile, sizeof hostile - 1, &n) && n >= 2,
	      "NUL and bad UTF-8: %d errors", n);

	strbuf b;
	sb_init(&b);
	sb_puts(&b, "pipeline p {\n param M = ");
	for (int i = 0; i < 100000; i++)
		sb_putc(&b, '(');
	sb_puts(&b, "1\n}\n");
	CHECK(count_errors(b.s, b.len, &n) && n == 1, "deep brackets: %d errors", n);
	b.len = 0;
	sb_puts(&b, "pipeline p {\n param M = ");
	for (int i = 0; i < 100000; i++)
		sb_puts(&b, "- ");
	sb_puts(&b, "1\n}\n");
	CHECK(count_errors(b.s, b.len, &n) && n == 1, "deep unary minus: %d errors", n);
	b.len = 0;
	sb_puts(&b, "pipeline p {\n param M = 1");
	for (int i = 0; i < 100000; i++)
		sb_puts(&b, "+1");
	sb_puts(&b, "\n}\n");
	CHECK(count_errors(b.s, b.len, &n) && n == 1, "long sum: %d errors", n);
	sb_free(&b);

	const char *big = "pipeline p { param M = 99999999999999999999 }";
	CHECK(count_errors(big, strlen(big), &n) && n == 1, "huge literal: %d", n);
	CHECK(count_errors("", 0, &n) && n == 1, "empty file: %d", n);

	/* parse_source on a bad file index */
	srcset s;
	src_init(&s);
	arena a;
	arena_init(&a);
	diags d;
	diag_init(&d, &s, &a);
	CHECK(parse_source(&s, 3, &d, &a) == NULL, "bad file index");
	CHECK(sema_check(NULL, NULL, &d, &a) == NULL, "sema of NULL");
	arena_free(&a);
	src_free(&s);
}

/* ---- rendering -------------------------------------------------------------------- */

static void test_render(void)
{
	/* the caret counts UTF-8 characters, not bytes */
	const char *src = "pipeline p { # µµ\n  in µ : bf16[4]\n}\n";
	fe f;
	fe_text(&f, "u.mk", src, strlen(src), NULL, 0);
	char *msg = diag_text(&f);
	CHECK(strstr(msg, "u.mk:2:6: error: unexpected character U+00B5\n"
			  "    in µ : bf16[4]\n       ^\n") != NULL, "got:\n%s", msg);
	free(msg);
	fe_free(&f);
}

int main(void)
{
	test_samples();
	test_order();
	test_scale();
	test_errors();
	test_render();
	if (failures)
		fprintf(stderr, "test_frontend: %d failures\n", failures);
	return failures != 0;
}
