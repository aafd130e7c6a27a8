# tools/bench-lib.sh - what tools/bench-attn.sh and tools/bench-moe.sh
# share, sourced after NAME is set (the script's name in its messages):
# [-n W] BUILD on the command line, the check that W GPUs exist, the fused
# side (mkrun), the baseline side (python3, torchrun for W > 1), medians.
# Sets W, B and ITERS (20 unless the script set it); cds to the top.
# shellcheck shell=sh
W=1
B=build
while [ $# -gt 0 ]; do
	case $1 in
	-n) W=${2:?-n needs a rank count}; shift 2 ;;
	*) B=$1; shift ;;
	esac
done
cd "$(dirname "$0")/.." || exit 2
ITERS=${ITERS:-20}
[ -x "$B/mkrun" ] || { echo "$NAME: no $B/mkrun (make first)" >&2; exit 2; }

if [ "$W" -gt 1 ]; then
	g=$(nvidia-smi -L 2>/dev/null | wc -l)
	if [ "$g" -lt "$W" ]; then
		echo "$NAME: skipped: W=$W needs $W GPUs, nvidia-smi lists $g (NCCL refuses two ranks on one GPU)"
		exit 0
	fi
fi

fused() {	# SAMPLE -D ...: the mkrun summary line
	if [ "$W" -gt 1 ]; then
		"$B/mkrun" "$@" -n "$W" --no-check --iters "$ITERS" --quiet 2>&1
	else
		"$B/mkrun" "$@" --no-check --iters "$ITERS" --quiet 2>&1
	fi
}

baseline() {	# SCRIPT ARGS...: a PyTorch baseline; its --check runs after the timed runs
	if [ "$W" -gt 1 ]; then
		python3 -m torch.distributed.run --standalone --nproc-per-node "$W" \
			"$@" --iters "$ITERS" 2>&1
	else
		python3 "$@" --iters "$ITERS" 2>&1
	fi
}

median() {	# PREFIX: the "median X us" of the line that starts with PREFIX
	sed -n "s/^$1: .* median \([0-9.]*\) us.*/\1/p" | head -n 1
}
