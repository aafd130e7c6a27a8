#!/bin/sh
# The CPU reference of matmuls with the rmsnorm in their tiles
# (MK_NORMFOLD=1: compiler/expand.c fuse_norms; cpuref.c makes A =
# rmsnorm(X, g) rounded to the folded N's type, as the rmsnorm op did)
# against the program unfolded: the same outputs, bit for bit, at ragged T,
# on 1 and 2 ranks, for an rmsnorm with and without its weight, X's rows
# split over the ranks, and the Llama layer at a decode size (its second
# rmsnorm reads rows made in the kernel).
set -eu
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
sed -e 's/^  N = rmsnorm(X, g)$/  N = rmsnorm(X)/' -e '/^  in  g  : bf16\[D\]$/d' \
	samples/decode_mlp.mk >"$d/now.mk"
sed -e 's/^  in  X  : bf16\[T, D\]$/  in  X  : bf16[T, D] split(0)/' \
	-e 's/^  out Y  : bf16\[T, D\]$/  out Y  : bf16[T, D] split(0)/' samples/decode_mlp.mk >"$d/rows.mk"
same() {  # label ranks program args...
	label=$1 r=$2
	shift 2
	"$MKRUN" --cpu "$@" --ranks "$r" --save "$d/a" >"$d/a.log" 2>&1 ||
		{ echo "normfold_cpu: $label: unfolded run failed"; cat "$d/a.log"; exit 1; }
	MK_NORMFOLD=1 "$MKRUN" --cpu "$@" --ranks "$r" --save "$d/b" >"$d/b.log" 2>&1 ||
		{ echo "normfold_cpu: $label: folded run failed"; cat "$d/b.log"; exit 1; }
	k=$((r - 1))
	for x in $(seq 0 "$k"); do
		cmp -s "$d/a/Y.r$x.npy" "$d/b/Y.r$x.npy" ||
			{ echo "normfold_cpu: $label: Y on rank $x differs"; exit 1; }
	done
	rm -rf "$d/a" "$d/b"
}
# the fold must happen, or this compares a program with itself
MK_NORMFOLD=1 "$MKC" --emit=expand samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 |
	grep -q 'matmul(rmsnorm(X, g), Wg)' || { echo "normfold_cpu: not folded"; exit 1; }
MK_NORMFOLD=1 "$MKC" --emit=expand samples/llama_layer.mk -D T=16 -D E=512 -D H=8 -D D=64 -D F=1024 |
	grep -q 'matmul(rmsnorm(Hs, Wn2), Wg)' || { echo "normfold_cpu: llama not folded"; exit 1; }
for T in 1 3 17 100; do
	for r in 1 2; do
		same "decode_mlp T=$T ranks $r" $r samples/decode_mlp.mk -D T=$T -D D=512 -D F=1000
	done
done
same "no weight" 2 "$d/now.mk" -D T=3 -D D=512 -D F=1000
same "rows split" 2 "$d/rows.mk" -D T=6 -D D=512 -D F=1000
for r in 1 2; do
	same "llama_layer T=16 ranks $r" $r samples/llama_layer.mk -D T=16 -D E=512 -D H=8 -D D=64 -D F=1024
done
