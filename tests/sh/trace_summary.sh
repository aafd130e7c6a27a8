#!/bin/sh
# tools/trace-summary.py on a made-up trace of two CTAs: per-stage lines,
# the span, the idle CTA time (2 CTAs x 10 us - 15 us busy = 5), and a
# timeline of 5 us buckets with each stage's busy CTAs.  A trace without
# tasks, or a file that is no trace, is a clear error.
set -eu
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cat >"$d/t.json" <<'J'
{"traceEvents": [
 {"name": "G matmul", "ph": "X", "ts": 100.0, "dur": 10.0, "pid": 0, "tid": 0},
 {"name": "U matmul", "ph": "X", "ts": 100.0, "dur": 5.0, "pid": 0, "tid": 1},
 {"name": "run", "ph": "M", "pid": 0}
]}
J
out=$(python3 tools/trace-summary.py "$d/t.json" --timeline 5)
echo "$out" | grep -Eq '^G +1 +10\.00 +0\.00 +10\.00 +1$'
echo "$out" | grep -Eq '^U +1 +5\.00 +0\.00 +5\.00 +1$'
echo "$out" | grep -q '^span 10.00 us$'
echo "$out" | grep -q '^idle 5 CTA-us of 20 (25.0%; 2 CTAs ran tasks)$'
echo "$out" | grep -Eq '^ +0\.0 +1\.0 +1\.0$'
echo "$out" | grep -Eq '^ +5\.0 +1\.0 +0\.0$'
echo '{"traceEvents": []}' >"$d/e.json"
if python3 tools/trace-summary.py "$d/e.json" 2>"$d/err"; then exit 1; fi
grep -q "has no tasks" "$d/err"
echo "not json" >"$d/bad.json"
if python3 tools/trace-summary.py "$d/bad.json" 2>"$d/err"; then exit 1; fi
grep -q "not a trace of mkrun --trace" "$d/err"
