#!/bin/sh
# tools/devbuild.sh [DIR] - what a run on the GPU machine needs, in DIR
# (default .devbuild, ignored by git): this tree's binaries (built here: the
# GPU machine has no flex or bison; libmk.so for the Python package), the
# samples, tests/gpu, tests/runs, the test tools, python/, the trace summary, and the libfabric libraries (.devlibs, see
# tools/carry-libfabric.sh).  Then, with the device tool:
#   carry [".devbuild"], command: cd .devbuild && sh tests/gpu/run.sh build
# (docs/perf-notes.md lists the commands each session ran.)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/.devbuild}
cd "$top"
make -s all >/dev/null
[ -d .devlibs ] || sh tools/carry-libfabric.sh .devlibs >/dev/null
rm -rf "$dir"
mkdir -p "$dir/build/tests" "$dir/tests/tools" "$dir/tools"
cp build/mkc build/mkrun build/embed build/libmk.so "$dir/build/"
cp build/tests/bench_* build/tests/gpu_* "$dir/build/tests/"
cp -r samples "$dir/"
cp -r tests/gpu "$dir/tests/"
cp tests/tools/*.py "$dir/tests/tools/"
cp -r tests/runs "$dir/tests/"
mkdir -p "$dir/python"
cp -r python/mkc python/examples "$dir/python/"
cp tools/trace-summary.py tools/weight-layout.py tools/stream-probe.cu tools/device-session.sh tools/bench.sh tools/bench-*.sh "$dir/tools/"
cp -r .devlibs "$dir/.devlibs"
echo "$dir: $(du -sh "$dir" | cut -f1) ($(git rev-parse --short HEAD))"
