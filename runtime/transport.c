/* transport.c - what both RDMA backends share: the choice between them,
 * regions and their bounds, the exchange of addresses and keys through the
 * bootstrap, and the dispatch of posts and polls; see transport.h.
 */
#include "transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/le.h"

#define TP_MAGIC 0x50544b4du /* "MKTP" */

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

mk_status transport_open(const transport_opts *o, bootstrap *b, transport **out, char *log,
			 size_t n)
{
	transport_opts def = TRANSPORT_OPTS_INIT;
	const char *force;
	char why[512] = "", vwhy[512] = "";
	transport *t;
	mk_status st;

	*out = NULL;
	if (!o)
		o = &def;
	force = o->force ? o->force : env("MK_TRANSPORT");
	if (force && strcmp(force, "verbs") && strcmp(force, "fabric")) {
		snprintf(log, n, "transport: MK_TRANSPORT=%s: expected verbs or fabric", force);
		return MK_ERR_INVALID;
	}
	if (!(t = calloc(1, sizeof *t))) {
		snprintf(log, n, "transport: out of memory");
		return MK_ERR_NOMEM;
	}
	t->boot = b;
	t->rank = bootstrap_rank(b);
	t->world = bootstrap_world(b);
	t->lanes = 1;
	t->max_msg = 1u << 30;
	if (force) {
		st = !strcmp(force, "verbs") ? tp_verbs_open(t, o, why, sizeof why)
					     : tp_fabric_open(t, o, why, sizeof why);
		if (st != MK_OK) {
			snprintf(log, n, "transport: %s was asked for (%s) but is not available: %s",
				 force, o->force ? "by the caller" : "MK_TRANSPORT", why);
			free(t);
			return st;
		}
		snprintf(log, n, "transport: %s, %s (asked for by %s)", t->ops->kind, t->desc,
			 o->force ? "the caller" : "MK_TRANSPORT");
	} else if (tp_verbs_probe(o, vwhy, sizeof vwhy) &&
		   (st = tp_verbs_open(t, o, why, sizeof why)) == MK_OK) {
		snprintf(log, n, "transport: verbs, %s (an RDMA device was found)", t->desc);
	} else {
		if (why[0])   /* the device was there, but opening it failed */
			snprintf(vwhy, sizeof vwhy, "%s", why);
		st = tp_fabric_open(t, o, why, sizeof why);
		if (st != MK_OK) {
			snprintf(log, n, "transport: none available: verbs: %s; libfabric: %s", vwhy,
				 why);
			free(t);
			return st;
		}
		snprintf(log, n, "transport: fabric, %s (no verbs: %s)", t->desc, vwhy);
	}
	*out = t;
	return MK_OK;
}

void transport_close(transport *t)
{
	if (!t)
		return;
	for (int i = 0; i < TP_MAX_REGIONS; i++)
		if (t->region[i].used && t->ops)
			t->ops->dereg(t, &t->region[i]);
	if (t->ops)
		t->ops->close(t);
	free(t->remote);
	free(t);
}

const char *transport_error(const transport *t) { return t ? t->err : ""; }
const char *transport_kind(const transport *t) { return t->ops->kind; }
const char *transport_desc(const transport *t) { return t->desc; }
int transport_ordered(const transport *t) { return t->ordered; }
int transport_device_memory(const transport *t) { return t->device_memory; }
uint64_t transport_max_msg(const transport *t) { return t->max_msg; }
int transport_lanes(const transport *t) { return t->lanes; }
int transport_rank(const transport *t) { return t->rank; }
int transport_world(const transport *t) { return t->world; }

mk_status transport_reg(transport *t, int index, const tp_mem *m)
{
	tp_region *r;
	mk_status st;

	if (index < 0 || index >= TP_MAX_REGIONS || !m || !m->addr || !m->len) {
		tp_fail(t, "region %d: bad index, address or length", index);
		return MK_ERR_INVALID;
	}
	if (t->connected && m->exported) {
		tp_fail(t, "region %d: exported regions must be registered before connecting",
			index);
		return MK_ERR_STATE;
	}
	if (m->kind == TP_MEM_CUDA && !t->device_memory) {
		tp_fail(t, "region %d: %s cannot register GPU memory here; use host-pinned memory "
			"mapped for the GPU", index, t->desc);
		return MK_ERR_UNSUPPORTED;
	}
	r = &t->region[index];
	if (r->used) {
		if (t->connected && r->mem.exported) {
			tp_fail(t, "region %d is exported to the peers: it cannot change", index);
			return MK_ERR_STATE;
		}
		t->ops->dereg(t, r);
		memset(r, 0, sizeof *r);
	}
	r->mem = *m;
	if ((st = t->ops->reg(t, r)) != MK_OK) {
		memset(r, 0, sizeof *r);
		return st;
	}
	r->used = 1;
	return MK_OK;
}

mk_status transport_dereg(transport *t, int index)
{
	tp_region *r;
	if (index < 0 || index >= TP_MAX_REGIONS || !(r = &t->region[index])->used)
		return MK_ERR_NOT_FOUND;
	if (t->connected && r->mem.exported) {
		tp_fail(t, "region %d is exported to the peers: it cannot go", index);
		return MK_ERR_STATE;
	}
	t->ops->dereg(t, r);
	memset(r, 0, sizeof *r);
	return MK_OK;
}

mk_status transport_connect(transport *t)
{
	size_t asz = t->ops->addr_size(t), rsz = (size_t)TP_MAX_REGIONS * 24, blob = asz + rsz;
	size_t w = (size_t)t->world;
	unsigned char hdr[16], *hdrs = NULL, *mine = NULL, *all = NULL, *addrs = NULL;
	uint32_t kind = !strcmp(t->ops->kind, "verbs") ? 1 : 2;
	mk_status st = MK_ERR_NOMEM;

	if (t->connected) {
		tp_fail(t, "already connected");
		return MK_ERR_STATE;
	}
	if (asz > TP_ADDR_MAX) {
		tp_fail(t, "%s address of %zu bytes", t->ops->kind, asz);
		return MK_ERR_INTERNAL;
	}
	/* first agree on the transport, so that a mismatch has a clear message */
	le_put32(hdr, TP_MAGIC);
	le_put32(hdr + 4, kind);
	le_put32(hdr + 8, (uint32_t)asz);
	le_put32(hdr + 12, (uint32_t)t->lanes);
	if (!(hdrs = malloc(16 * w)) || !(mine = calloc(1, blob)) || !(all = malloc(blob * w)) ||
	    !(addrs = malloc(asz * w + 1)) || !(t->remote = calloc(w * TP_MAX_REGIONS,
								    sizeof *t->remote))) {
		tp_fail(t, "out of memory for %zu ranks", w);
		goto out;
	}
	if ((st = bootstrap_allgather(t->boot, hdr, hdrs, 16)) != MK_OK) {
		tp_fail(t, "exchanging transports: %s", bootstrap_error(t->boot));
		goto out;
	}
	for (size_t r = 0; r < w; r++) {
		const unsigned char *h = hdrs + 16 * r;
		if (le_get32(h) != TP_MAGIC || le_get32(h + 4) != kind || le_get32(h + 8) != asz ||
		    le_get32(h + 12) != (uint32_t)t->lanes) {
			tp_fail(t, "rank %zu uses %s (%u lanes, %u-byte addresses), rank %d uses %s "
				"(%d lanes, %zu-byte addresses): set MK_TRANSPORT alike everywhere",
				r, le_get32(h + 4) == 1 ? "verbs" : le_get32(h + 4) == 2 ? "fabric" : "?",
				le_get32(h + 12), le_get32(h + 8), t->rank, t->ops->kind, t->lanes, asz);
			st = MK_ERR_STATE;
			goto out;
		}
	}
	if ((st = t->ops->addr(t, mine)) != MK_OK)
		goto out;
	for (int i = 0; i < TP_MAX_REGIONS; i++) {
		const tp_region *r = &t->region[i];
		unsigned char *p = mine + asz + (size_t)i * 24;
		if (!r->used || !r->mem.exported)
			continue;
		le_put64(p, r->raddr);
		le_put64(p + 8, r->rkey);
		le_put64(p + 16, r->mem.len);
	}
	if ((st = bootstrap_allgather(t->boot, mine, all, blob)) != MK_OK) {
		tp_fail(t, "exchanging keys: %s", bootstrap_error(t->boot));
		goto out;
	}
	for (size_t r = 0; r < w; r++) {
		memcpy(addrs + r * asz, all + r * blob, asz);
		for (int i = 0; i < TP_MAX_REGIONS; i++) {
			const unsigned char *p = all + r * blob + asz + (size_t)i * 24;
			tp_remote *m = &t->remote[r * TP_MAX_REGIONS + (size_t)i];
			m->addr = le_get64(p);
			m->key = le_get64(p + 8);
			m->len = le_get64(p + 16);
		}
	}
	if ((st = t->ops->connect(t, addrs, asz)) != MK_OK)
		goto out;
	/* everyone is ready to be written to before anyone writes */
	if ((st = bootstrap_barrier(t->boot)) != MK_OK) {
		tp_fail(t, "after connecting: %s", bootstrap_error(t->boot));
		goto out;
	}
	t->connected = 1;
out:
	free(hdrs);
	free(mine);
	free(all);
	free(addrs);
	return st;
}

static int resolve(transport *t, const tp_write *w, tp_op *op)
{
	const tp_region *s;
	const tp_remote *d;

	if (!t->connected) {
		tp_fail(t, "write before transport_connect");
		return TP_ERROR;
	}
	if (w->peer < 0 || w->peer >= t->world) {
		tp_fail(t, "write to rank %d of %d", w->peer, t->world);
		return TP_ERROR;
	}
	if (w->len == 0 || w->len > t->max_msg) {
		tp_fail(t, "write of %llu bytes to rank %d (1 to %llu at once)",
			(unsigned long long)w->len, w->peer, (unsigned long long)t->max_msg);
		return TP_ERROR;
	}
	if (w->src_region < 0 || w->src_region >= TP_MAX_REGIONS ||
	    !(s = &t->region[w->src_region])->used) {
		tp_fail(t, "write to rank %d from region %d, which is not registered here", w->peer,
			w->src_region);
		return TP_ERROR;
	}
	if (w->src_off > s->mem.len || w->len > s->mem.len - w->src_off) {
		tp_fail(t, "write to rank %d: bytes %llu..%llu of local region %d, which has %zu",
			w->peer, (unsigned long long)w->src_off,
			(unsigned long long)(w->src_off + w->len), w->src_region, s->mem.len);
		return TP_ERROR;
	}
	if (w->dst_region < 0 || w->dst_region >= TP_MAX_REGIONS ||
	    !(d = &t->remote[(size_t)w->peer * TP_MAX_REGIONS + (size_t)w->dst_region])->len) {
		tp_fail(t, "write to rank %d's region %d, which that rank did not export", w->peer,
			w->dst_region);
		return TP_ERROR;
	}
	if (w->dst_off > d->len || w->len > d->len - w->dst_off) {
		tp_fail(t, "write to rank %d: bytes %llu..%llu of its region %d, which has %llu",
			w->peer, (unsigned long long)w->dst_off,
			(unsigned long long)(w->dst_off + w->len), w->dst_region,
			(unsigned long long)d->len);
		return TP_ERROR;
	}
	op->peer = w->peer;
	op->lane = (int)((unsigned)w->lane % (unsigned)t->lanes);
	op->local = (char *)s->mem.addr + w->src_off;
	op->desc = s->desc;
	op->lkey = s->lkey;
	op->raddr = d->addr + w->dst_off;
	op->rkey = d->key;
	op->len = w->len;
	op->ctx = w->ctx;
	op->flags = w->flags;
	return 0;
}

int transport_check(transport *t, const tp_write *w)
{
	tp_op op;
	return resolve(t, w, &op);
}

int transport_post(transport *t, const tp_write *w, int n)
{
	tp_op ops[16];
	if (n <= 0)
		return 0;
	if (n > 16)
		n = 16;
	for (int i = 0; i < n; i++) {
		if (resolve(t, &w[i], &ops[i]) != 0)
			return TP_ERROR;
		if (ops[i].peer != ops[0].peer || ops[i].lane != ops[0].lane) {
			tp_fail(t, "one post, several peers or lanes");
			return TP_ERROR;
		}
	}
	return t->ops->post(t, ops, n);
}

int transport_poll(transport *t, tp_completion *c, int max)
{
	return t->ops->poll(t, c, max);
}
