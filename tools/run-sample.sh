#!/bin/sh
# tools/run-sample.sh BUILD - what `make run` does: check a sample, show its
# schedule, compile it to CUDA and an sm_90a cubin, then run it: on the GPU
# when there is one (checked against the CPU reference), else --cpu.
set -eu
B=${1:-build}
S=${MK_SAMPLE:-samples/ag_gemm.mk}
ARGS=${MK_SAMPLE_ARGS:--D M=1024 -D N=256 -D K=512}
R=${MK_RANKS:-2}
out=$B/run
mkdir -p "$out"
echo "== mkc --emit=check $S -D gpus=$R $ARGS"
# shellcheck disable=SC2086
"$B/mkc" --emit=check "$S" -D gpus="$R" $ARGS
echo
echo "== mkc --emit=schedule (first lines; full text in $out/schedule.txt)"
# shellcheck disable=SC2086
"$B/mkc" --emit=schedule "$S" -D gpus="$R" --ranks-per-gpu="$R" $ARGS -o "$out/schedule.txt"
sed -n '1,12p' "$out/schedule.txt"
echo
echo "== mkc --emit=cu / --emit=cubin -> $out/"
# shellcheck disable=SC2086
"$B/mkc" --emit=cu "$S" -D gpus="$R" --ranks-per-gpu="$R" $ARGS -o "$out/kernel.cu"
# shellcheck disable=SC2086
"$B/mkc" --emit=cubin "$S" -D gpus="$R" --ranks-per-gpu="$R" $ARGS -o "$out/kernel.cubin"
echo
# shellcheck disable=SC2086
if "$B/mkrun" "$S" --ranks "$R" $ARGS --iters 0 --quiet >/dev/null 2>&1; then
	echo "== mkrun $S --ranks $R (GPU)"
	# shellcheck disable=SC2086
	"$B/mkrun" "$S" --ranks "$R" $ARGS
else
	echo "== no usable GPU here: mkrun --cpu $S --ranks $R"
	# shellcheck disable=SC2086
	"$B/mkrun" --cpu "$S" --ranks "$R" $ARGS
fi
