/* costmodel.c - H200 constants and task costs; see docs/costmodel.md. */
#include "costmodel.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ir_device costmodel_h200(void)
{
	return (ir_device){
		.name = "H200",
		.sms = 132,
		.max_threads_per_sm = 2048,
		.smem_per_sm = 227 * 1024,
		.regs_per_sm = 65536,
		.bf16_tflops = 790.0,   /* cuBLAS 8192^3 measured here: 769-798 */
		.f32_tflops = 60.0,
		.mem_gbps = 4300.0,     /* d2d copy measured here, read + write */
		.nvlink_gbps = 360.0,   /* achievable per direction (of 450) */
		.nic_gbps = 50.0,       /* one 400 Gb/s NIC per GPU */
		.nvlink_lat_us = 2.0,
		.nic_lat_us = 5.0,
		.flag_lat_us = 0.8,     /* 1.55 us round trip measured here */
		.launch_us = 3.3,       /* eager launch measured here */
		.run_us = 5.0,          /* empty kernel, event to event: 5.0-5.5 */
		.task_us = 1.8,         /* smallest tasks of a trace: 1.5-2.5 */
		.fill_us = 4.5,         /* fitted to decode traces (docs/costmodel.md) */
		.copy_cta_gbps = 45.0,  /* bench_copy: one CTA 35-51 (ld/st), 50-56 (bulk) */
		.stream_cta_gbps = 50.0, /* a GEMM tile's TMA ring, one CTA (docs/costmodel.md) */
		.mma_eff = 0.9,         /* wgmma engine 128x256: 780 of 833 (cuBLAS) measured */
		.attn_eff = 0.76,       /* Hopper attention tile, D = 128: 570-630 of 790 measured */
		.attn_k64_eff = 0.51,   /* the same, 64 keys a stage: 393-410 (older softmax) */
		.attn_d64_eff = 0.47,   /* the Hopper tile at D = 64: 364-373 */
		.attn_mma_eff = 0.28,   /* the mma.sync tile: 221-225 */
	};
}

/* A key's value: a positive finite number below 1e9, whole for INT keys. */
static int set_key(ir_device *d, const char *key, double v, const char **want)
{
#define INT(f) (*want = "a positive whole number", v == (double)(long long)v ? ((f) = (int)v, 1) : 0)
#define DBL(f) (*want = "a positive number", (f) = v, 1)
#define X(k, kind)                  \
	if (!strcmp(key, #k))       \
		return kind(d->k);
	COSTMODEL_KEYS(X)
#undef X
#undef INT
#undef DBL
	return -1;
}

/* Trims the spaces at both ends of s in place. */
static char *trim(char *s)
{
	s += strspn(s, " \t\r\n");
	size_t n = strlen(s);
	while (n > 0 && strchr(" \t\r\n", s[n - 1]))
		s[--n] = 0;
	return s;
}

/* One line of a device file over *d: 0, or -1 with why[] (where: FILE:LINE).
 * `card = NAME` (a driver's device name) is the runtime's to match (into
 * card[], when given), no key of the model. */
static int parse_line(char *line, const char *where, ir_device *d, char *card, size_t ncard,
		      char *why, size_t n)
{
	char *h = strchr(line, '#');
	if (h)
		*h = 0;
	if (strspn(line, " \t\r\n") == strlen(line))
		return 0;
	char *eq = strchr(line, '='), *k = line + strspn(line, " \t");
	if (eq && !strncmp(k, "card", 4) && k + 4 + strspn(k + 4, " \t") == eq) {
		const char *v = trim(eq + 1);
		if (!*v) {
			snprintf(why, n, "%s: card: a device name, as the driver gives it", where);
			return -1;
		}
		if (card)
			snprintf(card, ncard, "%s", v);
		return 0;
	}
	char key[64], val[128], extra[8];
	if (sscanf(line, " %63[a-z0-9_] = %127s %7s", key, val, extra) != 2) {
		snprintf(why, n, "%s: expected 'key = value'", where);
		return -1;
	}
	char *end;
	errno = 0;
	double v = strtod(val, &end);
	const char *want = "a positive number";
	ir_device tmp = *d;
	int ok = *end || errno || !(v > 0) || v >= 1e9 ? 0 : set_key(&tmp, key, v, &want);
	if (ok < 0 || (ok == 0 && set_key(&tmp, key, 1, &want) < 0)) {
		snprintf(why, n, "%s: unknown key '%s'", where, key);
		return -1;
	}
	if (ok == 0) {
		snprintf(why, n, "%s: bad value '%s' for %s (%s)", where, val, key, want);
		return -1;
	}
	*d = tmp;
	return 0;
}

int costmodel_load(const char *path, ir_device *d, char *why, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(why, n, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	char line[512], where[300];
	int lineno = 0, rc = 0;
	ir_device tmp = *d;  /* all of the file or none of it */
	while (rc == 0 && fgets(line, sizeof line, f)) {
		snprintf(where, sizeof where, "%s:%d", path, ++lineno);
		rc = parse_line(line, where, &tmp, NULL, 0, why, n);
	}
	fclose(f);
	if (rc == 0)
		*d = tmp;
	return rc;
}

/* The text of an embedded device file over *d (card[]: its card line's
 * name, "" if none); -1 with why[]. */
static int parse_text(const char *name, const char *text, ir_device *d, char *card, size_t ncard,
		      char *why, size_t n)
{
	char line[512], where[300];
	int lineno = 0;
	card[0] = 0;
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
		snprintf(where, sizeof where, "tools/devices/%s:%d", name, ++lineno);
		if (parse_line(line, where, d, card, ncard, why, n) != 0)
			return -1;
		p += len + (p[len] == '\n');
	}
	return 0;
}

const char *costmodel_card(const char *card, ir_device *d, char *why, size_t n)
{
	for (int i = 0; i < cm_ndevices; i++) {
		ir_device tmp = *d;
		char name[256];
		if (parse_text(cm_devices[i].name, cm_devices[i].text, &tmp, name, sizeof name, why,
			       n) != 0)
			return NULL;
		if (*name && card && strstr(card, name)) {
			*d = tmp;
			return cm_devices[i].name;
		}
	}
	if (n)
		why[0] = 0;
	return NULL;
}

/* A tile's arithmetic on the tensor cores at `eff` of their peak */
static double tile_compute_us(const ir_device *d, double flops, double eff)
{
	return flops / (d->bf16_tflops * eff * 1e12 / d->sms) * 1e6;
}

double cost_stream_us(const ir_device *d, double bytes)
{
	double bw = d->copy_cta_gbps;
	return bytes / (bw * 1e9) * 1e6 + d->task_us;
}

int cost_copy_ctas(const ir_device *d, double link_gbps)
{
	const int k = (int)ceil(link_gbps / d->copy_cta_gbps);
	return k < 1 ? 1 : k;
}

double cost_store_us(const ir_device *d, double bytes)
{
	return bytes / (d->copy_cta_gbps * 1e9) * 1e6;
}

/* A tile's arithmetic (c) and its stream (m), microseconds */
static void tile_parts(const ir_device *d, double flops, double eff, double hbm, int ctas,
		       int ranks_per_gpu, double *c, double *m)
{
	*c = tile_compute_us(d, flops, eff);
	*m = 0;
	if (hbm > 0) {
		double bw = d->stream_cta_gbps;
		double share = d->mem_gbps / (ranks_per_gpu > 0 ? ranks_per_gpu : 1) /
			       (ctas > 0 ? ctas : 1);
		if (share < bw)
			bw = share;
		*m = hbm / (bw * 1e9) * 1e6;
	}
}

/* The longer of a tile's parts, + the ring's fill before the first step
 * and its drain, the epilogue and the flags after the last */
static double tile_us(const ir_device *d, double flops, double eff, double hbm, int ctas,
		      int ranks_per_gpu)
{
	double c, m;
	tile_parts(d, flops, eff, hbm, ctas, ranks_per_gpu, &c, &m);
	return (c > m ? c : m) + d->fill_us;
}

double cost_tile_us(const ir_device *d, double flops, double hbm, int ctas, int ranks_per_gpu)
{
	return tile_us(d, flops, d->mma_eff, hbm, ctas, ranks_per_gpu);
}

double cost_tile_rest_us(const ir_device *d, double flops, double hbm, int ctas, int ranks_per_gpu,
			 double early)
{
	double c, m;
	tile_parts(d, flops, d->mma_eff, hbm, ctas, ranks_per_gpu, &c, &m);
	m *= 1 - early;
	/* the fill as a whole still counts: A's loads start only now, and the
	 * drain, the epilogue and the flags come after (no measurement yet
	 * says how much of it the early loads hide) */
	return (c > m ? c : m) + d->fill_us;
}

double cost_attn_us(const ir_device *d, double flops, double eff, double hbm, int ctas,
		    int ranks_per_gpu)
{
	return tile_us(d, flops, eff, hbm, ctas, ranks_per_gpu);
}

double cost_attn_eff(const ir_device *d, const ir_prog *p, const ir_op *op)
{
	const ir_tensor *q = &p->tensors[op->in[0]];
	const ir_attn_plan *a = &op->plan.attn;
	if (a->engine != IR_ATTN_WGMMA)
		return d->attn_mma_eff;
	const int64_t D = q->shape[q->ndim - 1];
	if (D < 128)
		return d->attn_d64_eff;
	return D == 128 && a->wg_keys < 128 ? d->attn_k64_eff : d->attn_eff;
}

double cost_copy_us(const ir_device *d, double bytes, ir_transport tr,
		    int ctas, int ranks_per_gpu)
{
	double link;
	switch (tr) {
	case TR_RDMA: link = d->nic_gbps; break;
	case TR_NVLINK:
		link = ranks_per_gpu > 1 ? d->mem_gbps / 2 / ranks_per_gpu : d->nvlink_gbps;
		break;
	default: link = d->mem_gbps / 2 / ranks_per_gpu; break;
	}
	double bw = d->copy_cta_gbps;
	if (ctas > 0 && link / ctas < bw)
		bw = link / ctas;
	double lat = tr == TR_RDMA ? d->nic_lat_us : tr == TR_NVLINK ? d->nvlink_lat_us : 0.0;
	return bytes / (bw * 1e9) * 1e6 + lat + d->task_us;
}
