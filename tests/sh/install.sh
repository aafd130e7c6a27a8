#!/bin/sh
# ONCE (it relinks the build it installs; the sanitizer build needs its own flags)
# make install puts mkc, mkrun, libmk (static and shared), mk.h and a
# pkg-config file under PREFIX, and the embedding example builds against it.
set -eu
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
make -s install B="$B" PREFIX="$d/usr" >/dev/null
for f in bin/mkc bin/mkrun lib/libmk.a lib/libmk.so lib/libmk.so.0 include/mk.h lib/pkgconfig/mk.pc; do
	[ -e "$d/usr/$f" ] || { echo "missing $f"; exit 1; }
done
"$d/usr/bin/mkc" --version
flags=$(PKG_CONFIG_PATH="$d/usr/lib/pkgconfig" pkg-config --cflags --libs --static mk)
echo "pkg-config: $flags"
# shellcheck disable=SC2086
cc -std=c11 -o "$d/embed" samples/embed.c $flags
LD_LIBRARY_PATH="$d/usr/lib" "$d/embed" samples/ag_gemm.mk >/dev/null 2>"$d/err" && exit 1   # no GPU in CI: must fail cleanly
grep -q "no CUDA driver\|no GPU" "$d/err" || { cat "$d/err"; exit 1; }
echo "installed tree builds and runs the embedding example (no GPU: clean error)"
