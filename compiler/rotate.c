/* rotate.c - shard rotations: which tensor dimensions move with the ranks.
 *
 * Only rank 0's tasks are made; rank r runs their image under sigma_r
 * (ir.h).  For that to be right, every coordinate tied to a rank's shard
 * must move with the rank: ir_rotate finds those dimensions (a union-find
 * over tensor dimensions that ops identify, seeded by the splits) and
 * records them in ir_tensor.rot.  The expansion's last step.
 */
#include "ir.h"

typedef struct rstate {
	const ir_prog *p;
	diags *d;
	int err;
} rstate;


typedef struct uf {
	int *parent;
	ir_rot *seed;
	int *seeded;
} uf;

static int uf_find(uf *u, int x)
{
	while (u->parent[x] != x) {
		u->parent[x] = u->parent[u->parent[x]];
		x = u->parent[x];
	}
	return x;
}

static void uf_union(uf *u, int a, int b)
{
	a = uf_find(u, a);
	b = uf_find(u, b);
	if (a != b)
		u->parent[a] = b;
}

#define DIMNODE(t, d) ((t) * IR_MAXDIM + (d))

static void tie_all(uf *u, const ir_prog *p, int a, int b)
{
	const ir_tensor *ta = &p->tensors[a], *tb = &p->tensors[b];
	if (ta->ndim != tb->ndim)
		return;
	for (int d = 0; d < ta->ndim; d++)
		uf_union(u, DIMNODE(a, d), DIMNODE(b, d));
}


static void seed(rstate *L, uf *u, int t, int d, ir_rot r, span where)
{
	int c = uf_find(u, DIMNODE(t, d));
	if (!u->seeded[c]) {
		u->seeded[c] = 1;
		u->seed[c] = r;
	} else if (u->seed[c].unit != r.unit || u->seed[c].group != r.group) {
		diag_error(L->d, where,
			   "dimension %d of '%s' is tied to shards of %lld over %s and of %lld over %s; "
			   "mkc needs one shard layout per dimension",
			   d, L->p->tensors[t].name, (long long)u->seed[c].unit,
			   ir_group_name(u->seed[c].group), (long long)r.unit, ir_group_name(r.group));
		L->err = 1;
	}
}

int ir_rotate(ir_prog *p, diags *dg, arena *a)
{
	rstate R = {p, dg, 0}, *L = &R;
	int n = p->ntensors * IR_MAXDIM;
	uf u = {arena_alloc(a, (size_t)n * sizeof(int)),
		arena_alloc(a, (size_t)n * sizeof(ir_rot)),
		arena_alloc(a, (size_t)n * sizeof(int))};
	if (!u.parent || !u.seed || !u.seeded)
		return 1;
	for (int i = 0; i < n; i++)
		u.parent[i] = i;

	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		int o = op->out;
		const ir_tensor *to = &p->tensors[o];
		switch (op->kind) {
		case OP_MATMUL: {
			int A = op->in[0], B = op->in[1];
			int b = to->ndim == 3;  /* batched: dim 0 is the batch */
			if (b) {
				uf_union(&u, DIMNODE(A, 0), DIMNODE(o, 0));
				uf_union(&u, DIMNODE(B, 0), DIMNODE(o, 0));
			}
			uf_union(&u, DIMNODE(A, b + 0), DIMNODE(o, b + 0));
			uf_union(&u, DIMNODE(B, b + 1), DIMNODE(o, b + 1));
			uf_union(&u, DIMNODE(A, b + 1), DIMNODE(B, b + 0));
			if (op->norm_w)  /* the rmsnorm in the tile: its weight along K */
				uf_union(&u, DIMNODE(op->norm_w - 1, 0), DIMNODE(A, b + 1));
			if (op->gate) {  /* the gate's weight, as B */
				uf_union(&u, DIMNODE(op->gate - 1, b + 1), DIMNODE(o, b + 1));
				uf_union(&u, DIMNODE(A, b + 1), DIMNODE(op->gate - 1, b + 0));
			}
			if (op->nin > 2 && p->tensors[op->in[2]].ndim == to->ndim)
				tie_all(&u, p, op->in[2], o);  /* the epilogue's operand */
			else if (op->nin > 2)  /* a bias: the columns */
				uf_union(&u, DIMNODE(op->in[2], 0), DIMNODE(o, to->ndim - 1));
			break;
		}
		case OP_ADD:
		case OP_MUL:
		case OP_RMSNORM:
		case OP_LAYERNORM:
			tie_all(&u, p, op->in[0], o);
			if (op->nin > 1) {
				const ir_tensor *t1 = &p->tensors[op->in[1]];
				if (t1->ndim == to->ndim)
					tie_all(&u, p, op->in[1], o);
				else if (t1->ndim == 1)
					uf_union(&u, DIMNODE(op->in[1], 0), DIMNODE(o, to->ndim - 1));
			}
			break;
		case OP_SUM:  /* X's other dims are Y's, in order */
			for (int d = 0, j = 0; d < p->tensors[op->in[0]].ndim; d++)
				if (d != op->dim)
					uf_union(&u, DIMNODE(op->in[0], d), DIMNODE(o, j++));
			break;
		case OP_HEADS:     /* layout copies: the dimensions paired one */
		case OP_MERGE_HEADS: /* for one (ir_layout_dim); a copy task's */
		case OP_SLICE:     /* read and write must stay the same elements */
		case OP_CONCAT:    /* under sigma_r.  The others (a head's */
		case OP_TRANSPOSE: /* columns, a slice's offset, a reshape's */
		case OP_RESHAPE:   /* last dimensions) are not tied: their units
			 * differ, and each side's split seeds them; the copy reads
			 * them whole where only one side moves (lower_layout.c) */
			for (int k = 0; k < op->nin; k++)
				for (int d = 0; d < to->ndim; d++) {
					int dx = ir_layout_dim(p, op, k, d);
					if (dx >= 0)
						uf_union(&u, DIMNODE(op->in[k], dx), DIMNODE(o, d));
				}
			break;
		case OP_ROPE:      /* the tables are read whole, by token */
			tie_all(&u, p, op->in[0], o);
			break;
		case OP_ATTENTION: {  /* the keys are not the queries' rows */
			int Q = op->in[0], K = op->in[1], V = op->in[2];
			int sd = to->ndim - 2;   /* the sequence dimension */
			tie_all(&u, p, Q, o);
			tie_all(&u, p, K, V);
			for (int d = 0; d < to->ndim; d++)
				if (d != sd)
					uf_union(&u, DIMNODE(K, d), DIMNODE(o, d));
			break;
		}
		case OP_DISPATCH:  /* tokens with their routing */
			uf_union(&u, DIMNODE(op->in[0], 0), DIMNODE(op->in[1], 0));
			break;
		case OP_COMBINE:   /* routing, gates and result share the tokens */
			uf_union(&u, DIMNODE(op->in[1], 0), DIMNODE(o, 0));
			uf_union(&u, DIMNODE(op->in[2], 0), DIMNODE(o, 0));
			break;
		default:
			for (int k = 0; k < op->nin; k++)
				tie_all(&u, p, op->in[k], o);
			break;
		}
	}
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		if (x->place.kind == PL_SPLIT && ir_group_size(p, x->place.group) > 1)
			seed(L, &u, t, x->place.dim,
			     (ir_rot){x->local[x->place.dim], x->place.group}, x->where);
	}
	for (int t = 0; t < p->ntensors; t++)
		for (int d = 0; d < p->tensors[t].ndim; d++) {
			int c = uf_find(&u, DIMNODE(t, d));
			if (u.seeded[c])
				p->tensors[t].rot[d] = u.seed[c];
		}
	return R.err;
}
