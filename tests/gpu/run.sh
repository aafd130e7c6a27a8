#!/bin/sh
# tests/gpu/run.sh BUILD - the GPU checks (make gpu-test), on a machine with
# an sm_80+ GPU (the H200 machine).  Each check runs a command that must
# exit 0 (and, for mkrun, print "match"); the last line is "N passed, N failed".
set -u
B=${1:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
MKRUN="$B/mkrun"
pass=0
fail=0
failed=""
log=${MK_GPU_LOG:-/tmp/mk-gpu-test.log}
: >"$log"

check() {  # name, command...
	name=$1
	shift
	printf '== %s: %s\n' "$name" "$*" >>"$log"
	if out=$("$@" 2>&1); then
		case "$1" in
		*mkrun) echo "$out" | grep -q ': match' || { fail_it "$name" "$out"; return; } ;;
		esac
		pass=$((pass + 1))
		echo "$out" >>"$log"
		printf 'ok   %s  %s\n' "$name" "$(echo "$out" | tail -1 | cut -c1-110)"
	else
		fail_it "$name" "$out"
	fi
}
fail_it() {
	fail=$((fail + 1))
	failed="$failed $1"
	echo "$2" >>"$log"
	printf 'FAIL %s\n' "$1"
	echo "$2" | tail -15 | sed 's/^/     /'
}

if ! "$MKRUN" --cpu samples/chain.mk --quiet >/dev/null 2>&1; then
	echo "gpu-test: build first (make)"; exit 2
fi
probe=$("$MKRUN" samples/chain.mk --iters 0 --quiet 2>&1)
case "$probe" in *"no GPU here"*) echo "gpu-test: skipped: $probe"; exit 0 ;; esac

small="-D M=1024 -D N=256 -D K=512"
for r in 1 2 4 8; do
	check "ag_gemm.r$r" "$MKRUN" samples/ag_gemm.mk --ranks "$r" $small --quiet
done
check "ag_gemm.ragged" "$MKRUN" samples/ag_gemm.mk --ranks 2 -D M=1000 -D N=264 -D K=264 --quiet
check "chain" "$MKRUN" samples/chain.mk
check "chain.resident100" "$MKRUN" samples/chain.mk --resident --iters 100 --quiet
check "chain.trace" "$MKRUN" samples/chain.mk --iters 2 --trace /tmp/mk-chain-trace.json --quiet
check "embed" "$B/embed" samples/ag_gemm.mk
for t in "$B"/tests/gpu_*; do
	[ -x "$t" ] && check "$(basename "$t")" "$t"
done

[ "$fail" -gt 0 ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
