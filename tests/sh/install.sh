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
# no GPU in CI: the example says so once and runs on the CPU reference
LD_LIBRARY_PATH="$d/usr/lib" "$d/embed" samples/ag_gemm.mk >"$d/out" 2>"$d/err" ||
	{ cat "$d/out" "$d/err"; exit 1; }
if ! grep -q "ok$" "$d/out"; then cat "$d/out" "$d/err"; exit 1; fi
if [ -s "$d/err" ]; then
	grep -q "running on the CPU reference instead" "$d/err" || { cat "$d/err"; exit 1; }
fi
echo "installed tree builds and runs the embedding example (no GPU: on the CPU reference)"
