/* ir_edit.c - editing a checked program: adding tensors, inserting and
 * removing ops.  Below every pass; the expansion (expand.c) is its user. */
#include "ir.h"

#include <string.h>

int ir_add_tensor(ir_prog *p, arena *a, const ir_tensor *proto, const char *base,
		  const char *suffix)
{
	ir_tensor *nt = arena_alloc(a, (size_t)(p->ntensors + 1) * sizeof *nt);
	if (!nt)
		return -1;
	memcpy(nt, p->tensors, (size_t)p->ntensors * sizeof *nt);
	ir_tensor t = *proto;
	/* names cannot hold "__" and a digit-led suffix both */
	t.name = arena_printf(a, "%s__%s", base, suffix);
	for (int k = 2; t.name && ir_find_tensor(p, t.name) >= 0; k++)
		t.name = arena_printf(a, "%s__%s%d", base, suffix, k);
	if (!t.name)
		return -1;
	t.kind = TK_TEMP;
	t.producer = -1;
	t.nwriters = 0;
	t.nuses = 0;
	memset(t.rot, 0, sizeof t.rot);
	nt[p->ntensors] = t;
	p->tensors = nt;
	return p->ntensors++;
}

int ir_insert_op(ir_prog *p, arena *a, int at, ir_op op)
{
	ir_op *no = arena_alloc(a, (size_t)(p->nops + 1) * sizeof *no);
	if (!no)
		return -1;
	memcpy(no, p->ops, (size_t)at * sizeof *no);
	no[at] = op;
	memcpy(no + at + 1, p->ops + at, (size_t)(p->nops - at) * sizeof *no);
	p->ops = no;
	p->nops++;
	for (int t = 0; t < p->ntensors; t++)
		if (p->tensors[t].producer >= at)
			p->tensors[t].producer++;
	return 0;
}

void ir_remove_op(ir_prog *p, int at)
{
	memmove(p->ops + at, p->ops + at + 1, (size_t)(p->nops - at - 1) * sizeof *p->ops);
	p->nops--;
	for (int t = 0; t < p->ntensors; t++)
		if (p->tensors[t].producer > at)
			p->tensors[t].producer--;
}

void ir_fold_tensor(ir_tensor *t)
{
	t->folded = true;
	t->producer = -1;
	t->nwriters = 0;
	t->nuses = 0;
}
