#!/bin/sh
# samples/llama_layer.mk (issue 20) at small sizes: the CPU reference at 2,
# 4 and 8 ranks, fed the one-rank run's inputs cut into each rank's pieces,
# equals the one-rank run (tests/tools/rank_equiv.py; bf16 outputs, so
# within 2% of the largest value: a rounding, not a head on the wrong rank);
# and it compiles to an sm_90a cubin at 1, 2, 4 and 8 ranks.
set -u
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
small="-D T=64 -D E=128 -D H=8 -D D=16 -D F=256"
# shellcheck disable=SC2086
python3 tests/tools/rank_equiv.py "$MKC" "$MKRUN" samples/llama_layer.mk 0.02 2,4,8 $small \
	>"$d/eq" 2>&1 || { echo "multi-rank differs from one rank:"; cat "$d/eq"; fail=1; }
grep -q "Y 8 ranks (rank 7): .*: ok" "$d/eq" || { echo "no 8-rank comparison:"; cat "$d/eq"; fail=1; }
for g in 1 2 4 8; do
	# shellcheck disable=SC2086
	"$MKC" --emit=cubin -D gpus=$g -D T=128 -D E=256 -D H=8 -D D=64 -D F=512 \
		samples/llama_layer.mk -o "$d/l.cubin" >"$d/out" 2>&1 ||
		{ echo "--emit=cubin at $g ranks:"; cat "$d/out"; fail=1; }
	[ -s "$d/l.cubin" ] || { echo "no cubin at $g ranks"; fail=1; }
	rm -f "$d/l.cubin"
done
exit $fail
