/* test_verbs.c - the choice of transport on a machine without an RDMA
 * device: verbs says so cleanly (no crash, no hang, a status and a reason),
 * the automatic choice falls back to libfabric and says why, a forced
 * transport that is unavailable is an error, and missing libraries or
 * providers are reported as such.  The verbs data path itself needs a NIC
 * (see docs/rdma.md).  Exit 0 = pass.
 */
#include "mkt_proc.h"

#include "runtime/transport.h"

static bootstrap *one(void)
{
	bootstrap_cfg c;
	bootstrap *b = NULL;
	char err[256];
	memset(&c, 0, sizeof c);
	c.world = 1;
	bootstrap_set_token(&c, "test_verbs");
	c.timeout_ms = 5000;
	c.root_fd = -1;
	c.local_rank = c.local_world = -1;
	if (bootstrap_create(&c, &b, err, sizeof err) != MK_OK)
		mkt_check(0, "bootstrap of one: %s", err);
	return b;
}

static int have_device(void)
{
	char why[512];
	transport_opts o = TRANSPORT_OPTS_INIT;
	return tp_verbs_probe(&o, why, sizeof why);
}

/* in a child: the library state is per process */
static int no_libibverbs(void *arg)
{
	bootstrap *b = one();
	transport *t = NULL;
	transport_opts o = TRANSPORT_OPTS_INIT;
	char log[1024];
	mk_status st;
	(void)arg;
	setenv("MK_LIBIBVERBS", "/nonexistent/libibverbs.so.1", 1);
	o.force = "verbs";
	st = transport_open(&o, b, &t, log, sizeof log);
	mkt_check(st == MK_ERR_UNSUPPORTED && t == NULL && strstr(log, "libibverbs not found"),
		  "no libibverbs: %s", log);
	o.force = NULL;
	o.provider = "tcp";
	st = transport_open(&o, b, &t, log, sizeof log);
	mkt_check(st == MK_OK && strstr(log, "fabric") && strstr(log, "libibverbs not found"),
		  "no libibverbs, automatic: %s", log);
	transport_close(t);
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static int no_libraries(void *arg)
{
	bootstrap *b = one();
	transport *t = NULL;
	char log[1024];
	mk_status st;
	(void)arg;
	setenv("MK_LIBIBVERBS", "/nonexistent/libibverbs.so.1", 1);
	setenv("MK_LIBFABRIC", "/nonexistent/libfabric.so.1", 1);
	st = transport_open(NULL, b, &t, log, sizeof log);
	mkt_check(st == MK_ERR_UNSUPPORTED && t == NULL && strstr(log, "none available") &&
		  strstr(log, "libfabric not found"), "neither library: %s", log);
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

int main(void)
{
	bootstrap *b = one();
	transport *t = NULL;
	transport_opts o = TRANSPORT_OPTS_INIT;
	char log[1024], why[512];
	mk_status st;
	int64_t t0;

	setenv("FI_TCP_IFACE", "lo", 0);
	unsetenv("MK_TRANSPORT");
	{
		/* first, before this process loads either library */
		pid_t p = mkt_spawn(no_libibverbs, NULL);
		mkt_check(mkt_reap(p, mkt_now_ms() + 20000) == 0, "child without libibverbs exits 0");
		p = mkt_spawn(no_libraries, NULL);
		mkt_check(mkt_reap(p, mkt_now_ms() + 20000) == 0, "child without either exits 0");
	}
	if (!b)
		return mkt_summary("test_verbs");
	if (have_device()) {
		/* a machine with a NIC: still check that it opens and closes */
		o.force = "verbs";
		st = transport_open(&o, b, &t, log, sizeof log);
		mkt_check(st == MK_OK, "an RDMA device is here: %s", log);
		transport_close(t);
		bootstrap_destroy(b);
		return mkt_summary("test_verbs");
	}
	t0 = mkt_now_ms();
	mkt_check(!tp_verbs_probe(&o, why, sizeof why) && strstr(why, "RDMA device"),
		  "probe: %s", why);
	o.force = "verbs";
	st = transport_open(&o, b, &t, log, sizeof log);
	mkt_check(st == MK_ERR_UNSUPPORTED && t == NULL && strstr(log, "no RDMA device"),
		  "verbs asked for, none here: %s (%s)", log, mk_status_name(st));
	o.force = NULL;
	o.ib_device = "mlx5_7:1";
	st = transport_open(&o, b, &t, log, sizeof log);
	mkt_check(st == MK_OK && t && !strcmp(transport_kind(t), "fabric"), "a named device that "
		  "is not here, automatic: %s", log);
	transport_close(t);
	t = NULL;
	o.ib_device = NULL;
	st = transport_open(&o, b, &t, log, sizeof log);
	mkt_check(st == MK_OK && t && !strcmp(transport_kind(t), "fabric") &&
		  strstr(log, "no verbs: no RDMA device"), "automatic: %s", log);
	if (t) {
		mkt_check(!transport_ordered(t) && transport_lanes(t) == 1,
			  "tcp: unordered (flag after delivery), one lane");
		transport_close(t);
		t = NULL;
	}
	setenv("MK_TRANSPORT", "verbs", 1);
	st = transport_open(NULL, b, &t, log, sizeof log);
	mkt_check(st == MK_ERR_UNSUPPORTED && !t && strstr(log, "MK_TRANSPORT"),
		  "MK_TRANSPORT=verbs, none here: %s", log);
	setenv("MK_TRANSPORT", "infiniband", 1);
	st = transport_open(NULL, b, &t, log, sizeof log);
	mkt_check(st == MK_ERR_INVALID && !t, "MK_TRANSPORT=infiniband: %s", log);
	setenv("MK_TRANSPORT", "fabric", 1);
	setenv("MK_FABRIC_PROVIDER", "no-such-provider", 1);
	st = transport_open(NULL, b, &t, log, sizeof log);
	mkt_check(st == MK_ERR_UNSUPPORTED && !t && strstr(log, "no-such-provider"),
		  "MK_FABRIC_PROVIDER=no-such-provider: %s", log);
	unsetenv("MK_FABRIC_PROVIDER");
	unsetenv("MK_TRANSPORT");
	mkt_check(mkt_now_ms() - t0 < 10000, "all of it in %lld ms", (long long)(mkt_now_ms() - t0));
	bootstrap_destroy(b);
	return mkt_summary("test_verbs");
}
