#!/bin/sh
# Property test of the scheduler: many random parameter sets, tiles, chunk
# sizes, role splits and meshes (1x1 ... 4x8, virtual ranks too) for every
# sample that lowers; each `mkc --emit=json` schedule is re-verified by the
# independent checker tests/tools/check_schedule.py, and a fifth of them are
# also broken on purpose to prove the checker catches each kind of fault.
# Seeded (MK_PROPS_SEED, default 1) and bounded (MK_PROPS_SECONDS, default
# 50); a failure prints the mkc command, its source and a rerun line.
# The driver is tests/tools/schedule_props.py; run by tests/run.sh with MKC.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v python3 >/dev/null 2>&1; then
	echo "schedule_props: python3 not found (tools/deps.sh installs it)"
	exit 1
fi
exec python3 "$top/tests/tools/schedule_props.py"
