#!/usr/bin/env python3
"""trace-summary.py TRACE.json - per stage of a `mkrun --trace` run: tasks,
median task time, when the stage's first task began and its last ended
(microseconds from the first task of the run), busy CTAs."""
import json, statistics, sys

ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
stages = {}
for e in ev:
    st = e["name"].rsplit(" ", 1)[0]
    stages.setdefault(st, []).append(e)
print("%-14s %6s %10s %10s %10s %6s" % ("stage", "tasks", "median us", "first us", "last us", "ctas"))
for st, es in sorted(stages.items(), key=lambda kv: min(e["ts"] for e in kv[1])):
    d = [e["dur"] for e in es]
    print("%-14s %6d %10.2f %10.2f %10.2f %6d" % (
        st, len(es), statistics.median(d), min(e["ts"] for e in es),
        max(e["ts"] + e["dur"] for e in es), len({(e["pid"], e["tid"]) for e in es})))
print("span %.2f us" % (max(e["ts"] + e["dur"] for e in ev) - min(e["ts"] for e in ev)))
