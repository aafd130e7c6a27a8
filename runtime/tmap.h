/* tmap.h - TMA tensor maps (CUtensorMap) for the Hopper GEMM engine.
 *
 * mkd/wgmma.cuh loads operand tiles with cp.async.bulk.tensor through a
 * 2-D tensor map per operand, encoded here on the host with the driver's
 * cuTensorMapEncodeTiled.  Every map is row-major with 128-byte swizzle,
 * zero fill out of bounds and 128-byte L2 promotion; the box is
 * box_rows x box_cols with box_cols * dtype_bytes <= 128 (the swizzle
 * span).  The engine wants exactly 128 bytes of columns per box:
 *
 *   A [M][K], K contiguous:  box BM x 64   (128 x 64 for bf16/f16)
 *   B [K][N], N contiguous:  box BK x 64   (64 x 64; BN/64 loads per stage)
 *
 * The 128-byte map (64-byte aligned) is passed to kernels by value
 * (__grid_constant__) or copied to device memory before the launch.
 */
#ifndef MK_TMAP_H
#define MK_TMAP_H

#include <stddef.h>

#include "cudrv.h"

#define MK_TMAP_BYTES 128
#define MK_TMAP_ALIGN 64

/* Encodes a 2-D row-major tensor map: `rows` x `cols` elements of
 * dtype_bytes (1, 2 or 4) at device address base, ld_elems elements from
 * one row to the next.  Returns 0, or -1 with a one-line message in err
 * (n bytes; err may be NULL) when a constraint is broken: base and the row
 * pitch 16-byte aligned, 1 <= rows, cols <= 2^32, cols <= ld_elems,
 * 1 <= box_rows <= 256, box_cols * dtype_bytes a multiple of 16 and at
 * most 128, out128 64-byte aligned; or when the driver refuses. */
int mk_tmap_encode(const cudrv *cu, void *out128, unsigned long long base, int dtype_bytes,
		   long long rows, long long cols, long long ld_elems, int box_rows, int box_cols,
		   char *err, size_t n);

#endif
