#!/bin/sh
# ONCE
# The Python package (python/mkc) without a GPU: pytest over python/tests
# (the NumPy path through libmk's CPU reference; torch where installed),
# against this build's libmk.so.  Needs numpy and pytest: without them the
# test says so and passes, unless MK_REQUIRE_PYTEST=1 (CI sets it).
set -u
py=${PYTHON:-python3}
if ! "$py" -c 'import numpy, pytest' 2>/dev/null; then
	if [ -n "${MK_REQUIRE_PYTEST:-}" ]; then
		echo "python: numpy and pytest are required (MK_REQUIRE_PYTEST) but missing for $py"
		exit 1
	fi
	echo "python: skipped: no numpy or pytest for $py (pip install numpy pytest, or PYTHON=...)"
	exit 0
fi
MKC_LIB="$(pwd)/$B/libmk.so" PYTHONPATH="$(pwd)/python" PYTHONDONTWRITEBYTECODE=1 \
	"$py" -m pytest -q -p no:cacheprovider python/tests
