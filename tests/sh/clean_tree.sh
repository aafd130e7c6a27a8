#!/bin/sh
# ONCE (it runs the first build's mkc and mkrun; one look at the tree is enough)
# What the tests and the README's tour run writes nothing into the source
# tree.  The tour's commands that write a file must write it under build/
# (or /dev/null).  Then a few representative commands run from the top of
# the tree, as tests and readers run them - mkc's emits (the tour's mkc
# lines, their -o pointed at a temporary folder), mkrun --cpu with --save
# into that folder, a Python tool that imports another - and
# `git status --porcelain --ignored` must be the same before and after,
# outside the build folders.  Without git (an unpacked tarball) the status
# part is skipped.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# ---- the tour's outputs go under build/ ---------------------------------------
sed -n '/^## A short tour/,/^## /p' README.md >"$tmp/tour"
grep -o -e '-o [^ `]*' -e '--trace [^ `]*' -e '--save [^ `]*' "$tmp/tour" |
	awk '$2 !~ /^build\// && $2 != "/dev/null"' >"$tmp/bad"
if [ -s "$tmp/bad" ]; then
	echo "README's tour writes outside build/:"
	sed 's/^/  /' "$tmp/bad"
	fail=1
fi

# ---- the tree before and after ---------------------------------------------------
status() {
	git status --porcelain --ignored 2>/dev/null |
		grep -v -e '^!! build/$' -e "^!! ${B%/}/\$" >"$1"
}
have_git=0
git rev-parse --is-inside-work-tree >/dev/null 2>&1 && have_git=1
[ "$have_git" = 1 ] && status "$tmp/before"

# the tour's mkc lines, outputs into $tmp (the cubin needs NVRTC: allowed to fail)
grep '^build/mkc ' "$tmp/tour" | sed -e 's/ *#.*//' -e "s|-o build/|-o $tmp/|" \
	-e "s|^build/mkc|$MKC|" >"$tmp/mkc-lines"
n=0
while IFS= read -r cmd; do
	n=$((n + 1))
	if ! sh -c "$cmd" >"$tmp/out" 2>"$tmp/err"; then
		case "$cmd" in
		*--emit=cubin*) grep -q NVRTC "$tmp/err" && continue ;;
		esac
		echo "tour line failed: $cmd"
		sed 's/^/  /' "$tmp/err" | head -5
		fail=1
	fi
done <"$tmp/mkc-lines"
[ "$n" -ge 5 ] || { echo "only $n mkc lines found in the tour"; fail=1; }

if ! "$MKRUN" samples/gemm_rs.mk --cpu --ranks 2 -D M=256 -D N=512 -D K=128 --iters 1 \
	--warmup 0 --save "$tmp/out.d" >"$tmp/out" 2>&1 ||
	[ ! -f "$tmp/out.d/Y.r1.npy" ]; then
	echo "mkrun --cpu --save failed:"
	sed 's/^/  /' "$tmp/out" | tail -5
	fail=1
fi

if command -v python3 >/dev/null 2>&1; then
	# schedule_props.py imports check_schedule.py: a __pycache__ unless told not to
	MK_PROPS_COUNT=2 MK_PROPS_SECONDS=10 python3 tests/tools/schedule_props.py \
		>"$tmp/out" 2>&1 || { echo "schedule_props failed:"; tail -5 "$tmp/out"; fail=1; }
fi

if [ "$have_git" = 1 ]; then
	status "$tmp/after"
	if ! cmp -s "$tmp/before" "$tmp/after"; then
		echo "the source tree changed (git status before and after):"
		diff "$tmp/before" "$tmp/after" | sed 's/^/  /'
		fail=1
	fi
else
	echo "clean_tree: not a git checkout: the tree's status was not compared"
fi
[ "$fail" = 0 ] && echo "clean_tree: the tour writes under build/; mkc, mkrun and the Python tools left the tree as it was"
exit "$fail"
