#!/bin/sh
# tools/device-session.sh - everything one session on the GPU machine runs,
# against a build carried from the development machine (that machine has no
# flex/bison).  Logs go to $OUT; a short table is printed last.
set -u
OUT=${OUT:-/tmp/mk-out}
B=${B:-build}
mkdir -p "$OUT"
cd "$(dirname "$0")/.." || exit 2
export MK_GPU_LOG="$OUT/gpu-detail.log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv >"$OUT/smi.txt" 2>&1
step() {  # name timeout command...
	n=$1; t=$2; shift 2
	s=$(date +%s)
	timeout "$t" "$@" >"$OUT/$n.txt" 2>&1
	rc=$?
	echo "$n: rc=$rc in $(( $(date +%s) - s ))s" >>"$OUT/steps.txt"
	return $rc
}
: >"$OUT/steps.txt"
# GPU_ONLY=PATTERN: only the gpu-test checks whose names match (MK_GPU_ONLY)
MK_GPU_ONLY=${GPU_ONLY:-} step gpu-test "${GPU_TEST_TIMEOUT:-330}" sh tests/gpu/run.sh "$B"
if grep -q '^FAIL' "$OUT/gpu-test.txt"; then
	# the same checks on the portable mma.sync tile: engine or the rest?
	MK_NO_WGMMA=1 step nowgmma 90 sh -c "
		$B/mkrun samples/chain.mk --iters 3 --quiet;
		$B/mkrun samples/ag_gemm.mk --ranks 2 -D M=1024 -D N=256 -D K=512 --iters 3 --quiet;
		$B/mkrun samples/gemm_rs.mk --ranks 2 -D M=1024 -D N=512 -D K=1024 --iters 3 --quiet"
fi
# AB="NAME=VALUE": each of AB_CASES ("sample.mk:-D T=1 ...;...") with and
# without that environment, alternating, twice, medians of mkrun (no
# check: gpu-test checks the outputs): a rewrite's worth.  Several
# variants: AB="A=1|B=2 C=3" (each against the default, in turn);
# AB_ITERS (30) the runs each, AB_TIMEOUT (240 s) the whole step
if [ -n "${AB:-}" ]; then
	AB_CASES=${AB_CASES:-"decode_mlp.mk:-D T=1;decode_mlp.mk:-D T=16;decode_mlp.mk:-D T=128;decode_mlp.mk:-D T=1024;mlp_chain.mk:-D T=4096 -D D=1024;tp_mlp.mk:;llama_layer.mk:"}
	export AB AB_CASES
	step ab "${AB_TIMEOUT:-240}" sh -c '
		IFS=";"; for c in $AB_CASES; do
			f=${c%%:*}; d=${c#*:}; unset IFS
			for it in 1 2; do
				IFS="|"; for e in "" $AB; do unset IFS
					# shellcheck disable=SC2086
					o=$(env $e '"$B"'/mkrun samples/$f $d --iters '"${AB_ITERS:-30}"' --quiet --no-check 2>&1 | tail -1)
					echo "$f $d [${e:-default}] run $it: $o"
				IFS="|"; done; unset IFS
			done
			IFS=";"
		done'
fi
[ -x "$B/tests/gpu_gemm" ] && step gpu_gemm 120 "$B/tests/gpu_gemm"
[ -x "$B/tests/bench_copy" ] && step bench_copy 150 "$B/tests/bench_copy"
[ -x "$B/tests/bench_runtime" ] && step bench_runtime 90 "$B/tests/bench_runtime"
echo "==== steps"; cat "$OUT/steps.txt"
echo "==== gpu-test"; grep -E '^(FAIL|ok   [a-z_]+\.(r2|n2)|[0-9]+ passed)' "$OUT/gpu-test.txt" | cut -c1-150 | tail -30
[ -f "$OUT/nowgmma.txt" ] && { echo "==== nowgmma"; tail -5 "$OUT/nowgmma.txt"; }
[ -f "$OUT/ab.txt" ] && { echo "==== ab ($AB)"; cut -c1-160 "$OUT/ab.txt"; }
for f in gpu_gemm bench_copy bench_runtime; do
	[ -f "$OUT/$f.txt" ] && { echo "==== $f"; tail -22 "$OUT/$f.txt"; }
done
