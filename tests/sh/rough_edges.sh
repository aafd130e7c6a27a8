#!/bin/sh
# ONCE
# What a new user hits first (issue 22), each with its fix: mkc's -o into a
# missing directory or onto a directory and an unknown --arch are command
# line errors (exit 2) found before any pass or NVRTC runs; -D gpus=0 and
# -D gpus=abc both exit 1 (a value the pipeline cannot take); a large output
# is not dumped onto a terminal; mkrun --cpu refuses --trace, -n and
# --resident instead of ignoring them, and --save checks its directory
# before the run; the no-driver message does not repeat itself; the embed
# sample runs without a GPU; a bad MK_DEVICE_FILE is an error with its line.
set -u
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
M=samples/gemm.mk

want() {  # want RC WHAT-IN-STDERR CMD...
	rc=$1 pat=$2
	shift 2
	"$@" >"$d/out" 2>"$d/err"
	got=$?
	if [ "$got" != "$rc" ] || { [ -n "$pat" ] && ! grep -q -e "$pat" "$d/err"; }; then
		echo "FAIL: $* -> exit $got (want $rc), stderr:"
		sed 's/^/    /' "$d/err" | head -5
		echo "    (wanted: $pat)"
		fail=1
	fi
}

want 2 "no directory /nonexistent" "$MKC" $M --emit=cu -o /nonexistent/x.cu
want 2 "is a directory" "$MKC" $M --emit=cu -o "$d"
# checked before NVRTC: no compile at all (an NVRTC run takes seconds)
want 2 "not a GPU architecture" "$MKC" $M --emit=cubin --arch=sm_12345 -o "$d/x.cubin"
want 2 "not a GPU architecture" "$MKC" $M --emit=ptx --arch=banana -o "$d/x.ptx"
[ -e "$d/x.cubin" ] && { echo "FAIL: a cubin appeared for a bad --arch"; fail=1; }
want 1 "GPU count" "$MKC" $M -D gpus=0
want 1 "'abc' is not an integer" "$MKC" $M -D gpus=abc
want 2 "NAME=INTEGER" "$MKC" $M -D gpus
want 0 "" "$MKC" $M --emit=cu -o "$d/ok.cu"
[ -s "$d/ok.cu" ] || { echo "FAIL: -o FILE wrote nothing"; fail=1; }

# a 2 x 8 mesh's JSON onto a terminal (script(1) gives one) is refused;
# piped or with -o it is written
tp=samples/tp_mlp.mk
if command -v script >/dev/null 2>&1; then
	script -qec "$MKC $tp --emit=json -D nodes=2 -D gpus=8" /dev/null >"$d/tty" 2>&1
	rc=$?
	if [ "$rc" != 2 ] || ! grep -q "not printed on the terminal" "$d/tty" ||
		[ "$(wc -c <"$d/tty")" -gt 4096 ]; then
		echo "FAIL: --emit=json of 2 x 8 on a terminal: exit $rc, $(wc -c <"$d/tty") bytes"
		head -c 300 "$d/tty"
		fail=1
	fi
else
	echo "rough_edges: no script(1): the terminal case is not checked"
fi
"$MKC" $tp --emit=json -D nodes=2 -D gpus=8 >"$d/j.json" 2>"$d/err" ||
	{ echo "FAIL: --emit=json into a pipe"; cat "$d/err"; fail=1; }
[ "$(wc -c <"$d/j.json")" -gt 1048576 ] ||
	echo "rough_edges: note: the 2 x 8 JSON is under 1 MB now ($(wc -c <"$d/j.json") bytes)"

want 2 "has no meaning there" "$MKRUN" $M --cpu --trace "$d/t.json"
want 2 "has no meaning there" "$MKRUN" $M --cpu -n 2
want 2 "has no meaning there" "$MKRUN" $M --cpu --resident
want 2 "cannot create the directory" "$MKRUN" $M --cpu -D M=8 -D N=8 -D K=8 --save /nonexistent/out
want 0 "" "$MKRUN" $M --cpu -D M=8 -D N=8 -D K=8 --save "$d/saved"
[ -f "$d/saved/C.r0.npy" ] || { echo "FAIL: --save wrote no C.r0.npy"; fail=1; }

# MK_DEVICE_FILE: the runtime plans with a file's cost-model keys; a bad
# file is an error that names it and the line
printf 'bogus = 1\n' >"$d/bad.dev"
want 1 "MK_DEVICE_FILE: .*bad.dev:1: unknown key 'bogus'" env MK_DEVICE_FILE="$d/bad.dev" \
	"$MKRUN" $M --cpu -D M=128 -D N=128 -D K=64
want 1 "MK_DEVICE_FILE: cannot read" env MK_DEVICE_FILE="$d/none.dev" "$MKRUN" $M --cpu \
	-D M=128 -D N=128 -D K=64
want 0 "" env MK_DEVICE_FILE=tools/devices/h100.txt "$MKRUN" $M --cpu -D M=128 -D N=128 -D K=64

# without a GPU: the message says it once, and embed runs on the CPU
if "$B/embed" >"$d/out" 2>"$d/err"; then
	grep -q "ok$" "$d/out" || { echo "FAIL: embed:"; cat "$d/out" "$d/err"; fail=1; }
else
	echo "FAIL: embed exit $?"; cat "$d/out" "$d/err"; fail=1
fi
want 0 "" "$B/embed" --cpu
for f in "$d/err"; do
	if grep -q "no CUDA driver found.*no CUDA driver found\|no GPU visible.*no GPU visible" "$f"; then
		echo "FAIL: the message repeats itself:"; cat "$f"; fail=1
	fi
done
"$MKRUN" $M >"$d/out" 2>"$d/err"
if grep -q "no CUDA driver found.*no CUDA driver found\|no GPU visible.*no GPU visible" "$d/err"; then
	echo "FAIL: mkrun's no-GPU line repeats itself:"; cat "$d/err"; fail=1
fi
[ "$fail" = 0 ] && echo "rough_edges: all ok"
exit "$fail"
