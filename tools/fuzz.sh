#!/bin/sh
# tools/fuzz.sh SECONDS - libFuzzer over the .mk front end (parse + sema).
#
# Builds tests/fuzz/fuzz_frontend.c with clang -fsanitize=fuzzer,address,
# undefined against the front end's own sources only (so it runs while other
# parts of the tree are half-built), seeds a temporary corpus with
# samples/*.mk and tests/errors/*.mk, and runs for SECONDS (default 60).
# Exits non-zero when the fuzzer finds a crash, a sanitizer report, a leak
# or a hang; the input that did it is left in build/fuzz/ (FUZZ_DIR: another
# directory).  FUZZ_CC=clang-NN picks another clang.
set -eu
secs=${1:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
B=${FUZZ_DIR:-$top/build/fuzz}
CC=${FUZZ_CC:-clang}
mkdir -p "$B/gen"

flex --outfile="$B/gen/lex.c" --header-file="$B/gen/lex.h" grammar/lex.l
bison -Wall -Werror --defines="$B/gen/parse.h" -o "$B/gen/parse.c" grammar/parse.y
$CC -std=c11 -g -O1 -D_GNU_SOURCE -I. -I"$B/gen" \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-o "$B/fuzz_frontend" tests/fuzz/fuzz_frontend.c \
	grammar/*.c base/arena.c base/strbuf.c compiler/sema*.c compiler/inspect.c \
	compiler/ir.c "$B/gen/lex.c" "$B/gen/parse.c" -lm

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT INT TERM
cp samples/*.mk tests/errors/*.mk "$corpus"/
echo "fuzz: $secs s over $(ls "$corpus" | wc -l) seed files"
"$B/fuzz_frontend" -max_total_time="$secs" -max_len=4096 -timeout=10 \
	-rss_limit_mb=2048 -dict=tests/fuzz/mk.dict -print_final_stats=1 \
	-artifact_prefix="$B/" "$corpus"

# ---- bootstrap and fd-passing message parsers --------------------------------
# tests/fuzz/fuzz_bootstrap.c over runtime/bootstrap_wire.c and runtime/fdpass.c
# (what arrives from other ranks), FUZZ_BOOTSTRAP_SECONDS (default SECONDS).
bsecs=${FUZZ_BOOTSTRAP_SECONDS:-$secs}
$CC -std=c11 -g -O1 -D_GNU_SOURCE -I. \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-o "$B/fuzz_bootstrap" tests/fuzz/fuzz_bootstrap.c runtime/bootstrap_wire.c runtime/fdpass.c
bcorpus=$(mktemp -d)
trap 'rm -rf "$corpus" "$bcorpus"' EXIT INT TERM
echo "fuzz: $bsecs s over the bootstrap and fd-passing parsers"
"$B/fuzz_bootstrap" -max_total_time="$bsecs" -max_len=2048 -timeout=10 \
	-rss_limit_mb=2048 -use_value_profile=1 -dict=tests/fuzz/bootstrap.dict \
	-print_final_stats=1 -artifact_prefix="$B/bootstrap-" "$bcorpus"
