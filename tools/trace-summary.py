#!/usr/bin/env python3
"""trace-summary.py TRACE.json [--timeline US] - per stage of a `mkrun
--trace` run: tasks, median task time, when the stage's first task began
and its last ended (microseconds from the first task of the run), busy
CTAs; then the span and the CTA time no task used (idle: CTAs x span -
busy).  --timeline US adds, for every US microseconds of the run, how many
CTAs each stage kept busy on average: where waves leave CTAs idle (the
decode MLP: docs/perf-notes.md, 2026-12-05).  --schedule S.json (`mkc
--emit=json` of the same program and -D values) adds, for every stage and
operand, how far apart the tasks that read the same box of it started, in
the plan and in the run (rank 0's tasks; tasks shorter than a quarter of
their stage's 90th percentile, tiles that skipped their work, left out):
tiles that share a weight slab read it from device memory once only when
they run together (the MoE: docs/perf-notes.md, nineteenth session).
--over US adds, per stage, the tasks that ran longer than US: how many,
their median, 10th and 90th percentiles, and the CTA time they took (the
tiles that did their work, apart from those past a bucket's tokens: the
MoE in pairs, docs/perf-notes.md, twenty-sixth session)."""
import argparse, json, statistics

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--timeline", type=float, default=0, metavar="US")
ap.add_argument("--schedule", metavar="S.json")
ap.add_argument("--over", type=float, default=-1, metavar="US")
args = ap.parse_args()

try:
    with open(args.trace) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
except (OSError, ValueError, KeyError, TypeError, AttributeError) as x:
    raise SystemExit("trace-summary: %s: not a trace of mkrun --trace (%s)" % (args.trace, x))
if not ev:
    raise SystemExit("trace-summary: %s has no tasks" % args.trace)
t0 = min(e["ts"] for e in ev)
t1 = max(e["ts"] + e["dur"] for e in ev)
stage = lambda e: e["name"].rsplit(" ", 1)[0]
q = lambda v, p: sorted(v)[min(len(v) - 1, int(p * len(v)))]  # the p-quantile of v
stages = {}
for e in ev:
    stages.setdefault(stage(e), []).append(e)
order = sorted(stages, key=lambda s: min(e["ts"] for e in stages[s]))
print("%-14s %6s %10s %10s %10s %6s" % ("stage", "tasks", "median us", "first us", "last us", "ctas"))
for st in order:
    es = stages[st]
    d = [e["dur"] for e in es]
    print("%-14s %6d %10.2f %10.2f %10.2f %6d" % (
        st, len(es), statistics.median(d), min(e["ts"] for e in es) - t0,
        max(e["ts"] + e["dur"] for e in es) - t0, len({(e["pid"], e["tid"]) for e in es})))
ctas = len({(e["pid"], e["tid"]) for e in ev})
busy = sum(e["dur"] for e in ev)
print("span %.2f us" % (t1 - t0))
print("idle %.0f CTA-us of %.0f (%.1f%%; %d CTAs ran tasks)" % (
    ctas * (t1 - t0) - busy, ctas * (t1 - t0), 100.0 * (1 - busy / (ctas * (t1 - t0))), ctas))
# the gap before each task on its CTA: from the end of the CTA's task
# before it (ticket, flags, the ring's fill where nothing carried it)
gaps = {}
by_cta = {}
for e in ev:
    by_cta.setdefault((e["pid"], e["tid"]), []).append(e)
for es in by_cta.values():
    es.sort(key=lambda e: e["ts"])
    for a, b in zip(es, es[1:]):
        gaps.setdefault(stage(b), []).append(max(0.0, b["ts"] - (a["ts"] + a["dur"])))
if gaps:
    print("gaps before a task on its CTA (us):")
    print("%-14s %6s %10s %10s %14s" % ("stage", "tasks", "median", "p90", "sum per CTA"))
    for st in order:
        g = gaps.get(st, [])
        if g:
            print("%-14s %6d %10.2f %10.2f %14.1f" % (st, len(g), statistics.median(g), q(g, 0.9),
                                                     sum(g) / ctas))
if args.over >= 0:
    print("tasks over %g us:" % args.over)
    print("%-14s %6s %10s %10s %10s %12s" % ("stage", "tasks", "median", "p10", "p90", "CTA-us"))
    for st in order:
        d = [e["dur"] for e in stages[st] if e["dur"] > args.over]
        if d:
            print("%-14s %6d %10.2f %10.2f %10.2f %12.0f" % (st, len(d), statistics.median(d),
                                                          q(d, 0.1), q(d, 0.9), sum(d)))
if args.timeline > 0:
    w = args.timeline
    starts = []
    b = 0.0
    while t0 + b < t1:
        starts.append(b)
        b += w
    # each task's time spread over the buckets it overlaps (one pass)
    acc = {st: [0.0] * len(starts) for st in order}
    for st in order:
        a = acc[st]
        for e in stages[st]:
            lo, hi = e["ts"], e["ts"] + e["dur"]
            # (a bucket early: the starts are sums of w, not multiples)
            k = min(len(starts) - 1, max(0, int((lo - t0) / w) - 1))
            while k < len(starts):
                blo = t0 + starts[k]
                if blo >= hi:
                    break
                a[k] += max(0.0, min(hi, blo + w) - max(lo, blo))
                k += 1
    print("%8s %s" % ("from us", " ".join("%8s" % s[:8] for s in order)))
    for k, b in enumerate(starts):
        print("%8.1f %s" % (b, " ".join("%8.1f" % (acc[st][k] / w) for st in order)))

if args.schedule:
    try:
        with open(args.schedule) as f:
            tasks = {t["id"]: t for t in json.load(f)["tasks"] if t.get("rank", 0) == 0}
    except (OSError, ValueError, KeyError, TypeError) as x:
        raise SystemExit("trace-summary: %s: not a schedule of mkc --emit=json (%s)" % (args.schedule, x))
    rows = []
    for st in order:
        es = [e for e in stages[st] if e["pid"] == 0 and e.get("args", {}).get("task") in tasks]
        if not es:
            continue
        cut = q([e["dur"] for e in es], 0.9) / 4
        groups = {}
        for e in es:
            if e["dur"] < cut:
                continue
            t = tasks[e["args"]["task"]]
            if t["stage"] != st.split(" ")[0]:
                raise SystemExit("trace-summary: task %d is '%s' in the trace, '%s' in %s: "
                                 "not the same program" % (t["id"], st, t["stage"], args.schedule))
            for r in t.get("reads", []):
                k = (r["tensor"], tuple(r["lo"]), tuple(r["hi"]))
                groups.setdefault(k, []).append((t["predicted_us"][0], e["ts"]))
        by = {}
        for (x, _, _), g in groups.items():
            if len(g) > 1:
                by.setdefault(x, []).append((max(a for a, _ in g) - min(a for a, _ in g),
                                             max(b for _, b in g) - min(b for _, b in g)))
        for x in sorted(by):
            sp = by[x]
            plan, run = [a for a, _ in sp], [b for _, b in sp]
            rows.append((st, x, len(sp), q(plan, .5), q(plan, .9), q(run, .5), q(run, .9)))
    print("start spread of tasks that read the same box (us):")
    print("%-14s %-12s %7s %9s %9s %9s %9s" % ("stage", "operand", "boxes", "plan p50", "plan p90",
                                               "run p50", "run p90"))
    for r in rows:
        print("%-14s %-12s %7d %9.1f %9.1f %9.1f %9.1f" % r)
