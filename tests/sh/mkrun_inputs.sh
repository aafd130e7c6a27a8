#!/bin/sh
# mkrun's .npy inputs (issue 21): a shape that differs is reported with both
# shapes; NaN or Inf in an input draws a warning, and with --check-finite an
# error; a FIFO given as an input is refused at once, not waited on.  Runs
# the CPU reference only (--cpu): no GPU needed.  --check-finite also fails
# a run whose output is not finite.
set -u
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
small="-D M=4 -D N=8 -D K=8"

# shellcheck disable=SC2086
"$MKRUN" samples/gemm.mk --cpu $small --save "$d/in" >"$d/out" 2>&1 ||
	{ echo "mkrun --save failed"; cat "$d/out"; exit 1; }

# shellcheck disable=SC2086
if "$MKRUN" samples/gemm.mk --cpu -D M=8 -D N=8 -D K=8 --inputs "$d/in" >"$d/out" 2>&1; then
	echo "a (4, 8) file for an (8, 8) input was accepted"; fail=1
fi
grep -q "A.r0.npy: shape (4, 8), but A's piece on rank 0 is (8, 8)" "$d/out" ||
	{ echo "shape mismatch: want both shapes, got:"; cat "$d/out"; fail=1; }

# a NaN as A's first element (the data of a 2-D header starts at byte 128)
printf '\000\000\300\177' | dd of="$d/in/A.r0.npy" bs=1 seek=128 conv=notrunc 2>/dev/null
# shellcheck disable=SC2086
"$MKRUN" samples/gemm.mk --cpu $small --inputs "$d/in" >"$d/out" 2>&1 ||
	{ echo "a NaN input without --check-finite should still run:"; cat "$d/out"; fail=1; }
grep -q "warning: .*A.r0.npy holds 1 NaN value" "$d/out" ||
	{ echo "no warning about the NaN input:"; cat "$d/out"; fail=1; }
# shellcheck disable=SC2086
if "$MKRUN" samples/gemm.mk --cpu $small --inputs "$d/in" --check-finite >"$d/out" 2>&1; then
	echo "--check-finite accepted a NaN input"; fail=1
fi
grep -q "A.r0.npy holds 1 NaN value (--check-finite)" "$d/out" ||
	{ echo "--check-finite: no message naming the file:"; cat "$d/out"; fail=1; }
# an Inf too, in B
printf '\000\000\200\177' | dd of="$d/in/B.r0.npy" bs=1 seek=132 conv=notrunc 2>/dev/null
# shellcheck disable=SC2086
"$MKRUN" samples/gemm.mk --cpu $small --inputs "$d/in" >"$d/out" 2>&1
grep -q "B.r0.npy holds 1 Inf value" "$d/out" ||
	{ echo "no warning about the Inf input:"; cat "$d/out"; fail=1; }

# finite inputs whose product overflows: --check-finite fails on the output
# shellcheck disable=SC2086
"$MKRUN" samples/gemm.mk --cpu $small --save "$d/big" >"$d/out" 2>&1
printf '\346\261\141\177' | dd of="$d/big/A.r0.npy" bs=1 seek=128 conv=notrunc 2>/dev/null
printf '\346\261\141\177' | dd of="$d/big/B.r0.npy" bs=1 seek=128 conv=notrunc 2>/dev/null
# shellcheck disable=SC2086
if "$MKRUN" samples/gemm.mk --cpu $small --inputs "$d/big" --check-finite >"$d/out" 2>&1; then
	echo "--check-finite accepted an Inf output"; fail=1
fi
grep -q "C on rank 0 holds 1 Inf value (--check-finite)" "$d/out" ||
	{ echo "--check-finite: no message about the Inf output:"; cat "$d/out"; fail=1; }

# a FIFO as an input: refused at once (timeout 10: the old reader blocked)
rm -f "$d/in/A.r0.npy"
mkfifo "$d/in/A.r0.npy"
# shellcheck disable=SC2086
timeout 10 "$MKRUN" samples/gemm.mk --cpu $small --inputs "$d/in" >"$d/out" 2>&1
rc=$?
if [ "$rc" = 124 ]; then
	echo "mkrun blocked on a FIFO input"; fail=1
elif ! grep -q "A.r0.npy: not a regular file" "$d/out"; then
	echo "FIFO input: want 'not a regular file', got (exit $rc):"; cat "$d/out"; fail=1
fi
exit $fail
