/* bootstrap_wire.c - the bootstrap's frames: encoding, decoding, and every
 * check made on what arrives before it is believed; see bootstrap.h.
 *
 * Nothing here touches a socket: the poll loop (bootstrap_loop.c) hands over
 * bytes, and the fuzz harness (tests/fuzz/fuzz_bootstrap.c) calls the
 * parsers directly.  Fields are little-endian (base/le.h).
 */
#include "bootstrap_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/le.h"

void bs_fmt(char *err, size_t n, const char *f, ...)
{
	va_list ap;
	if (!err || !n)
		return;
	va_start(ap, f);
	vsnprintf(err, n, f, ap);
	va_end(ap);
}

/* Text from the wire, made printable. */
static void clean_text(char *dst, size_t n, const unsigned char *src, size_t len)
{
	size_t i;
	if (!n)
		return;
	if (len > n - 1)
		len = n - 1;
	for (i = 0; i < len && src[i]; i++)
		dst[i] = src[i] >= 32 && src[i] < 127 ? (char)src[i] : '?';
	dst[i] = 0;
}

/* ---- the wire format -------------------------------------------------------
 * header: u32 magic, u16 version, u16 type, i32 rank, u32 tag, u32 length,
 *         u32 reserved (0); then `length` payload bytes.  No secret travels:
 *         connections prove themselves with MACs (bootstrap_int.h). */
static const char *const type_names[] = {
	"?", "HELLO", "WELCOME", "REJECT", "GATHER", "GATHERED",
	"PEER_HELLO", "P2P", "ABORT", "BYE", "CHALLENGE", "ACCEPT",
};

const char *bs_type_name(uint32_t t)
{
	return t < BOOTSTRAP_TYPE_END ? type_names[t] : "?";
}

void bootstrap_header(void *hdr, uint32_t type, int32_t rank, uint32_t tag, uint32_t len)
{
	unsigned char *p = hdr;
	le_put32(p, BOOTSTRAP_MAGIC);
	le_put16(p + 4, BOOTSTRAP_VERSION);
	le_put16(p + 6, (uint16_t)type);
	le_put32(p + 8, (uint32_t)rank);
	le_put32(p + 12, tag);
	le_put32(p + 16, len);
	le_put32(p + 20, 0);
}

void bootstrap_addr_put(unsigned char *p, const bootstrap_addr *a)
{
	le_put64(p, a->host_id);
	le_put16(p + 8, a->family);
	le_put16(p + 10, a->port);
	le_put32(p + 12, a->scope);
	memcpy(p + 16, a->addr, 16);
	memcpy(p + 32, a->host, BOOTSTRAP_HOSTNAME);
	p[32 + BOOTSTRAP_HOSTNAME - 1] = 0;
}

int bootstrap_addr_get(const unsigned char *p, bootstrap_addr *a)
{
	a->host_id = le_get64(p);
	a->family = le_get16(p + 8);
	a->port = le_get16(p + 10);
	a->scope = le_get32(p + 12);
	memcpy(a->addr, p + 16, 16);
	if (a->family != 4 && a->family != 6)
		return -1;
	if (!memchr(p + 32, 0, BOOTSTRAP_HOSTNAME))
		return -1;
	clean_text(a->host, sizeof a->host, p + 32, BOOTSTRAP_HOSTNAME);
	return 0;
}

/* Largest payload a frame of this type may carry (world 0: unknown). */
static uint64_t type_max(uint32_t type, int world)
{
	switch (type) {
	case BOOTSTRAP_HELLO:
		return BOOTSTRAP_HELLO_WIRE;
	case BOOTSTRAP_WELCOME:
		return world ? BOOTSTRAP_WELCOME_WIRE(world) : BOOTSTRAP_MAX_PAYLOAD;
	case BOOTSTRAP_REJECT:
	case BOOTSTRAP_ABORT:
		return 4 + BOOTSTRAP_TEXT;
	case BOOTSTRAP_PEER_HELLO:
		return BOOTSTRAP_PEER_HELLO_WIRE;
	case BOOTSTRAP_CHALLENGE:
		return BOOTSTRAP_CHALLENGE_WIRE;
	case BOOTSTRAP_ACCEPT:
		return BOOTSTRAP_ACCEPT_WIRE;
	case BOOTSTRAP_BYE:
		return 0;
	default:
		return BOOTSTRAP_MAX_PAYLOAD;
	}
}

static mk_status refuse(bootstrap_msg *m, bootstrap_fault f, char *err, size_t errn,
			const char *fm, ...) __attribute__((format(printf, 5, 6)));
static mk_status refuse(bootstrap_msg *m, bootstrap_fault f, char *err, size_t errn,
			const char *fm, ...)
{
	va_list ap;
	m->fault = f;
	if (err && errn) {
		va_start(ap, fm);
		vsnprintf(err, errn, fm, ap);
		va_end(ap);
	}
	return MK_ERR_INVALID;
}

mk_status bootstrap_parse_header(const void *buf, size_t n, int world, bootstrap_msg *m,
				 char *err, size_t errn)
{
	const unsigned char *p = buf;
	uint32_t magic, version, reserved;
	int limit = world > 0 ? world : BOOTSTRAP_MAX_WORLD;

	memset(m, 0, sizeof *m);
	m->about = -1;
	if (!p || n < BOOTSTRAP_HDR)
		return refuse(m, BOOTSTRAP_FAULT_SHORT, err, errn,
			      "truncated header: %zu of %d bytes", p ? n : 0, BOOTSTRAP_HDR);
	magic = le_get32(p);
	version = le_get16(p + 4);
	m->type = le_get16(p + 6);
	m->rank = (int32_t)le_get32(p + 8);
	m->tag = le_get32(p + 12);
	m->len = le_get32(p + 16);
	reserved = le_get32(p + 20);
	if (magic != BOOTSTRAP_MAGIC)
		return refuse(m, BOOTSTRAP_FAULT_MAGIC, err, errn,
			      "bad magic 0x%08x: not an mk bootstrap message", magic);
	if (version != BOOTSTRAP_VERSION)
		return refuse(m, BOOTSTRAP_FAULT_VERSION, err, errn,
			      "protocol version %u, expected %d", version, BOOTSTRAP_VERSION);
	if (m->type == 0 || m->type >= BOOTSTRAP_TYPE_END)
		return refuse(m, BOOTSTRAP_FAULT_TYPE, err, errn, "unknown message type %u",
			      m->type);
	if (m->rank < 0 || m->rank >= limit)
		return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
			      "%s from rank %d, outside 0..%d", bs_type_name(m->type), m->rank,
			      limit - 1);
	if (reserved)
		return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
			      "%s: reserved header field is 0x%x, not 0", bs_type_name(m->type),
			      reserved);
	if (m->len > BOOTSTRAP_MAX_PAYLOAD)
		return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
			      "%s of %u bytes, over the maximum of %u", bs_type_name(m->type),
			      m->len, BOOTSTRAP_MAX_PAYLOAD);
	if (m->len > type_max(m->type, world))
		return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
			      "%s of %u bytes, over the %llu it may carry", bs_type_name(m->type),
			      m->len, (unsigned long long)type_max(m->type, world));
	return MK_OK;
}

mk_status bootstrap_parse(const void *buf, size_t n, int world, bootstrap_msg *m, char *err,
			  size_t errn)
{
	const unsigned char *p = buf, *q;
	mk_status st = bootstrap_parse_header(buf, n, world, m, err, errn);

	if (st != MK_OK)
		return st;
	if (n < (size_t)BOOTSTRAP_HDR + m->len)
		return refuse(m, BOOTSTRAP_FAULT_SHORT, err, errn,
			      "truncated %s: %zu of %u payload bytes", bs_type_name(m->type),
			      n - BOOTSTRAP_HDR, m->len);
	if (n > (size_t)BOOTSTRAP_HDR + m->len)
		return refuse(m, BOOTSTRAP_FAULT_EXTRA, err, errn,
			      "%zu bytes after a %s of %u bytes",
			      n - BOOTSTRAP_HDR - m->len, bs_type_name(m->type), m->len);
	q = m->payload = p + BOOTSTRAP_HDR;
	switch (m->type) {
	case BOOTSTRAP_HELLO:
		if (m->len != BOOTSTRAP_HELLO_WIRE)
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
				      "HELLO of %u bytes, expected %d", m->len,
				      BOOTSTRAP_HELLO_WIRE);
		m->world = le_get32(q);
		if (m->world < 2 || m->world > BOOTSTRAP_MAX_WORLD ||
		    m->rank < 1 || (uint32_t)m->rank >= m->world)
			return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
				      "HELLO from rank %d of a world of %u", m->rank, m->world);
		if (bootstrap_addr_get(q + 4, &m->addr) != 0)
			return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
				      "HELLO from rank %d: bad address", m->rank);
		m->nonce = q + 4 + BOOTSTRAP_ADDR_WIRE;
		m->mac = m->nonce + BOOTSTRAP_NONCE;
		break;
	case BOOTSTRAP_PEER_HELLO:
		if (m->len != BOOTSTRAP_PEER_HELLO_WIRE)
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
				      "PEER_HELLO of %u bytes, expected %d", m->len,
				      BOOTSTRAP_PEER_HELLO_WIRE);
		m->nonce = q;
		m->mac = q + BOOTSTRAP_NONCE;
		break;
	case BOOTSTRAP_CHALLENGE:
		if (m->len != BOOTSTRAP_CHALLENGE_WIRE)
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
				      "CHALLENGE of %u bytes, expected %d", m->len,
				      BOOTSTRAP_CHALLENGE_WIRE);
		m->nonce = q;
		break;
	case BOOTSTRAP_ACCEPT:
		if (m->len != BOOTSTRAP_ACCEPT_WIRE)
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
				      "ACCEPT of %u bytes, expected %d", m->len, BOOTSTRAP_ACCEPT_WIRE);
		m->mac = q;
		break;
	case BOOTSTRAP_WELCOME:
		if (world <= 0 || m->len != BOOTSTRAP_WELCOME_WIRE(world))
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
				      "WELCOME of %u bytes for a world of %d", m->len, world);
		for (int r = 0; r < world; r++) {
			bootstrap_addr a;
			if (bootstrap_addr_get(q + (size_t)r * BOOTSTRAP_ADDR_WIRE, &a) != 0)
				return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
					      "WELCOME: bad address for rank %d", r);
		}
		m->mac = q + (size_t)world * BOOTSTRAP_ADDR_WIRE;
		break;
	case BOOTSTRAP_REJECT:
	case BOOTSTRAP_ABORT:
		if (m->len < 4)
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn, "%s of %u bytes",
				      bs_type_name(m->type), m->len);
		m->about = (int32_t)le_get32(q);
		if (m->type == BOOTSTRAP_ABORT &&
		    (m->about < -1 || m->about >= (world > 0 ? world : BOOTSTRAP_MAX_WORLD)))
			return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
				      "ABORT about rank %d, outside -1..%d", m->about,
				      (world > 0 ? world : BOOTSTRAP_MAX_WORLD) - 1);
		clean_text(m->text, sizeof m->text, q + 4, m->len - 4);
		break;
	default:
		break;
	}
	m->fault = BOOTSTRAP_FAULT_NONE;
	return MK_OK;
}
