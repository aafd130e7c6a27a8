#!/usr/bin/env python3
"""decode_baseline.py - one row of tools/bench-decode.sh (make bench, on the
GPU): a decode-size pipeline through mkrun against the same computation in
PyTorch, eager and as a CUDA graph, and against the floor the device memory
sets; every output checked in the run.

  decode_baseline.py mlp  --mkrun B/mkrun -T 16 [-D 4096] [-F 14336]
  decode_baseline.py attn --mkrun B/mkrun -T 16 -S 4096 [--heads 32] [-D 128]
                     [--iters 20] [--warmup 3] [--dir DIR]

mlp:  samples/decode_mlp.mk, Y = X + Wd (silu(N Wg) * (N Wu)), N =
      rmsnorm(X) g (bf16; Llama-3-8B: D 4096, F 14336).  Floor: the weight
      bytes (3 D F x 2) over the device-memory read rate measured here.
attn: samples/decode_attention.mk, O = softmax(Q K^T / sqrt(D)) V per head
      (bf16, not causal), T queries per head over S keys.  PyTorch:
      scaled_dot_product_attention.  Floor: the K and V bytes over the read
      rate.

The inputs are seeded and written as .npy for mkrun (--inputs; float32
files, rounded to bf16 as mkrun reads them); mkrun times its pipeline
(--no-check: its CPU reference would take minutes at these sizes) and saves
its output (--save), which is compared here with a float32 PyTorch
reference of the same bf16 inputs, as are the eager and graph outputs:
max |out - ref| / max(1, |ref|) within 2e-2 (attention) or 5e-2 (the MLP,
whose bf16 activation is summed over F).
The read rate: torch.sum over a 2 GiB float32 tensor (reads only), median.

Prints one line, "decode: ..." with every time in us (medians of --iters
after --warmup, CUDA events); exit 1 on a mismatch or a failed run.  Without
torch or CUDA: one "skipped" line, exit 0.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

from baseline_common import TOL, graphed, median, read_rate_gbps, skipped, timed

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    skipped("decode_baseline", e)



def save(d, name, t):
    np.save(os.path.join(d, name + ".r0.npy"), t.float().cpu().numpy())


def check(name, out, ref, tol):
    err = ((out.float() - ref).abs() / ref.abs().clamp(min=1)).max().item()
    return err, err <= tol


def run_mkrun(args, sample, defines, d):
    out = os.path.join(d, "out")
    os.makedirs(out, exist_ok=True)
    cmd = [args.mkrun, sample, "--inputs", d, "--save", out, "--no-check", "--quiet",
           "--iters", str(args.iters), "--warmup", str(args.warmup)]
    for k, v in defines.items():
        cmd += ["-D", "%s=%d" % (k, v)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) us", p.stdout + p.stderr)
    pr = re.search(r"predicted ([0-9.]+) us", p.stdout + p.stderr)
    if p.returncode != 0 or not m:
        sys.stderr.write("decode_baseline: %s failed (exit %d):\n%s%s" % (
            " ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
        return None, None, None
    return float(m.group(1)), out, float(pr.group(1)) if pr else None


def mlp(args, d):
    T, D, Fd = args.T, args.D, args.F
    g = torch.Generator(device="cpu").manual_seed(1)
    rnd = lambda *s, scale=1.0: (torch.randn(*s, generator=g) * scale).to(torch.bfloat16).cuda()
    X = rnd(T, D)
    gw = (1 + 0.1 * torch.randn(D, generator=g)).to(torch.bfloat16).cuda()
    Wg, Wu = rnd(D, Fd, scale=D ** -0.5), rnd(D, Fd, scale=D ** -0.5)
    Wd = rnd(Fd, D, scale=Fd ** -0.5)
    for name, t in (("X", X), ("g", gw), ("Wg", Wg), ("Wu", Wu), ("Wd", Wd)):
        save(d, name, t)

    def block():
        n = (X.float() * torch.rsqrt(X.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(
            torch.bfloat16) * gw
        a = F.silu(n @ Wg) * (n @ Wu)
        return X + a @ Wd

    def reference():
        xf = X.float()
        n = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)) * gw.float()
        a = F.silu(n @ Wg.float()) * (n @ Wu.float())
        return xf + a @ Wd.float()

    return block, reference, {"T": T, "D": D, "F": Fd}, "Y", 3 * D * Fd * 2, \
        "samples/decode_mlp.mk", "mlp T=%d D=%d F=%d" % (T, D, Fd)


def attn(args, d):
    H, T, S, D = args.heads, args.T, args.S, args.D
    g = torch.Generator(device="cpu").manual_seed(1)
    rnd = lambda *s: torch.randn(*s, generator=g).to(torch.bfloat16).cuda()
    Q, K, V = rnd(H, T, D), rnd(H, S, D), rnd(H, S, D)
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        save(d, name, t)

    def block():
        return F.scaled_dot_product_attention(Q[None], K[None], V[None])[0]

    def reference():
        s = torch.einsum("htd,hsd->hts", Q.float(), K.float()) / math.sqrt(D)
        return torch.einsum("hts,hsd->htd", torch.softmax(s, -1), V.float())

    return block, reference, {"H": H, "T": T, "S": S, "D": D}, "O", 2 * H * S * D * 2, \
        "samples/decode_attention.mk", "attn H=%d T=%d S=%d D=%d" % (H, T, S, D)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["mlp", "attn"])
    ap.add_argument("--mkrun", required=True)
    ap.add_argument("-T", type=int, default=16)
    ap.add_argument("-D", type=int, default=None)
    ap.add_argument("-F", type=int, default=14336)
    ap.add_argument("-S", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    if args.D is None:
        args.D = 4096 if args.what == "mlp" else 128
    if not torch.cuda.is_available():
        print("decode_baseline: skipped: no CUDA device")
        return 0
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        block, reference, defines, out, floor_bytes, sample, shape = \
            (mlp if args.what == "mlp" else attn)(args, d)
        rate = read_rate_gbps(args.warmup, args.iters)
        ref = reference()
        eager_t, eager_out = timed(block, args.warmup, args.iters), block()
        replay = graphed(block, args.warmup)
        graph_t = timed(replay, args.warmup, args.iters)
        graph_out = block()
        fused_t, outdir, predicted = run_mkrun(args, sample, defines, d)
        errs, ok = {}, True
        # bf16 outputs, and for the MLP a bf16 activation between the two
        # GEMMs summed over F: PyTorch itself lands 0.022 off at T = 1024
        tol = 5e-2 if args.what == "mlp" else TOL
        for name, o in (("eager", eager_out), ("graph", graph_out)):
            errs[name], good = check(name, o, ref, tol)
            ok &= good
        if outdir:
            y = torch.from_numpy(np.load(os.path.join(outdir, out + ".r0.npy"))).cuda()
            errs["fused"], good = check("fused", y.reshape(ref.shape), ref, tol)
            ok &= good
        else:
            ok = False
        floor = floor_bytes / (rate * 1e9) * 1e6
        f = "%.1f" % fused_t if fused_t else "-"
        pf = "%.1f" % predicted if predicted else "-"
        print("decode: %s: fused %s us, eager %.1f us, graph %.1f us, floor %.1f us, predicted %s us "
              "(%.0f MB at %.0f GB/s); errors fused %s eager %.2g graph %.2g: %s" % (
                  shape, f, median(eager_t), median(graph_t), floor, pf, floor_bytes / 1e6, rate,
                  "%.2g" % errs["fused"] if "fused" in errs else "-", errs["eager"],
                  errs["graph"], "ok" if ok else "MISMATCH"))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
