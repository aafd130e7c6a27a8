#!/bin/sh
# tools/bench-compile.sh [MKC] - how long mkc takes (not a test).
#
# 1. Front end and scheduler, every sample at a 4 x 8 mesh: median wall time
#    of `mkc --emit=check` (parse + check) and `mkc --emit=schedule` (also
#    lower, schedule, verify), over REPS runs, with rank 0's task count; the
#    largest sample (most tasks) is marked -- issue 4 asks that scheduling
#    it take under 200 ms.
# 2. Code generation, every sample at 1 x 8: `--emit=cu` (median), NVRTC
#    cold (an empty cache: one compile, written to the cache) and cached
#    (median over REPS of the same compile, read back from the cache).
# Samples that do not lower yet are listed as such.  Times include starting
# the process, as a user sees them.  Env: REPS (default 7), SAMPLES (default
# all of samples/*.mk), MESH4 (default "-D nodes=4 -D gpus=8"), MESH1
# (default "-D gpus=8").
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
MKC=${1:-${MKC:-$top/build/mkc}}
REPS=${REPS:-7}
MESH4=${MESH4:--D nodes=4 -D gpus=8}
MESH1=${MESH1:--D gpus=8}
[ -x "$MKC" ] || { echo "no $MKC: build first (make)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now_us() { echo $(($(date +%s%N) / 1000)); }

# median_ms CMD...: run REPS times (output discarded), print the median in ms
median_ms() {
	i=0
	: >"$tmp/times"
	while [ "$i" -lt "$REPS" ]; do
		t0=$(now_us)
		"$@" >/dev/null 2>&1 || { echo "fail"; return 1; }
		t1=$(now_us)
		echo $((t1 - t0)) >>"$tmp/times"
		i=$((i + 1))
	done
	sort -n "$tmp/times" | awk '{a[NR] = $1} END {m = a[int((NR + 1) / 2)]; printf "%.1f\n", m / 1000}'
}

once_ms() {
	t0=$(now_us)
	"$@" >/dev/null 2>&1 || { echo "fail"; return 1; }
	t1=$(now_us)
	awk -v d=$((t1 - t0)) 'BEGIN {printf "%.1f\n", d / 1000}'
}

lowers() {  # FILE MESH...: 0 when it lowers at that mesh
	f=$1
	shift
	# shellcheck disable=SC2086
	"$MKC" --emit=graph "$@" "$f" >"$tmp/graph" 2>"$tmp/err"
}

samples=${SAMPLES:-$(ls "$top"/samples/*.mk)}

echo "mkc: $MKC"
echo "reps: $REPS (medians), $(nproc 2>/dev/null || echo '?') CPUs, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
echo "front end and scheduler at $MESH4 (ms, median of $REPS)"
printf '%-24s %8s %10s %10s\n' sample tasks check schedule
big="" bigtasks=0
for f in $samples; do
	s=$(basename "$f" .mk)
	# shellcheck disable=SC2086
	if ! lowers "$f" $MESH4; then
		printf '%-24s %8s %10s %10s  %s\n' "$s" - \
			"$(median_ms "$MKC" --emit=check $MESH4 "$f")" - \
			"(not lowered: $(head -1 "$tmp/err" | sed 's/^[^ ]*: error: //'))"
		continue
	fi
	n=$(grep -c '^t[0-9]' "$tmp/graph")
	# shellcheck disable=SC2086
	c=$(median_ms "$MKC" --emit=check $MESH4 "$f")
	# shellcheck disable=SC2086
	sc=$(median_ms "$MKC" --emit=schedule $MESH4 "$f")
	printf '%-24s %8s %10s %10s\n' "$s" "$n" "$c" "$sc"
	if [ "$n" -gt "$bigtasks" ]; then
		bigtasks=$n big="$s: schedule $sc ms"
	fi
done
[ -n "$big" ] && echo "largest: $big ($bigtasks tasks of rank 0; the goal is under 200 ms)"

echo
echo "code generation at $MESH1 (ms): emit=cu median of $REPS; NVRTC sm_90a cubin cold (empty cache) and cached (median)"
printf '%-24s %8s %10s %10s %8s\n' sample cu nvrtc-cold cached regs
for f in $samples; do
	s=$(basename "$f" .mk)
	# shellcheck disable=SC2086
	if ! lowers "$f" $MESH1; then
		printf '%-24s %8s %10s %10s %8s  %s\n' "$s" - - - - "(not lowered)"
		continue
	fi
	# shellcheck disable=SC2086
	cu=$(median_ms "$MKC" --emit=cu $MESH1 "$f")
	XDG_CACHE_HOME="$tmp/cache-$s"
	export XDG_CACHE_HOME
	# shellcheck disable=SC2086
	cold=$(once_ms "$MKC" --emit=cubin $MESH1 "$f" -o "$tmp/x.cubin")
	# shellcheck disable=SC2086
	warm=$(median_ms "$MKC" --emit=cubin $MESH1 "$f" -o "$tmp/x.cubin")
	# shellcheck disable=SC2086
	regs=$("$MKC" --emit=cubin $MESH1 "$f" -o "$tmp/x.cubin" 2>&1 | sed -n 's/.* \([0-9-]*\) registers.*/\1/p')
	printf '%-24s %8s %10s %10s %8s\n' "$s" "$cu" "$cold" "$warm" "${regs:-?}"
done
