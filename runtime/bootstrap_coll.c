/* bootstrap_coll.c - what the ranks say to each other once joined: allgather
 * and barrier through rank 0, point-to-point messages over direct
 * connections opened on first use; see bootstrap.h.
 */
#include "bootstrap_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- collectives -------------------------------------------------------------------- */
mk_status bootstrap_allgather(bootstrap *b, const void *mine, void *all, size_t size)
{
	int64_t deadline = bs_now_ms() + b->cfg.timeout_ms;
	uint32_t seq = ++b->seq;
	unsigned char *dst = all;
	int r, st;

	if (b->failed)
		return b->failed;
	if ((uint64_t)size * (uint64_t)b->world > BOOTSTRAP_MAX_PAYLOAD)
		return bs_oops(b, MK_ERR_SIZE, "allgather of %zu bytes from %d ranks is over the "
			       "maximum of %u", size, b->world, BOOTSTRAP_MAX_PAYLOAD);
	if (size)
		memmove(dst + (size_t)b->rank * size, mine, size);
	if (b->rank != 0) {
		frame *f;
		if (bs_send_frame(b, b->root, BOOTSTRAP_GATHER, seq, mine, size, deadline) != MK_OK)
			return b->failed;
		while (!(f = bs_take_conn(b, b->root, BOOTSTRAP_GATHERED, seq))) {
			if (b->root->closed)
				return bs_fail(b, MK_ERR_PEER, "collective #%u: rank 0 has left", seq);
			if ((st = bs_step(b, deadline, NULL)) < 0)
				return b->failed;
			if (st > 0)
				return bs_fail(b, MK_ERR_PEER, "rank %d timed out after %u ms in "
					       "collective #%u waiting for rank 0", b->rank,
					       b->cfg.timeout_ms, seq);
		}
		if (f->len != (uint64_t)size * (uint64_t)b->world) {
			bs_fail(b, MK_ERR_PEER, "collective #%u: rank 0 sent %u bytes, expected %zu",
				seq, f->len, size * (size_t)b->world);
			free(f->buf);
			free(f);
			return b->failed;
		}
		if (size)
			memcpy(dst, f->buf + BOOTSTRAP_HDR, size * (size_t)b->world);
		free(f->buf);
		free(f);
		return MK_OK;
	}
	{
		char *got = calloc((size_t)b->world, 1);
		int missing = b->world - 1;
		if (!got)
			return bs_fail(b, MK_ERR_NOMEM, "out of memory");
		while (missing > 0) {
			for (r = 1; r < b->world; r++) {
				frame *f;
				if (got[r] || !(f = bs_take_conn(b, b->star[r], BOOTSTRAP_GATHER, seq)))
					continue;
				if (f->len != size) {
					bs_fail(b, MK_ERR_INVALID, "collective #%u: rank %d gave %u bytes, "
						"rank 0 gave %zu", seq, r, f->len, size);
					bs_broadcast_abort(b, r);
					free(f->buf);
					free(f);
					free(got);
					return b->failed;
				}
				if (size)
					memcpy(dst + (size_t)r * size, f->buf + BOOTSTRAP_HDR, size);
				free(f->buf);
				free(f);
				got[r] = 1;
				missing--;
			}
			if (!missing)
				break;
			for (r = 1; r < b->world; r++)
				if (!got[r] && b->star[r]->closed) {
					bs_fail(b, MK_ERR_PEER, "collective #%u: rank %d (host %s) has left",
						seq, r, bs_host_of(b, r));
					bs_broadcast_abort(b, r);
					free(got);
					return b->failed;
				}
			if ((st = bs_step(b, deadline, NULL)) < 0) {
				free(got);
				return b->failed;
			}
			if (st > 0) {
				char list[200] = "";
				size_t len = 0;
				for (r = 1; r < b->world && len < sizeof list - 16; r++)
					if (!got[r])
						len += (size_t)snprintf(list + len, sizeof list - len,
									"%s%d", len ? ", " : "", r);
				bs_fail(b, MK_ERR_PEER, "timed out after %u ms in collective #%u waiting "
					"for rank%s %s", b->cfg.timeout_ms, seq, missing > 1 ? "s" : "",
					list);
				bs_broadcast_abort(b, -1);
				free(got);
				return b->failed;
			}
		}
		free(got);
	}
	for (r = 1; r < b->world; r++)
		if (bs_send_frame(b, b->star[r], BOOTSTRAP_GATHERED, seq, dst,
				  size * (size_t)b->world, deadline) != MK_OK)
			return b->failed;
	return MK_OK;
}

mk_status bootstrap_barrier(bootstrap *b)
{
	unsigned char none[1] = {0};
	return bootstrap_allgather(b, none, none, 0);
}

/* ---- point to point -------------------------------------------------------------------- */
mk_status bootstrap_send(bootstrap *b, int peer, uint32_t tag, const void *buf, size_t len)
{
	int64_t deadline = bs_now_ms() + b->cfg.timeout_ms;
	if (b->failed)
		return b->failed;
	if (peer < 0 || peer >= b->world)
		return bs_oops(b, MK_ERR_NOT_FOUND, "send to rank %d of %d", peer, b->world);
	if (len > BOOTSTRAP_MAX_PAYLOAD)
		return bs_oops(b, MK_ERR_SIZE, "a message of %zu bytes is over the maximum of %u", len,
			       BOOTSTRAP_MAX_PAYLOAD);
	if (peer == b->rank) {
		frame *f = calloc(1, sizeof *f);
		if (!f || !(f->buf = bs_frame_new(BOOTSTRAP_P2P, b->rank, tag, buf, len))) {
			free(f);
			return bs_fail(b, MK_ERR_NOMEM, "out of memory");
		}
		f->type = BOOTSTRAP_P2P;
		f->tag = tag;
		f->len = (uint32_t)len;
		*b->selft = f;
		b->selft = &f->next;
		return MK_OK;
	}
	if (!b->out[peer]) {
		struct sockaddr_storage ss;
		socklen_t sl = bs_addr_to_sa(&b->table[peer], &ss);
		char why[256];
		int fd = bs_connect_to((struct sockaddr *)&ss, sl, deadline, why, sizeof why);
		if (fd < 0)
			return bs_fail(b, MK_ERR_PEER, "cannot reach rank %d (host %s): %s", peer,
				       bs_host_of(b, peer), why);
		if (!(b->out[peer] = bs_conn_new(fd, C_OUT, peer))) {
			close(fd);
			return bs_fail(b, MK_ERR_NOMEM, "out of memory");
		}
		if (bs_handshake(b, b->out[peer], NULL, deadline) != MK_OK)
			return b->failed;
	}
	return bs_send_frame(b, b->out[peer], BOOTSTRAP_P2P, tag, buf, len, deadline);
}

mk_status bootstrap_recv(bootstrap *b, int peer, uint32_t tag, void *buf, size_t cap,
			 size_t *len)
{
	int64_t deadline = bs_now_ms() + b->cfg.timeout_ms;
	frame *f;
	int st;

	if (len)
		*len = 0;
	if (peer < 0 || peer >= b->world)
		return bs_oops(b, MK_ERR_NOT_FOUND, "receive from rank %d of %d", peer, b->world);
	for (;;) {
		/* what arrived before a failure is still delivered */
		f = peer == b->rank ? bs_take(&b->self, &b->selft, BOOTSTRAP_P2P, tag)
				    : bs_take_conn(b, b->in[peer], BOOTSTRAP_P2P, tag);
		if (f)
			break;
		if (b->failed)
			return b->failed;
		if (peer == b->rank)
			return bs_oops(b, MK_ERR_STATE, "rank %d waits for a message (tag %u) from itself "
				       "that it never sent", peer, tag);
		if (b->in[peer] && b->in[peer]->closed)
			return bs_fail(b, MK_ERR_PEER, "rank %d (host %s) has left without sending a "
				       "message with tag %u", peer, bs_host_of(b, peer), tag);
		if ((st = bs_step(b, deadline, NULL)) < 0)
			continue;   /* deliver what came before the failure */
		if (st > 0)
			return bs_fail(b, MK_ERR_PEER, "timed out after %u ms waiting for a message "
				       "(tag %u) from rank %d (host %s)", b->cfg.timeout_ms, tag, peer,
				       bs_host_of(b, peer));
	}
	if (f->len > cap) {
		mk_status s = bs_oops(b, MK_ERR_SIZE, "a message of %u bytes from rank %d (tag %u) "
				      "does not fit in %zu bytes", f->len, peer, tag, cap);
		free(f->buf);
		free(f);
		return s;
	}
	if (f->len)
		memcpy(buf, f->buf + BOOTSTRAP_HDR, f->len);
	if (len)
		*len = f->len;
	free(f->buf);
	free(f);
	return MK_OK;
}
