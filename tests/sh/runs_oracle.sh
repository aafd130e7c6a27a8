#!/bin/sh
# What check accepts must run (issue 20): each program of tests/runs/ on the
# meshes of its "# MESHES:" line compiles to sm_90a (mkc --emit=cubin) and
# its CPU reference run on that mesh gives the one-rank run's outputs, on
# the same logical inputs (tests/tools/random_programs.py --file; no
# hand-written answers).  A "# DEFS:" line adds -D NAME=VALUE pairs; an
# "# ENV-SAME: NAME=VALUE ..." line asks that one rank run under that
# environment (a rewrite turned off) give the same outputs too.
# tests/gpu/run.sh runs the same programs on the GPU.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
fail=0
for f in "$top"/tests/runs/*.mk; do
	defs=$(sed -n 's/^# DEFS: *//p' "$f" | head -1)
	for m in $(sed -n 's/^# MESHES: *//p' "$f" | head -1); do
		# shellcheck disable=SC2086
		python3 "$top/tests/tools/random_programs.py" --file "$f" "$m" $defs || fail=1
	done
done
exit $fail
