#!/bin/sh
# tests/run.sh BUILD [BUILD ...] - the CI suite, run against each build dir.
#
# Kinds of test, each found by its files (add a file, get a test):
#   unit      every $B/tests/test_* binary (from tests/unit/*.c); exit 0 = pass
#   errors    tests/errors/X.mk: `mkc --emit=check X.mk` must exit 1 and print
#             exactly X.err on stderr.  A line `# ARGS: ...` adds arguments.
#   golden    tests/golden/MANIFEST: `OUT: mkc arguments` per line; stdout of
#             mkc must equal tests/golden/OUT (MK_UPDATE_GOLDEN=1 rewrites it)
#   lit       tests/filecheck/*.{mk,cu} with `RUN:` lines (%s = the file,
#             %mkc = mkc, %t = a temp path); each RUN line must exit 0
#   shell     tests/sh/*.sh, run with MKC, MKRUN, B, TESTBIN set; exit 0 = pass
# One line per group as it starts (stderr), so a long run shows where it is;
# MK_TEST_VERBOSE=1 prints every test's PASS too; MK_TEST_GROUPS="errors
# golden" runs only the groups named (a quick pass while working).
# The last line is "N passed, N failed"; the exit status is 1 on any failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
pass=0
fail=0
failed=""
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TO=${MK_TEST_TIMEOUT:-300}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:protect_shadow_gap=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export MK_CACHE_DIR_FOR_TESTS="$tmp/cache"
export XDG_CACHE_HOME="$tmp/xdg"
# Tests write nothing into the source tree (tests/sh/clean_tree.sh): no
# __pycache__ beside tests/tools/*.py when one imports another.
export PYTHONDONTWRITEBYTECODE=1

# group NAME: where the run is, with the counts so far and the time
t0=$(date +%s)
want() { [ -z "${MK_TEST_GROUPS:-}" ] || case " $MK_TEST_GROUPS " in *" $1 "*) true ;; *) false ;; esac; }
group() { echo "== $tag/$1 (so far $pass passed, $fail failed, $(($(date +%s) - t0)) s)" >&2; }
ok() { pass=$((pass + 1)); [ -n "${MK_TEST_VERBOSE:-}" ] && echo "PASS $1"; return 0; }
bad() {
	fail=$((fail + 1))
	failed="$failed $1"
	echo "FAIL $1"
	[ -f "$tmp/log" ] && sed -n '1,60p' "$tmp/log" | sed 's/^/    /'
	return 0
}

for B in "$@"; do
	tag=$(basename "$B")
	MKC="$top/$B/mkc"
	MKRUN="$top/$B/mkrun"
	export MKC MKRUN B TESTBIN="$top/$B/tests"
	[ -x "$MKC" ] || { echo "no $MKC: build first"; exit 2; }

	[ "$B" = "$1" ] && [ -z "${MK_TEST_VERBOSE:-}" ] &&
		echo "tests: one line per group; MK_TEST_VERBOSE=1 shows every test" >&2
	# unit
	group unit
	for t in "$B"/tests/test_*; do
		want unit || break
		[ -x "$t" ] || continue
		n="$tag/unit/$(basename "$t")"
		if timeout "$TO" "$t" >"$tmp/log" 2>&1; then ok "$n"; else bad "$n"; fi
	done

	# errors
	group errors
	for f in tests/errors/*.mk; do
		want errors || break
		[ -f "$f" ] || continue
		n="$tag/errors/$(basename "$f" .mk)"
		exp="${f%.mk}.err"
		args=$(sed -n 's/^# ARGS: *//p' "$f" | head -1)
		# shellcheck disable=SC2086
		timeout "$TO" "$MKC" --emit=check $args "$f" >/dev/null 2>"$tmp/err"
		rc=$?
		if [ -n "${MK_UPDATE_GOLDEN:-}" ]; then cp "$tmp/err" "$exp"; fi
		if [ "$rc" = 1 ] && [ -f "$exp" ] && cmp -s "$tmp/err" "$exp"; then
			ok "$n"
		else
			{ echo "exit $rc (want 1)"; [ -f "$exp" ] && diff -u "$exp" "$tmp/err"; } >"$tmp/log" 2>&1
			bad "$n"
		fi
	done

	# golden
	group golden
	if [ -f tests/golden/MANIFEST ] && want golden; then
		while IFS= read -r line; do
			case "$line" in ''|'#'*) continue ;; esac
			out=${line%%:*}
			args=${line#*:}
			n="$tag/golden/$out"
			# shellcheck disable=SC2086
			timeout "$TO" "$MKC" $args >"$tmp/out" 2>"$tmp/err"
			rc=$?
			if [ -n "${MK_UPDATE_GOLDEN:-}" ] && [ "$rc" = 0 ]; then cp "$tmp/out" "tests/golden/$out"; fi
			if [ "$rc" = 0 ] && cmp -s "$tmp/out" "tests/golden/$out"; then
				ok "$n"
			else
				{ echo "exit $rc"; cat "$tmp/err"; diff -u "tests/golden/$out" "$tmp/out" | head -40; } >"$tmp/log" 2>&1
				bad "$n"
			fi
		done < tests/golden/MANIFEST
	fi

	# lit-style FileCheck tests
	group lit
	FILECHECK=$(command -v FileCheck || command -v FileCheck-14 || echo /usr/lib/llvm-14/bin/FileCheck)
	for f in tests/filecheck/*; do
		want lit || break
		[ -f "$f" ] || continue
		grep -q 'RUN:' "$f" || continue
		n="$tag/lit/$(basename "$f")"
		res=0
		: >"$tmp/log"
		sed -n 's/.*RUN: *//p' "$f" > "$tmp/runs"
		while IFS= read -r cmd; do
			c=$(printf '%s' "$cmd" | sed -e "s|%mkc|$MKC|g" -e "s|%s|$f|g" \
				-e "s|%t|$tmp/t|g" -e "s|FileCheck|$FILECHECK|g")
			echo "\$ $c" >>"$tmp/log"
			if ! timeout "$TO" sh -c "$c" >>"$tmp/log" 2>&1; then res=1; break; fi
		done < "$tmp/runs"
		if [ "$res" = 0 ]; then ok "$n"; else bad "$n"; fi
	done

	# shell tests (a line "# ONCE" runs a test against the first build only)
	group sh
	for t in tests/sh/*.sh; do
		want sh || break
		[ -f "$t" ] || continue
		[ "$B" != "$1" ] && grep -q '^# ONCE' "$t" && continue
		n="$tag/sh/$(basename "$t" .sh)"
		if timeout "$TO" sh "$t" >"$tmp/log" 2>&1; then ok "$n"; else bad "$n"; fi
	done
done

[ "$fail" -gt 0 ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
