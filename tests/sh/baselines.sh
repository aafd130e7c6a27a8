#!/bin/sh
# The PyTorch baselines of make bench (tests/gpu/ring_baseline.py,
# tests/gpu/moe_baseline.py) on the CPU: gloo and float32, small shapes,
# one rank and two (torchrun), each checked against its float32 reference.
# torch is not a dependency of the build: without it this test says so and
# passes (CI has none).
set -u
if ! python3 -c "import torch" >/dev/null 2>&1; then
	echo "baselines: skipped: no torch here"
	exit 0
fi
rc=0
run() {		# NAME COMMAND...: it must exit 0 and print its check "ok"
	name=$1
	shift
	if ! out=$("$@" 2>&1) || ! echo "$out" | grep -q "check: .*: ok$"; then
		echo "FAIL $name: $*"
		echo "$out" | tail -n 5
		rc=1
	fi
}
run ring1 python3 tests/gpu/ring_baseline.py --nh 2 --s 256 --d 32 --iters 1 --warmup 0 --check
run ring2 python3 -m torch.distributed.run --standalone --nproc-per-node 2 tests/gpu/ring_baseline.py --heads 2 --seq-len 256 --head-dim 32 --iters 1 --warmup 0 --check
run ring2nc python3 -m torch.distributed.run --standalone --nproc-per-node 2 tests/gpu/ring_baseline.py --heads 2 --seq-len 256 --head-dim 32 --no-causal --iters 1 --warmup 0 --check
run moe1 python3 tests/gpu/moe_baseline.py --tokens 256 --experts 8 --hidden 64 --ffn 32 --iters 1 --warmup 0 --check
run moe2 python3 -m torch.distributed.run --standalone --nproc-per-node 2 tests/gpu/moe_baseline.py --tokens 256 --experts 8 --hidden 64 --ffn 32 --iters 1 --warmup 0 --check
[ $rc -eq 0 ] && echo "baselines: ring and MoE baselines match their references on 1 and 2 CPU ranks"
exit $rc
