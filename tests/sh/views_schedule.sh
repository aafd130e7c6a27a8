#!/bin/sh
# Views (issue 20) in the JSON schedule: the independent checker
# (tests/tools/check_schedule.py) maps every read of a view through its
# strides to its root's elements and finds them written, and ordered before
# the reader, on every rank: tests/runs/views_nocopy.mk and the Llama layer
# over several meshes, and at its own sizes (where slice and merge_heads
# are copies: a layout op's copy, "layout" in the JSON, must read as many
# elements as it writes).  Every check of the checker counts.  Then three
# broken schedules it must reject: a view without its "view" field (reads
# nothing writes), one whose offset runs past its root, and a merge_heads
# copy that reads half of what it writes.  Run by tests/run.sh with MKC.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
MKC=${MKC:-$top/build/mkc}
chk="$top/tests/tools/check_schedule.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
run() {  # run NAME FILE MKC-ARGS...: the schedule passes the checker
	name=$1 f=$2
	shift 2
	n=$((n + 1))
	if ! "$MKC" --emit=json "$@" "$f" > "$tmp/$name.json" 2> "$tmp/err"; then
		echo "views_schedule: $name: mkc failed: $(head -3 "$tmp/err")"
		fail=1
		return
	fi
	if ! grep -q '"view"' "$tmp/$name.json"; then
		echo "views_schedule: $name: no view in the schedule"
		fail=1
	fi
	if ! python3 "$chk" "$tmp/$name.json" > "$tmp/out" 2>&1; then
		echo "views_schedule: $name: the checker rejects it:"
		head -5 "$tmp/out"
		fail=1
	fi
}
small="-D T=256 -D E=512 -D H=8 -D D=64 -D F=1024"
for m in "1 1" "1 2" "2 2" "1 4"; do
	# shellcheck disable=SC2086
	set -- $m
	run "views_nocopy.$1x$2" "$top/tests/runs/views_nocopy.mk" -D nodes="$1" -D gpus="$2"
	# shellcheck disable=SC2086
	run "llama.$1x$2" "$top/samples/llama_layer.mk" -D nodes="$1" -D gpus="$2" $small
done
run "llama.full" "$top/samples/llama_layer.mk"
if ! grep -q '"layout": "merge_heads"' "$tmp/llama.full.json"; then
	echo "views_schedule: llama.full: no merge_heads copy in the schedule"
	fail=1
fi
# broken on purpose: the checker must say so
python3 - "$tmp/views_nocopy.1x2.json" "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
views = [t for t in d["tensors"] if "view" in t]
a = json.loads(json.dumps(d))
for t in a["tensors"]:
    if t["name"] == views[0]["name"]:
        del t["view"]
json.dump(a, open(sys.argv[2] + "/noview.json", "w"))
b = json.loads(json.dumps(d))
for t in b["tensors"]:
    if t["name"] == views[0]["name"]:
        t["view"]["offset"] = 1 << 40
json.dump(b, open(sys.argv[2] + "/far.json", "w"))
c = json.load(open(sys.argv[2] + "/llama.full.json"))
for t in c["tasks"]:
    if t.get("layout") == "merge_heads":
        t["reads"][0]["hi"][-1] -= (t["reads"][0]["hi"][-1] - t["reads"][0]["lo"][-1]) // 2
        break
json.dump(c, open(sys.argv[2] + "/half.json", "w"))
PY
for bad in noview:coverage far:tensors half:dataflow; do
	n=$((n + 1))
	f=${bad%:*} want=${bad#*:}
	python3 "$chk" "$tmp/$f.json" > "$tmp/out" 2>&1
	if ! grep -q ": $want: " "$tmp/out"; then
		echo "views_schedule: the checker misses a broken view ($f: no '$want' violation)"
		fail=1
	fi
done
echo "views_schedule: $n checks, $([ $fail = 0 ] && echo all passed || echo some failed)"
exit $fail
