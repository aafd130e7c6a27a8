#!/bin/sh
# mkrun -n (issue 21): the job token is 128 random bits (32 hex digits, a
# new one every run), not "mkrun-<pid>-<time>"; rank 0 gets the rendezvous
# socket already listening (MK_ROOT_FD), the others do not, and nobody binds
# the port again; the ranks join.  No GPU: a fake libcuda.so.1 says there is
# one, records what each rank was given, and fails the first real call.
set -u
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
CC=${CC:-cc}
$CC -shared -fPIC -o "$d/libcuda.so.1" tests/sh/fake_libcuda.c ||
	{ echo "cannot build the fake libcuda"; exit 1; }

run() {
	rm -f "$d"/log.*
	LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA_LOG="$d/log" \
		MK_BOOT_TIMEOUT_MS=10000 timeout 60 "$MKRUN" samples/gemm.mk -n 2 -D M=128 \
		-D N=128 -D K=64 >"$d/out" 2>&1
	n=$(ls "$d"/log.* 2>/dev/null | wc -l)
	[ "$n" = 2 ] || { echo "want 2 ranks to reach the driver, got $n:"; cat "$d/out"; fail=1; }
}

run
if grep -q "joining the job" "$d/out"; then
	echo "the ranks did not join:"; cat "$d/out"; fail=1
fi
t0=$(sed -n 's/^token=//p' "$d"/log.* | sort -u)
case "$t0" in
*[!0-9a-f]*|"") echo "token '$t0': want 32 hex digits, the same on both ranks"; fail=1 ;;
*) [ ${#t0} = 32 ] || { echo "token '$t0' is ${#t0} characters, want 32"; fail=1; } ;;
esac
for f in "$d"/log.*; do
	r=$(sed -n 's/^rank=//p' "$f")
	fd=$(sed -n 's/^root_fd=//p' "$f")
	if [ "$r" = 0 ] && [ -z "$fd" ]; then
		echo "rank 0 was not handed the listening socket (MK_ROOT_FD)"; fail=1
	fi
	if [ "$r" != 0 ] && [ -n "$fd" ]; then
		echo "rank $r was handed MK_ROOT_FD=$fd"; fail=1
	fi
done
run
t1=$(sed -n 's/^token=//p' "$d"/log.* | sort -u)
[ "$t0" != "$t1" ] || { echo "two runs, one token: $t0"; fail=1; }
exit $fail
