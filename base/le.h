/* le.h - little-endian fields in byte buffers.
 *
 * Every wire format and file header of mk (bootstrap frames, fd-passing
 * datagrams, the transport's key exchange, the JIT cache's entries) stores
 * its integers little-endian, whatever the host's byte order; these are the
 * one copy of the code that writes and reads them.  p points at the first
 * byte and needs no alignment.  The reads assemble the value byte by byte,
 * so a compiler turns them into one load on a little-endian host.
 *
 * be32 is here too for the one big-endian format we read, SHA-256's words.
 */
#ifndef MK_LE_H
#define MK_LE_H

#include <stdint.h>

static inline void le_put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void le_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void le_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t le_get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le_get64(const unsigned char *p)
{
	return le_get32(p) | (uint64_t)le_get32(p + 4) << 32;
}

static inline uint32_t be_get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void be_put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

#endif
