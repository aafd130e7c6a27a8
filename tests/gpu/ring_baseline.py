#!/usr/bin/env python3
"""ring_baseline.py - the unfused ring attention that tools/bench-attn.sh
times against samples/ring_attention_causal.mk (make bench, on the GPU).

  ring_baseline.py [--nh 8] [--s 32768] [--d 128] [--causal | --no-causal]
                   [--iters 20] [--warmup 3] [--check]
  torchrun --nproc-per-node W ring_baseline.py --seq-len S --head-dim D ...
                                            (W ranks, NCCL; torchrun takes
                                            --s and --d for its own options)

The layered ring people write by hand (as the ring-flash-attention
project): the sequence is split over W ranks, rank r holds Q, K, V of shape
[NH, S/W, D] (bf16) for positions r*S/W on.  In each of W steps a rank runs
one flash attention kernel of its Q against the K/V block it holds
(torch.ops.aten._scaled_dot_product_flash_attention: out and logsumexp) and
merges it into the running (out, lse), while the block goes on to rank r+1
and the next arrives from r-1 (NCCL send/recv, batch_isend_irecv, issued
before the step's kernel so that the two overlap).  Causal: the block of
rank j < r is attended in full, j == r with the causal mask, j > r is
skipped (still forwarded).  At W=1 the ring is one kernel over the whole
problem and no communication.

Timed: the whole ring after a barrier, CUDA events, every rank; a run's time
is its slowest rank's; median of --iters after --warmup.  Rank 0 prints one
line.  TFLOP/s per GPU = 4 NH (S/W) S D / t, halved for causal (two GEMMs,
QK^T and PV, of 2 (S/W) S D each per head; the mask removes half of the
score matrix summed over the ranks, so this is the mean per GPU).

--check: every rank's O against plain float32 attention of its queries over
the whole sequence (the inputs are seeded, the same on every rank, so each
rank builds the whole sequence itself); max abs error over the ranks; exit
1 where |O - ref| > 2e-2 max(1, |ref|) (bf16 blocks and output).

Without CUDA it runs the same ring on the CPU with gloo and a float32 math
attention: functional only, for testing here.  Without torch it prints one
"skipped" line and exits 0.
"""
import argparse
import math
import sys

from baseline_common import Job, median, skipped

try:
    import torch
    import torch.distributed as dist
except ImportError as e:
    skipped("ring_baseline", e)


def attn_block(q, k, v, causal, scale):
    """One block: (out, lse) of q against k, v; lse is [NH, Lq], float32."""
    if q.is_cuda:
        r = torch.ops.aten._scaled_dot_product_flash_attention(
            q[None], k[None], v[None], 0.0, causal, False, scale=scale)
        return r[0][0], r[1][0, :, :q.shape[1]]  # lse: [B, NH, Lq], float32, natural log
    s = torch.einsum("hqd,hkd->hqk", q.float(), k.float()) * scale
    if causal:
        s.masked_fill_(torch.ones_like(s, dtype=torch.bool).triu_(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return torch.einsum("hqk,hkd->hqd", torch.exp(s - lse[..., None]), v.float()), lse


def merge(out, lse, bout, blse):
    """The numerically stable merge of two partial softmaxes, in float32."""
    new = torch.logaddexp(lse, blse)
    out = out.float() * torch.exp(lse - new)[..., None] + bout.float() * torch.exp(blse - new)[..., None]
    return out, new


def ring(q, kv, bufs, rank, world, causal, scale):
    """One ring attention: O for this rank's queries.  kv = [K, V] of this
    rank, never written; the blocks arrive in bufs[0] and bufs[1] in turn
    (all [2, NH, S/W, D])."""
    out = lse = None
    for step in range(world):
        src = (rank - step) % world
        reqs = []
        if step + 1 < world:
            nxt = bufs[step % 2]
            reqs = dist.batch_isend_irecv([
                dist.P2POp(dist.isend, kv, (rank + 1) % world),
                dist.P2POp(dist.irecv, nxt, (rank - 1) % world)])
        if src <= rank or not causal:
            bout, blse = attn_block(q, kv[0], kv[1], causal and src == rank, scale)
            out, lse = (bout, blse) if out is None else merge(out, lse, bout, blse)
        for r in reqs:
            r.wait()
        if reqs:
            kv = nxt
    return out.to(q.dtype)


def reference(q, k, v, q0, causal, scale, rows=1024):
    """Plain float32 attention of q (positions q0 on) over the whole k, v."""
    o = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    kf, vf = k.float(), v.float()
    for i in range(0, q.shape[1], rows):
        s = torch.einsum("hqd,hkd->hqk", q[:, i:i + rows].float(), kf) * scale
        if causal:
            pos = torch.arange(q0 + i, q0 + i + s.shape[1], device=q.device)
            s.masked_fill_(torch.arange(k.shape[1], device=q.device)[None] > pos[:, None], float("-inf"))
        o[:, i:i + rows] = torch.softmax(s, dim=-1) @ vf
    return o


def main():
    ap = argparse.ArgumentParser(description="unfused ring attention baseline")
    # --s and --d are ambiguous to torchrun's own parser: under torchrun
    # write --seq-len and --head-dim
    ap.add_argument("--nh", "--heads", type=int, default=8)
    ap.add_argument("--s", "--seq-len", dest="s", type=int, default=32768)
    ap.add_argument("--d", "--head-dim", dest="d", type=int, default=128)
    ap.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.iters < 1:
        ap.error("--iters must be at least 1")

    job = Job()
    dev, rank, world = job.dev, job.rank, job.world
    if a.s % world:
        if rank == 0:
            print("ring_baseline: S=%d is not divisible by W=%d" % (a.s, world), file=sys.stderr)
        sys.exit(2)
    L, scale = a.s // world, 1.0 / math.sqrt(a.d)

    # the whole sequence, seeded, on every rank; this rank keeps its slice
    g = torch.Generator().manual_seed(1)
    full = torch.randn((3, a.nh, a.s, a.d), generator=g).to(torch.bfloat16)
    q = full[0, :, rank * L:(rank + 1) * L].contiguous().to(dev)
    kv = full[1:, :, rank * L:(rank + 1) * L].contiguous().to(dev)
    bufs = [torch.empty_like(kv), torch.empty_like(kv)]

    t, o = job.time(lambda: ring(q, kv, bufs, rank, world, a.causal, scale), a.warmup, a.iters)
    med = median(t)
    flops = 4.0 * a.nh * L * a.s * a.d / (2 if a.causal else 1)
    if rank == 0:
        print("ring_baseline: W=%d NH=%d S=%d D=%d %s%s: median %.1f us (min %.1f, max %.1f), "
              "%.1f TFLOP/s per GPU" % (world, a.nh, a.s, a.d, "causal" if a.causal else "non-causal",
                                        "" if job.cuda else " (CPU, functional)", med, t[0], t[-1],
                                        flops / med * 1e-6))

    rc = 0
    if a.check:
        ref = reference(q, full[1].to(dev), full[2].to(dev), rank * L, a.causal, scale)
        rc = job.check("ring_baseline", o, ref)
    job.close()
    sys.exit(rc)


if __name__ == "__main__":
    main()
