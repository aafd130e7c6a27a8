#!/bin/sh
# tools/bench.sh BUILD - the benchmarks (make bench), on a GPU machine.
# Prints tables; paste them with the date and command into docs/perf-notes.md.
set -u
B=${1:-build}
cd "$(dirname "$0")/.." || exit 2
rc=0
for b in "$B"/tests/bench_*; do
	[ -x "$b" ] || continue
	echo "== $b"
	"$b" || rc=1
done
echo "== tools/bench-attn.sh (ring attention against the unfused ring)"
sh tools/bench-attn.sh "$B" || rc=1
echo "== tools/bench-decode.sh (decode-size MLP and attention against PyTorch eager and graphs)"
sh tools/bench-decode.sh "$B" || rc=1
echo "== tools/bench-moe.sh (the MoE layer against all_to_all + grouped GEMM)"
sh tools/bench-moe.sh "$B" || rc=1
echo "== tests/gpu/python_check.py (per-call cost of the Python path beside the C call)"
MKC_LIB="$(pwd)/$B/libmk.so" PYTHONPATH="$(pwd)/python" PYTHONDONTWRITEBYTECODE=1 \
	python3 tests/gpu/python_check.py | grep -E "per call|skipped" || rc=1
if [ -x "$B/tests/gpu_gemm" ]; then
	echo "== $B/tests/gpu_gemm (the engine alone, against cuBLAS)"
	"$B/tests/gpu_gemm" || rc=1
fi
exit $rc
