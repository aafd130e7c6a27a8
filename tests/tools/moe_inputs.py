#!/usr/bin/env python3
"""Inputs for samples/moe_dispatch_gemm.mk with chosen routing, as .npy files
for `mkrun --inputs DIR` (DIR/NAME.rR.npy, float32; no numpy needed).

  moe_inputs.py DIR MODE WORLD T E H F TOPK

MODE:
  skew    every token picks experts 0 .. topk-1: those get every token
          (capacity C must be >= T), all other experts stay empty
  over    every choice of every token is expert 0: T * topk tokens for one
          expert, over any capacity below that
  random  uniform experts, as mkrun draws them
  bad     random, but the last rank's token 3, choice 0 routes to expert E
          (no such expert)
  edge    experts get 64, 65, 1, 448, 320, 129, 383, 638 tokens, over and
          over (T * TOPK must be 256 E, E a multiple of 8; capacity C >= 638):
          an expert's last row tile of 128 holds 64, 1, 127 or 126 of
          them, or 65 over two, each token's choices distinct
X, gates and weights are seeded uniform values in [-1, 1)."""
import os
import random
import struct
import sys


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape) if len(shape) > 1 else "%d," % shape[0])
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def main(argv):
    if len(argv) != 9:
        sys.stderr.write(__doc__)
        return 2
    out, mode = argv[1], argv[2]
    world, T, E, H, F, k = (int(a) for a in argv[3:])
    if mode not in ("skew", "over", "random", "bad", "edge") or T % world or E % world:
        sys.stderr.write("moe_inputs: bad mode, or T / E not divisible by the world\n")
        return 2
    os.makedirs(out, exist_ok=True)
    rnd = random.Random(7)
    Tl, El = T // world, E // world
    if mode == "edge":
        if T * k != 256 * E or E % 8:
            sys.stderr.write("moe_inputs: edge wants T * TOPK = 256 E, E a multiple of 8\n")
            return 2
        # the T x TOPK choices filled choice by choice (column-major): an
        # expert's run of at most T slots meets each token once
        counts = [(64, 65, 1, 448, 320, 129, 383, 638)[e % 8] for e in range(E)]
        grid = [0.0] * (T * k)
        s = 0
        for e, c in enumerate(counts):
            for _ in range(c):
                grid[(s % T) * k + s // T] = float(e)
                s += 1

    def uni(n):
        return [rnd.uniform(-1, 1) for _ in range(n)]
    for r in range(world):
        if mode == "skew":
            idx = [float(j) for _ in range(Tl) for j in range(k)]
        elif mode == "over":
            idx = [0.0] * (Tl * k)
        elif mode == "edge":
            idx = grid[r * Tl * k:(r + 1) * Tl * k]
        else:
            idx = [float(rnd.randrange(E)) for _ in range(Tl * k)]
            if mode == "bad" and r == world - 1:
                idx[3 * k] = float(E)
        write_npy(os.path.join(out, "idx.r%d.npy" % r), (Tl, k), idx)
        write_npy(os.path.join(out, "X.r%d.npy" % r), (Tl, H), uni(Tl * H))
        write_npy(os.path.join(out, "gate.r%d.npy" % r), (Tl, k), uni(Tl * k))
        write_npy(os.path.join(out, "W1.r%d.npy" % r), (El, H, F), uni(El * H * F))
        write_npy(os.path.join(out, "W2.r%d.npy" % r), (El, F, H), uni(El * F * H))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
