/* inspect.c - the program listing (--emit=check|expand|plan), the plans,
 * and text, JSON, Graphviz and SVG views of a schedule.
 *
 * The JSON form is documented in docs/schedule.md and read by the
 * independent checker of the property tests (tests/tools/check_schedule.py);
 * it lists every rank's tasks, expanded from rank 0's under sigma_r.
 */
#include "inspect.h"

#include <stdlib.h>
#include <string.h>

static const char *placement_name(ir_placekind k)
{
	return k == PL_SPLIT ? "split" : k == PL_PARTIAL ? "partial" : "local";
}


static const char *kind_name(ir_tkind k)
{
	return k == TK_IN ? "in" : k == TK_OUT ? "out" : "temp";
}

static const char *transport_name(ir_transport t)
{
	return t == TR_RDMA ? "rdma" : t == TR_NVLINK ? "nvlink" : t == TR_LOCAL ? "local" : "auto";
}

static const char *peers_name(ir_peers p)
{
	return p == PEERS_NODE ? "node" : p == PEERS_REMOTE ? "remote" : "world";
}

void inspect_region(const ir_prog *p, const ir_region *g, strbuf *out)
{
	if (g->tensor < 0) {
		sb_puts(out, "-");
		return;
	}
	const ir_tensor *x = &p->tensors[g->tensor];
	sb_printf(out, "%s@%d[", x->name, g->rank);
	for (int d = 0; d < x->ndim; d++)
		sb_printf(out, "%s%lld:%lld", d ? ", " : "", (long long)g->lo[d], (long long)g->hi[d]);
	sb_putc(out, ']');
}

void inspect_plans(const ir_prog *p, strbuf *out)
{
	sb_printf(out, "kernel: %d threads a CTA, %d bytes of shared memory, %d tensor maps\n",
		  p->threads, p->smem, p->ntmaps);
	sb_printf(out, "plans (%d ops):\n", p->nops);
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		const ir_plan *pl = &op->plan;
		sb_printf(out, "  %-3d %-12s %-14s", i, op->stage, ir_op_name(op->kind));
		switch (op->kind) {
		case OP_MATMUL:
			if (pl->mm.wgmma) {
				sb_printf(out, "tile %d x %d x 64, wgmma, %d-stage ring (mma.sync %d x %d x %d, "
					  "%d stages, off sm_90a)", pl->mm.bm, pl->mm.bn, pl->mm.wg_stages,
					  pl->mm.bm, pl->mm.bn, pl->mm.bk, pl->mm.stages);
				if (pl->mm.wg_cols && op->gate)
					sb_printf(out, ", 64 rows: one warpgroup %s's columns, the other %s's",
						  p->tensors[op->gate - 1].name, p->tensors[op->in[1]].name);
				else if (pl->mm.wg_cols)
					sb_puts(out, ", 64 rows: the warpgroups split the columns");
				if (op->norm)
					sb_printf(out, ", %s's rmsnorm in the tile", p->tensors[op->in[0]].name);
				if (pl->mm.carry && !ir_next_known(op))  /* the next is taken when this ends */
					sb_puts(out, ", the ring goes on into the task's next tile");
				else if (pl->mm.carry)
					sb_puts(out, ", the ring goes on into the next task");
				if (pl->mm.late)
					sb_puts(out, ", waits per operand");
				if (pl->mm.tma_store)
					sb_puts(out, ", the epilogue through shared memory, stored by TMA");
				else if (pl->mm.staged)
					sb_puts(out, ", the epilogue through shared memory");
			} else {
				sb_printf(out, "tile %d x %d x %d, mma.sync, %d-stage ring", pl->mm.bm,
					  pl->mm.bn, pl->mm.bk, pl->mm.stages);
				if (op->norm)
					sb_printf(out, ", %s's rmsnorm in the tile", p->tensors[op->in[0]].name);
			}
			if (pl->mm.tiles_m * pl->mm.tiles_n > 1)
				sb_printf(out, ", %d x %d tiles a task", pl->mm.tiles_m, pl->mm.tiles_n);
			if (pl->mm.ksplit > 1)
				sb_printf(out, ", split-K %d x %lld into %s", pl->mm.ksplit,
					  (long long)pl->mm.kstep, p->tensors[pl->mm.work].name);
			if (ir_has_epilogue(op)) {
				char eb[160];
				sb_printf(out, ", %s in the epilogue", ir_epilogue_text(p, op, eb, sizeof eb));
			}
			if (pl->mm.bucket >= 0)
				sb_printf(out, ", rows bounded by %s's buckets", p->ops[pl->mm.bucket].stage);
			if (pl->mm.wgmma && pl->mm.a_box < ir_mm_a_rows(&pl->mm))
				sb_printf(out, ", A by %d-row halves (the second where tokens reach it)",
					  pl->mm.a_box);
			if (pl->pool)
				sb_puts(out, ", tasks taken at run time (a pool)");
			if (pl->mm.cluster > 1)
				sb_printf(out, ", in pairs on %d-CTA clusters that share B's loads (sm_90a)",
					  pl->mm.cluster);
			if (pl->skip_past)
				sb_puts(out, ", no stores past the tokens (nothing reads them)");
			if (pl->signal_past)
				sb_puts(out, ", its tasks past the tokens signalled, not run");
			break;
		case OP_ATTENTION:
			if (pl->attn.tensor_cores)
				sb_printf(out, "%d query rows a task, tensor cores, %d keys a stage, %d stages",
					  pl->attn.rows, pl->attn.keys, pl->attn.ring);
			else
				sb_printf(out, "%d query rows a task, fp32", pl->attn.rows);
			if (pl->attn.bulk == IR_ATTN_MAPS)
				sb_printf(out, " (sm_90: K and V by TMA, boxes of %d x 64, tensor maps "
					  "%d-%d)", pl->attn.keys, pl->attn.tmap, pl->attn.tmap + 1);
			else if (pl->attn.bulk == IR_ATTN_ROWS)
				sb_puts(out, " (sm_90: K and V rows by bulk copies)");
			if (pl->attn.tensor_cores && pl->attn.engine == IR_ATTN_WGMMA)
				sb_printf(out, "; sm_90a: TMA + wgmma, %d keys a stage, %d stages%s%s, "
					  "tensor maps %d-%d", pl->attn.wg_keys, pl->attn.wg_stages,
					  pl->attn.wg_overlap ? ", S beside P V" : "",
					  pl->attn.wg_rotate ? ", chunks from each CTA's place" : "",
					  pl->attn.tmap, pl->attn.tmap + 2);
			if (pl->attn.kvsplit > 1)
				sb_printf(out, ", split-KV %d x %lld keys into %s", pl->attn.kvsplit,
					  (long long)pl->attn.kvstep, p->tensors[pl->attn.work].name);
			break;
		case OP_DISPATCH:
			sb_printf(out, "%lld slots a task", (long long)pl->moe.block);
			if (pl->skip_past)
				sb_puts(out, ", no zeros past the tokens (nothing reads them)");
			if (pl->ctas)
				sb_printf(out, ", on %d CTAs (the others take the pool's first tiles)",
					  pl->ctas);
			break;
		case OP_COMBINE:
			sb_printf(out, "%lld tokens a task", (long long)pl->moe.block);
			break;
		default:
			if (pl->view) {
				const ir_tensor *y = &p->tensors[op->out];
				sb_printf(out, "a view of %s (no copy): offset %lld, strides",
					  p->tensors[y->root].name, (long long)y->off);
				for (int d = 0; d < y->ndim; d++)
					sb_printf(out, "%s%lld", d ? " x " : " ", (long long)y->st[d]);
			} else if (ir_op_class(op->kind) == 'L') {
				sb_puts(out, "a copy");
			} else {
				sb_puts(out, "-");
			}
			break;
		}
		if (pl->smem)
			sb_printf(out, "; smem %d", pl->smem);
		sb_putc(out, '\n');
	}
}

static void task_line(const ir_sched *s, const ir_task *t, strbuf *out)
{
	const ir_prog *p = s->prog;
	sb_printf(out, "%-6s %-8s ", ir_task_name(t->kind), p->ops[t->op].stage);
	inspect_region(p, &t->write, out);
	sb_puts(out, " <- ");
	for (int i = 0; i < t->nreads; i++) {
		if (i)
			sb_puts(out, ", ");
		inspect_region(p, &t->reads[i], out);
	}
	if (t->kind == TASK_COPY || t->kind == TASK_RDMA)
		sb_printf(out, " (%s)", transport_name(t->transport));
}

void inspect_graph(const ir_sched *s, strbuf *out)
{
	const ir_prog *p = s->prog;
	sb_printf(out, "# tile graph of '%s', mesh %d x %d: rank 0's %d tasks "
		  "(rank r runs their image under sigma_r)\n",
		  p->name, p->nodes, p->gpus, s->ntasks);
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		int any = 0;
		for (int d = 0; d < x->ndim; d++)
			any |= x->rot[d].unit > 0;
		if (!any)
			continue;
		sb_printf(out, "# %s moves with the rank along", x->name);
		for (int d = 0; d < x->ndim; d++)
			if (x->rot[d].unit > 0)
				sb_printf(out, " dim %d (shards of %lld over %s)", d,
					  (long long)x->rot[d].unit, ir_group_name(x->rot[d].group));
		sb_putc(out, '\n');
	}
	for (int i = 0; i < s->ntasks; i++) {
		sb_printf(out, "t%-5d ", i);
		task_line(s, &s->tasks[i], out);
		sb_putc(out, '\n');
	}
}

static void flagrefs(const ir_flagref *f, int n, strbuf *out)
{
	if (!n) {
		sb_puts(out, "-");
		return;
	}
	for (int i = 0; i < n; i++)
		sb_printf(out, "%sf%d@%d", i ? "," : "", f[i].index, f[i].rank);
}

/* A task's waits: those before it starts, then (" in-tile ...") those its
 * engine waits for after it has started (ir_wait_late) */
static void waitrefs(const ir_prog *p, const ir_task *t, strbuf *out)
{
	int n = 0, late = 0;
	for (int w = 0; w < t->nwaits; w++)
		if (!ir_wait_late(p, t, w))
			sb_printf(out, "%sf%d@%d", n++ ? "," : "", t->waits[w].index, t->waits[w].rank);
	if (!n)
		sb_puts(out, "-");
	for (int w = 0; w < t->nwaits; w++)
		if (ir_wait_late(p, t, w))
			sb_printf(out, "%sf%d@%d", late++ ? "," : " in-tile ", t->waits[w].index,
				  t->waits[w].rank);
}

void inspect_schedule(const ir_sched *s, strbuf *out)
{
	const ir_prog *p = s->prog;
	sb_printf(out, "pipeline %s: mesh %d x %d (world %d), %d rank%s per GPU\n", p->name,
		  p->nodes, p->gpus, p->world, s->ranks_per_gpu, s->ranks_per_gpu > 1 ? "s" : "");
	sb_printf(out, "each rank: %d CTAs x %d threads, %d bytes of shared memory per CTA%s\n",
		  s->ctas, s->threads, s->smem,
		  s->cluster > 1 ? ", in clusters of 2 on sm_90a" : "");
	sb_printf(out, "predicted %.1f us; floor %.1f us (compute %.1f us, communication %.1f us)\n",
		  s->predicted_us, s->bound_us, s->compute_us, s->comm_us);
	for (int k = 0; k < s->npools; k++)
		sb_printf(out, "pool %s: %d tasks taken at run time by the %d CTAs that hold them, "
			  "first t%d\n", p->ops[s->pools[k].op].stage, s->pools[k].n, s->pools[k].ctas,
			  s->pool_order[s->pools[k].first]);
	if (s->order_wave && s->other_us > 0)
		sb_printf(out, "tasks taken by wave (ready first: predicted %.1f us)\n", s->other_us);
	else if (s->order_wave)
		sb_puts(out, "tasks taken by wave (MK_SCHED_ORDER)\n");
	sb_puts(out, "\nroles\n");
	for (int r = 0; r < s->nroles; r++) {
		const ir_role *ro = &s->roles[r];
		int n = 0;
		for (int i = 0; i < s->ntasks; i++)
			n += s->tasks[i].role == r;
		sb_printf(out, "  %-8s CTAs %d-%d (%d), %d tasks\n", ir_role_name(ro->kind),
			  ro->first_cta, ro->first_cta + ro->ctas - 1, ro->ctas, n);
	}
	sb_printf(out, "\nflags (every rank has these %d)\n", s->nflags);
	for (int f = 0; f < s->nflags; f++) {
		sb_printf(out, "  f%-4d expects %-3d %-8s ", f, s->flags[f].expected,
			  p->ops[s->flags[f].op].stage);
		inspect_region(p, &s->flags[f].guards, out);
		sb_putc(out, '\n');
	}
	sb_puts(out, "\ntasks of rank 0, by CTA (rank r runs the same lists under sigma_r; \"in-tile\":\n"
		   "waits a tile's engine does after the tile has started)\n");
	for (int c = 0; c < s->ctas; c++) {
		int a = s->cta_first[c], b = s->cta_first[c + 1];
		if (a == b)
			continue;
		sb_printf(out, "CTA %d (%s)\n", c, ir_role_name(s->roles[s->tasks[a].role].kind));
		for (int i = a; i < b; i++) {
			const ir_task *t = &s->tasks[i];
			sb_printf(out, "  %3d t%-5d %8.2f %8.2f  ", t->order, t->id, t->t0, t->t1);
			task_line(s, t, out);
			sb_puts(out, "  waits ");
			waitrefs(p, t, out);
			sb_puts(out, " signals ");
			flagrefs(t->signals, t->nsignals, out);
			sb_putc(out, '\n');
		}
	}
}

static void json_region(const ir_prog *p, const ir_region *g, strbuf *out)
{
	const ir_tensor *x = &p->tensors[g->tensor];
	sb_printf(out, "{\"tensor\": \"%s\", \"rank\": %d, \"lo\": [", x->name, g->rank);
	for (int d = 0; d < x->ndim; d++)
		sb_printf(out, "%s%lld", d ? ", " : "", (long long)g->lo[d]);
	sb_puts(out, "], \"hi\": [");
	for (int d = 0; d < x->ndim; d++)
		sb_printf(out, "%s%lld", d ? ", " : "", (long long)g->hi[d]);
	sb_puts(out, "]}");
}

void inspect_json(const ir_sched *s, strbuf *out)
{
	const ir_prog *p = s->prog;
	sb_printf(out, "{\n  \"pipeline\": \"%s\",\n  \"mesh\": {\"nodes\": %d, \"gpus\": %d},\n",
		  p->name, p->nodes, p->gpus);
	sb_printf(out, "  \"world\": %d,\n  \"sms\": %d,\n  \"ranks_per_gpu\": %d,\n"
		  "  \"ctas\": %d,\n  \"threads\": %d,\n  \"smem\": %d,\n",
		  p->world, s->dev.sms, s->ranks_per_gpu, s->ctas, s->threads, s->smem);
	sb_puts(out, "  \"tensors\": [\n");
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		sb_printf(out, "    {\"name\": \"%s\", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": [",
			  x->name, kind_name(x->kind), ir_dtype_name(x->dtype));
		for (int d = 0; d < x->ndim; d++)
			sb_printf(out, "%s%lld", d ? ", " : "", (long long)x->shape[d]);
		sb_puts(out, "], \"local\": [");
		for (int d = 0; d < x->ndim; d++)
			sb_printf(out, "%s%lld", d ? ", " : "", (long long)x->local[d]);
		sb_printf(out, "], \"placement\": {\"kind\": \"%s\"", placement_name(x->place.kind));
		if (x->place.kind == PL_SPLIT)
			sb_printf(out, ", \"dim\": %d, \"group\": \"%s\"", x->place.dim,
				  ir_group_name(x->place.group));
		sb_putc(out, '}');
		if (x->view) {
			sb_printf(out, ", \"view\": {\"of\": \"%s\", \"offset\": %lld, \"strides\": [",
				  p->tensors[x->root].name, (long long)x->off);
			for (int d = 0; d < x->ndim; d++)
				sb_printf(out, "%s%lld", d ? ", " : "", (long long)x->st[d]);
			sb_puts(out, "]}");
		}
		sb_printf(out, "}%s\n", t + 1 < p->ntensors ? "," : "");
	}
	sb_puts(out, "  ],\n  \"roles\": [\n");
	for (int r = 0; r < s->nroles; r++)
		sb_printf(out, "    {\"name\": \"%s\", \"first_cta\": %d, \"ctas\": %d}%s\n",
			  ir_role_name(s->roles[r].kind), s->roles[r].first_cta, s->roles[r].ctas,
			  r + 1 < s->nroles ? "," : "");
	sb_puts(out, "  ],\n  \"tasks\": [\n");
	/* rank r's image of each template task, shifted field by field (the
	 * reads and waits straight from the template: no copy of the lists) */
	int total = p->world * s->ntasks, k = 0;
	for (int r = 0; r < p->world; r++)
		for (int i = 0; i < s->ntasks; i++, k++) {
			const ir_task *t = &s->tasks[i];
			sb_printf(out, "    {\"id\": %d, \"rank\": %d, \"role\": \"%s\", \"cta\": %d, "
				  "\"kind\": \"%s\", \"stage\": \"%s\", \"order\": %d, \"reads\": [",
				  k, ir_rank_shift(t->rank, r, p->nodes, p->gpus),
				  ir_role_name(s->roles[t->role].kind), t->cta, ir_task_name(t->kind),
				  p->ops[t->op].stage, t->order);
			for (int j = 0; j < t->nreads; j++) {
				const ir_region g = ir_region_shift(p, t->reads[j], r);
				if (j)
					sb_puts(out, ", ");
				json_region(p, &g, out);
			}
			sb_puts(out, "], \"writes\": [");
			const ir_region w = ir_region_shift(p, t->write, r);
			json_region(p, &w, out);
			sb_puts(out, "], \"waits\": [");
			for (int j = 0; j < t->nwaits; j++)
				sb_printf(out, "%s%d", j ? ", " : "",
					  ir_rank_shift(t->waits[j].rank, r, p->nodes, p->gpus) * s->nflags +
					  t->waits[j].index);
			sb_puts(out, "], \"signals\": [");
			for (int j = 0; j < t->nsignals; j++)
				sb_printf(out, "%s%d", j ? ", " : "",
					  ir_rank_shift(t->signals[j].rank, r, p->nodes, p->gpus) * s->nflags +
					  t->signals[j].index);
			sb_puts(out, "]");
			if (ir_op_class(p->ops[t->op].kind) == 'L')  /* a layout op's copy */
				sb_printf(out, ", \"layout\": \"%s\"", ir_op_name(p->ops[t->op].kind));
			if (p->ops[t->op].norm_w)  /* its last read: the weight of an rmsnorm in the tile */
				sb_puts(out, ", \"norm_weight\": true");
			int late = 0;  /* the waits its engine does after it starts */
			for (int j = 0; j < t->nwaits; j++)
				if (ir_wait_late(p, t, j))
					sb_printf(out, "%s%d", late++ ? ", " : ", \"late_waits\": [",
						  ir_rank_shift(t->waits[j].rank, r, p->nodes, p->gpus) *
							  s->nflags + t->waits[j].index);
			sb_printf(out, "%s, \"predicted_us\": [%.3f, %.3f]}%s\n", late ? "]" : "", t->t0,
				  t->t1, k + 1 < total ? "," : "");
		}
	sb_puts(out, "  ],\n  \"flags\": [\n");
	for (int r = 0; r < p->world; r++)
		for (int f = 0; f < s->nflags; f++)
			sb_printf(out, "    {\"id\": %d, \"rank\": %d, \"expected\": %d}%s\n",
				  r * s->nflags + f, r, s->flags[f].expected,
				  r + 1 < p->world || f + 1 < s->nflags ? "," : "");
	/* each rank's pools: rank r takes r's images of the template's, in
	 * the same order */
	sb_puts(out, "  ],\n  \"pools\": [");
	for (int r = 0, np = 0; r < p->world; r++)
		for (int q = 0; q < s->npools; q++, np++) {
			const ir_pool *pl = &s->pools[q];
			sb_printf(out, "%s\n    {\"stage\": \"%s\", \"rank\": %d, \"ctas\": %d, \"tasks\": [",
				  np ? "," : "", p->ops[pl->op].stage, r, pl->ctas);
			for (int j = 0; j < pl->n; j++)
				sb_printf(out, "%s%d", j ? ", " : "", r * s->ntasks + s->pool_order[pl->first + j]);
			sb_puts(out, "]}");
		}
	sb_puts(out, s->npools ? "\n" : "");
	sb_printf(out, "  ],\n  \"predicted_us\": %.3f,\n  \"run_us\": %.3f,\n  \"bound_us\": %.3f,\n"
		  "  \"compute_us\": %.3f,\n  \"comm_us\": %.3f,\n  \"task_order\": \"%s\"\n}\n",
		  s->predicted_us, s->dev.run_us, s->bound_us, s->compute_us, s->comm_us,
		  s->order_wave ? "wave" : "ready");
}

static const char *role_color[ROLE_COUNT] = {"#4c78a8", "#f58518", "#e45756", "#54a24b"};

void inspect_dot(const ir_sched *s, strbuf *out)
{
	const ir_prog *p = s->prog;
	sb_printf(out, "digraph \"%s\" {\n  rankdir=LR;\n  node [shape=box, style=filled, "
		  "fontname=\"monospace\", fontsize=9];\n", p->name);
	for (int i = 0; i < s->ntasks; i++) {
		const ir_task *t = &s->tasks[i];
		strbuf r;
		sb_init(&r);
		inspect_region(p, &t->write, &r);
		sb_printf(out, "  t%d [label=\"t%d %s %s\\n%s\\nCTA %d\", fillcolor=\"%s\", fontcolor=white];\n",
			  i, i, ir_task_name(t->kind), p->ops[t->op].stage, sb_str(&r), t->cta,
			  role_color[s->roles[t->role].kind]);
		sb_free(&r);
	}
	/* edges: signal -> wait on the same flag; a flag on another rank is a
	 * dashed edge to the image of the waiter there */
	for (int i = 0; i < s->ntasks; i++)
		for (int a = 0; a < s->tasks[i].nsignals; a++) {
			ir_flagref f = s->tasks[i].signals[a];
			for (int j = 0; j < s->ntasks; j++)
				for (int b = 0; b < s->tasks[j].nwaits; b++) {
					ir_flagref w = s->tasks[j].waits[b];
					if (w.index != f.index)
						continue;
					if (w.rank == f.rank)
						sb_printf(out, "  t%d -> t%d [label=\"f%d\"];\n", i, j, f.index);
					else if (f.rank != 0)
						sb_printf(out, "  t%d -> t%d [style=dashed, label=\"f%d@%d\"];\n",
							  i, j, f.index, f.rank);
				}
		}
	sb_puts(out, "}\n");
}

void inspect_svg(const ir_sched *s, strbuf *out)
{
	const ir_prog *p = s->prog;
	double end = s->predicted_us > 0 ? s->predicted_us : 1;
	int lane = 12, left = 110, width = 1000, top = 40;
	int h = top + s->ctas * lane + 40;
	sb_printf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		  "font-family=\"monospace\" font-size=\"10\">\n", left + width + 20, h);
	sb_printf(out, "<text x=\"4\" y=\"14\">%s, mesh %d x %d: predicted %.1f us, floor %.1f us "
		  "(rank 0; one lane per CTA)</text>\n", p->name, p->nodes, p->gpus,
		  s->predicted_us, s->bound_us);
	for (int r = 0; r < s->nroles; r++)
		sb_printf(out, "<rect x=\"%d\" y=\"20\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			  "<text x=\"%d\" y=\"29\">%s</text>\n", 4 + r * 90,
			  role_color[s->roles[r].kind], 18 + r * 90, ir_role_name(s->roles[r].kind));
	for (int c = 0; c < s->ctas; c++)
		sb_printf(out, "<text x=\"4\" y=\"%d\">CTA %d</text>\n", top + c * lane + 9, c);
	for (int i = 0; i < s->ntasks; i++) {
		const ir_task *t = &s->tasks[i];
		double x0 = left + t->t0 / end * width, x1 = left + t->t1 / end * width;
		strbuf r;
		sb_init(&r);
		inspect_region(p, &t->write, &r);
		sb_printf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
			  "stroke=\"white\" stroke-width=\"0.3\"><title>t%d %s %s %s %.2f-%.2f us</title></rect>\n",
			  x0, top + t->cta * lane, x1 - x0 > 0.3 ? x1 - x0 : 0.3, lane - 2,
			  role_color[s->roles[t->role].kind], i, ir_task_name(t->kind),
			  p->ops[t->op].stage, sb_str(&r), t->t0, t->t1);
		sb_free(&r);
	}
	for (int k = 0; k <= 10; k++) {
		double x = left + k * width / 10.0;
		sb_printf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\"/>"
			  "<text x=\"%.1f\" y=\"%d\">%.1f us</text>\n", x, top - 2, x,
			  top + s->ctas * lane, x - 10, top + s->ctas * lane + 14, end * k / 10);
	}
	sb_puts(out, "</svg>\n");
}

/* ---- the program listing ---------------------------------------------------- */

static void dump_shape(strbuf *out, int nd, const int64_t *sh)
{
	sb_putc(out, '[');
	for (int i = 0; i < nd; i++)
		sb_printf(out, "%s%lld", i ? ", " : "", (long long)sh[i]);
	sb_putc(out, ']');
}

/* A table of text cells, printed with every column padded to its widest
 * cell (the last column is not padded). */
enum { NCOL = 7 };
typedef struct table {
	strbuf cell[NCOL];
	char **v;
	int rows, ncol;
} table;

static void table_row(table *tb)
{
	char **nv = realloc(tb->v, (size_t)(tb->rows + 1) * NCOL * sizeof *nv);
	if (!nv)
		return;
	tb->v = nv;
	for (int c = 0; c < NCOL; c++) {
		nv[tb->rows * NCOL + c] = sb_take(&tb->cell[c]);
		sb_init(&tb->cell[c]);
	}
	tb->rows++;
}

static void table_print(table *tb, strbuf *out)
{
	int w[NCOL] = {0};
	for (int r = 0; r < tb->rows; r++)
		for (int c = 0; c < tb->ncol; c++) {
			int n = (int)strlen(tb->v[r * NCOL + c]);
			w[c] = n > w[c] ? n : w[c];
		}
	for (int r = 0; r < tb->rows; r++) {
		strbuf line;
		sb_init(&line);
		for (int c = 0; c < tb->ncol; c++) {
			const char *x = tb->v[r * NCOL + c];
			sb_printf(&line, "  %-*s", c == tb->ncol - 1 ? 0 : w[c], x);
		}
		while (line.len && line.s[line.len - 1] == ' ')
			line.s[--line.len] = 0;
		sb_puts(out, sb_str(&line));
		sb_putc(out, '\n');
		sb_free(&line);
	}
	for (int i = 0; i < tb->rows * NCOL; i++)
		free(tb->v[i]);
	free(tb->v);
	for (int c = 0; c < NCOL; c++)
		sb_free(&tb->cell[c]);
}

void inspect_program(const ir_prog *p, strbuf *out)
{
	if (!p)
		return;
	sb_printf(out, "pipeline %s\n", p->name);
	sb_printf(out, "mesh %d x %d (world %d)\n", p->nodes, p->gpus, p->world);
	for (int i = 0; i < p->nparams; i++)
		sb_printf(out, "param %s = %lld%s\n", p->params[i].name,
			  (long long)p->params[i].value,
			  p->params[i].overridden ? "  (-D)" : "");
	if (p->nroles) {
		sb_puts(out, "roles");
		for (int i = 0; i < p->nroles; i++)
			sb_printf(out, "%s %s %d", i ? "," : "",
				  ir_role_name(p->roles[i].role), p->roles[i].ctas);
		sb_putc(out, '\n');
	}

	table tb = {.ncol = 7};
	for (int c = 0; c < NCOL; c++)
		sb_init(&tb.cell[c]);
	sb_printf(out, "\ntensors (%d):\n", p->ntensors);
	for (int i = 0; i < p->ntensors; i++) {
		const ir_tensor *t = &p->tensors[i];
		char pb[32];
		sb_puts(&tb.cell[0], t->name);
		sb_puts(&tb.cell[1], kind_name(t->kind));
		sb_puts(&tb.cell[2], ir_dtype_name(t->dtype));
		dump_shape(&tb.cell[2], t->ndim, t->shape);
		sb_puts(&tb.cell[3], ir_place_name(t->place, pb, sizeof pb));
		sb_puts(&tb.cell[4], "per rank ");
		dump_shape(&tb.cell[4], t->ndim, t->local);
		if (t->producer >= 0)
			sb_printf(&tb.cell[5], "from op %d", t->producer);
		if (t->nwriters > 1)
			sb_printf(&tb.cell[5], " (+%d)", t->nwriters - 1);
		sb_printf(&tb.cell[6], "uses %d", t->nuses);
		if (t->folded)  /* the expansion's: no op reads or writes it */
			sb_puts(&tb.cell[6], ", folded");
		table_row(&tb);
	}
	table_print(&tb, out);

	table to = {.ncol = 3};
	for (int c = 0; c < NCOL; c++)
		sb_init(&to.cell[c]);
	sb_printf(out, "\nops (%d):\n", p->nops);
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		const char *o = p->tensors[op->out].name;
		strbuf *x = &to.cell[2];
		sb_printf(&to.cell[0], "%d", i);
		sb_puts(&to.cell[1], op->stage);
		if (op->kind == OP_PUT) {
			sb_printf(x, "%s[%s of p] <- %s@p for p in %s  %s", o,
				  op->dim ? "cols" : "rows", p->tensors[op->in[0]].name,
				  peers_name(op->peers), transport_name(op->transport));
		} else {
			sb_printf(x, "%s = %s(", o, ir_op_name(op->kind));
			for (int j = 0; j < op->nin; j++) {
				const char *in = p->tensors[op->in[j]].name;
				if (j == 0 && op->norm)  /* expand.c fuse_norms */
					sb_printf(x, "rmsnorm(%s%s%s)", in, op->norm_w ? ", " : "",
						  op->norm_w ? p->tensors[op->norm_w - 1].name : "");
				else
					sb_printf(x, "%s%s", j ? ", " : "", in);
			}
			switch (op->kind) {
			case OP_SCALE: sb_printf(x, ", %g", op->scalar); break;
			case OP_CAST: sb_printf(x, ", %s", ir_dtype_name(op->to)); break;
			case OP_SUM: case OP_ALLGATHER: case OP_REDUCE_SCATTER:
			case OP_RING_SHIFT:
				sb_printf(x, ", %d", op->dim);
				break;
			case OP_ATTENTION:
				if (op->causal)
					sb_puts(x, ", causal");
				break;
			case OP_DISPATCH:
				sb_printf(x, ", %lld, %lld", (long long)op->experts,
					  (long long)op->capacity);
				break;
			default: break;
			}
			sb_putc(x, ')');
		}
		if (op->hints.ntile) {
			sb_puts(x, "  tile ");
			for (int j = 0; j < op->hints.ntile; j++)
				sb_printf(x, "%s%lld", j ? " x " : "",
					  (long long)op->hints.tile[j]);
		}
		if (op->hints.chunk)
			sb_printf(x, "  chunk %lld", (long long)op->hints.chunk);
		if (op->hints.tasks)
			sb_printf(x, "  tasks %lld", (long long)op->hints.tasks);
		if (op->hints.split)
			sb_printf(x, "  split %lld", (long long)op->hints.split);
		if (op->kind == OP_ATTENTION)
			sb_printf(x, "  (scale %.6g)", op->scalar);
		if (ir_has_epilogue(op)) {  /* fused by the expansion */
			char eb[160];
			sb_printf(x, "  then %s in the epilogue", ir_epilogue_text(p, op, eb, sizeof eb));
		}
		table_row(&to);
	}
	table_print(&to, out);
}
