#!/bin/sh
# tools/bench-attn.sh [-n W] BUILD - ring attention (make bench, on the GPU):
# the fused pipeline (mkrun, samples/ring_attention*.mk) against the unfused
# ring, NCCL send/recv + one flash attention kernel per step
# (tests/gpu/ring_baseline.py, PyTorch).  Prints one table; docs/bench.md
# says what the columns mean.
#
# W=1 (default): one step, no communication; the baseline is one attention
# kernel over the whole problem.  -n W: mkrun -n W against torchrun with W
# ranks, one GPU each; only where nvidia-smi lists W GPUs, since NCCL
# refuses two ranks on one GPU.  No GPU: one "skipped" line, exit 0.
# Rows: D = 64, 128 and 256 at S = 32768, causal (8 heads) and not (1);
# D = 128 at S = 8192.  MK_ATTN_ENGINE=mma in the environment runs the fused
# side on the mma.sync tile instead of the Hopper one (A/B).
set -u
NAME=bench-attn
ITERS=20
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
rc=0

row() {		# causal|non-causal NH S D
	D=$4
	if [ "$1" = causal ]; then
		fo=$(fused samples/ring_attention_causal.mk -D NH="$2" -D S="$3" -D D=$D)
	else	# the [S, D] sample: one head
		fo=$(fused samples/ring_attention.mk -D S="$3" -D D=$D)
	fi
	case $fo in *"no GPU here"*)
		echo "bench-attn: skipped: no GPU here"
		exit 0 ;;
	esac
	if [ -z "$hdr" ]; then
		echo "ring attention, W=$W: fused = $B/mkrun (attention engine: ${MK_ATTN_ENGINE:-plan default}), baseline = tests/gpu/ring_baseline.py; medians of $ITERS runs"
		printf "%-30s %10s %12s %15s %14s\n" shape "fused us" "baseline us" "baseline/fused" "fused TFLOP/s"
		hdr=1
	fi
	cf=--causal
	[ "$1" = causal ] || cf=--no-causal
	bo=$(baseline tests/gpu/ring_baseline.py --heads "$2" --seq-len "$3" --head-dim $D $cf --check)
	br=$?
	fm=$(echo "$fo" | median mkrun)
	bm=$(echo "$bo" | median ring_baseline)
	if [ -z "$fm" ]; then
		echo "$fo" | tail -n 3 >&2
		rc=1
	fi
	case $bo in
	*"ring_baseline: skipped"*) skip=$(echo "$bo" | grep skipped | head -n 1) ;;
	*) if [ -z "$bm" ] || [ $br -ne 0 ]; then
		echo "$bo" | tail -n 3 >&2
		rc=1
	fi ;;
	esac
	# FLOPs per GPU = 4 NH (S/W) S D, halved for causal
	awk -v c="$1" -v nh="$2" -v s="$3" -v d=$D -v w="$W" -v f="${fm:--}" -v b="${bm:--}" 'BEGIN {
		fl = 4 * nh * (s / w) * s * d / (c == "causal" ? 2 : 1)
		r = (f != "-" && b != "-") ? sprintf("%.2f", b / f) : "-"
		t = f != "-" ? sprintf("%.1f", fl / f * 1e-6) : "-"
		printf "%-30s %10s %12s %15s %14s\n", "NH=" nh " S=" s " D=" d " " c, f, b, r, t
	}'
}

hdr=
skip=
for d in 64 128 256; do
	row causal 8 32768 $d
done
row causal 8 8192 128
row non-causal 1 8192 128
for d in 64 128 256; do
	row non-causal 1 32768 $d
done
[ -z "$skip" ] || echo "note: $skip"
exit $rc
