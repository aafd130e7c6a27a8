#!/usr/bin/env python3
"""moe_baseline.py - the unfused MoE layer that tools/bench-moe.sh times
against samples/moe_dispatch_gemm.mk (make bench, on the GPU).

  moe_baseline.py [--tokens 8192] [--experts 64] [--hidden 2048] [--ffn 1024]
                  [--topk 8] [--iters 20] [--warmup 3] [--check]
  torchrun --nproc-per-node W moe_baseline.py ...   (W ranks, NCCL)

The layered expert-parallel layer people write by hand (the "all-to-all
token dispatcher" of Megatron-LM and its kin), sizes as the sample: T
tokens split over W ranks (T/W each, bf16 rows of H), top-k routing (i32
expert ids, f32 gates), E experts spread over the ranks (E/W each, W1
[H, F] and W2 [F, H] per expert).  One layer:

  1. permute: this rank's (token, choice) entries sorted by expert (stable),
     the token rows gathered in that order;
  2. counts per expert: all_to_all_single (NCCL), then copied to the host,
     which needs them as split sizes (the step a fused kernel does without
     the CPU);
  3. the rows: all_to_all_single with those splits;
  4. the received rows sorted by local expert, the expert MLP as grouped
     GEMMs: torch._grouped_mm where this torch has it (one launch for all
     experts), else one GEMM per expert; silu between;
  5. unsort, all_to_all_single back, unpermute, the gate-weighted sum of
     each token's k rows.

At W=1 (no torchrun) the two exchanges are plain copies.  Nothing is
dropped: every routed row is computed (the sample's capacity factor 2
holds every row under uniform routing).

Timed: the whole layer after a barrier, CUDA events, every rank; a run's
time is its slowest rank's; median of --iters after --warmup.  Rank 0
prints one line.  TFLOP/s per GPU = 4 (T k / W) H F / t: the routed rows
only, as bench_moe counts them.  The floor: what a GPU must read from
device memory at least, its experts' weights once and its tokens' rows in
and out (2 (E / W) H F + 2 (T / W) H, 16-bit), over the read rate a
reduction measures (baseline_common.read_rate_gbps): at E = 256, H = 7168
the expert GEMMs are bound by device memory (docs/perf-notes.md,
nineteenth session).

--check: every rank's Y against float32 math over its tokens with the same
bf16 intermediate (the hidden activations rounded to bf16, as both
pipelines store them); exit 1 where |Y - ref| > 2e-2 max(1, |ref|).

Without CUDA it runs the same layer on the CPU with gloo and float32 GEMMs:
functional only, for testing here.  Without torch it prints one "skipped"
line and exits 0.
"""
import argparse
import sys

from baseline_common import Job, median, read_rate_gbps, skipped

try:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as fn
except ImportError as e:
    skipped("moe_baseline", e)


def inputs(a, rank, world, dev, dtype):
    """This rank's tokens, routing and experts; seeded, so every rank (and
    --check) can rebuild any of them."""
    tl, el = a.tokens // world, a.experts // world
    g = torch.Generator().manual_seed(1 + rank)
    x = torch.randn((tl, a.hidden), generator=g).to(dtype)
    # top-k of random scores: k distinct experts per token, uniform load
    scores = torch.rand((tl, a.experts), generator=g)
    top = scores.topk(a.topk, dim=1)
    idx = top.indices.to(torch.int32)
    gate = torch.softmax(top.values, dim=1).float()
    gw = torch.Generator().manual_seed(1000 + rank)
    w1 = (torch.randn((el, a.hidden, a.ffn), generator=gw) / a.hidden ** 0.5).to(dtype)
    w2 = (torch.randn((el, a.ffn, a.hidden), generator=gw) / a.ffn ** 0.5).to(dtype)
    return [t.to(dev) for t in (x, idx, gate, w1, w2)]


def exchange(out, inp, out_splits, in_splits, distributed):
    if distributed:
        dist.all_to_all_single(out, inp, out_splits, in_splits)
    else:
        out.copy_(inp)


class Grouped:
    """The expert MLP over rows sorted by local expert (counts[e] each)."""

    def __init__(self, use_grouped):
        self.use = use_grouped

    def __call__(self, rows, counts, w1, w2):
        if self.use:
            offs = torch.cumsum(counts, 0, dtype=torch.int32)
            h = torch._grouped_mm(rows, w1, offs=offs)
            return torch._grouped_mm(fn.silu(h), w2, offs=offs)
        out = torch.empty((rows.shape[0], w2.shape[2]), dtype=rows.dtype, device=rows.device)
        c = counts.tolist()
        r0 = 0
        for e, n in enumerate(c):
            if n:
                out[r0:r0 + n] = fn.silu(rows[r0:r0 + n] @ w1[e]) @ w2[e]
            r0 += n
        return out


def layer(x, idx, gate, w1, w2, world, distributed, mlp):
    """Y for this rank's tokens."""
    tl, k = idx.shape
    el = w1.shape[0]
    ecount = el * world
    flat = idx.reshape(-1).long()
    order = torch.sort(flat, stable=True).indices           # entries by expert
    xs = x.index_select(0, order // k)                       # 1. permute
    send = torch.bincount(flat, minlength=ecount).to(torch.int32)
    recv = torch.empty_like(send)
    exchange(recv, send, None, None, distributed)             # 2. counts: [src][local expert]
    send_r = send.view(world, el).sum(1).tolist()             #    (to the host)
    recv_m = recv.view(world, el)
    recv_r = recv_m.sum(1).tolist()
    xr = torch.empty((sum(recv_r), x.shape[1]), dtype=x.dtype, device=x.device)
    exchange(xr, xs, recv_r, send_r, distributed)             # 3. rows
    # received: by source rank, then local expert -> by local expert
    lex = torch.repeat_interleave(
        torch.arange(el, device=x.device).repeat(world), recv_m.reshape(-1).long())
    by_e = torch.sort(lex, stable=True).indices
    ye = mlp(xr.index_select(0, by_e), recv_m.sum(0), w1, w2)  # 4. experts
    back = torch.empty_like(ye)
    back[by_e] = ye                                           # 5. unsort
    yr = torch.empty((flat.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
    exchange(yr, back, send_r, recv_r, distributed)
    y = torch.empty_like(yr)
    y[order] = yr                                             #    unpermute
    y = (y.view(tl, k, -1).float() * gate[..., None]).sum(1)
    return y.to(x.dtype)


def reference(x, idx, gate, experts):
    """float32 math over this rank's tokens; experts(e) -> (W1, W2) of e."""
    y = torch.zeros((x.shape[0], x.shape[1]), dtype=torch.float32, device=x.device)
    for e in torch.unique(idx).tolist():
        t, j = (idx == e).nonzero(as_tuple=True)
        w1, w2 = experts(e)
        h = fn.silu((x[t].float() @ w1.float()).to(x.dtype).float()).to(x.dtype)
        y.index_add_(0, t, gate[t, j][:, None] * (h.float() @ w2.float()))
    return y


def main():
    ap = argparse.ArgumentParser(description="unfused MoE layer baseline")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-grouped", action="store_true", help="one GEMM per expert")
    a = ap.parse_args()
    if a.iters < 1:
        ap.error("--iters must be at least 1")
    if not 1 <= a.topk <= a.experts:
        ap.error("--topk must be between 1 and --experts")

    job = Job()
    cuda, dev, distributed, rank, world = job.cuda, job.dev, job.distributed, job.rank, job.world
    if a.tokens % world or a.experts % world:
        if rank == 0:
            print("moe_baseline: T=%d and E=%d must be divisible by W=%d" % (a.tokens, a.experts, world),
                  file=sys.stderr)
        sys.exit(2)
    dtype = torch.bfloat16 if cuda else torch.float32
    x, idx, gate, w1, w2 = inputs(a, rank, world, dev, dtype)

    # the grouped GEMM where this torch has it and takes these operands
    mlp = Grouped(False)
    if cuda and not a.no_grouped and hasattr(torch, "_grouped_mm"):
        try:
            mlp = Grouped(True)
            layer(x, idx, gate, w1, w2, world, distributed, mlp)
        except (RuntimeError, TypeError, NotImplementedError) as e:
            if rank == 0:
                print("moe_baseline: torch._grouped_mm refused (%s); one GEMM per expert" %
                      str(e).splitlines()[0], file=sys.stderr)
            mlp = Grouped(False)
    if not job.reduce([1 if mlp.use else 0], "min")[0]:  # every rank the same way
        mlp = Grouped(False)

    t, y = job.time(lambda: layer(x, idx, gate, w1, w2, world, distributed, mlp), a.warmup, a.iters)
    med = median(t)
    flops = 4.0 * (a.tokens // world) * a.topk * a.hidden * a.ffn
    floor = ""
    if cuda:
        need = 2.0 * (2 * (a.experts // world) * a.hidden * a.ffn + 2 * (a.tokens // world) * a.hidden)
        rate = read_rate_gbps(a.warmup, a.iters)
        floor = ", floor %.1f us (%.2f GB at %.0f GB/s)" % (need / (rate * 1e9) * 1e6, need / 1e9, rate)
    if rank == 0:
        print("moe_baseline: W=%d T=%d E=%d H=%d F=%d topk=%d, %s%s: median %.1f us (min %.1f, max %.1f), "
              "%.1f TFLOP/s per GPU%s" % (world, a.tokens, a.experts, a.hidden, a.ffn, a.topk,
                                          "grouped GEMM" if mlp.use else "one GEMM per expert",
                                          "" if cuda else " (CPU, functional)", med, t[0], t[-1],
                                          flops / med * 1e-6, floor))

    rc = 0
    if a.check:
        el = a.experts // world
        owners = {rank: (w1, w2)}

        def experts(e):
            q = e // el
            if q not in owners:  # seeded: rebuild the owner's weights
                owners[q] = tuple(inputs(a, q, world, dev, dtype)[3:])
            return owners[q][0][e % el], owners[q][1][e % el]
        rc = job.check("moe_baseline", y, reference(x, idx.long(), gate, experts))
    job.close()
    sys.exit(rc)


if __name__ == "__main__":
    main()
