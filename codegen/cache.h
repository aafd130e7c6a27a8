/* cache.h - the JIT cache: cubins on disk under a key.
 *
 * Key: SHA-256 over (source, every NVRTC option, NVRTC version, target arch)
 * in hex.  Directory: $XDG_CACHE_HOME/mk, else ~/.cache/mk, created 0700.
 * Entry file KEY.cubin = header {magic "MKCACHE2", payload length, the key,
 * SHA-256 of the header before it and of the payload} + payload; written to
 * a temp file and renamed, so a reader never sees half an entry.  An entry
 * that fails verification (short, bad magic, another key, bad checksum) is a
 * miss and is deleted so the next put rebuilds it.
 *
 * Trust: the directory must belong to this user, must not be writable by
 * group or others, and must not be a symbolic link; otherwise it is not
 * used (every call below fails, and cg_cache_open says why).  Entries are
 * opened with O_NOFOLLOW | O_NONBLOCK and must be regular files of this
 * user: a link, a FIFO or a device is a miss, never followed or waited on.
 */
#ifndef MK_CACHE_H
#define MK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "nvrtc.h"

typedef struct sha256_ctx {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
	size_t nbuf;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, unsigned char out[32]);
void sha256_hex(const unsigned char d[32], char out[65]);

/* Resolves the cache directory into buf (override, else the default above),
 * creating it (mode 0700) when missing, and checks that it may be used.
 * CG_EIO when it cannot be created, is not writable or may not be trusted;
 * then why[] (wn bytes, may be NULL) says what is wrong with it in words
 * ("is writable by everyone (mode 0777): ..."), without the name, which is
 * in buf ("" when there was none). */
cg_status cg_cache_open(const char *override, char *buf, size_t n, char *why, size_t wn);
/* The same without the words. */
cg_status cg_cache_dir(const char *override, char *buf, size_t n);
/* CG_OK and a malloc'd copy on a verified hit; CG_EIO on a miss. */
cg_status cg_cache_get(const char *dir, const char *key, void **data, size_t *size);
cg_status cg_cache_put(const char *dir, const char *key, const void *data, size_t size);

#endif
