"""A small transformer block whose MLP is a tensor-parallel .mk pipeline.

    torchrun --nproc_per_node=2 python/examples/tp_mlp_torch.py   # 2 ranks
    (on one GPU: start MPS first, nvidia-cuda-mps-control -d, as root)

Each process is one rank (the bootstrap reads torchrun's RANK, WORLD_SIZE,
MASTER_ADDR...; set MK_JOB_TOKEN to a secret on a shared machine, see
docs/security.md).  The MLP (X -> gelu(X W1) W2) runs as samples/tp_mlp.mk:
tokens split by sequence, W1 by columns, W2 by rows, one fused kernel with
the allgather and reduce_scatter inside.  The block's output is checked
against the same block with torch's MLP, and both are timed.
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import mkc  # noqa: E402

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
S, H = int(os.environ.get("S", "1024")), int(os.environ.get("H", "1024"))
F = 4 * H
rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
torch.manual_seed(0)  # every rank builds the same module
dev = "cuda"


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(H, device=dev, dtype=torch.bfloat16)
        self.attn = torch.nn.MultiheadAttention(H, 8, batch_first=True, device=dev,
                                                dtype=torch.bfloat16)
        self.w1 = torch.nn.Parameter(torch.randn(H, F, device=dev, dtype=torch.bfloat16) / H ** 0.5)
        self.w2 = torch.nn.Parameter(torch.randn(F, H, device=dev, dtype=torch.bfloat16) / F ** 0.5)

    def mlp(self, x):
        return torch.nn.functional.gelu(x @ self.w1, approximate="tanh") @ self.w2

    def forward(self, x, mlp=None):
        h = self.ln(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + (mlp or self.mlp)(x[0])[None]


blk = Block()
pipe = mkc.load(os.path.join(TOP, "samples", "tp_mlp.mk"), mesh=(1, world), S=S, H=H)
s, f = S // world, F // world
w1 = blk.w1[:, rank * f:(rank + 1) * f].contiguous()
w2 = blk.w2[rank * f:(rank + 1) * f].contiguous()
if world == 1:
    pipe_in = lambda x: dict(X=x, W1=w1, W2=w2)  # noqa: E731
else:
    pipe_in = lambda x: dict(X=x[rank * s:(rank + 1) * s].contiguous(), W1=w1, W2=w2)  # noqa: E731


def mk_mlp(x):
    # this rank's rows of the MLP's output; every rank's, gathered, is the whole
    y = pipe(**pipe_in(x))
    if world == 1:
        return y
    # gathered through gloo on the host: NCCL refuses two ranks on one GPU
    pipe.sync()
    y = y.float().cpu()
    parts = [torch.empty_like(y) for _ in range(world)]
    torch.distributed.all_gather(parts, y)
    return torch.cat(parts).to(dev, torch.bfloat16)


if world > 1:
    torch.distributed.init_process_group("gloo")
x = torch.randn(1, S, H, device=dev, dtype=torch.bfloat16)
with torch.no_grad():
    ref = blk(x)
    got = blk(x, mlp=mk_mlp)
    pipe.sync()
    err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
    ok = err < 2e-2

    def timed(fn, n=20):
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n * 1e3
    t_torch = timed(lambda: blk.mlp(x[0]))
    t_mk = timed(lambda: pipe(**pipe_in(x[0])))
print("tp_mlp_torch: rank %d of %d: block with the .mk MLP vs torch's: rel l2 %.2e %s; "
      "MLP %.3f ms (mkc, this rank's share, %d ranks) vs %.3f ms (torch, whole MLP on one rank)"
      % (rank, world, err, "ok" if ok else "MISMATCH", t_mk, world, t_torch), flush=True)
pipe.close()
if world > 1:
    torch.distributed.destroy_process_group()
sys.exit(0 if ok else 1)
