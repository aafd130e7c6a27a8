/* lower_layout.c - layout ops: heads(X, H) ([T, H*D] -> [H, T, D]) and
 * merge_heads ([H, T, D] -> [T, H*D]).  The elements move in memory, so
 * these are copies (a view would need strided operands in every tile that
 * reads them): one task per head of the rank and block of about 64 KB of
 * its rows, reading exactly the columns of that head.  The rank's heads
 * are its own (sema keeps the split on the heads), so nothing crosses
 * ranks. */
#include "tiles.h"

void lower_layout(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *x = &p->tensors[op->in[0]], *y = &p->tensors[op->out];
	int heads = op->kind == OP_HEADS;
	const ir_tensor *h3 = heads ? y : x;         /* the [H, T, D] side */
	int64_t Hl = h3->local[0], T = h3->shape[1], D = h3->shape[2];
	int64_t esz = ir_dtype_size(y->dtype);
	int64_t rows = D * esz > 0 ? 64 * 1024 / (D * esz) : T;
	if (rows < 1)
		rows = 1;
	/* token blocks never cross a unit of a shard rotation on either side
	 * (the verifier's premise: sigma_r moves every box whole) */
	const ir_tensor *f2 = heads ? x : y;
	int64_t u = 0, us[2] = {h3->rot[1].unit, f2->rot[0].unit};
	for (int k = 0; k < 2; k++)
		if (us[k] > 0 && (u == 0 || us[k] < u))
			u = us[k];
	ir_region f3 = lower_full(p, heads ? op->out : op->in[0], 0);
	for (int64_t h = f3.lo[0]; h < f3.lo[0] + Hl; h++)
		for (int64_t t0 = 0, t1; t0 < T; t0 = t1) {
			t1 = t0 + rows < T ? t0 + rows : T;
			if (u > 0 && t1 > (t0 / u + 1) * u)
				t1 = (t0 / u + 1) * u;
			ir_task *t = lower_task(L, TASK_EW, oi);
			if (!t)
				return;
			ir_region a = {.tensor = heads ? op->out : op->in[0]};
			a.lo[0] = h, a.hi[0] = h + 1;
			a.lo[1] = t0, a.hi[1] = t1;
			a.lo[2] = 0, a.hi[2] = D;
			ir_region b = {.tensor = heads ? op->in[0] : op->out};
			b.lo[0] = t0, b.hi[0] = t1;
			b.lo[1] = h * D, b.hi[1] = (h + 1) * D;
			t->write = heads ? a : b;
			lower_read(L, t, heads ? b : a);
			t->bytes = 2.0 * (double)((t1 - t0) * D * esz);
		}
}
