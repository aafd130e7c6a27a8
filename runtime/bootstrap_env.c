/* bootstrap_env.c - where a rank learns who it is: MK_RANK, MK_WORLD_SIZE,
 * MK_ROOT and the variables that mpirun, Slurm and torchrun set, the job
 * key and the host id, MK_ROOT_FD and MK_IFACE; see bootstrap_config in
 * bootstrap.h.
 */
#include "bootstrap_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- configuration ----------------------------------------------------------- */
uint64_t bootstrap_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

static const char *var(bootstrap_getenv_fn get, void *ctx, const char *name)
{
	const char *v = name ? get(name, ctx) : NULL;
	return v && *v ? v : NULL;
}

static int to_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static const char *env_get(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

static uint64_t default_host_id(void)
{
	char buf[512] = "", boot[64] = "", ns[128] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	ssize_t k;

	if (f) {
		if (!fgets(boot, sizeof boot, f))
			boot[0] = 0;
		fclose(f);
	}
	k = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
	ns[k > 0 ? k : 0] = 0;
	if (!boot[0] && !ns[0] && gethostname(buf, 256) == 0)
		return bootstrap_hash(buf);
	snprintf(buf, sizeof buf, "%s|%s", boot, ns);
	return bootstrap_hash(buf);
}

mk_status bootstrap_config(bootstrap_cfg *cfg, bootstrap_getenv_fn get, void *ctx, char *err,
			   size_t n)
{
	static const char *const ranks[][3] = {
		{"MK_RANK", "MK_WORLD_SIZE", "MK_RANK/MK_WORLD_SIZE"},
		{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
		{"PMI_RANK", "PMI_SIZE", "PMI"},
		{"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
		{"RANK", "WORLD_SIZE", "torchrun"},
	};
	static const char *const locals[][2] = {
		{"MK_LOCAL_RANK", "MK_LOCAL_WORLD_SIZE"},
		{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
		{"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
		{"SLURM_LOCALID", NULL},
		{"LOCAL_RANK", "LOCAL_WORLD_SIZE"},
	};
	const char *r = NULL, *w = NULL, *v, *src = "no launcher variables";
	char job[256] = "", tokensrc[64] = "";
	long x;
	size_t i;

	memset(cfg, 0, sizeof *cfg);
	cfg->world = 1;
	cfg->local_rank = cfg->local_world = -1;
	cfg->root_fd = -1;
	cfg->timeout_ms = 60000;
	if (!get)
		get = env_get;

	for (i = 0; i < sizeof ranks / sizeof ranks[0]; i++) {
		r = var(get, ctx, ranks[i][0]);
		w = var(get, ctx, ranks[i][1]);
		if (!r && !w)
			continue;
		if (!r || !w) {
			bs_fmt(err, n, "%s is set but %s is not", r ? ranks[i][0] : ranks[i][1],
			       r ? ranks[i][1] : ranks[i][0]);
			return MK_ERR_INVALID;
		}
		if (to_long(w, 1, BOOTSTRAP_MAX_WORLD, &x)) {
			bs_fmt(err, n, "%s=%s: not a world size (1..%d)", ranks[i][1], w,
			       BOOTSTRAP_MAX_WORLD);
			return MK_ERR_INVALID;
		}
		cfg->world = (int)x;
		if (to_long(r, 0, cfg->world - 1, &x)) {
			bs_fmt(err, n, "%s=%s: not a rank in 0..%d", ranks[i][0], r, cfg->world - 1);
			return MK_ERR_INVALID;
		}
		cfg->rank = (int)x;
		src = ranks[i][2];
		break;
	}
	for (i = 0; i < sizeof locals / sizeof locals[0]; i++) {
		const char *lr = var(get, ctx, locals[i][0]), *lw = var(get, ctx, locals[i][1]);
		long a, b = -1;
		if (!lr)
			continue;
		if (to_long(lr, 0, BOOTSTRAP_MAX_WORLD - 1, &a) ||
		    (lw && (to_long(lw, 1, BOOTSTRAP_MAX_WORLD, &b) || a >= b))) {
			bs_fmt(err, n, "%s=%s%s%s: not a local rank", locals[i][0], lr,
			       lw ? ", local size " : "", lw ? lw : "");
			return MK_ERR_INVALID;
		}
		cfg->local_rank = (int)a;
		cfg->local_world = (int)b;
		break;
	}

	if ((v = var(get, ctx, "MK_ROOT")) != NULL) {
		const char *colon = strrchr(v, ':');
		const char *h = v;
		size_t hl;
		if (!colon || to_long(colon + 1, 0, 65535, &x)) {
			bs_fmt(err, n, "MK_ROOT=%s: expected host:port", v);
			return MK_ERR_INVALID;
		}
		hl = (size_t)(colon - v);
		if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
			h++;
			hl -= 2;
		}
		if (hl == 0 || hl >= sizeof cfg->root_host) {
			bs_fmt(err, n, "MK_ROOT=%s: expected host:port", v);
			return MK_ERR_INVALID;
		}
		memcpy(cfg->root_host, h, hl);
		cfg->root_host[hl] = 0;
		cfg->root_port = (int)x;
	} else if ((v = var(get, ctx, "MASTER_ADDR")) != NULL) {
		const char *p = var(get, ctx, "MASTER_PORT");
		if (!p || to_long(p, 1, 65534, &x) || strlen(v) >= sizeof cfg->root_host) {
			bs_fmt(err, n, "MASTER_ADDR=%s with MASTER_PORT=%s: expected a host and a port",
			       v, p ? p : "(unset)");
			return MK_ERR_INVALID;
		}
		snprintf(cfg->root_host, sizeof cfg->root_host, "%s", v);
		cfg->root_port = (int)x + 1;
	} else if (cfg->world > 1) {
		bs_fmt(err, n, "rank %d of %d (from %s) but MK_ROOT is not set: set MK_ROOT=host:port "
		       "of rank 0 (or MASTER_ADDR and MASTER_PORT)", cfg->rank, cfg->world, src);
		return MK_ERR_INVALID;
	}
	if (cfg->world > 1 && cfg->root_port == 0) {
		bs_fmt(err, n, "MK_ROOT port 0 is only for a world of 1");
		return MK_ERR_INVALID;
	}

	if ((v = var(get, ctx, "MK_BOOT_TIMEOUT_MS")) != NULL) {
		if (to_long(v, 1, 86400000, &x)) {
			bs_fmt(err, n, "MK_BOOT_TIMEOUT_MS=%s: expected milliseconds", v);
			return MK_ERR_INVALID;
		}
		cfg->timeout_ms = (unsigned)x;
	}

	if ((v = var(get, ctx, "MK_ROOT_FD")) != NULL && cfg->rank == 0) {
		/* a launcher's listening socket (mkrun -n): it must be one */
		int acc = 0;
		socklen_t al = sizeof acc;
		struct stat st;
		if (to_long(v, 0, 1 << 20, &x) || fstat((int)x, &st) != 0 || !S_ISSOCK(st.st_mode) ||
		    getsockopt((int)x, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) != 0 || !acc) {
			bs_fmt(err, n, "MK_ROOT_FD=%s: not a listening socket of this process", v);
			return MK_ERR_INVALID;
		}
		cfg->root_fd = (int)x;
	}
	if ((v = var(get, ctx, "MK_IFACE")) != NULL) {
		if (strlen(v) >= sizeof cfg->iface) {
			bs_fmt(err, n, "MK_IFACE=%s: too long for an interface or an address", v);
			return MK_ERR_INVALID;
		}
		snprintf(cfg->iface, sizeof cfg->iface, "%s", v);
	}

	if ((v = var(get, ctx, "MK_JOB_TOKEN")) != NULL) {
		bootstrap_set_token(cfg, v);
		snprintf(tokensrc, sizeof tokensrc, "MK_JOB_TOKEN");
	} else {
		static const char *const ids[][2] = {
			{"SLURM_JOB_ID", "SLURM_STEP_ID"},
			{"OMPI_MCA_ess_base_jobid", NULL},
			{"PMIX_NAMESPACE", NULL},
			{"TORCHELASTIC_RUN_ID", NULL},
		};
		for (i = 0; i < sizeof ids / sizeof ids[0]; i++) {
			const char *a = var(get, ctx, ids[i][0]), *b = var(get, ctx, ids[i][1]);
			if (!a)
				continue;
			snprintf(job, sizeof job, "%s.%s", a, b ? b : "");
			snprintf(tokensrc, sizeof tokensrc, "%s", ids[i][0]);
			break;
		}
		{
			char buf[600];
			snprintf(buf, sizeof buf, "mk|%s|%s:%d|%d", job, cfg->root_host,
				 cfg->root_port, cfg->world);
			bs_key_of("mk derived token", buf, cfg->key);
			cfg->token_derived = 1;
		}
		if (!tokensrc[0])
			snprintf(tokensrc, sizeof tokensrc, "the root address");
		/* for the log line: anyone who can see the job id can make this */
		strncat(tokensrc, " (guessable)", sizeof tokensrc - strlen(tokensrc) - 1);
	}

	if ((v = var(get, ctx, "MK_HOST_ID")) != NULL)
		cfg->host_id = bootstrap_hash(v);
	else
		cfg->host_id = default_host_id();

	snprintf(cfg->source, sizeof cfg->source, "%s, root %s:%d, token from %s", src,
		 cfg->root_host[0] ? cfg->root_host : "-", cfg->root_port, tokensrc);
	return MK_OK;
}

mk_status bootstrap_config_env(bootstrap_cfg *cfg, char *err, size_t n)
{
	return bootstrap_config(cfg, env_get, NULL, err, n);
}

