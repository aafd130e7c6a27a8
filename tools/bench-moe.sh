#!/bin/sh
# tools/bench-moe.sh [-n W] BUILD - the MoE layer (make bench, on the GPU):
# the fused pipeline (mkrun, samples/moe_dispatch_gemm.mk) against the
# unfused layer, NCCL all_to_all + grouped GEMM (tests/gpu/moe_baseline.py,
# PyTorch), and the floor device memory sets (a GPU's expert weights and
# token rows read once, over the measured read rate: moe_baseline.py).
# Prints one table; docs/bench.md says what the columns mean.
#
# W=1 (default): no exchange on either side (the baseline's all_to_all
# becomes a copy); the rows compare the routing, GEMMs and combine.  -n W:
# mkrun -n W against torchrun with W ranks, one GPU each; only where
# nvidia-smi lists W GPUs, since NCCL refuses two ranks on one GPU.  No GPU:
# one "skipped" line, exit 0.
set -u
NAME=bench-moe
ITERS=10
TOPK=8
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
rc=0

row() {		# T E H F
	fo=$(fused samples/moe_dispatch_gemm.mk -D T="$1" -D E="$2" -D H="$3" -D F="$4" -D topk=$TOPK)
	case $fo in *"no GPU here"*)
		echo "bench-moe: skipped: no GPU here"
		exit 0 ;;
	esac
	if [ -z "$hdr" ]; then
		echo "MoE layer, W=$W, top-$TOPK: fused = $B/mkrun, baseline = tests/gpu/moe_baseline.py; medians of $ITERS runs"
		printf "%-30s %10s %12s %15s %14s %10s %12s\n" shape "fused us" "baseline us" "baseline/fused" "fused TFLOP/s" \
			"floor us" "floor/fused"
		hdr=1
	fi
	bo=$(baseline tests/gpu/moe_baseline.py --tokens "$1" --experts "$2" --hidden "$3" --ffn "$4" --topk $TOPK --check)
	br=$?
	fm=$(echo "$fo" | median mkrun)
	bm=$(echo "$bo" | median moe_baseline)
	fl=$(echo "$bo" | sed -n 's/^moe_baseline: .*, floor \([0-9.]*\) us.*/\1/p' | head -n 1)
	if [ -z "$fm" ]; then
		echo "$fo" | tail -n 3 >&2
		rc=1
	fi
	case $bo in
	*"moe_baseline: skipped"*) skip=$(echo "$bo" | grep skipped | head -n 1) ;;
	*) if [ -z "$bm" ] || [ $br -ne 0 ]; then
		echo "$bo" | tail -n 3 >&2
		rc=1
	fi
	how=$(echo "$bo" | sed -n 's/^moe_baseline: W=[^,]*, \([^:]*\):.*/\1/p' | head -n 1) ;;
	esac
	# FLOPs per GPU = 4 (T k / W) H F: the routed rows, two GEMMs
	awk -v t="$1" -v e="$2" -v h="$3" -v f="$4" -v k=$TOPK -v w="$W" -v fu="${fm:--}" -v b="${bm:--}" \
	    -v m="${fl:--}" 'BEGIN {
		fl = 4 * (t * k / w) * h * f
		r = (fu != "-" && b != "-") ? sprintf("%.2f", b / fu) : "-"
		x = fu != "-" ? sprintf("%.1f", fl / fu * 1e-6) : "-"
		y = (fu != "-" && m != "-") ? sprintf("%.2f", m / fu) : "-"
		printf "%-30s %10s %12s %15s %14s %10s %12s\n", "T=" t " E=" e " H=" h " F=" f, fu, b, r, x, m, y
	}'
}

hdr=
skip=
how=
row 8192 64 2048 1024
row 8192 256 7168 2048
row 32768 256 7168 2048
[ -z "$how" ] || echo "baseline experts: $how"
[ -z "$skip" ] || echo "note: $skip"
exit $rc
