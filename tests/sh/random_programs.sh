#!/bin/sh
# Random programs (issue 20): random DAGs over the op table, with random
# shapes, element types, placements, meshes and hints; what check accepts
# must compile to sm_90a (--emit=cubin) and run on the CPU reference, and
# the multi-rank run must give the one-rank run's outputs.  Seeded
# (MK_RANDPROG_SEED, default 1) and bounded (MK_RANDPROG_SECONDS, default
# 30 per build); a failure prints the program and a rerun line.  The long
# run: `make test-random` (RANDOM_SECONDS, default 1800).
# The driver is tests/tools/random_programs.py; run by tests/run.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v python3 >/dev/null 2>&1; then
	echo "random_programs: python3 not found (tools/deps.sh installs it)"
	exit 1
fi
MK_RANDPROG_SECONDS=${MK_RANDPROG_SECONDS:-30} exec python3 "$top/tests/tools/random_programs.py"
