#!/usr/bin/env python3
# tools/weight-layout.py (on the GPU machine, PyTorch): a measurement for
# issue 18, not a test.  Run on an H100 on 2026-12-05 (docs/perf-notes.md,
# fifteenth session): both layouts read at 2.4-2.5 TB/s, so the layout is
# not what bounds the decode weight stream.
# Does the weights' layout move the read rate of a decode matmul? x [T, 4096]
# against 3 x [4096, 14336] (x @ W, row-major [K, N]: 256-byte pieces of a
# row per 128-column tile) and the same weights as nn.Linear keeps them
# ([N, K], F.linear: each output column's weights contiguous), in CUDA
# graphs; and a plain copy's read rate.
import torch, torch.nn.functional as F
torch.manual_seed(0)
dev = "cuda"
def timed(fn, iters=50):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.synchronize()
    with torch.cuda.graph(g): fn()
    ts = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1e3)
    ts.sort(); return ts[len(ts) // 2]
D, Fd = 4096, 14336
W = [torch.randn(D, Fd, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(3)]
Wt = [w.t().contiguous() for w in W]
nbytes = 3 * D * Fd * 2
src = torch.empty(nbytes // 2, device=dev, dtype=torch.bfloat16); dst = torch.empty_like(src)
tc = timed(lambda: dst.copy_(src))
print("copy %.1f us, read rate %.2f TB/s (it writes as much again)" % (tc, nbytes / tc / 1e6))
for T in (1, 16, 128):
    x = torch.randn(T, D, device=dev, dtype=torch.bfloat16)
    outs = [torch.empty(T, Fd, device=dev, dtype=torch.bfloat16) for _ in range(3)]
    def kn():
        for w, o in zip(W, outs): torch.matmul(x, w, out=o)
    def nk():
        for w, o in zip(Wt, outs): o.copy_(F.linear(x, w))
    a = timed(kn); b = timed(nk)
    print("T=%d  x@W [K,N] %.1f us (%.2f TB/s)   F.linear [N,K] %.1f us (%.2f TB/s)" % (T, a, nbytes / a / 1e6, b, nbytes / b / 1e6))
