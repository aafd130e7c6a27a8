/* cache.c - SHA-256 and the on-disk JIT cache; see cache.h.
 *
 * SHA-256 follows FIPS 180-4 section 6.2 word for word, so it can be read
 * against the standard.  Entries are written to a temporary file in the
 * cache directory itself (so rename is atomic: same file system), fsynced,
 * then renamed over KEY.cubin: a reader sees the old entry, the new one or
 * none, never half of one.  Everything a reader finds is verified, because
 * the cache outlives the binary that wrote it and disks and users do odd
 * things; a bad entry is only a miss.  What is verified is integrity and
 * the binding to the key, not who wrote it: that is the directory's job
 * (owned by this user, not writable by others; docs/security.md).
 */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
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

/* ---- directory -----------------------------------------------------------
 * The cache holds code that mkc will load and run, so whoever can write the
 * directory can run code as this user.  It is used only when it is this
 * user's own (owner = effective uid), not writable by group or others, and
 * not itself a symbolic link; it is opened once per operation and every
 * entry is reached through that descriptor (openat), so swapping the path
 * afterwards changes nothing. */

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

static void say(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	if (!why || !n)
		return;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
}

/* Opens dir (trailing slashes ignored) and checks that it may be trusted.
 * Returns the descriptor, or -1 with errno and why[] (what is wrong with it,
 * without the name). */
static int open_dir(const char *dir, char *why, size_t wn)
{
	char path[PATH_MAX];
	struct stat st;
	size_t len = strlen(dir);
	int fd, e;

	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0 || len >= sizeof path) {
		say(why, wn, "name too long");
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(path, dir, len);
	path[len] = '\0';
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == ELOOP)
			say(why, wn, "is a symbolic link (name the directory itself)");
		else if (e == ENOTDIR && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			say(why, wn, "is a symbolic link (name the directory itself)");
		else if (e == ENOTDIR)
			say(why, wn, "is not a directory");
		else
			say(why, wn, "cannot be opened (%s)", strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		e = errno;
		say(why, wn, "cannot be examined (%s)", strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	if (st.st_uid != geteuid()) {
		say(why, wn, "belongs to uid %u, not to this user (uid %u): its owner could plant "
		    "code for mkc to run", (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		errno = EPERM;
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		say(why, wn, "is writable by %s (mode %04o): anyone who can write it could plant "
		    "code for mkc to run; chmod go-w it", (st.st_mode & S_IWOTH) ? "everyone" :
		    "its group", (unsigned)(st.st_mode & 07777));
		close(fd);
		errno = EACCES;
		return -1;
	}
	return fd;
}

cg_status cg_cache_open(const char *override, char *buf, size_t n, char *why, size_t wn)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct stat st;
	int len, fd;

	if (why && wn)
		why[0] = '\0';
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
		say(why, wn, "no $XDG_CACHE_HOME or $HOME to put it in");
		errno = ENOENT;
		return CG_EIO;
	}
	if (len < 0 || (size_t)len >= n) {
		buf[0] = '\0';
		say(why, wn, "name too long");
		errno = ENAMETOOLONG;
		return CG_EIO;
	}
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	if (lstat(buf, &st) != 0 && mkdir_p(buf) != 0) {
		int e = errno;
		say(why, wn, "cannot be created (%s)", strerror(e));
		errno = e;
		return CG_EIO;
	}
	if ((fd = open_dir(buf, why, wn)) < 0)
		return CG_EIO;
	close(fd);
	if (access(buf, W_OK | X_OK) != 0) {
		int e = errno;
		say(why, wn, "not writable (%s)", strerror(e));
		errno = e;
		return CG_EIO;
	}
	return CG_OK;
}

cg_status cg_cache_dir(const char *override, char *buf, size_t n)
{
	return cg_cache_open(override, buf, n, NULL, 0);
}

/* ---- entries ------------------------------------------------------------- *
 * KEY.cubin = magic "MKCACHE2", u64 payload length, the key (KEY_FIELD bytes,
 * NUL-padded), SHA-256 of everything before it and of the payload; then the
 * payload.  The key inside the checksummed header binds an entry to its
 * name: an entry copied or renamed under another key is a miss. */

enum { KEY_FIELD = 128, SUM_AT = 8 + 8 + KEY_FIELD, HDR_SIZE = SUM_AT + 32 };
static const char MAGIC[8] = { 'M', 'K', 'C', 'A', 'C', 'H', 'E', '2' };

/* Keys become file names: allow only what cannot escape the directory. */
static int key_ok(const char *key)
{
	size_t i, n = key ? strlen(key) : 0;

	if (n == 0 || n > KEY_FIELD)
		return 0;
	for (i = 0; i < n; i++) {
		char c = key[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static int entry_name(char *buf, size_t n, const char *key)
{
	int len = snprintf(buf, n, "%s.cubin", key);
	return len >= 0 && (size_t)len < n;
}

static void header_of(unsigned char hdr[HDR_SIZE], const char *key, const void *data,
		      uint64_t size)
{
	sha256_ctx c;

	memset(hdr, 0, HDR_SIZE);
	memcpy(hdr, MAGIC, 8);
	le_put64(hdr + 8, size);
	memcpy(hdr + 16, key, strlen(key));
	sha256_init(&c);
	sha256_update(&c, hdr, SUM_AT);
	sha256_update(&c, data, (size_t)size);
	sha256_final(&c, hdr + SUM_AT);
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
static void drop_bad(int dfd, const char *name, const struct stat *bad)
{
	struct stat now;

	if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == bad->st_dev &&
	    now.st_ino == bad->st_ino)
		unlinkat(dfd, name, 0);
}

cg_status cg_cache_get(const char *dir, const char *key, void **data, size_t *size)
{
	char name[KEY_FIELD + 16];
	unsigned char hdr[HDR_SIZE], want[HDR_SIZE];
	unsigned char *buf = NULL;
	struct stat st;
	uint64_t len = 0;
	int fd, dfd;

	if (!dir || !data || !size || !key_ok(key) || !entry_name(name, sizeof name, key))
		return CG_EINVAL;
	*data = NULL;
	*size = 0;
	if ((dfd = open_dir(dir, NULL, 0)) < 0)
		return CG_EIO;
	/* no symlinks; a FIFO or device opens without blocking and is refused */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		close(dfd);
		return CG_EIO;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		close(dfd);
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
		close(dfd);
		return CG_ENOMEM;
	}
	if (read_full(fd, buf, (size_t)len) != 0)
		goto bad;
	buf[len] = '\0';
	header_of(want, key, buf, len);
	if (memcmp(hdr, want, HDR_SIZE) != 0)   /* another key's entry, or damaged */
		goto bad;
	close(fd);
	close(dfd);
	*data = buf;
	*size = (size_t)len;
	return CG_OK;
bad:
	close(fd);
	free(buf);
	drop_bad(dfd, name, &st);
	close(dfd);
	return CG_EIO;
}

cg_status cg_cache_put(const char *dir, const char *key, const void *data, size_t size)
{
	char name[KEY_FIELD + 16], tmp[KEY_FIELD + 64];
	unsigned char hdr[HDR_SIZE];
	int fd = -1, dfd, e, tries;

	if (!dir || (!data && size) || !key_ok(key) || !entry_name(name, sizeof name, key))
		return CG_EINVAL;
	if ((dfd = open_dir(dir, NULL, 0)) < 0)
		return CG_EIO;
	header_of(hdr, key, data ? data : "", (uint64_t)size);

	/* a fresh temporary name, created exclusively, mode 0600 */
	for (tries = 0; fd < 0 && tries < 16; tries++) {
		unsigned char r[8];
		char hex[17];
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
			uint64_t t = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL) ^
				     (uint64_t)tries << 40 ^ (uint64_t)(uintptr_t)&r;
			le_put64(r, t);
		}
		for (int i = 0; i < 8; i++)
			snprintf(hex + 2 * i, 3, "%02x", r[i]);
		snprintf(tmp, sizeof tmp, ".%s.%s", key, hex);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = errno;
		close(dfd);
		errno = e;
		return CG_EIO;
	}
	if (fchmod(fd, 0600) != 0 || write_full(fd, hdr, HDR_SIZE) != 0 ||
	    write_full(fd, data, size) != 0 || fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	/* rename replaces whatever has the name, a link or a FIFO included,
	 * without following it */
	if (renameat(dfd, tmp, dfd, name) != 0)
		goto fail;
	close(dfd);
	return CG_OK;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, tmp, 0);
	close(dfd);
	errno = e;
	return CG_EIO;
}
