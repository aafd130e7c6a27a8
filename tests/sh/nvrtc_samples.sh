#!/bin/sh
# Every sample, at meshes 1x1, 1x8 and 2x8 (and 1x8 with all 8 ranks as
# virtual ranks of one GPU), compiled through NVRTC to an sm_90a cubin with
# `mkc --emit=cubin`.  Each compile's resource use (mkc's stderr line "N
# registers, N bytes stack, S/L bytes spilled") and time are printed; any
# spill fails, and so do more registers than 64K / threads per CTA (the
# kernel runs one CTA per SM), a ptxas "Potential Performance Loss"
# (C7510: a wgmma chain that crosses a call runs one wgmma at a time), and
# a ptxas note that it injected a warpgroup.arrive (C7519: a wgmma chain
# under a branch, where ptxas closes each group with an empty wgmma, so
# that the wait for the previous group waits for the last: the idle
# warpgroups' first version, docs/perf-notes.md, twenty-first session),
# and any warning of NVRTC's (the device library compiles clean).
#
# A sample or mesh that mkc cannot lower or emit yet (its diagnostic says
# "cannot be lowered", "not lowered yet" or "not built yet") is skipped with
# the reason; so is a configuration the sample's own hints rule out (a
# `roles` split larger than a virtual rank's share of the SMs).  Anything
# else that fails -- above all NVRTC on a sample that lowers -- fails.
#
# A sample whose header says `# KNOWN-SPILL: reason` is skipped with that
# reason on a mesh where it spills and passes on one where it does not; it
# fails when it spills on no mesh any more (so the line is removed when the
# back end catches up).
#
# Compiles run MK_NVRTC_JOBS at a time (default: the CPU count).  The JIT
# cache is $XDG_CACHE_HOME/mk (tests/run.sh points it at a fresh directory,
# so the first build's compiles are cold and a second build's cached).
# Env: MKC (default build/mkc).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
MKC=${MKC:-$top/build/mkc}
# what a diagnostic says when the compiler is not there yet (skip, not fail)
NOT_YET='cannot be lowered|not lowered yet|not built yet'

# ---- one configuration: --one IDX FILE NODES GPUS RPG, result in $NV_TMP/IDX
if [ "${1:-}" = "--one" ]; then
	idx=$2 f=$3 nodes=$4 gpus=$5 rpg=$6
	out="$NV_TMP/$idx"
	err="$NV_TMP/$idx.err"
	s=$(basename "$f" .mk)
	tag="$s ${nodes}x$gpus r$rpg"
	cfg="-D nodes=$nodes -D gpus=$gpus --ranks-per-gpu=$rpg"
	result() { echo "$1" >"$out.status"; }
	# shellcheck disable=SC2086
	"$MKC" --emit=json $cfg "$f" >"$out.json" 2>"$err"
	rc=$?
	if [ "$rc" = 1 ] && grep -Eq "$NOT_YET" "$err"; then
		echo "SKIP $tag: $(grep -E "$NOT_YET" "$err" | head -1)" >"$out"
		result skip; exit 0
	fi
	if [ "$rc" = 1 ] && ! grep -q 'internal' "$err" && grep -q 'roles ask for' "$err"; then
		echo "SKIP $tag: the sample's roles hint does not fit: $(grep 'roles ask' "$err" | head -1)" >"$out"
		result skip; exit 0
	fi
	if [ "$rc" != 0 ]; then
		{ echo "FAIL $tag: mkc --emit=json exit $rc"; sed 's/^/    /' "$err"; } >"$out"
		result fail; exit 0
	fi
	threads=$(sed -n 's/^ *"threads": *\([0-9]*\),*$/\1/p' "$out.json")
	t0=$(date +%s%3N)
	# shellcheck disable=SC2086
	"$MKC" --emit=cubin $cfg "$f" -o "$out.cubin" 2>"$err"
	rc=$?
	t1=$(date +%s%3N)
	if [ "$rc" = 1 ] && grep -Eq "$NOT_YET" "$err"; then
		echo "SKIP $tag: $(grep -E "$NOT_YET" "$err" | head -1)" >"$out"
		result skip; exit 0
	fi
	line=$(grep 'registers,.*bytes stack,.*spilled' "$err" | head -1)
	if [ "$rc" != 0 ] || [ -z "$line" ] || ! [ -s "$out.cubin" ]; then
		{ echo "FAIL $tag: mkc --emit=cubin exit $rc"; sed -n '1,40p' "$err" | sed 's/^/    /'; } >"$out"
		result fail; exit 0
	fi
	# "mkc: sm_90a: 238 registers, 0 bytes stack, 0/0 bytes spilled (stores/loads)[, from cache]"
	regs=$(echo "$line" | sed -n 's/.* \(-*[0-9][0-9]*\) registers,.*/\1/p')
	stack=$(echo "$line" | sed -n 's/.* \(-*[0-9][0-9]*\) bytes stack,.*/\1/p')
	st=$(echo "$line" | sed -n 's/.* \(-*[0-9][0-9]*\)\/-*[0-9][0-9]* bytes spilled.*/\1/p')
	ld=$(echo "$line" | sed -n 's/.* -*[0-9][0-9]*\/\(-*[0-9][0-9]*\) bytes spilled.*/\1/p')
	note=""
	case "$line" in *"from cache"*) note="cached" ;; esac
	printf '%-22s %-5s %-4s %5s %6s %8s %7s  %s\n' "$s" "${nodes}x$gpus" "$rpg" \
		"$regs" "$stack" "$st/$ld" "$((t1 - t0))" "$note" >"$out"
	bad=""
	if [ -z "$regs" ] || [ -z "$st" ] || [ -z "$ld" ]; then
		bad="cannot read the resource line: $line"
	elif [ "$regs" -lt 0 ]; then
		bad="no resource figures from ptxas: $line"
	elif [ "$st" -gt 0 ] || [ "$ld" -gt 0 ]; then
		bad="spills $st bytes (stores) / $ld bytes (loads)"
	elif [ -n "$threads" ] && [ $((regs * threads)) -gt 65536 ]; then
		bad="$regs registers x $threads threads > 65536: one CTA does not fit an SM"
	elif grep -q 'Performance Loss' "$err"; then
		bad="ptxas: $(grep 'Performance Loss' "$err" | head -1 | sed 's/^ptxas info *: *//')"
	elif grep -q '(C7519)' "$err"; then
		bad="ptxas: $(grep '(C7519)' "$err" | head -1 | sed 's/^ptxas info *: *//')"
	elif grep -q ': warning' "$err"; then
		bad="NVRTC: $(grep ': warning' "$err" | head -1)"
	fi
	known=$(sed -n 's/^# KNOWN-SPILL: *//p' "$f" | head -1)
	if [ -n "$known" ]; then
		case "$bad" in
		spills*)
			echo "SKIP $tag: $bad, known: $known" >>"$out"
			echo "$s" >"$out.spilled"
			result skip; exit 0 ;;
		"") echo "$s" >"$out.clean" ;;
		esac
	fi
	if [ -n "$bad" ]; then
		echo "FAIL $tag: $bad" >>"$out"
		result fail
	else
		result pass
	fi
	exit 0
fi

# ---- the driver
NV_TMP=$(mktemp -d)
export NV_TMP MKC NOT_YET
trap 'rm -rf "$NV_TMP"' EXIT
if [ -z "${XDG_CACHE_HOME:-}" ]; then
	XDG_CACHE_HOME="$NV_TMP/xdg"  # not the user's cache: a fresh one, cold
	export XDG_CACHE_HOME
fi
jobs=${MK_NVRTC_JOBS:-$(nproc 2>/dev/null || echo 2)}

i=0
for f in "$top"/samples/*.mk; do
	# nodes gpus ranks-per-gpu
	for c in "1 1 1" "1 8 1" "1 8 8" "2 8 1"; do
		i=$((i + 1))
		echo "$(printf %03d $i) $f $c"
	done
done >"$NV_TMP/list"

start=$(date +%s)
xargs -P "$jobs" -L 1 sh "$0" --one <"$NV_TMP/list"
took=$(($(date +%s) - start))

printf '%-22s %-5s %-4s %5s %6s %8s %7s  %s\n' sample mesh rpg regs stack spilled ms note
while read -r idx rest; do
	if [ -f "$NV_TMP/$idx" ]; then
		cat "$NV_TMP/$idx"
	else
		echo "FAIL $rest: no result"
		echo fail >"$NV_TMP/$idx.status"
	fi
done <"$NV_TMP/list"
# a KNOWN-SPILL sample that compiled clean and spilled on no mesh
for f in "$top"/samples/*.mk; do
	s=$(basename "$f" .mk)
	grep -q '^# KNOWN-SPILL:' "$f" || continue
	cat "$NV_TMP"/*.spilled 2>/dev/null | grep -qx "$s" && continue
	cat "$NV_TMP"/*.clean 2>/dev/null | grep -qx "$s" || continue
	echo "FAIL $s: spills on no mesh any more: remove its KNOWN-SPILL line"
	echo fail >"$NV_TMP/known-$s.status"
done
count() { cat "$NV_TMP"/*.status 2>/dev/null | grep -c "^$1\$"; }
pass=$(count pass) fail=$(count fail) skip=$(count skip)
echo "nvrtc_samples: $pass compiled, $fail failed, $skip skipped ($jobs at a time, ${took}s)"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
