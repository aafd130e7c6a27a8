/* cache.c - SHA-256 and the on-disk JIT cache; see cache.h.
 *
 * SHA-256 follows FIPS 180-4 section 6.2 word for word, so it can be read
 * against the standard.  Entries are written to a temporary file in the
 * cache directory itself (so rename is atomic: same file system), fsynced,
 * then renamed over KEY.cubin: a reader sees the old entry, the new one or
 * none, never half of one.  Everything a reader finds is verified, because
 * the cache outlives the binary that wrote it and disks and users do odd
 * things; a bad entry is only a miss.
 */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/le.h"

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------ */

static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define BSIG0(x) (ROTR(x, 2) ^ ROTR(x, 13) ^ ROTR(x, 22))
#define BSIG1(x) (ROTR(x, 6) ^ ROTR(x, 11) ^ ROTR(x, 25))
#define SSIG0(x) (ROTR(x, 7) ^ ROTR(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROTR(x, 17) ^ ROTR(x, 19) ^ ((x) >> 10))

static void sha256_block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh;
	int t;

	for (t = 0; t < 16; t++)
		w[t] = be_get32(p + 4 * t);
	for (; t < 64; t++)
		w[t] = SSIG1(w[t - 2]) + w[t - 7] + SSIG0(w[t - 15]) + w[t - 16];
	a = h[0], b = h[1], c = h[2], d = h[3];
	e = h[4], f = h[5], g = h[6], hh = h[7];
	for (t = 0; t < 64; t++) {
		uint32_t t1 = hh + BSIG1(e) + CH(e, f, g) + K256[t] + w[t];
		uint32_t t2 = BSIG0(a) + MAJ(a, b, c);
		hh = g, g = f, f = e, e = d + t1;
		d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d;
	h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void sha256_init(sha256_ctx *c)
{
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memcpy(c->h, h0, sizeof h0);
	c->len = 0;
	c->nbuf = 0;
}

void sha256_update(sha256_ctx *c, const void *data, size_t n)
{
	const unsigned char *p = data;

	c->len += n;
	if (c->nbuf) {
		size_t k = 64 - c->nbuf < n ? 64 - c->nbuf : n;
		memcpy(c->buf + c->nbuf, p, k);
		c->nbuf += k, p += k, n -= k;
		if (c->nbuf < 64)
			return;
		sha256_block(c->h, c->buf);
		c->nbuf = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		sha256_block(c->h, p);
	memcpy(c->buf, p, n);
	c->nbuf = n;
}

void sha256_final(sha256_ctx *c, unsigned char out[32])
{
	uint64_t bits = c->len * 8;
	int i;

	/* Padding (5.1.1): a 1 bit, zeros up to 56 mod 64, the bit length. */
	c->buf[c->nbuf++] = 0x80;
	if (c->nbuf > 56) {
		memset(c->buf + c->nbuf, 0, 64 - c->nbuf);
		sha256_block(c->h, c->buf);
		c->nbuf = 0;
	}
	memset(c->buf + c->nbuf, 0, 56 - c->nbuf);
	for (i = 0; i < 8; i++)
		c->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_block(c->h, c->buf);
	for (i = 0; i < 8; i++)
		be_put32(out + 4 * i, c->h[i]);
	memset(c, 0, sizeof *c);
}

void sha256_hex(const unsigned char d[32], char out[65])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 32; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[64] = '\0';
}

/* ---- directory ----------------------------------------------------------- */

/* mkdir -p, every created component 0700 (the cache holds code we will run:
 * nobody else should be able to plant an entry). */
static int mkdir_p(char *path)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* On failure buf holds the path tried ("" when there was none), for the
 * caller's message.  override may be buf itself. */
cg_status cg_cache_dir(const char *override, char *buf, size_t n)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct stat st;
	int len;

	if (!buf || n == 0)
		return CG_EINVAL;
	if (override && *override)
		len = override == buf ? (int)strnlen(buf, n) : snprintf(buf, n, "%s", override);
	else if (xdg && xdg[0] == '/')  /* XDG: relative paths are invalid */
		len = snprintf(buf, n, "%s/mk", xdg);
	else if (home && *home)
		len = snprintf(buf, n, "%s/.cache/mk", home);
	else {
		buf[0] = '\0';
		errno = ENOENT;
		return CG_EIO;
	}
	if (len < 0 || (size_t)len >= n) {
		buf[0] = '\0';
		errno = ENAMETOOLONG;
		return CG_EIO;
	}
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	if (stat(buf, &st) != 0 && mkdir_p(buf) != 0)
		return CG_EIO;
	/* An existing directory with wider permissions is the user's choice:
	 * use it as it is rather than chmod something we did not create. */
	if (stat(buf, &st) != 0)
		return CG_EIO;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return CG_EIO;
	}
	if (access(buf, W_OK | X_OK) != 0)
		return CG_EIO;
	return CG_OK;
}

/* ---- entries ------------------------------------------------------------- */

enum { HDR_SIZE = 8 + 8 + 32 };
static const char MAGIC[8] = { 'M', 'K', 'C', 'A', 'C', 'H', 'E', '1' };

/* Keys become file names: allow only what cannot escape the directory. */
static int key_ok(const char *key)
{
	size_t i, n = key ? strlen(key) : 0;

	if (n == 0 || n > 128)
		return 0;
	for (i = 0; i < n; i++) {
		char c = key[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static int entry_path(char *buf, size_t n, const char *dir, const char *key)
{
	int len = snprintf(buf, n, "%s/%s.cubin", dir, key);
	return len >= 0 && (size_t)len < n;
}

static int read_full(int fd, void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r, n -= (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n) {
		ssize_t r = write(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r, n -= (size_t)r;
	}
	return 0;
}

/* Deletes a bad entry, unless someone has already replaced it with a new
 * file (same name, other inode): that one may be good. */
static void drop_bad(const char *path, const struct stat *bad)
{
	struct stat now;

	if (stat(path, &now) == 0 && now.st_dev == bad->st_dev && now.st_ino == bad->st_ino)
		unlink(path);
}

cg_status cg_cache_get(const char *dir, const char *key, void **data, size_t *size)
{
	char path[PATH_MAX];
	unsigned char hdr[HDR_SIZE], sum[32];
	unsigned char *buf = NULL;
	struct stat st;
	sha256_ctx c;
	uint64_t len = 0;
	int fd;

	if (!dir || !data || !size || !key_ok(key) || !entry_path(path, sizeof path, dir, key))
		return CG_EINVAL;
	*data = NULL;
	*size = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return CG_EIO;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return CG_EIO;
	}
	if (st.st_size < HDR_SIZE || read_full(fd, hdr, HDR_SIZE) != 0 ||
	    memcmp(hdr, MAGIC, 8) != 0)
		goto bad;
	len = le_get64(hdr + 8);
	if (len != (uint64_t)st.st_size - HDR_SIZE || len > SIZE_MAX - 1)
		goto bad;
	/* One spare byte, always NUL, so a cached PTX is a C string too. */
	buf = malloc((size_t)len + 1);
	if (!buf) {
		close(fd);
		return CG_ENOMEM;
	}
	if (read_full(fd, buf, (size_t)len) != 0)
		goto bad;
	buf[len] = '\0';
	sha256_init(&c);
	sha256_update(&c, buf, (size_t)len);
	sha256_final(&c, sum);
	if (memcmp(sum, hdr + 16, 32) != 0)
		goto bad;
	close(fd);
	*data = buf;
	*size = (size_t)len;
	return CG_OK;
bad:
	close(fd);
	free(buf);
	drop_bad(path, &st);
	return CG_EIO;
}

cg_status cg_cache_put(const char *dir, const char *key, const void *data, size_t size)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	unsigned char hdr[HDR_SIZE];
	sha256_ctx c;
	int fd, len, e;

	if (!dir || (!data && size) || !key_ok(key) || !entry_path(path, sizeof path, dir, key))
		return CG_EINVAL;
	len = snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, key);
	if (len < 0 || (size_t)len >= sizeof tmp)
		return CG_EINVAL;
	memcpy(hdr, MAGIC, 8);
	le_put64(hdr + 8, (uint64_t)size);
	sha256_init(&c);
	sha256_update(&c, data, size);
	sha256_final(&c, hdr + 16);

	fd = mkstemp(tmp);  /* mode 0600 */
	if (fd < 0)
		return CG_EIO;
	if (fchmod(fd, 0600) != 0 || write_full(fd, hdr, HDR_SIZE) != 0 ||
	    write_full(fd, data, size) != 0 || fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	if (rename(tmp, path) != 0) {
		fd = -1;
		goto fail;
	}
	return CG_OK;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	errno = e;
	return CG_EIO;
}
