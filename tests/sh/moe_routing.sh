#!/bin/sh
# MoE routing data through mkrun's CPU path (no GPU): skewed routing with
# empty experts runs; a bucket over its capacity and an expert id out of
# range are clear errors; under the 'drop' policy the bucket over its
# capacity runs and the bad id is still an error.  tests/gpu/run.sh runs the same inputs on the GPU.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
MKRUN=${MKRUN:-$top/build/mkrun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
sz="-D T=64 -D E=8 -D H=64 -D F=64 -D topk=2"
gen() { python3 "$top/tests/tools/moe_inputs.py" "$tmp/$1" "$1" 2 64 8 64 64 2 || exit 1; }
gen skew; gen over; gen bad
# shellcheck disable=SC2086
if ! "$MKRUN" --cpu "$top/samples/moe_dispatch_gemm.mk" --ranks 2 $sz -D C=64 \
	--inputs "$tmp/skew" >"$tmp/out" 2>&1; then
	echo "skewed routing (C = T) failed:"; cat "$tmp/out"; fail=1
fi
# shellcheck disable=SC2086
"$MKRUN" --cpu "$top/samples/moe_dispatch_gemm.mk" --ranks 2 $sz --inputs "$tmp/over" >"$tmp/out" 2>&1
if [ $? != 1 ] || ! grep -q "expert 0 receives 128 tokens, over its capacity 32" "$tmp/out"; then
	echo "over capacity: want exit 1 and the bucket named:"; cat "$tmp/out"; fail=1
fi
# the same routing under the 'drop' policy runs: the choices past a bucket
# are dropped (tests/runs/moe_drop.mk compares such runs across meshes)
sed 's/dispatch(X, idx, E, C)/dispatch(X, idx, E, C, drop)/' "$top/samples/moe_dispatch_gemm.mk" \
	>"$tmp/drop.mk"
grep -q ', drop)' "$tmp/drop.mk" || { echo "the sample's dispatch line changed"; fail=1; }
# shellcheck disable=SC2086
if ! "$MKRUN" --cpu "$tmp/drop.mk" --ranks 2 $sz --inputs "$tmp/over" >"$tmp/out" 2>&1; then
	echo "over capacity under 'drop': want a run, got:"; cat "$tmp/out"; fail=1
fi
# shellcheck disable=SC2086
"$MKRUN" --cpu "$tmp/drop.mk" --ranks 2 $sz --inputs "$tmp/bad" >"$tmp/out" 2>&1
if [ $? != 1 ] || ! grep -q "routes to 8, not an expert in \[0, 8)" "$tmp/out"; then
	echo "bad expert id under 'drop': want exit 1 and the entry named:"; cat "$tmp/out"; fail=1
fi
# shellcheck disable=SC2086
"$MKRUN" --cpu "$top/samples/moe_dispatch_gemm.mk" --ranks 2 $sz --inputs "$tmp/bad" >"$tmp/out" 2>&1
if [ $? != 1 ] || ! grep -q "routes to 8, not an expert in \[0, 8)" "$tmp/out"; then
	echo "bad expert id: want exit 1 and the entry named:"; cat "$tmp/out"; fail=1
fi
exit $fail
