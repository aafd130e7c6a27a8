/* sema_dump.c - the --emit=check listing of a checked program (sema.h says
 * what it shows).  It reads only the ir_prog.
 */
#include "sema.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_name[] = {"in", "out", "temp"};
static const char *const transport_name[] = {"auto", "local", "nvlink", "rdma"};
static const char *const peers_name[] = {"world", "node", "remote"};

static void dump_shape(strbuf *out, int nd, const int64_t *sh)
{
	sb_putc(out, '[');
	for (int i = 0; i < nd; i++)
		sb_printf(out, "%s%lld", i ? ", " : "", (long long)sh[i]);
	sb_putc(out, ']');
}

/* A table of text cells, printed with every column padded to its widest
 * cell (the last column is not padded). */
enum { NCOL = 7 };
typedef struct table {
	strbuf cell[NCOL];
	char **v;
	int rows, ncol;
} table;

static void table_row(table *tb)
{
	char **nv = realloc(tb->v, (size_t)(tb->rows + 1) * NCOL * sizeof *nv);
	if (!nv)
		return;
	tb->v = nv;
	for (int c = 0; c < NCOL; c++) {
		nv[tb->rows * NCOL + c] = sb_take(&tb->cell[c]);
		sb_init(&tb->cell[c]);
	}
	tb->rows++;
}

static void table_print(table *tb, strbuf *out)
{
	int w[NCOL] = {0};
	for (int r = 0; r < tb->rows; r++)
		for (int c = 0; c < tb->ncol; c++) {
			int n = (int)strlen(tb->v[r * NCOL + c]);
			w[c] = n > w[c] ? n : w[c];
		}
	for (int r = 0; r < tb->rows; r++) {
		strbuf line;
		sb_init(&line);
		for (int c = 0; c < tb->ncol; c++) {
			const char *x = tb->v[r * NCOL + c];
			sb_printf(&line, "  %-*s", c == tb->ncol - 1 ? 0 : w[c], x);
		}
		while (line.len && line.s[line.len - 1] == ' ')
			line.s[--line.len] = 0;
		sb_puts(out, sb_str(&line));
		sb_putc(out, '\n');
		sb_free(&line);
	}
	for (int i = 0; i < tb->rows * NCOL; i++)
		free(tb->v[i]);
	free(tb->v);
	for (int c = 0; c < NCOL; c++)
		sb_free(&tb->cell[c]);
}

void sema_dump(const ir_prog *p, strbuf *out)
{
	if (!p)
		return;
	sb_printf(out, "pipeline %s\n", p->name);
	sb_printf(out, "mesh %d x %d (world %d)\n", p->nodes, p->gpus, p->world);
	for (int i = 0; i < p->nparams; i++)
		sb_printf(out, "param %s = %lld%s\n", p->params[i].name,
			  (long long)p->params[i].value,
			  p->params[i].overridden ? "  (-D)" : "");
	if (p->nroles) {
		sb_puts(out, "roles");
		for (int i = 0; i < p->nroles; i++)
			sb_printf(out, "%s %s %d", i ? "," : "",
				  ir_role_name(p->roles[i].role), p->roles[i].ctas);
		sb_putc(out, '\n');
	}

	table tb = {.ncol = 7};
	for (int c = 0; c < NCOL; c++)
		sb_init(&tb.cell[c]);
	sb_printf(out, "\ntensors (%d):\n", p->ntensors);
	for (int i = 0; i < p->ntensors; i++) {
		const ir_tensor *t = &p->tensors[i];
		char pb[32];
		sb_puts(&tb.cell[0], t->name);
		sb_puts(&tb.cell[1], kind_name[t->kind]);
		sb_puts(&tb.cell[2], ir_dtype_name(t->dtype));
		dump_shape(&tb.cell[2], t->ndim, t->shape);
		sb_puts(&tb.cell[3], sema_place_name(t->place, pb, sizeof pb));
		sb_puts(&tb.cell[4], "per rank ");
		dump_shape(&tb.cell[4], t->ndim, t->local);
		if (t->producer >= 0)
			sb_printf(&tb.cell[5], "from op %d", t->producer);
		if (t->nwriters > 1)
			sb_printf(&tb.cell[5], " (+%d)", t->nwriters - 1);
		sb_printf(&tb.cell[6], "uses %d", t->nuses);
		table_row(&tb);
	}
	table_print(&tb, out);

	table to = {.ncol = 3};
	for (int c = 0; c < NCOL; c++)
		sb_init(&to.cell[c]);
	sb_printf(out, "\nops (%d):\n", p->nops);
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		const char *o = p->tensors[op->out].name;
		strbuf *x = &to.cell[2];
		sb_printf(&to.cell[0], "%d", i);
		sb_puts(&to.cell[1], op->stage);
		if (op->kind == OP_PUT) {
			sb_printf(x, "%s[%s of p] <- %s@p for p in %s  %s", o,
				  op->dim ? "cols" : "rows", p->tensors[op->in[0]].name,
				  peers_name[op->peers], transport_name[op->transport]);
		} else {
			sb_printf(x, "%s = %s(", o, ir_op_name(op->kind));
			for (int j = 0; j < op->nin; j++)
				sb_printf(x, "%s%s", j ? ", " : "", p->tensors[op->in[j]].name);
			switch (op->kind) {
			case OP_SCALE: sb_printf(x, ", %g", op->scalar); break;
			case OP_CAST: sb_printf(x, ", %s", ir_dtype_name(op->to)); break;
			case OP_SUM: case OP_ALLGATHER: case OP_REDUCE_SCATTER:
			case OP_RING_SHIFT:
				sb_printf(x, ", %d", op->dim);
				break;
			case OP_ATTENTION:
				if (op->causal)
					sb_puts(x, ", causal");
				break;
			case OP_DISPATCH:
				sb_printf(x, ", %lld, %lld", (long long)op->experts,
					  (long long)op->capacity);
				break;
			default: break;
			}
			sb_putc(x, ')');
		}
		if (op->hints.ntile) {
			sb_puts(x, "  tile ");
			for (int j = 0; j < op->hints.ntile; j++)
				sb_printf(x, "%s%lld", j ? " x " : "",
					  (long long)op->hints.tile[j]);
		}
		if (op->hints.chunk)
			sb_printf(x, "  chunk %lld", (long long)op->hints.chunk);
		if (op->hints.tasks)
			sb_printf(x, "  tasks %lld", (long long)op->hints.tasks);
		if (op->kind == OP_ATTENTION)
			sb_printf(x, "  (scale %.6g)", op->scalar);
		table_row(&to);
	}
	table_print(&to, out);
}
