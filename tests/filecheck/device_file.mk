# Cost-model constants from a file (`mkc --device=FILE`, docs/costmodel.md):
# keys not in the file keep their H200 defaults; a bad file stops mkc with
# FILE:LINE and exit status 2.
#   H100   tools/devices/h100.txt (slower device memory): the weights
#          stream longer than on the H200 defaults
#   H200   the defaults
#   BAD    an unknown key, and a value that is not a positive number
#
# RUN: %mkc --emit=schedule --device=tools/devices/h100.txt %s | FileCheck %s --check-prefix=H100
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=H200
# RUN: printf 'mem_gbps = 3000\nwarp_size = 32\n' > %t.bad
# RUN: ! %mkc --emit=schedule --device=%t.bad %s 2> %t.err
# RUN: FileCheck %s --check-prefix=BAD < %t.err
# RUN: printf '# a comment\n\nmem_gbps = -1\n' > %t.neg
# RUN: ! %mkc --emit=schedule --device=%t.neg %s 2> %t.err2
# RUN: FileCheck %s --check-prefix=NEG < %t.err2
#
# H100: predicted {{[0-9.]+}} us; floor 130.0 us
# H200: predicted {{[0-9.]+}} us; floor 94.5 us
# BAD: mkc: {{.*}}.bad:2: unknown key 'warp_size'
# NEG: mkc: {{.*}}.neg:3: bad value '-1' for mem_gbps
pipeline device_file {
  param T = 1, D = 4096, F = 14336
  in  X  : bf16[T, D]
  in  g  : bf16[D]
  in  Wg : bf16[D, F]
  in  Wu : bf16[D, F]
  in  Wd : bf16[F, D]
  out Y  : bf16[T, D]
  N = rmsnorm(X, g)
  G = matmul(N, Wg)
  U = matmul(N, Wu)
  S = silu(G)
  A = mul(S, U)
  M = matmul(A, Wd)
  Y = add(X, M)
}
