/* npy.h - NumPy .npy files of float32, for mkrun's inputs and outputs.
 *
 * Writes format 1.0 ('<f4', C order).  Reads formats 1.0, 2.0 and 3.0 with
 * element types <f4 <f8 <f2 <i4 <i8 |u1 |i1 (converted to float32; '=' is
 * taken as '<'), C order only.  A malformed or truncated file is an error
 * with a one-line message naming the file, never a crash.  Byte order is
 * handled explicitly, so the code does not depend on the host's.
 *
 * Strict, as NumPy writes them: the header ends with a newline and the data
 * starts at a multiple of 16 bytes; the data is exactly what the header
 * announces (no byte missing, none after); element types are compared as
 * whole strings; header strings must be printable ASCII, so nothing from a
 * file reaches a message unprintable.  npy_read_f32 opens regular files
 * only, non-blocking (a FIFO or a device is refused, not waited on).
 *
 * Naming (docs/npy.md): tensor NAME's piece on rank R is DIR/NAME.rR.npy.
 */
#ifndef MK_NPY_H
#define MK_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAXDIM 32   /* NumPy's own limit */

/* Writes data (the product of shape[0..ndim) floats, row-major) to path.
 * ndim may be 0 (a scalar: one float).  Returns 0, or -1 with a message in
 * err (n bytes; err may be NULL); a partly written file is removed. */
int npy_write_f32(const char *path, const int64_t *shape, int ndim,
		  const float *data, char *err, size_t n);

/* Reads path.  On success returns 0, sets *ndim (<= maxdim) and shape[],
 * and *data to a malloc'd array of the elements as float32 (at least one
 * float long, so a zero-size array still gets a pointer to free).  Returns
 * -1 with a message in err otherwise; *data is then NULL. */
int npy_read_f32(const char *path, int64_t *shape, int *ndim, int maxdim,
		 float **data, char *err, size_t n);

/* The same from a whole file's bytes in memory (what fuzzers call);
 * `what` names the source in messages. */
int npy_decode_f32(const void *bytes, size_t len, const char *what,
		   int64_t *shape, int *ndim, int maxdim, float **data,
		   char *err, size_t n);

/* Writes "DIR/NAME.rR.npy" (or "NAME.rR.npy" when dir is NULL or empty)
 * into buf.  Returns 0, or -1 when it does not fit in n bytes. */
int npy_path(char *buf, size_t n, const char *dir, const char *name, int rank);

#endif
