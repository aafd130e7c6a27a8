/* npy.c - NumPy .npy reading and writing; see npy.h.
 *
 * The format (numpy/lib/format.py): the magic "\x93NUMPY", a major and a
 * minor version byte, the header length (2 bytes little-endian in 1.0, 4
 * in 2.0 and 3.0), then the header: a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a final newline so that the data starts at a
 * multiple of 64 bytes, then the elements in C order.
 *
 * The reader takes the header apart with a small parser for exactly that
 * dict (the three keys, each once, in any order), checks that the file
 * holds the data it announces before allocating, and converts the elements
 * in chunks.
 */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/le.h"

#define MAX_HEADER (1u << 20)   /* no real header comes close */

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

static int fail(char *err, size_t n, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t n, const char *what, const char *fmt, ...)
{
	if (!err || !n)
		return -1;
	int k = snprintf(err, n, "%s: ", what);
	if (k < 0 || (size_t)k >= n)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + k, n - (size_t)k, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- element types -------------------------------------------------------- */

typedef enum etype { E_F4, E_F8, E_F2, E_I4, E_I8, E_U1, E_I1 } etype;

static const struct {
	const char *code;   /* without the byte-order character */
	int size;
} etypes[] = {
	[E_F4] = {"f4", 4}, [E_F8] = {"f8", 8}, [E_F2] = {"f2", 2},
	[E_I4] = {"i4", 4}, [E_I8] = {"i8", 8}, [E_U1] = {"u1", 1},
	[E_I1] = {"i1", 1},
};

static uint64_t le(const unsigned char *p, int size)
{
	switch (size) {
	case 1: return p[0];
	case 2: return le_get16(p);
	case 4: return le_get32(p);
	default: return le_get64(p);
	}
}

static float half_to_float(uint32_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24)
		: e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(1024 + m), e - 25);
	return (h >> 15) ? -v : v;
}

static void convert(etype t, const unsigned char *src, float *dst, size_t count)
{
	int sz = etypes[t].size;
	for (size_t i = 0; i < count; i++, src += sz) {
		uint64_t u = le(src, sz);
		switch (t) {
		case E_F4: {
			uint32_t w = (uint32_t)u;
			memcpy(&dst[i], &w, 4);
			break;
		}
		case E_F8: {
			double d;
			memcpy(&d, &u, 8);
			dst[i] = (float)d;
			break;
		}
		case E_F2: dst[i] = half_to_float((uint32_t)u); break;
		case E_I4: dst[i] = (float)(int32_t)(uint32_t)u; break;
		case E_I8: dst[i] = (float)(int64_t)u; break;
		case E_U1: dst[i] = (float)(uint8_t)u; break;
		case E_I1: dst[i] = (float)(int8_t)(uint8_t)u; break;
		}
	}
}

/* ---- the header ------------------------------------------------------------ */

typedef struct hdr {
	etype type;
	int fortran;
	int ndim;
	int64_t shape[NPY_MAXDIM];
} hdr;

typedef struct lexer {
	const char *s, *end;
	char *err;
	size_t n;
	const char *what;
} lexer;

static void ws(lexer *L)
{
	while (L->s < L->end && (*L->s == ' ' || *L->s == '\t' || *L->s == '\n' || *L->s == '\r'))
		L->s++;
}

static int eat(lexer *L, char c)
{
	ws(L);
	if (L->s < L->end && *L->s == c) {
		L->s++;
		return 1;
	}
	return 0;
}

/* A quoted string without escapes, copied into out (up to cap-1 chars). */
static int str(lexer *L, char *out, size_t cap)
{
	ws(L);
	if (L->s >= L->end || (*L->s != '\'' && *L->s != '"'))
		return fail(L->err, L->n, L->what, "bad .npy header: expected a quoted string");
	char q = *L->s++;
	size_t k = 0;
	while (L->s < L->end && *L->s != q) {
		unsigned char c = (unsigned char)*L->s;
		/* printable ASCII only: nothing from the file reaches a message (or
		 * a comparison) that the terminal or strcmp would take otherwise */
		if (c < 32 || c >= 127)
			return fail(L->err, L->n, L->what, "bad .npy header: byte 0x%02x in a string",
				    c);
		if (c == '\\' || k + 1 >= cap)
			return fail(L->err, L->n, L->what, "bad .npy header: string too long "
				    "or with escapes");
		out[k++] = *L->s++;
	}
	if (L->s >= L->end)
		return fail(L->err, L->n, L->what, "bad .npy header: unterminated string");
	L->s++;
	out[k] = 0;
	return 0;
}

static int word(lexer *L, const char *w)
{
	size_t k = strlen(w);
	ws(L);
	if ((size_t)(L->end - L->s) >= k && !memcmp(L->s, w, k)) {
		L->s += k;
		return 1;
	}
	return 0;
}

/* shape: '(' [int {',' int} [',']] ')' */
static int shape(lexer *L, hdr *h)
{
	if (!eat(L, '('))
		return fail(L->err, L->n, L->what, "bad .npy header: shape is not a tuple");
	h->ndim = 0;
	for (;;) {
		if (eat(L, ')'))
			return 0;
		ws(L);
		if (L->s >= L->end || *L->s < '0' || *L->s > '9')
			return fail(L->err, L->n, L->what, "bad .npy header: shape needs "
				    "non-negative integers");
		int64_t v = 0;
		while (L->s < L->end && *L->s >= '0' && *L->s <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				return fail(L->err, L->n, L->what, "bad .npy header: dimension too large");
			v = v * 10 + (*L->s++ - '0');
		}
		if (L->s < L->end && *L->s == 'L')  /* written by Python 2 */
			L->s++;
		if (h->ndim == NPY_MAXDIM)
			return fail(L->err, L->n, L->what, "bad .npy header: more than %d dims",
				    NPY_MAXDIM);
		h->shape[h->ndim++] = v;
		if (eat(L, ')'))
			return 0;
		if (!eat(L, ','))
			return fail(L->err, L->n, L->what, "bad .npy header: expected ',' or ')' "
				    "in shape");
	}
}

static int descr(lexer *L, hdr *h)
{
	char d[16];
	ws(L);
	if (L->s < L->end && *L->s == '[')
		return fail(L->err, L->n, L->what, "structured arrays are not supported");
	if (str(L, d, sizeof d))
		return -1;
	/* a byte-order mark, or none (native, which we take as little-endian) */
	char o = strchr("<>=|", d[0]) && d[0] ? d[0] : '=';
	const char *code = o == d[0] ? d + 1 : d;
	for (int t = 0; t < (int)(sizeof etypes / sizeof etypes[0]); t++) {
		if (strcmp(code, etypes[t].code))
			continue;
		if (o != '>' || etypes[t].size == 1) {
			h->type = (etype)t;
			return 0;
		}
		return fail(L->err, L->n, L->what, "big-endian data ('%s') is not "
			    "supported; save as little-endian", d);
	}
	return fail(L->err, L->n, L->what, "element type '%s' is not supported (use float32, "
		    "float64, float16, int32, int64, uint8 or int8)", d);
}

/* {'descr': ..., 'fortran_order': ..., 'shape': ...} in any order. */
static int parse_header(const char *text, size_t len, hdr *h, const char *what,
			char *err, size_t n)
{
	lexer L = {text, text + len, err, n, what};
	int seen = 0;   /* bit 0 descr, 1 fortran_order, 2 shape */
	memset(h, 0, sizeof *h);
	if (!eat(&L, '{'))
		return fail(err, n, what, "bad .npy header: not a dict");
	while (!eat(&L, '}')) {
		char key[32];
		int bit;
		if (str(&L, key, sizeof key))
			return -1;
		if (!eat(&L, ':'))
			return fail(err, n, what, "bad .npy header: expected ':' after '%s'", key);
		if (!strcmp(key, "descr")) {
			bit = 1;
			if (descr(&L, h))
				return -1;
		} else if (!strcmp(key, "fortran_order")) {
			bit = 2;
			if (word(&L, "True"))
				h->fortran = 1;
			else if (!word(&L, "False"))
				return fail(err, n, what, "bad .npy header: fortran_order is not "
					    "True or False");
		} else if (!strcmp(key, "shape")) {
			bit = 4;
			if (shape(&L, h))
				return -1;
		} else {
			return fail(err, n, what, "bad .npy header: unknown key '%s'", key);
		}
		if (seen & bit)
			return fail(err, n, what, "bad .npy header: '%s' given twice", key);
		seen |= bit;
		if (!eat(&L, ',')) {
			if (!eat(&L, '}'))
				return fail(err, n, what, "bad .npy header: expected ',' or '}'");
			break;
		}
	}
	ws(&L);
	if (L.s != L.end)
		return fail(err, n, what, "bad .npy header: text after the dict");
	if (seen != 7)
		return fail(err, n, what, "bad .npy header: missing '%s'",
			    !(seen & 1) ? "descr" : !(seen & 2) ? "fortran_order" : "shape");
	if (h->fortran)
		return fail(err, n, what, "Fortran-order arrays are not supported; save "
			    "np.ascontiguousarray(a)");
	return 0;
}

/* The fixed part: magic, version, header length.  Returns the size of the
 * fixed part (10 or 12), or -1. */
static int preamble(const unsigned char *b, size_t len, uint32_t *hlen, const char *what,
		    char *err, size_t n)
{
	if (len < 10 || memcmp(b, magic, 6))
		return fail(err, n, what, "not a .npy file (no \\x93NUMPY magic)");
	int major = b[6];
	if (major == 1) {
		*hlen = (uint32_t)le(b + 8, 2);
		return 10;
	}
	if (major == 2 || major == 3) {
		if (len < 12)
			return fail(err, n, what, "truncated .npy preamble");
		*hlen = (uint32_t)le(b + 8, 4);
		return 12;
	}
	return fail(err, n, what, "unsupported .npy version %d.%d", major, b[7]);
}

/* Element count of h, or -1 on overflow (the bytes must fit in size_t). */
static int64_t count_of(const hdr *h)
{
	int64_t c = 1;
	int sz = etypes[h->type].size;
	for (int d = 0; d < h->ndim; d++) {
		if (h->shape[d] && c > (int64_t)(SIZE_MAX / 8 / (size_t)sz) / h->shape[d])
			return -1;
		c *= h->shape[d];
	}
	return c;
}

static int finish_header(size_t pre, const char *text, size_t hl, hdr *h, int64_t *shp,
			 int *ndim, int maxdim, int64_t *count, const char *what, char *err, size_t n)
{
	/* NumPy pads the header with spaces and a newline so that the data
	 * starts at a multiple of 64 (16 before NumPy 1.14): a header of any
	 * other length is not NumPy's, and its data would be misaligned */
	if ((pre + hl) % 16 != 0)
		return fail(err, n, what, "bad .npy header: %zu bytes long, so the data would start "
			    "at byte %zu, not a multiple of 16", hl, pre + hl);
	if (hl == 0 || text[hl - 1] != '\n')
		return fail(err, n, what, "bad .npy header: it does not end with a newline");
	if (parse_header(text, hl, h, what, err, n))
		return -1;
	if (h->ndim > maxdim)
		return fail(err, n, what, "%d dims, at most %d expected", h->ndim, maxdim);
	if ((*count = count_of(h)) < 0)
		return fail(err, n, what, "array too large");
	*ndim = h->ndim;
	memcpy(shp, h->shape, (size_t)h->ndim * sizeof *shp);
	return 0;
}

/* The data must be exactly what the header announces: fewer bytes are a
 * truncated file, more are not this array (or not NumPy's). */
static int data_size(int64_t count, size_t sz, uint64_t have, const char *what, char *err,
		     size_t n)
{
	uint64_t want = (uint64_t)count * sz;   /* count_of keeps this in size_t */
	if (have < want)
		return fail(err, n, what, "truncated data: %lld elements announced, %llu bytes "
			    "present", (long long)count, (unsigned long long)have);
	if (have > want)
		return fail(err, n, what, "%llu bytes of data, but the header announces %llu "
			    "(%lld elements of %zu bytes): trailing bytes", (unsigned long long)have,
			    (unsigned long long)want, (long long)count, sz);
	return 0;
}

int npy_decode_f32(const void *bytes, size_t len, const char *what, int64_t *shp,
		   int *ndim, int maxdim, float **data, char *err, size_t n)
{
	const unsigned char *b = bytes;
	uint32_t hl;
	hdr h;
	int64_t count;
	*data = NULL;
	int pre = preamble(b, len, &hl, what, err, n);
	if (pre < 0)
		return -1;
	if (hl > MAX_HEADER || hl > len - (size_t)pre)
		return fail(err, n, what, "truncated .npy header (%u bytes announced)", hl);
	if (finish_header((size_t)pre, (const char *)b + pre, hl, &h, shp, ndim, maxdim, &count,
			  what, err, n))
		return -1;
	size_t off = (size_t)pre + hl, sz = (size_t)etypes[h.type].size;
	if (data_size(count, sz, len - off, what, err, n))
		return -1;
	if (!(*data = malloc((size_t)count * sizeof **data + sizeof **data)))
		return fail(err, n, what, "out of memory");
	convert(h.type, b + off, *data, (size_t)count);
	return 0;
}

int npy_read_f32(const char *path, int64_t *shp, int *ndim, int maxdim, float **data,
		 char *err, size_t n)
{
	unsigned char pre[12], chunk[1 << 16];
	char *text = NULL;
	uint32_t hl;
	hdr h;
	int64_t count;
	struct stat st;
	FILE *f = NULL;
	int fd;
	*data = NULL;
	/* non-blocking, so that a FIFO or a device is refused rather than
	 * waited on; regular files only */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(err, n, path, "%s", strerror(errno));
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return fail(err, n, path, "%s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, n, path, "not a regular file (%s)", S_ISDIR(st.st_mode) ? "a directory"
			    : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a device"
			    : "a socket or device");
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 || !(f = fdopen(fd, "rb"))) {
		int e = errno;
		close(fd);
		return fail(err, n, path, "%s", strerror(e));
	}
	size_t got = fread(pre, 1, sizeof pre, f);
	int np = preamble(pre, got, &hl, path, err, n);
	if (np < 0)
		goto bad;
	if (hl > MAX_HEADER) {
		fail(err, n, path, "bad .npy header: %u bytes long", hl);
		goto bad;
	}
	/* the file from the end of the preamble on */
	if (fseek(f, np, SEEK_SET) || !(text = malloc(hl + 1)))
		goto io;
	if (fread(text, 1, hl, f) != hl) {
		fail(err, n, path, "truncated .npy header (%u bytes announced)", hl);
		goto bad;
	}
	if (finish_header((size_t)np, text, hl, &h, shp, ndim, maxdim, &count, path, err, n))
		goto bad;
	/* check the data is all there, and no more, before allocating for it */
	size_t sz = (size_t)etypes[h.type].size;
	uint64_t here = (uint64_t)np + hl;
	if ((uint64_t)st.st_size < here)
		goto io;
	if (data_size(count, sz, (uint64_t)st.st_size - here, path, err, n))
		goto bad;
	if (!(*data = malloc((size_t)count * sizeof **data + sizeof **data))) {
		fail(err, n, path, "out of memory");
		goto bad;
	}
	for (size_t done = 0; done < (size_t)count;) {
		size_t k = (size_t)count - done;
		if (k > sizeof chunk / sz)
			k = sizeof chunk / sz;
		if (fread(chunk, sz, k, f) != k)
			goto io;
		convert(h.type, chunk, *data + done, k);
		done += k;
	}
	free(text);
	fclose(f);
	return 0;
io:
	fail(err, n, path, "read error: %s", ferror(f) ? strerror(errno) : "unexpected end of file");
bad:
	free(text);
	free(*data);
	*data = NULL;
	fclose(f);
	return -1;
}

int npy_write_f32(const char *path, const int64_t *shp, int ndim, const float *data,
		  char *err, size_t n)
{
	char h[128 + 24 * NPY_MAXDIM];
	unsigned char chunk[1 << 16];
	if (ndim < 0 || ndim > NPY_MAXDIM)
		return fail(err, n, path, "%d dims, at most %d", ndim, NPY_MAXDIM);
	size_t count = 1;
	int k = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
	for (int d = 0; d < ndim; d++) {
		if (shp[d] < 0)
			return fail(err, n, path, "negative dimension %lld", (long long)shp[d]);
		count *= (size_t)shp[d];
		k += snprintf(h + k, sizeof h - (size_t)k, "%s%lld", d ? ", " : "",
			      (long long)shp[d]);
	}
	k += snprintf(h + k, sizeof h - (size_t)k, "%s), }", ndim == 1 ? "," : "");
	/* pad with spaces and a newline: 10 + header is a multiple of 64 */
	int total = (10 + k + 1 + 63) / 64 * 64 - 10;
	memset(h + k, ' ', (size_t)(total - k - 1));
	h[total - 1] = '\n';
	if (count && !data)
		return fail(err, n, path, "no data");

	FILE *f = fopen(path, "wb");
	if (!f)
		return fail(err, n, path, "%s", strerror(errno));
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
				 0, 0};
	le_put16(pre + 8, (uint16_t)total);
	int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, (size_t)total, f) == (size_t)total;
	for (size_t done = 0; ok && done < count;) {
		size_t m = count - done;
		if (m > sizeof chunk / 4)
			m = sizeof chunk / 4;
		for (size_t i = 0; i < m; i++) {
			uint32_t u;
			memcpy(&u, &data[done + i], 4);
			le_put32(chunk + 4 * i, u);
		}
		ok = fwrite(chunk, 4, m, f) == m;
		done += m;
	}
	int e = errno;
	if (fclose(f))
		ok = 0, e = errno;
	if (!ok) {
		remove(path);
		return fail(err, n, path, "write failed: %s", strerror(e));
	}
	return 0;
}

int npy_path(char *buf, size_t n, const char *dir, const char *name, int rank)
{
	int k = dir && *dir ? snprintf(buf, n, "%s/%s.r%d.npy", dir, name, rank)
			    : snprintf(buf, n, "%s.r%d.npy", name, rank);
	return k < 0 || (size_t)k >= n ? -1 : 0;
}
