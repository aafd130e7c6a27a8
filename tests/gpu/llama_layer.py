#!/usr/bin/env python3
"""llama_layer.py - samples/llama_layer.mk on the GPU against PyTorch.

  llama_layer.py --mkrun B/mkrun [-T 2048] [-E 4096] [--heads 32] [-D 128]
                 [-F 14336] [--iters 20] [--warmup 3] [--dir DIR] [--ranks 1]

The same seeded bf16 inputs go to mkrun (.npy, --inputs; the sample's
names) and to the same layer written in PyTorch:

  n1 = rmsnorm(X) Wn1;  q, k = rope(n1 Wq), rope(n1 Wk);  v = n1 Wv  (the sample takes
  Wq, Wk, Wv as one fused Wqkv, head by head: built here from the three)
  h  = X + attention_causal(heads(q), heads(k), heads(v)) Wo
  n2 = rmsnorm(h) Wn2;  y = h + (silu(n2 Wg) * (n2 Wu)) Wd

rope is Llama's half rotation with cos/sin tables of [T, D] (the usual
theta 10000 frequencies, duplicated over both halves).  mkrun's output Y
(rank 0; at --ranks R every rank holds the whole Y and gets weights cut
into its pieces, as docs/npy.md) is compared with a float32 reference of
the same bf16 inputs, as are PyTorch eager and a CUDA graph of the eager
calls: max |out - ref| / max(1, |ref|) within 5e-2 (bf16 activations
between the GEMMs, summed over E and F).

Prints one line "llama_layer: ..." with the times in us (medians of
--iters after --warmup; mkrun's own median of the kernel) and the errors;
exit 1 on a mismatch or a failed run.  Without torch or CUDA: "skipped",
exit 0.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from baseline_common import graphed, median, skipped, timed  # noqa: E402

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    skipped("llama_layer", e)

TOL = 5e-2


def rope_tables(T, D):
    inv = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    f = torch.outer(torch.arange(T, dtype=torch.float32), inv)
    e = torch.cat([f, f], -1)
    return e.cos(), e.sin()


def rope(x, cos, sin, H):
    T = x.shape[0]
    D = cos.shape[1]
    x = x.view(T, H, D)
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    r = torch.cat([-x2, x1], -1)
    return (x * cos[:, None, :] + r * sin[:, None, :]).reshape(T, H * D)


def layer(w, H, f32):
    cv = (lambda t: t.float()) if f32 else (lambda t: t)
    X = cv(w["X"])

    def rms(x, g):
        xf = x.float()
        n = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
        return n * g.float() if f32 else (n.to(torch.bfloat16) * g)

    n1 = rms(X, w["Wn1"])
    T = X.shape[0]
    dt = torch.float32 if f32 else torch.bfloat16  # rope's f32 tables promote
    q = rope(n1 @ cv(w["Wq"]), w["Cos"], w["Sin"], H).to(dt)
    k = rope(n1 @ cv(w["Wk"]), w["Cos"], w["Sin"], H).to(dt)
    v = n1 @ cv(w["Wv"])
    hd = lambda t: t.view(T, H, -1).transpose(0, 1)
    a = F.scaled_dot_product_attention(hd(q)[None], hd(k)[None], hd(v)[None], is_causal=True)[0]
    h = X + a.transpose(0, 1).reshape(T, -1) @ cv(w["Wo"])
    n2 = rms(h, w["Wn2"])
    return h + (F.silu(n2 @ cv(w["Wg"])) * (n2 @ cv(w["Wu"]))) @ cv(w["Wd"])


def save_pieces(d, name, t, split, R):
    a = t.float().cpu().numpy()
    for r in range(R):
        p = np.array_split(a, R, axis=split)[r] if split is not None else a
        np.save(os.path.join(d, "%s.r%d.npy" % (name, r)), np.ascontiguousarray(p))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkrun", required=True)
    ap.add_argument("-T", type=int, default=2048)
    ap.add_argument("-E", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("-D", type=int, default=128)
    ap.add_argument("-F", type=int, default=14336)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("llama_layer: skipped: no CUDA device")
        return 0
    T, E, H, D, Fd, R = args.T, args.E, args.heads, args.D, args.F, args.ranks
    g = torch.Generator(device="cpu").manual_seed(1)
    rnd = lambda *s, scale=1.0: (torch.randn(*s, generator=g) * scale).to(torch.bfloat16).cuda()
    cos, sin = rope_tables(T, D)
    w = {
        "X": rnd(T, E), "Wn1": (1 + 0.1 * torch.randn(E, generator=g)).to(torch.bfloat16).cuda(),
        "Wq": rnd(E, H * D, scale=E ** -0.5), "Wk": rnd(E, H * D, scale=E ** -0.5),
        "Wv": rnd(E, H * D, scale=E ** -0.5), "Cos": cos.cuda(), "Sin": sin.cuda(),
        "Wo": rnd(H * D, E, scale=(H * D) ** -0.5),
        "Wn2": (1 + 0.1 * torch.randn(E, generator=g)).to(torch.bfloat16).cuda(),
        "Wg": rnd(E, Fd, scale=E ** -0.5), "Wu": rnd(E, Fd, scale=E ** -0.5),
        "Wd": rnd(Fd, E, scale=Fd ** -0.5),
    }
    # the sample's fused projection: head h's q, k, v side by side at h * 3D
    by_head = lambda n: w[n].view(E, H, D)
    fused = torch.stack([by_head("Wq"), by_head("Wk"), by_head("Wv")], 2).reshape(E, H * 3 * D)
    split = {"Wqkv": 1, "Wo": 0, "Wg": 1, "Wu": 1, "Wd": 0}
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        for name, t in list(w.items()) + [("Wqkv", fused)]:
            if name not in ("Wq", "Wk", "Wv"):
                save_pieces(d, name, t, split.get(name), R)
        ref = layer(w, H, True)
        block = lambda: layer(w, H, False)
        eager_t, eager_out = timed(block, args.warmup, args.iters), block()
        graph_t = timed(graphed(block, args.warmup), args.warmup, args.iters)
        out = os.path.join(d, "out")
        cmd = [args.mkrun, "samples/llama_layer.mk", "--ranks", str(R), "--inputs", d,
               "--save", out, "--no-check", "--quiet", "--iters", str(args.iters),
               "--warmup", str(args.warmup)]
        for k, v in (("T", T), ("E", E), ("H", H), ("D", D), ("F", Fd)):
            cmd += ["-D", "%s=%d" % (k, v)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        m = re.search(r"median ([0-9.]+) us", p.stdout + p.stderr)
        errs, ok = {}, True
        for name, o in (("eager", eager_out),):
            errs[name] = ((o.float() - ref).abs() / ref.abs().clamp(min=1)).max().item()
            ok &= errs[name] <= TOL
        if p.returncode != 0 or not m:
            sys.stderr.write("llama_layer: %s failed (exit %d):\n%s%s" % (
                " ".join(cmd), p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
            ok, fused = False, None
        else:
            fused = float(m.group(1))
            for r in range(R):
                y = torch.from_numpy(np.load(os.path.join(out, "Y.r%d.npy" % r))).cuda()
                e = ((y.reshape(ref.shape) - ref).abs() / ref.abs().clamp(min=1)).max().item()
                errs["fused r%d" % r] = e
                ok &= e <= TOL
        print("llama_layer: T=%d E=%d H=%d D=%d F=%d ranks %d: fused %s us, eager %.1f us, "
              "graph %.1f us; errors %s: %s" % (
                  T, E, H, D, Fd, R, "%.1f" % fused if fused else "-", median(eager_t),
                  median(graph_t), ", ".join("%s %.2g" % kv for kv in errs.items()),
                  "ok" if ok else "MISMATCH"))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
