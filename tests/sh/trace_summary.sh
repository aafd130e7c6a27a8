#!/bin/sh
# tools/trace-summary.py on a made-up trace of two CTAs: per-stage lines,
# the span, the idle CTA time (2 CTAs x 10 us - 15 us busy = 5), and a
# timeline of 5 us buckets with each stage's busy CTAs.  With the
# schedule, how far apart the tasks reading the same box started: W's one
# box read by tasks 0 and 1 (plan 0 and 2 us, run 100 and 150), X's boxes
# by one task each (no row), task 2 too short to count; and the gaps
# before a task on its CTA (task 2 160 us after task 0 on CTA 0: 80 us a
# CTA of two; none in the first trace, one task a CTA).  A trace without
# tasks, or a file that is no trace or schedule, is a clear error.
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
if echo "$out" | grep -q '^gaps'; then exit 1; fi
# --over 6: G's task (10 us) counts, U's (5 us) not
out=$(python3 tools/trace-summary.py "$d/t.json" --over 6)
echo "$out" | grep -q '^tasks over 6 us:$'
echo "$out" | grep -Eq '^G +1 +10\.00 +10\.00 +10\.00 +10$'
if echo "$out" | sed -n '/^tasks over/,$p' | grep -Eq '^U '; then exit 1; fi
cat >"$d/s.json" <<'J'
{"tasks": [
 {"id": 0, "rank": 0, "stage": "M", "predicted_us": [0.0, 10.0], "reads": [
  {"tensor": "X", "lo": [0, 0], "hi": [128, 64]}, {"tensor": "W", "lo": [0, 0], "hi": [64, 128]}]},
 {"id": 1, "rank": 0, "stage": "M", "predicted_us": [2.0, 12.0], "reads": [
  {"tensor": "X", "lo": [128, 0], "hi": [256, 64]}, {"tensor": "W", "lo": [0, 0], "hi": [64, 128]}]},
 {"id": 2, "rank": 0, "stage": "M", "predicted_us": [2.0, 12.0], "reads": [
  {"tensor": "X", "lo": [0, 0], "hi": [128, 64]}]}
]}
J
cat >"$d/m.json" <<'J'
{"traceEvents": [
 {"name": "M matmul", "ph": "X", "ts": 100.0, "dur": 40.0, "pid": 0, "tid": 0, "args": {"task": 0}},
 {"name": "M matmul", "ph": "X", "ts": 150.0, "dur": 40.0, "pid": 0, "tid": 1, "args": {"task": 1}},
 {"name": "M matmul", "ph": "X", "ts": 300.0, "dur": 1.0, "pid": 0, "tid": 0, "args": {"task": 2}}
]}
J
out=$(python3 tools/trace-summary.py "$d/m.json" --schedule "$d/s.json")
echo "$out" | grep -Eq '^M +W +1 +2\.0 +2\.0 +50\.0 +50\.0$'
if echo "$out" | grep -Eq '^M +X '; then exit 1; fi
echo "$out" | grep -q '^gaps before a task on its CTA (us):$'
echo "$out" | grep -Eq '^M +1 +160\.00 +160\.00 +80\.0$'
echo '{"tasks": [{"id": 0, "rank": 0, "stage": "N", "predicted_us": [0, 1]}]}' >"$d/n.json"
if python3 tools/trace-summary.py "$d/m.json" --schedule "$d/n.json" 2>"$d/err"; then exit 1; fi
grep -q "not the same program" "$d/err"
if python3 tools/trace-summary.py "$d/m.json" --schedule "$d/t.json" 2>"$d/err"; then exit 1; fi
grep -q "not a schedule of mkc --emit=json" "$d/err"
echo '{"traceEvents": []}' >"$d/e.json"
if python3 tools/trace-summary.py "$d/e.json" 2>"$d/err"; then exit 1; fi
grep -q "has no tasks" "$d/err"
echo "not json" >"$d/bad.json"
if python3 tools/trace-summary.py "$d/bad.json" 2>"$d/err"; then exit 1; fi
grep -q "not a trace of mkrun --trace" "$d/err"
