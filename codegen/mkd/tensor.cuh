/* mkd/tensor.cuh - where a logical element of a tensor lives on a rank.
 *
 * Generated kernels describe each tensor once (mkd_tensor: element size,
 * split dimension and group, local shape, the dimensions tied to rank
 * shards, and where its elements lie: a view's in its root's storage).  Shapes are normalised to 3-D ([batch, rows, cols], leading 1s).
 */
#ifndef MKD_TENSOR_CUH
#define MKD_TENSOR_CUH

#include "base.cuh"
#include "abi.cuh"
#include "mesh.cuh"

struct mkd_tensor {
	int esize;
	int split;        /* split dimension (0..2), -1 if not split */
	int group;        /* MKD_GRP_* of the split */
	i64 local[3];     /* local shape */
	i64 rot[3];       /* shard unit of dims that move with the rank, 0 = none */
	int rotg[3];      /* their groups */
	int root;         /* the tensor whose storage holds it: itself, or a
	                     view's root (compiler/plan_view.c) */
	i64 off;          /* its element (0, 0, 0) there, in elements */
	i64 st[3];        /* element strides (st[2] = 1); row-major local
	                     unless a view: st[1] is the row stride every tile
	                     takes as its leading dimension */
};

template <int GPUS>
MKD_INLINE int mkd_shard_of_rt(int group, int rank)
{
	return group == MKD_GRP_GPUS ? rank % GPUS : group == MKD_GRP_NODES ? rank / GPUS : rank;
}

/* first logical index of dimension d that `rank` stores */
template <int GPUS>
MKD_INLINE i64 mkd_base(const mkd_tensor &t, int d, int rank)
{
	return d == t.split ? (i64)mkd_shard_of_rt<GPUS>(t.group, rank) * t.local[d] : 0;
}

/* address of logical element (i0, i1, i2) of tensor ti (described by t) on
 * rank x: in the storage of t.root, which is ti unless ti is a view */
template <int GPUS>
MKD_INLINE char *mkd_at(const mkd_params &p, int ti, const mkd_tensor &t, int x,
			i64 i0, i64 i1, i64 i2)
{
	(void)ti;
	char *b = (char *)p.ranks[x].buf[t.root];
	i0 -= mkd_base<GPUS>(t, 0, x);
	i1 -= mkd_base<GPUS>(t, 1, x);
	i2 -= mkd_base<GPUS>(t, 2, x);
	return b + (t.off + i0 * t.st[0] + i1 * t.st[1] + i2) * t.esize;
}

/* where tensor t starts on rank x: the origin of its tensor maps */
MKD_INLINE const char *mkd_origin(const mkd_params &p, const mkd_tensor &t, int x)
{
	return (const char *)p.ranks[x].buf[t.root] + t.off * t.esize;
}

/* sigma_r on a box of rank 0's view; a box spanning every shard of a
 * rotated dimension stays (compiler/ir.c, ir_rot_whole) */
template <int NODES, int GPUS>
MKD_INLINE void mkd_box_shift(const mkd_tensor &t, int r, const int *lo, const int *hi,
			      i64 *olo, i64 *ohi)
{
#pragma unroll
	for (int d = 0; d < 3; d++) {
		i64 a = lo[d], len = (i64)hi[d] - lo[d];
		const i64 whole = t.rot[d] * (t.rotg[d] == MKD_GRP_GPUS ? GPUS
				  : t.rotg[d] == MKD_GRP_NODES ? NODES : NODES * GPUS);
		if (t.rot[d] > 0 && !(a == 0 && len == whole)) {
			i64 s = a / t.rot[d];
			int ns = t.rotg[d] == MKD_GRP_GPUS ? (int)((s + r % GPUS) % GPUS)
				 : t.rotg[d] == MKD_GRP_NODES ? (int)((s + r / GPUS) % NODES)
				 : mkd_shift_rank<NODES, GPUS>((int)s, r);
			a = (i64)ns * t.rot[d] + (a - s * t.rot[d]);
		}
		olo[d] = a;
		ohi[d] = a + len;
	}
}

#endif
