/* test_npy.c - .npy round trips, every accepted element type written by
 * hand, and malformed files (every truncation, random corruption, bad
 * headers) rejected with a message.  Exit 0 = pass.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/npy.h"

static int failures, checks;
static char dir[256], err[512];

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(int ok, const char *fmt, ...)
{
	checks++;
	if (ok)
		return;
	failures++;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static const char *tmp(const char *name)
{
	static char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static void put_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b, 1, n, f) != n) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
	fclose(f);
}

static unsigned char *get_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = malloc(1 << 20);
	*n = f ? fread(b, 1, 1 << 20, f) : 0;
	if (f)
		fclose(f);
	return b;
}

/* A file with header text h (padded by us to 64 bytes), version major,
 * then the data bytes.  Returns its length; the bytes are in buf. */
static size_t make(unsigned char *buf, int major, const char *h, const void *data, size_t dn)
{
	size_t pre = major == 1 ? 10 : 12, hl = strlen(h);
	size_t padded = (pre + hl + 1 + 63) / 64 * 64 - pre;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)major;
	buf[7] = 0;
	for (size_t i = 0; i < pre - 8; i++)
		buf[8 + i] = (unsigned char)(padded >> (8 * i));
	memcpy(buf + pre, h, hl);
	memset(buf + pre + hl, ' ', padded - hl - 1);
	buf[pre + padded - 1] = '\n';
	memcpy(buf + pre + padded, data, dn);
	return pre + padded + dn;
}

/* Reads bytes both from memory and from a file; both must agree. */
static int read_both(const unsigned char *b, size_t n, int64_t *shape, int *nd, int maxdim,
		     float **data)
{
	char err2[512];
	int64_t s2[NPY_MAXDIM];
	int nd2 = -1;
	float *d2 = NULL;
	int rc = npy_decode_f32(b, n, "mem", shape, nd, maxdim, data, err, sizeof err);
	put_file(tmp("t.npy"), b, n);
	int rc2 = npy_read_f32(tmp("t.npy"), s2, &nd2, maxdim, &d2, err2, sizeof err2);
	check(rc == rc2, "memory and file readers disagree: %d (%s) vs %d (%s)", rc, err, rc2,
	      err2);
	check(rc ? !*data && !d2 && err[0] && err2[0] : *data && d2 && nd2 == *nd,
	      "result pointers / messages");
	if (!rc && !rc2) {
		int64_t c = 1;
		for (int d = 0; d < *nd; d++)
			c *= shape[d];
		check(!memcmp(s2, shape, sizeof(int64_t) * (size_t)*nd) &&
		      !memcmp(d2, *data, sizeof(float) * (size_t)c), "file and memory data agree");
	}
	free(d2);
	return rc;
}

static void test_roundtrip(void)
{
	static const int64_t shapes[][4] = {{0}, {5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2}, {0, 3}};
	static const int nds[] = {0, 1, 2, 3, 4, 2};
	for (int s = 0; s < 6; s++) {
		int64_t c = 1;
		for (int d = 0; d < nds[s]; d++)
			c *= shapes[s][d];
		float *x = malloc(sizeof(float) * (size_t)(c + 8));
		float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 0x1p-149f, 3.4028235e38f};
		for (int64_t i = 0; i < c; i++)
			x[i] = i < 6 ? special[i] : (float)i * 0.37f - 3;
		check(!npy_write_f32(tmp("rt.npy"), shapes[s], nds[s], x, err, sizeof err),
		      "write %dD: %s", nds[s], err);
		size_t n;
		unsigned char *b = get_file(tmp("rt.npy"), &n);
		uint32_t hl = b[8] | b[9] << 8;
		check(b[6] == 1 && (10 + hl) % 64 == 0 && b[10 + hl - 1] == '\n' &&
		      n == 10 + hl + 4 * (size_t)c, "layout of %dD file", nds[s]);
		float *y = NULL;
		int64_t shape[4];
		int nd = -1;
		check(!read_both(b, n, shape, &nd, 4, &y), "read %dD: %s", nds[s], err);
		check(nd == nds[s] && !memcmp(shape, shapes[s], sizeof(int64_t) * (size_t)nd),
		      "shape %dD", nds[s]);
		check(y && !memcmp(x, y, sizeof(float) * (size_t)c), "data %dD bit for bit", nds[s]);
		free(x), free(y), free(b);
	}

	/* the header is NumPy's own text */
	float z[8] = {0};
	npy_write_f32(tmp("h.npy"), (int64_t[]){2, 3}, 2, z, err, sizeof err);
	size_t n;
	unsigned char *b = get_file(tmp("h.npy"), &n);
	const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
	check(n == 128 + 24 && !memcmp(b + 10, want, strlen(want)), "header text");
	free(b);
	b = NULL;
	npy_write_f32(tmp("h.npy"), (int64_t[]){7}, 1, z, err, sizeof err);
	b = get_file(tmp("h.npy"), &n);
	check(strstr((char *)b + 10, "'shape': (7,), }") != NULL, "1-D shape has a comma");
	free(b);
}

static void test_dtypes(void)
{
	unsigned char buf[1024];
	struct {
		const char *descr;
		unsigned char bytes[32];
		size_t n;
		float want[4];
	} cases[] = {
		{"<f4", {0, 0, 0xc0, 0x3f, 0, 0, 0x10, 0xc1}, 8, {1.5f, -9}},
		{"=f4", {0, 0, 0x80, 0x3f, 0, 0, 0, 0}, 8, {1, 0}},
		{"f4", {0, 0, 0x80, 0x3f, 0, 0, 0, 0x80}, 8, {1, -0.0f}},
		{"<f8", {0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0, 0, 0, 0, 0, 0, 0x02, 0xc0,
			 0, 0, 0, 0, 0, 0, 0xf0, 0x7f, 0x9c, 0x75, 0x88, 0x3c, 0xe4, 0x37, 0x7e, 0x7e},
		 32, {1.5f, -2.25f, INFINITY, INFINITY}},
		{"<f2", {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c}, 8,
		 {1, -2, 0x1p-24f, INFINITY}},
		{"<i4", {0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 3, 0, 0, 0}, 12,
		 {-7, 2147483647.0f, 3}},
		{"<i8", {0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0, 0}, 16,
		 {-3, 0x1p40f}},
		{"|u1", {0, 255, 7}, 3, {0, 255, 7}},
		{"|i1", {0x80, 0x7f, 0xff}, 3, {-128, 127, -1}},
		{"<u1", {200}, 1, {200}},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		int size = strstr(cases[c].descr, "8") ? 8 : strstr(cases[c].descr, "2") ? 2
			 : strstr(cases[c].descr, "1") ? 1 : 4;
		int count = (int)cases[c].n / size;
		char h[128];
		snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }",
			 cases[c].descr, count);
		for (int major = 1; major <= 3; major++) {
			size_t n = make(buf, major, h, cases[c].bytes, cases[c].n);
			int64_t shape[1];
			int nd;
			float *y = NULL;
			check(!read_both(buf, n, shape, &nd, 1, &y), "%s v%d: %s", cases[c].descr,
			      major, err);
			check(nd == 1 && shape[0] == count, "%s shape", cases[c].descr);
			for (int i = 0; y && i < count; i++)
				check(y[i] == cases[c].want[i] && signbit(y[i]) == signbit(cases[c].want[i]),
				      "%s[%d]: %g, want %g", cases[c].descr, i, y[i], cases[c].want[i]);
			free(y);
		}
	}
	/* f2 NaN and subnormal, f8 NaN */
	unsigned char nan2[] = {0x00, 0x7e, 0x00, 0x02};
	size_t n = make(buf, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,)}", nan2, 4);
	int64_t shape[2];
	int nd;
	float *y = NULL;
	check(!read_both(buf, n, shape, &nd, 2, &y) && isnan(y[0]) && y[1] == 0x1p-15f,
	      "f2 nan / subnormal");
	free(y);

	/* other spellings NumPy (or Python 2) has written: any key order,
	 * double quotes, no trailing comma, 3L, empty shape */
	const char *ok[] = {
		"{'shape': (1, 2), 'fortran_order': False, 'descr': '<f4'}",
		"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (1, 2)}",
		"{'descr':'<f4','fortran_order':False,'shape':(1L, 2L),}",
		"  {'descr': '<f4', 'fortran_order': False, 'shape': ( 1 , 2 , ) }  ",
	};
	float two[2] = {1, 2};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		n = make(buf, 1, ok[i], two, 8);
		y = NULL;
		check(!read_both(buf, n, shape, &nd, 2, &y) && nd == 2 && shape[0] == 1 &&
		      shape[1] == 2 && y[1] == 2, "spelling %zu: %s", i, err);
		free(y);
	}
	n = make(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", two, 4);
	y = NULL;
	check(!read_both(buf, n, shape, &nd, 2, &y) && nd == 0 && y[0] == 1, "scalar: %s", err);
	free(y);
}

/* Each malformed header must be rejected with a message containing `why`. */
static void bad(const char *h, const char *why, int maxdim)
{
	unsigned char buf[1024];
	float data[16] = {0};
	size_t n = make(buf, 1, h, data, sizeof data);
	int64_t shape[NPY_MAXDIM];
	int nd;
	float *y = (float *)1;
	err[0] = 0;
	int rc = read_both(buf, n, shape, &nd, maxdim, &y);
	check(rc == -1 && strstr(err, why) && !y, "'%s' rejected with '%s': got %d '%s'", h, why,
	      rc, err);
	if (!rc)
		free(y);
}

static void test_malformed(void)
{
	const char *F = "'fortran_order': False";
	char h[256];
	bad("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", "Fortran-order", 4);
	bad("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", "big-endian", 4);
	bad("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", "'<c8' is not supported", 4);
	bad("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", "structured", 4);
	bad("{'descr': '<f4', 'fortran_order': False}", "missing 'shape'", 4);
	bad("{'fortran_order': False, 'shape': (2,)}", "missing 'descr'", 4);
	bad("{'descr': '<f4', 'shape': (2,)}", "missing 'fortran_order'", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unknown key 'x'", 4);
	bad("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "twice", 4);
	bad("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "True or False", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "not a tuple", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "non-negative", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ','", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ','", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "after the dict", 4);
	bad("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "'<f4, ' is not supported", 4);
	bad("{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':'", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", "shape needs", 4);
	bad("['descr', '<f4']", "not a dict", 4);
	bad("", "not a dict", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
	    "too large", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4)}",
	    "too large", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (17,)}", "truncated data", 4);
	bad("{'descr': '<f8', 'fortran_order': False, 'shape': (9,)}", "truncated data", 4);
	bad("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1)}", "at most 2", 2);
	snprintf(h, sizeof h, "{'descr': '<f4', %s, 'shape': (%s)}", F,
		 "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,");
	bad(h, "more than 32", NPY_MAXDIM);

	/* the fixed part */
	unsigned char buf[1024];
	int64_t shape[4];
	int nd;
	float *y;
	struct {
		const char *bytes;
		size_t n;
		const char *why;
	} pre[] = {
		{"", 0, "magic"},
		{"\x93NUMPY\x01", 7, "magic"},
		{"\x93NUMPX\x01\x00\x10\x00", 10, "magic"},
		{"\x93NUMPY\x04\x00\x10\x00", 10, "version 4.0"},
		{"\x93NUMPY\x02\x00\x10\x00", 10, "truncated .npy preamble"},
		{"\x93NUMPY\x01\x00\x40\x00{'descr'", 17, "truncated .npy header"},
		{"\x93NUMPY\x02\x00\xff\xff\xff\xff{", 13, "header"},
	};
	for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
		y = (float *)1;
		int rc = read_both((const unsigned char *)pre[i].bytes, pre[i].n, shape, &nd, 4, &y);
		check(rc == -1 && strstr(err, pre[i].why) && !y, "preamble %zu rejected ('%s')", i,
		      err);
	}

	/* every truncation of a good file fails cleanly; the whole file reads */
	float data[24];
	for (int i = 0; i < 24; i++)
		data[i] = (float)i;
	size_t n = make(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }",
			data, sizeof data);
	int okc = 0;
	for (size_t len = 0; len <= n; len++) {
		y = NULL;
		int rc = read_both(buf, len, shape, &nd, 4, &y);
		check(len == n ? rc == 0 : rc == -1, "truncation at %zu: rc %d", len, rc);
		okc += rc == 0;
		free(y);
	}
	check(okc == 1, "only the whole file reads");

	/* random corruption of the header: never a crash (ASan watches), an
	 * error always comes with a message */
	unsigned rng = 7;
	for (int it = 0; it < 3000; it++) {
		unsigned char c[1024];
		memcpy(c, buf, n);
		int flips = 1 + it % 4;
		for (int f = 0; f < flips; f++) {
			rng = rng * 1103515245u + 12345u;
			size_t at = (rng >> 8) % 74;
			rng = rng * 1103515245u + 12345u;
			c[at] = (unsigned char)(rng >> 16);
		}
		y = NULL;
		err[0] = 0;
		int rc = npy_decode_f32(c, n, "fuzz", shape, &nd, 4, &y, err, sizeof err);
		check(rc == 0 ? y != NULL : (y == NULL && err[0]), "fuzz %d", it);
		free(y);
	}

	/* garbage after the magic */
	for (int it = 0; it < 2000; it++) {
		unsigned char c[200];
		memcpy(c, "\x93NUMPY", 6);
		for (int i = 6; i < 200; i++) {
			rng = rng * 1103515245u + 12345u;
			c[i] = (unsigned char)(rng >> 16);
		}
		c[6] = (unsigned char)(1 + it % 3);
		c[8] = (unsigned char)(it % 190);
		c[9] = c[10] = c[11] = 0;
		y = NULL;
		int rc = npy_decode_f32(c, 6 + (size_t)(it % 194), "garbage", shape, &nd, 4, &y, err,
					sizeof err);
		check(rc == -1 && !y, "garbage %d accepted", it);
		free(y);
	}
}

/* Strictness: what NumPy writes, exactly; nothing from the file reaches a
 * message unprintable; a FIFO does not block the reader. */
static void test_strict(void)
{
	unsigned char buf[1024];
	float data[4] = {1, 2, 3, 4}, *y;
	int64_t shape[4];
	int nd, rc;
	size_t n;
	const char *H = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";

	/* the header one byte short: the data would start one byte early */
	n = make(buf, 1, H, data, sizeof data);
	buf[8] = (unsigned char)(buf[8] - 1);
	y = (float *)1;
	rc = read_both(buf, n, shape, &nd, 4, &y);
	check(rc == -1 && !y && strstr(err, "multiple of 16"), "a header one byte short: %s", err);
	/* ... and one byte long */
	n = make(buf, 1, H, data, sizeof data);
	buf[8] = (unsigned char)(buf[8] + 1);
	y = (float *)1;
	rc = read_both(buf, n, shape, &nd, 4, &y);
	check(rc == -1 && !y, "a header one byte long: %s", err);
	/* bytes after the data */
	n = make(buf, 1, H, data, sizeof data);
	buf[n++] = 0;
	y = (float *)1;
	rc = read_both(buf, n, shape, &nd, 4, &y);
	check(rc == -1 && !y && strstr(err, "17 bytes of data") && strstr(err, "16"),
	      "a byte after the data: %s", err);
	/* element types compared whole: '<f4\0' is not f4 */
	{
		static const char h0[] = "{'descr': '<f4\0', 'fortran_order': False, 'shape': (4,), }";
		unsigned char raw[256];
		size_t hl = sizeof h0 - 1, padded = (10 + hl + 1 + 63) / 64 * 64 - 10;
		memcpy(raw, "\x93NUMPY\x01\x00", 8);
		raw[8] = (unsigned char)padded;
		raw[9] = 0;
		memcpy(raw + 10, h0, hl);
		memset(raw + 10 + hl, ' ', padded - hl - 1);
		raw[10 + padded - 1] = '\n';
		memcpy(raw + 10 + padded, data, sizeof data);
		y = (float *)1;
		rc = read_both(raw, 10 + padded + sizeof data, shape, &nd, 4, &y);
		check(rc == -1 && !y, "'<f4\\0' is not taken for f4: %s", err);
	}
	{
		const char *odd[] = {"<f4 ", "<<f4", "<f44", "<F4", "f", ""};
		for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
			char h[128];
			snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (4,), }",
				 odd[i]);
			n = make(buf, 1, h, data, sizeof data);
			y = (float *)1;
			rc = read_both(buf, n, shape, &nd, 4, &y);
			check(rc == -1 && !y, "descr '%s' refused: %s", odd[i], err);
		}
	}
	/* header text never reaches a message raw: no terminal escapes */
	{
		const char *evil[] = {
			"{'descr': '\x1b]0;pwned\x07<f4', 'fortran_order': False, 'shape': (4,), }",
			"{'\x1b[2Jkey': 1, 'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
			"{'descr': '<c8\x9b', 'fortran_order': False, 'shape': (4,), }",
			"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\x1b[2J",
		};
		for (size_t i = 0; i < sizeof evil / sizeof evil[0]; i++) {
			int clean = 1;
			n = make(buf, 1, evil[i], data, sizeof data);
			y = (float *)1;
			rc = read_both(buf, n, shape, &nd, 4, &y);
			for (const char *c = err; *c; c++)
				if ((unsigned char)*c < 32 || (unsigned char)*c >= 127)
					clean = 0;
			check(rc == -1 && !y && clean && err[0], "header %zu with escapes: refused, the "
			      "message printable: %s", i, err);
		}
	}
	/* a FIFO is not read (and does not block the reader) */
	{
		pid_t p;
		int st = 0, waited = 0;
		unlink(tmp("fifo.npy"));
		check(mkfifo(tmp("fifo.npy"), 0600) == 0, "mkfifo");
		fflush(stderr);
		if ((p = fork()) == 0) {
			alarm(10);
			y = NULL;
			rc = npy_read_f32(tmp("fifo.npy"), shape, &nd, 4, &y, err, sizeof err);
			_exit(rc == -1 && !y && strstr(err, "not a regular file") ? 0 : 1);
		}
		while (waitpid(p, &st, WNOHANG) == 0 && ++waited < 300)
			usleep(10000);
		if (waited >= 300) {
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
		}
		check(waited < 300 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "a FIFO is refused at once, not read (%s)", waited >= 300 ? "it blocked" : "ok");
		unlink(tmp("fifo.npy"));
	}
}

static void test_misc(void)
{
	char p[64];
	check(!npy_path(p, sizeof p, "out", "W1", 3) && !strcmp(p, "out/W1.r3.npy"), "path %s", p);
	check(!npy_path(p, sizeof p, NULL, "X", 0) && !strcmp(p, "X.r0.npy"), "path %s", p);
	check(!npy_path(p, sizeof p, "", "X", 12) && !strcmp(p, "X.r12.npy"), "path %s", p);
	check(npy_path(p, 8, "out", "W1", 3) == -1, "path too long");

	float x = 1, *y = (float *)1;
	int64_t shape[4];
	int nd;
	check(npy_write_f32("/nonexistent-dir/x.npy", (int64_t[]){1}, 1, &x, err, sizeof err) == -1 &&
	      strstr(err, "/nonexistent-dir/x.npy: "), "write to a missing dir: %s", err);
	check(npy_read_f32("/nonexistent-dir/x.npy", shape, &nd, 4, &y, err, sizeof err) == -1 &&
	      !y && strstr(err, "No such file"), "read a missing file: %s", err);
	check(npy_write_f32(tmp("neg.npy"), (int64_t[]){-1}, 1, &x, err, sizeof err) == -1,
	      "negative dim rejected");
	check(npy_read_f32(dir, shape, &nd, 4, &y, err, sizeof err) == -1 && !y,
	      "a directory is not a file: %s", err);
	/* err may be NULL */
	check(npy_read_f32("/nonexistent-dir/x.npy", shape, &nd, 4, &y, NULL, 0) == -1, "NULL err");
}

int main(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_npy.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	test_roundtrip();
	test_dtypes();
	test_malformed();
	test_strict();
	test_misc();
	const char *files[] = {"t.npy", "rt.npy", "h.npy", "neg.npy"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		unlink(tmp(files[i]));
	rmdir(dir);
	printf("test_npy: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
