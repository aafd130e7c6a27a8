#!/bin/sh
# tests/gpu/python_check.sh BUILD - the Python package on the GPU (issue 22):
# tests/gpu/python_check.py (zero-copy by pointer, CUDA graph replays, the
# per-call row), then the torchrun example (python/examples/tp_mlp_torch.py)
# with 2 processes on the one GPU under MPS (started here when root and not
# running).  Skips with a line when torch, a GPU or torchrun is missing.
set -u
B=${1:-build}
cd "$(dirname "$0")/../.." || exit 2
export MKC_LIB="$(pwd)/$B/libmk.so" PYTHONPATH="$(pwd)/python" PYTHONDONTWRITEBYTECODE=1
py=${PYTHON:-python3}
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "python_check: skipped: no torch with a GPU for $py"
	exit 0
fi
rc=0
"$py" tests/gpu/python_check.py || rc=1
if ! "$py" -m torch.distributed.run --help >/dev/null 2>&1; then
	echo "python_check: torchrun example skipped: no torch.distributed.run"
	exit $rc
fi
mps=0
if command -v nvidia-cuda-mps-control >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	if nvidia-cuda-mps-control -d >/dev/null 2>&1; then mps=1; sleep 1; fi
fi
MK_JOB_TOKEN=$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n') \
	timeout 300 "$py" -m torch.distributed.run --standalone --nproc_per_node=2 \
	python/examples/tp_mlp_torch.py || rc=1
[ "$mps" = 1 ] && echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
exit $rc
