/* tmap.c - TMA tensor maps for the Hopper GEMM engine; see tmap.h.
 *
 * The driver checks these constraints too, but answers only
 * CUDA_ERROR_INVALID_VALUE; checking first lets the message say which.
 */
#include "tmap.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

static int bad(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (err && n) {
		va_start(ap, fmt);
		vsnprintf(err, n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int mk_tmap_encode(const cudrv *cu, void *out128, unsigned long long base, int dtype_bytes,
		   long long rows, long long cols, long long ld_elems, int box_rows, int box_cols,
		   char *err, size_t n)
{
	const long long lim = 1LL << 32;
	CUtensorMapDataType dt;
	cuuint64_t dim[2], stride[1];
	cuuint32_t box[2], estride[2] = {1, 1};
	long long pitch;
	CUresult r;

	if (err && n)
		err[0] = '\0';
	if (!cu || !cu->cuTensorMapEncodeTiled)
		return bad(err, n, "tensor map: no CUDA driver");
	if (!out128 || ((uintptr_t)out128 & (MK_TMAP_ALIGN - 1)))
		return bad(err, n, "tensor map: output not 64-byte aligned");
	switch (dtype_bytes) {
	case 1: dt = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
	case 2: dt = CU_TENSOR_MAP_DATA_TYPE_UINT16; break;
	case 4: dt = CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
	default: return bad(err, n, "tensor map: element size %d (1, 2 or 4)", dtype_bytes);
	}
	if (base & 15)
		return bad(err, n, "tensor map: base address 0x%llx not 16-byte aligned", base);
	if (rows < 1 || rows > lim || cols < 1 || cols > lim)
		return bad(err, n, "tensor map: shape %lld x %lld out of range (1 .. 2^32)", rows,
			   cols);
	if (ld_elems < cols)
		return bad(err, n, "tensor map: row pitch %lld elements below %lld columns", ld_elems,
			   cols);
	if (ld_elems > (1LL << 40) / dtype_bytes)
		return bad(err, n, "tensor map: row pitch %lld elements too large", ld_elems);
	pitch = ld_elems * dtype_bytes;
	if (pitch & 15)
		return bad(err, n, "tensor map: row pitch %lld bytes not a multiple of 16", pitch);
	if (box_rows < 1 || box_rows > 256)
		return bad(err, n, "tensor map: box of %d rows (1 .. 256)", box_rows);
	if (box_cols < 1 || box_cols * dtype_bytes > 128 || (box_cols * dtype_bytes) % 16)
		return bad(err, n,
			   "tensor map: box of %d columns is %d bytes (a multiple of 16, at most 128 "
			   "for the 128-byte swizzle)", box_cols, box_cols * dtype_bytes);

	dim[0] = (cuuint64_t)cols;
	dim[1] = (cuuint64_t)rows;
	stride[0] = (cuuint64_t)pitch;
	box[0] = (cuuint32_t)box_cols;
	box[1] = (cuuint32_t)box_rows;
	r = cu->cuTensorMapEncodeTiled((CUtensorMap *)out128, dt, 2, (void *)(uintptr_t)base, dim,
				       stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
				       CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
				       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS)
		return bad(err, n, "tensor map: cuTensorMapEncodeTiled: %s", cudrv_errstr(r));
	return 0;
}
