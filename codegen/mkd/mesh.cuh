/* mkd/mesh.cuh - sigma_r, the map from rank 0's view to rank r's.
 *
 * The generated task tables describe rank 0's work; rank r runs the image of
 * each task under sigma_r, which shifts ranks on the nodes x gpus mesh and
 * moves every shard-tied coordinate to the shifted shard (compiler/ir.h has
 * the same map on the host; the two must agree).
 */
#ifndef MKD_MESH_CUH
#define MKD_MESH_CUH

#include "base.cuh"

/* rank x of rank 0's view, seen by rank r */
template <int NODES, int GPUS>
MKD_INLINE int mkd_shift_rank(int x, int r)
{
	if (NODES * GPUS == 1)
		return 0;
	int xn = x / GPUS, xg = x % GPUS, rn = r / GPUS, rg = r % GPUS;
	return ((xn + rn) % NODES) * GPUS + (xg + rg) % GPUS;
}

/* groups, as compiler/ir.h's ir_group */
enum { MKD_GRP_WORLD = 0, MKD_GRP_GPUS = 1, MKD_GRP_NODES = 2 };

template <int NODES, int GPUS, int GROUP>
MKD_INLINE int mkd_shift_shard(int s, int r)
{
	if (GROUP == MKD_GRP_GPUS)
		return (s + r % GPUS) % GPUS;
	if (GROUP == MKD_GRP_NODES)
		return (s + r / GPUS) % NODES;
	return mkd_shift_rank<NODES, GPUS>(s, r);
}

/* a coordinate tied to shards of UNIT elements */
template <int NODES, int GPUS, int GROUP>
MKD_INLINE i64 mkd_shift_coord(i64 x, i64 unit, int r)
{
	i64 s = x / unit;
	return (i64)mkd_shift_shard<NODES, GPUS, GROUP>((int)s, r) * unit + (x - s * unit);
}

/* the shard a rank holds in a group */
template <int GPUS, int GROUP>
MKD_INLINE int mkd_shard_of(int rank)
{
	return GROUP == MKD_GRP_GPUS ? rank % GPUS : GROUP == MKD_GRP_NODES ? rank / GPUS : rank;
}

#endif
