/* bootstrap_auth.c - what the bootstrap's handshake is made of: keys from
 * strings, nonces from the OS, HMAC-SHA256 (RFC 2104 over FIPS 180-4, the
 * SHA-256 of the JIT cache), and comparison in constant time; the handshake
 * itself is described in bootstrap_int.h.
 *
 * Nothing here keeps state or touches a socket.
 */
#include "bootstrap_int.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "base/le.h"
#include "codegen/cache.h"   /* sha256_* */

int bs_random(void *p, size_t n)
{
	unsigned char *q = p;
	while (n) {
		ssize_t k = getrandom(q, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		q += k;
		n -= (size_t)k;
	}
	return 0;
}

int bs_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(x[i] ^ y[i]);
	return d == 0;
}

/* ---- HMAC-SHA256 (RFC 2104), the key at most one block ------------------ */
typedef struct hmac {
	sha256_ctx in;
	unsigned char opad[64];
} hmac;

static void hmac_init(hmac *h, const unsigned char *key, size_t klen)
{
	unsigned char ipad[64];
	memset(ipad, 0x36, sizeof ipad);
	memset(h->opad, 0x5c, sizeof h->opad);
	for (size_t i = 0; i < klen && i < 64; i++) {
		ipad[i] ^= key[i];
		h->opad[i] ^= key[i];
	}
	sha256_init(&h->in);
	sha256_update(&h->in, ipad, sizeof ipad);
	memset(ipad, 0, sizeof ipad);
}

static void hmac_final(hmac *h, unsigned char out[32])
{
	unsigned char inner[32];
	sha256_ctx o;
	sha256_final(&h->in, inner);
	sha256_init(&o);
	sha256_update(&o, h->opad, sizeof h->opad);
	sha256_update(&o, inner, sizeof inner);
	sha256_final(&o, out);
	memset(h, 0, sizeof *h);
}

void bootstrap_mac(const unsigned char key[BOOTSTRAP_KEY], const char *label, int32_t acceptor,
		   const unsigned char nonce[BOOTSTRAP_NONCE], const void *msg, size_t n,
		   unsigned char out[BOOTSTRAP_MAC])
{
	unsigned char a[4];
	hmac h;
	hmac_init(&h, key, BOOTSTRAP_KEY);
	sha256_update(&h.in, label, strlen(label) + 1);   /* with its NUL */
	le_put32(a, (uint32_t)acceptor);
	sha256_update(&h.in, a, 4);
	sha256_update(&h.in, nonce, BOOTSTRAP_NONCE);
	if (n)
		sha256_update(&h.in, msg, n);
	hmac_final(&h, out);
}

void bs_hello_mac(const unsigned char key[BOOTSTRAP_KEY], uint32_t type, int32_t acceptor,
		  const unsigned char na[BOOTSTRAP_NONCE], const unsigned char *bytes, size_t n,
		  unsigned char out[BOOTSTRAP_MAC])
{
	bootstrap_mac(key, type == BOOTSTRAP_HELLO ? "mk hello" : "mk peer hello", acceptor, na,
		      bytes, n, out);
}

void bs_accept_mac(const unsigned char key[BOOTSTRAP_KEY], int p2p, int32_t acceptor,
		   int32_t connector, const unsigned char na[BOOTSTRAP_NONCE],
		   const unsigned char nc[BOOTSTRAP_NONCE], unsigned char out[BOOTSTRAP_MAC])
{
	unsigned char m[BOOTSTRAP_NONCE + 4];
	memcpy(m, nc, BOOTSTRAP_NONCE);
	le_put32(m + BOOTSTRAP_NONCE, (uint32_t)connector);
	bootstrap_mac(key, p2p ? "mk peer accept" : "mk accept", acceptor, na, m, sizeof m, out);
}

void bs_session_pad(const unsigned char key[BOOTSTRAP_KEY], int32_t rank,
		    const unsigned char na[BOOTSTRAP_NONCE], const unsigned char nc[BOOTSTRAP_NONCE],
		    unsigned char out[BOOTSTRAP_KEY])
{
	unsigned char m[BOOTSTRAP_NONCE + 4];
	memcpy(m, nc, BOOTSTRAP_NONCE);
	le_put32(m + BOOTSTRAP_NONCE, (uint32_t)rank);
	bootstrap_mac(key, "mk session", 0, na, m, sizeof m, out);
}

void bs_key_of(const char *label, const char *s, unsigned char key[BOOTSTRAP_KEY])
{
	sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, label, strlen(label) + 1);
	sha256_update(&c, s, strlen(s));
	sha256_final(&c, key);
}

void bootstrap_set_token(bootstrap_cfg *cfg, const char *token)
{
	bs_key_of("mk job token", token ? token : "", cfg->key);
	cfg->token_derived = 0;
}
