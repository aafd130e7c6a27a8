#!/bin/sh
# tools/bench-decode.sh BUILD - the decode regime (make bench, on the GPU):
# a Llama-3-8B MLP block (D 4096, F 14336, with rmsnorm and the residual)
# at T = 1, 16, 128, 1024 tokens, and decode attention (32 heads, D 128, 1
# and 16 queries per head, 4096 and 32768 keys), each through mkrun against
# PyTorch eager and a CUDA graph of the same calls in the same run, and
# against the floor device memory sets (weights, or K and V, over the read
# rate measured in the run).  Every output is checked
# (tests/gpu/decode_baseline.py); docs/bench.md says what the columns mean.
# No GPU or no torch: one "skipped" line, exit 0.
set -u
NAME=bench-decode
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
rc=0
hdr=
row() {		# mlp T | attn T S
	if [ "$1" = mlp ]; then
		o=$(python3 tests/gpu/decode_baseline.py mlp --mkrun "$B/mkrun" -T "$2" --iters "$ITERS" 2>&1)
	else
		o=$(python3 tests/gpu/decode_baseline.py attn --mkrun "$B/mkrun" -T "$2" -S "$3" --iters "$ITERS" 2>&1)
	fi
	r=$?
	case $o in *"skipped"*)
		echo "$o" | grep skipped | head -n 1
		exit 0 ;;
	esac
	line=$(echo "$o" | grep '^decode: ' | head -n 1)
	if [ -z "$line" ] || [ $r -ne 0 ]; then
		echo "$o" | tail -n 5 >&2
		rc=1
	fi
	[ -n "$line" ] || return
	if [ -z "$hdr" ]; then
		echo "decode, W=1: fused = $B/mkrun, eager / graph = PyTorch, floor = bytes / measured read rate; medians of $ITERS runs (us)"
		printf "%-30s %9s %9s %9s %9s %11s %11s %9s %10s %s\n" shape fused eager graph floor "floor/fused" "graph/fused" predicted "pred/fused" check
		hdr=1
	fi
	echo "$line" | sed -n 's/^decode: \(.*\): fused \([0-9.-]*\) us, eager \([0-9.]*\) us, graph \([0-9.]*\) us, floor \([0-9.]*\) us, predicted \([0-9.-]*\) us.*: \([A-Z]*[a-z]*\)$/\1|\2|\3|\4|\5|\6|\7/p' |
	awk -F'|' '{
		fr = $2 != "-" ? sprintf("%.2f", $5 / $2) : "-"
		gr = $2 != "-" ? sprintf("%.2f", $4 / $2) : "-"
		pr = $2 != "-" && $6 != "-" ? sprintf("%.2f", $6 / $2) : "-"
		printf "%-30s %9s %9s %9s %9s %11s %11s %9s %10s %s\n", $1, $2, $3, $4, $5, fr, gr, $6, pr, $7
	}'
}
for t in 1 16 128 1024; do row mlp $t; done
for s in 4096 32768; do
	for t in 1 16; do row attn $t $s; done
done
exit $rc
