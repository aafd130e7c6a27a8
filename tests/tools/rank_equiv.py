#!/usr/bin/env python3
"""rank_equiv.py - the multi-rank run of a pipeline equals its one-rank run.

    rank_equiv.py MKC MKRUN FILE.mk TOL RANKS [-D NAME=V ...]

Runs FILE on the CPU reference at one rank (random inputs, saved), then at
each rank count in RANKS (comma-separated, one node of R GPUs) with the
same values cut into each rank's pieces (docs/npy.md: local inputs copied,
split(d) inputs cut along d), and compares every output, assembled the same
way, with the one-rank output: the largest difference must be at most TOL
times the largest magnitude.  No numpy: .npy files are float32 (<f4), C
order, as mkrun writes them.  Exit 0 when all match.
"""
import os
import re
import struct
import subprocess
import sys
import tempfile


def read_npy(path):
    with open(path, "rb") as f:
        b = f.read()
    assert b[:6] == b"\x93NUMPY", path
    major = b[6]
    if major == 1:
        hl = struct.unpack("<H", b[8:10])[0]
        off = 10
    else:
        hl = struct.unpack("<I", b[8:12])[0]
        off = 12
    hdr = b[off:off + hl].decode("latin1")
    assert "'<f4'" in hdr and "'fortran_order': False" in hdr, (path, hdr)
    shape = tuple(int(x) for x in re.search(r"'shape': \(([^)]*)\)", hdr).group(1).split(",") if x.strip())
    data = b[off + hl:]
    n = 1
    for s in shape:
        n *= s
    return shape, list(struct.unpack("<%df" % n, data[:4 * n]))


def write_npy(path, shape, vals):
    sh = "(" + "".join("%d, " % s for s in shape)[:-2] + ("," if len(shape) == 1 else "") + ")"
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % sh
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr = hdr + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode("latin1"))
        f.write(struct.pack("<%df" % len(vals), *vals))


def strides(shape):
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def cut(shape, vals, d, parts, k):
    """piece k of `parts` along dim d"""
    n = shape[d] // parts
    out_shape = list(shape)
    out_shape[d] = n
    st = strides(shape)
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = st[d]
    res = []
    for o in range(outer):
        base = o * shape[d] * inner + k * n * inner
        res.extend(vals[base:base + n * inner])
    return tuple(out_shape), res


def join(pieces, d):
    """inverse of cut: the pieces along dim d"""
    shape = list(pieces[0][0])
    inner = strides(shape)[d]
    outer = 1
    for s in shape[:d]:
        outer *= s
    res = []
    for o in range(outer):
        for sh, v in pieces:
            res.extend(v[o * sh[d] * inner:(o + 1) * sh[d] * inner])
    shape[d] *= len(pieces)
    return tuple(shape), res


def placements(mkc, path, defs, ranks):
    out = subprocess.run([mkc, "--emit=check", "-D", "gpus=%d" % ranks] + defs + [path],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        sys.exit("mkc --emit=check at %d ranks failed:\n%s" % (ranks, out.stdout))
    pl = {}
    for line in out.stdout.splitlines():
        m = re.match(r"\s+(\S+)\s+(in|out)\s+\S+\[[^]]*\]\s+(\S+)", line)
        if m:
            pl[m.group(1)] = (m.group(2), m.group(3))
    return pl


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stdout))


def main():
    mkc, mkrun, path, tol, ranks = sys.argv[1:6]
    tol = float(tol)
    defs = sys.argv[6:]
    tmp = tempfile.mkdtemp()
    d1 = os.path.join(tmp, "r1")
    run([mkrun, "--cpu", path, "--save", d1] + defs)
    pl1 = placements(mkc, path, defs, 1)
    bad = 0
    for R in [int(x) for x in ranks.split(",")]:
        pl = placements(mkc, path, defs, R)
        din, dout = os.path.join(tmp, "in%d" % R), os.path.join(tmp, "out%d" % R)
        os.makedirs(din)
        for name, (kind, place) in pl.items():
            if kind != "in":
                continue
            shape, vals = read_npy(os.path.join(d1, "%s.r0.npy" % name))
            m = re.match(r"split\((\d+)\)$", place)
            for r in range(R):
                sh, v = cut(shape, vals, int(m.group(1)), R, r) if m else (shape, vals)
                write_npy(os.path.join(din, "%s.r%d.npy" % (name, r)), sh, v)
        run([mkrun, "--cpu", "--ranks", str(R), path, "--inputs", din, "--save", dout] + defs)
        for name, (kind, place) in pl.items():
            if kind != "out":
                continue
            want_shape, want = read_npy(os.path.join(d1, "%s.r0.npy" % name))
            m = re.match(r"split\((\d+)\)$", place)
            pieces = [read_npy(os.path.join(dout, "%s.r%d.npy" % (name, r))) for r in range(R)]
            gots = [join(pieces, int(m.group(1)))] if m else pieces
            scale = max(abs(x) for x in want) or 1.0
            for i, (sh, got) in enumerate(gots):
                diff = max(abs(a - b) for a, b in zip(got, want)) if sh == want_shape else float("inf")
                ok = diff <= tol * scale
                bad += not ok
                print("%s %d ranks%s: max |diff| %.4g of max |x| %.4g: %s" %
                      (name, R, "" if m else " (rank %d)" % i, diff, scale, "ok" if ok else "DIFFERS"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
