#!/bin/sh
# tools/carry-libfabric.sh [DIR] - copy libfabric.so.1 and the shared
# libraries it links (as ldd resolves them here) into DIR (default .devlibs),
# for a GPU machine whose image has no libfabric.  The C library and the
# loader (libc, libm, libdl, libpthread, librt, ld-linux) stay behind: the
# target's own must be used.  There, point the loader at DIR:
#
#   LD_LIBRARY_PATH=$PWD/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ...
#
# (tests/gpu/run.sh does this when .devlibs/ exists), or name the library
# alone with MK_LIBFABRIC=$PWD/.devlibs/libfabric.so.1.  libmk opens it with
# dlopen, so nothing is linked against it at build time.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/.devlibs}
lib=${MK_LIBFABRIC:-}
if [ -z "$lib" ]; then
	for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
		[ -e "$d/libfabric.so.1" ] && { lib=$d/libfabric.so.1; break; }
	done
fi
[ -n "$lib" ] && [ -e "$lib" ] || { echo "carry-libfabric: no libfabric.so.1 here (apt-get install libfabric1)" >&2; exit 1; }
mkdir -p "$dir"
cp -L "$lib" "$dir/libfabric.so.1"
ldd "$lib" | while read -r name arrow path rest; do
	[ "$arrow" = "=>" ] || continue
	case "$name" in
	libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|linux-vdso*) continue ;;
	esac
	[ -e "$path" ] || { echo "carry-libfabric: $name not found here" >&2; exit 1; }
	cp -L "$path" "$dir/$name"
	echo "  $name"
done
echo "carry-libfabric: $(ls "$dir" | wc -l) libraries in $dir ($(du -sh "$dir" | cut -f1)); libfabric $(basename "$(readlink -f "$lib")")"
