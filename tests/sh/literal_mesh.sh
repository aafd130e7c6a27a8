#!/bin/sh
# Values of the language on the command line and literal meshes (issue 20):
# `-D M=8K` is read by the lexer's literal reader (mkc and mkrun); a file
# that fixes its mesh (`mesh 2 x 8`) runs at that mesh, and a job whose rank
# count disagrees is a located error, not an internal one.  CPU only.
set -u
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
cat >"$d/p.mk" <<'MK'
pipeline p {
  mesh 2 x 4
  param M = 64
  in  A : f32[M, 16] split(0)
  out B : f32[M, 16] split(0)
  B = relu(A)
}
MK
"$MKC" --emit=check -D M=8K "$d/p.mk" >"$d/out" 2>&1 || { echo "-D M=8K refused:"; cat "$d/out"; fail=1; }
grep -q "param M = 8192  (-D)" "$d/out" || { echo "-D M=8K is not 8192:"; cat "$d/out"; fail=1; }
grep -q "mesh 2 x 4 (world 8)" "$d/out" || { echo "the literal mesh is not used:"; cat "$d/out"; fail=1; }
"$MKC" --emit=check -D M=-1 "$d/p.mk" >"$d/out" 2>&1 && { echo "M=-1 accepted"; fail=1; }
"$MKC" --emit=check -D M=8Q "$d/p.mk" >"$d/out" 2>&1
[ $? = 1 ] || { echo "-D M=8Q: want exit 1 (bad input, as -D M=0)"; fail=1; }
grep -q "8K" "$d/out" || { echo "-D M=8Q: the message shows no example:"; cat "$d/out"; fail=1; }
"$MKRUN" --cpu --ranks 8 -D M=1K "$d/p.mk" >"$d/out" 2>&1 ||
	{ echo "mkrun --ranks 8 -D M=1K on a 2 x 4 mesh failed:"; cat "$d/out"; fail=1; }
grep -q "ran on 8 ranks" "$d/out" || { echo "not 8 ranks:"; cat "$d/out"; fail=1; }
"$MKRUN" --cpu --ranks 4 "$d/p.mk" >"$d/out" 2>&1
[ $? = 1 ] || { echo "mkrun --ranks 4 on a 2 x 4 mesh: want exit 1"; cat "$d/out"; fail=1; }
grep -q "p.mk:2:3: error: the mesh 2 x 4 has 8 ranks, but the job has 4" "$d/out" ||
	{ echo "no located mesh error:"; cat "$d/out"; fail=1; }
# an open side takes what the job's ranks leave
sed 's/mesh 2 x 4/mesh nodes x 4/' "$d/p.mk" >"$d/q.mk"
"$MKRUN" --cpu --ranks 8 "$d/q.mk" >"$d/out" 2>&1 || { echo "mesh nodes x 4 at 8 ranks:"; cat "$d/out"; fail=1; }
"$MKRUN" --cpu --ranks 6 "$d/q.mk" >"$d/out" 2>&1
grep -q "q.mk:2:16: error: gpus = 4 does not divide the job's 6 ranks" "$d/out" ||
	{ echo "gpus = 4 at 6 ranks:"; cat "$d/out"; fail=1; }
# 1 x 1 in the file, the default everywhere
sed 's/mesh 2 x 4/mesh 1 x 1/' "$d/p.mk" >"$d/r.mk"
"$MKRUN" --cpu "$d/r.mk" >"$d/out" 2>&1 || { echo "mesh 1 x 1:"; cat "$d/out"; fail=1; }
exit $fail
