#!/bin/sh
# The CPU reference of a gate-up matmul (MK_GATEUP=1: compiler/expand.c
# fuses silu(N Wg) * (N Wu) into one op; cpuref.c multiplies the two
# products unrounded) against the program unfused: the same outputs within
# the rounding of the intermediate S (one bf16 step), at ragged T and on 1
# and 2 ranks, from the same inputs (a matmul's weights scaled alike:
# cmd/mkrun.c input_scale counts the gate's weight too).
set -eu
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
for T in 1 3 17; do
	for r in 1 2; do
		"$MKRUN" --cpu samples/decode_mlp.mk -D T=$T -D D=512 -D F=1000 --ranks $r \
			--save "$d/a" >/dev/null 2>&1
		MK_GATEUP=1 "$MKRUN" --cpu samples/decode_mlp.mk -D T=$T -D D=512 -D F=1000 --ranks $r \
			--save "$d/b" >/dev/null 2>&1
		python3 - "$d/a" "$d/b" $r <<'PY'
import sys, numpy as np
a, b, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
for r in range(ranks):
    for n in ("Wg", "Y"):
        x = np.load("%s/%s.r%d.npy" % (a, n, r)).astype(np.float64)
        y = np.load("%s/%s.r%d.npy" % (b, n, r)).astype(np.float64)
        tol = 0 if n == "Wg" else 2 ** -7 * max(1.0, np.abs(x).max())
        if x.shape != y.shape or np.abs(x - y).max() > tol:
            sys.exit("gateup_cpu: %s rank %d differs by %g (tolerance %g)" % (
                n, r, np.abs(x - y).max(), tol))
PY
		rm -rf "$d/a" "$d/b"
	done
done
