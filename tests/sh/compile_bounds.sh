#!/bin/sh
# Compile time and memory stay bounded (issue 21; tools/bench-compile.sh
# measures them, docs/perf-notes.md has the numbers):
#   - a chain of 1000 relu ops and one of 1000 matmuls on 128 x 128 compile
#     to CUDA within 20 s under a 1 GiB address space (once 14 s and
#     4.6 GB for the relu chain; the goal is 2 s and 500 MB);
#   - causal ring attention on 128 x 8 ranks schedules and verifies within
#     20 s under 1 GiB (once 4 min 25 s: the verifier expanded every rank;
#     the goal is 10 s);
#   - a program past the compile's bound on memory (--max-memory) is a
#     located "program too large: N tasks, M MB" error, exit 1, quickly.
# Limits are generous so that a loaded CI machine passes; the regressions
# they guard against were orders of magnitude beyond them.
# ONCE (a 1 GiB address space does not fit the sanitizers' shadow memory)
set -u
: "${MKC:?}"
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

chain() {  # KIND N: a chain of N ops of KIND (relu or matmul)
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

# bounded NAME SECONDS KB CMD...: CMD exits 0 within SECONDS under KB of
# address space
bounded() {
	name=$1 secs=$2 kb=$3
	shift 3
	t0=$(date +%s%N)
	(ulimit -v "$kb" && exec timeout "$secs" "$@") >"$tmp/out" 2>"$tmp/err"
	rc=$?
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	if [ "$rc" != 0 ]; then
		echo "FAIL $name: exit $rc after $ms ms (limits ${secs} s, $((kb / 1024)) MB)"
		head -5 "$tmp/err"
		fail=1
	else
		echo "ok   $name: $ms ms"
	fi
}

chain relu 1000 >"$tmp/relu.mk"
chain matmul 1000 >"$tmp/matmul.mk"
bounded "relu chain 1000 --emit=cu" 20 1048576 "$MKC" --emit=cu "$tmp/relu.mk" -o "$tmp/relu.cu"
bounded "matmul chain 1000 --emit=cu" 20 1048576 "$MKC" --emit=cu "$tmp/matmul.mk" -o "$tmp/mm.cu"
bounded "ring_attention_causal 128 x 8 --emit=schedule" 20 1048576 \
	"$MKC" --emit=schedule -D nodes=128 -D gpus=8 "$top/samples/ring_attention_causal.mk" \
	-o "$tmp/ra.txt"

# past the bound: 262144 attention tiles under 64 MB
cat >"$tmp/big.mk" <<'EOF'
pipeline p {
  in  Q : bf16[4096, 8192, 128]
  in  K : bf16[4096, 8192, 128]
  in  V : bf16[4096, 8192, 128]
  out O : bf16[4096, 8192, 128]
  O = attention(Q, K, V)
}
EOF
(ulimit -v 1048576 && exec timeout 20 "$MKC" --emit=schedule --max-memory=64 "$tmp/big.mk") \
	>/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" = 1 ] && grep -q "big.mk:6:3: error: program too large: [0-9]* tasks, [0-9]* MB of compile memory when lowering 'O' (the bound is 64 MB" "$tmp/err"; then
	echo "ok   past --max-memory=64: $(head -1 "$tmp/err" | sed 's/.*error: //')"
else
	echo "FAIL past --max-memory=64: exit $rc (want 1 and a located 'program too large')"
	head -5 "$tmp/err"
	fail=1
fi
exit $fail
