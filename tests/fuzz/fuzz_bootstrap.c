/* fuzz_bootstrap.c - libFuzzer harness: arbitrary bytes through the parsers
 * of what arrives from the network and from local peers.
 *
 * The first byte picks how the rest is read: as a whole bootstrap frame
 * (for a few world sizes), as a header alone, or as an fd-passing datagram
 * with some number of descriptors (with the job's id, or the input's own so
 * that the later checks are reached) and as an fd-passing endpoint.  A
 * refusal must say why (a fault and a message); an acceptance must describe
 * a payload inside the input.  Anything else - a crash, a sanitizer report,
 * a hang - is a bug.  (Frames carry no token since version 2: connections
 * prove themselves with MACs, which random bytes do not reach.)
 *
 * Build and run: tools/fuzz.sh SECONDS (or make fuzz).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/bootstrap.h"
#include "runtime/fdpass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t token_of(const uint8_t *p, size_t n)
{
	uint64_t t = 0;
	if (n < FDPASS_HDR)
		return 1;
	for (int i = 0; i < 8; i++)
		t |= (uint64_t)p[24 + i] << (8 * i);
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int worlds[] = {0, 1, 2, 8, 1000};
	bootstrap_msg m;
	fdpass_msg f;
	char err[256];
	uint8_t how;
	const uint8_t *p;
	size_t n;

	if (size < 1)
		return 0;
	how = data[0];
	p = data + 1;
	n = size - 1;
	switch (how % 4) {
	case 0:
	case 1: {
		int w = worlds[(how >> 2) % 5];
		err[0] = 0;
		if (bootstrap_parse(p, n, w, &m, err, sizeof err) == MK_OK) {
			const uint8_t *end = p + n;
			if (m.fault != BOOTSTRAP_FAULT_NONE || (size_t)BOOTSTRAP_HDR + m.len != n ||
			    (m.len && m.payload != p + BOOTSTRAP_HDR))
				abort();
			/* nonces and MACs lie inside the frame */
			if ((m.nonce && (m.nonce < p || m.nonce + BOOTSTRAP_NONCE > end)) ||
			    (m.mac && (m.mac < p || m.mac + BOOTSTRAP_MAC > end)))
				abort();
			if (m.type == BOOTSTRAP_WELCOME && w > 0) {
				bootstrap_addr a;
				for (int r = 0; r < w; r++)
					if (bootstrap_addr_get(m.payload + (size_t)r * BOOTSTRAP_ADDR_WIRE,
							       &a) != 0)
						abort();
			}
		} else if (m.fault == BOOTSTRAP_FAULT_NONE || !err[0]) {
			abort();
		}
		break;
	}
	case 2:
		err[0] = 0;
		if (bootstrap_parse_header(p, n, worlds[(how >> 2) % 5], &m, err, sizeof err) != MK_OK &&
		    (m.fault == BOOTSTRAP_FAULT_NONE || !err[0]))
			abort();
		break;
	default: {
		int fds = (how >> 2) % (FDPASS_MAX_FDS + 2);
		uint64_t tok = how & 0x80 ? token_of(p, n) : 0x5eedull;
		if (fdpass_parse(p, n, fds, tok, 1 + (how >> 4), &f, err, sizeof err) == MK_OK &&
		    (f.nfds != (uint32_t)fds || (size_t)FDPASS_HDR + f.len != n))
			abort();
		if (n >= FDPASS_EP_WIRE) {
			fdpass_ep ep;
			if (fdpass_ep_get(p, &ep) == 0 && !memchr(ep.name, 0, sizeof ep.name))
				abort();
		}
		break;
	}
	}
	return 0;
}
