# A scale factor is a real constant: `1 / 8` is 0.125 (a division of reals,
# not of integers), and a whole factor is still a float literal of C
# ("2.0f": "2f" does not compile).  Found by tests/sh/random_programs.sh.
#
# RUN: %mkc --emit=cu %s | FileCheck %s
# RUN: %mkc --emit=cubin -o %t %s
#
# CHECK: // stage A: A = scale(X)
# CHECK: mkd_scale{0.125f}
# CHECK: // stage B: B = scale(A)
# CHECK: mkd_scale{2.0f}
pipeline scales {
  param M = 128, N = 128
  in  X : bf16[M, N]
  out B : bf16[M, N]
  A = scale(X, 1 / 8)
  B = scale(A, 2)
}
