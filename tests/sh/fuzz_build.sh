#!/bin/sh
# ONCE
# tools/fuzz.sh (make fuzz) still builds both fuzzers against the sources
# they cover, and each runs a second over its seeds without a finding: a
# new front-end source or a parser change that breaks the harness shows
# here, not at the next long fuzzing run.
set -eu
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
FUZZ_DIR="$d" FUZZ_BOOTSTRAP_SECONDS=1 sh tools/fuzz.sh 1 >"$d/log" 2>&1 || { tail -n 20 "$d/log"; exit 1; }
grep -q "fuzz: 1 s over" "$d/log"
grep -q "fuzz: 1 s over the bootstrap" "$d/log"
