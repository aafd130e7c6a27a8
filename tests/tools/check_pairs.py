#!/usr/bin/env python3
"""check_pairs.py S.json - the lists of a schedule whose matmul tiles go in
pairs on 2-CTA clusters (sched.c static_pairs; `mkc --emit=json` with
MK_CLUSTER=2): at every place of the lists of CTAs 2k and 2k + 1, tasks
that write the same columns (and batch), the second's rows right after the
first's.  Prints "N tasks on C CTAs, K clusters: every place paired", or
what is not, and exits 1."""
import json, sys

if len(sys.argv) != 2:
    raise SystemExit("usage: check_pairs.py S.json")
with open(sys.argv[1]) as f:
    s = json.load(f)
lists = {}
for t in s["tasks"]:
    if t.get("rank", 0) == 0:
        lists.setdefault(t["cta"], []).append(t)
bad = []
for c in sorted(lists):
    lists[c].sort(key=lambda t: t["order"])
for c in range(0, s["ctas"], 2):
    a, b = lists.get(c, []), lists.get(c + 1, [])
    if len(a) != len(b):
        bad.append("CTAs %d and %d hold %d and %d tasks" % (c, c + 1, len(a), len(b)))
        continue
    for x, y in zip(a, b):
        wx, wy = x["writes"][0], y["writes"][0]
        rd = len(wx["lo"]) - 2  # the row dimension
        same = all(wx["lo"][d] == wy["lo"][d] and wx["hi"][d] == wy["hi"][d]
                   for d in range(len(wx["lo"])) if d != rd)
        if not same or wx["hi"][rd] != wy["lo"][rd]:
            bad.append("CTA %d place %d: t%d %s-%s and t%d %s-%s are not a pair" % (
                c, x["order"], x["id"], wx["lo"], wx["hi"], y["id"], wy["lo"], wy["hi"]))
if bad:
    print("\n".join(bad[:10]))
    raise SystemExit(1)
n = sum(len(v) for v in lists.values())
print("%d tasks on %d CTAs, %d clusters: every place paired" % (n, len(lists), len(lists) // 2))
