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
# 3. Size and world (issue 21): `--emit=cu` of generated chains (relu and
#    matmul on 128 x 128: 100, 1000, 2000 / 100, 1000, 3000 ops) and of
#    causal ring attention at 1 x 8 ... 128 x 8 ranks: wall time of one run,
#    peak RSS (GNU time), rank 0's tasks, and the goals beside the numbers
#    (a 1000-op chain under 2 s and 500 MB; 128 x 8 under 10 s).  Each run
#    is cut off at BOUND_TIMEOUT seconds (default 600).
# Samples that do not lower yet are listed as such.  Times include starting
# the process, as a user sees them.  Env: REPS (default 7), SAMPLES (default
# all of samples/*.mk), MESH4 (default "-D nodes=4 -D gpus=8"), MESH1
# (default "-D gpus=8"), PARTS (default "1 2 3": which of the above).
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
PARTS=${PARTS:-1 2 3}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

echo "mkc: $MKC"
echo "reps: $REPS (medians), $(nproc 2>/dev/null || echo '?') CPUs, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
if part 1; then
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
fi

if part 2; then
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
echo
fi

# ---- 3. size and world ----------------------------------------------------
# chain KIND N: a chain of N ops of KIND (relu or matmul) on 128 x 128
chain() {
	awk -v kind="$1" -v n="$2" 'BEGIN {
		print "pipeline " kind "_chain {"
		print "  in  X0 : bf16[128, 128]"
		if (kind == "matmul") print "  in  W : bf16[128, 128]"
		print "  out Y : bf16[128, 128]"
		for (i = 1; i <= n; i++) {
			out = i == n ? "Y" : "X" i
			if (kind == "matmul") print "  " out " = matmul(X" i - 1 ", W)"
			else print "  " out " = relu(X" i - 1 ")"
		}
		print "}"
	}'
}

# row NAME GOAL_MS GOAL_MB FILE ARGS...: one --emit=cu run, its time, peak
# RSS and tasks, and whether the goal (0: none) is met
row() {
	name=$1 gms=$2 gmb=$3 f=$4
	shift 4
	echo '?' >"$tmp/rss"
	t0=$(now_us)
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%M' -o "$tmp/rss" timeout "${BOUND_TIMEOUT:-600}" \
			"$MKC" --emit=cu "$@" "$f" -o "$tmp/out.cu" >/dev/null 2>"$tmp/err"
	else
		timeout "${BOUND_TIMEOUT:-600}" "$MKC" --emit=cu "$@" "$f" -o "$tmp/out.cu" \
			>/dev/null 2>"$tmp/err"
	fi
	rc=$?
	t1=$(now_us)
	ms=$(((t1 - t0) / 1000))
	kb=$(tail -1 "$tmp/rss" | tr -dc '0-9?')
	mb=$(awk -v k="$kb" 'BEGIN {if (k == "?" || k == "") print "?"; else printf "%.0f", k / 1024}')
	tasks=$(sed -n 's/^#define MK_NTASKS //p' "$tmp/out.cu" 2>/dev/null)
	goal=""
	if [ "$gms" -gt 0 ]; then
		goal="goal: under $gms ms"
		[ "$gmb" -gt 0 ] && goal="$goal and $gmb MB"
		met=met
		if [ "$rc" != 0 ] || [ "$ms" -gt "$gms" ]; then met=MISSED; fi
		if [ "$gmb" -gt 0 ] && [ "$mb" != "?" ] && [ "$mb" -gt "$gmb" ]; then met=MISSED; fi
		goal="$goal, $met"
	fi
	status=""
	[ "$rc" = 124 ] && status=" (cut off at ${BOUND_TIMEOUT:-600} s)"
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && status=" (exit $rc: $(head -1 "$tmp/err"))"
	printf '%-30s %8s %10s %8s  %s%s\n' "$name" "${tasks:--}" "$ms" "$mb" "$goal" "$status"
	rm -f "$tmp/out.cu"
}

if part 3; then
	echo "size and world: --emit=cu, one run each (wall ms, peak RSS MB, rank 0's tasks)"
	printf '%-30s %8s %10s %8s  %s\n' case tasks ms MB ""
	for n in 100 1000 2000; do
		chain relu $n >"$tmp/relu$n.mk"
		g=0 m=0
		[ $n = 1000 ] && g=2000 m=500
		row "relu chain $n" $g $m "$tmp/relu$n.mk"
	done
	for n in 100 1000 3000; do
		chain matmul $n >"$tmp/mm$n.mk"
		g=0 m=0
		[ $n = 1000 ] && g=2000 m=500
		row "matmul chain $n" $g $m "$tmp/mm$n.mk"
	done
	for nodes in 1 4 16 32 64 128; do
		g=0
		[ $nodes = 128 ] && g=10000
		row "ring_attention_causal ${nodes}x8" $g 0 "$top/samples/ring_attention_causal.mk" \
			-D nodes=$nodes -D gpus=8
	done
fi
