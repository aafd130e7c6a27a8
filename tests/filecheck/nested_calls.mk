# Nested calls (issue 20): each call in an argument is a temp named by its
# text, placed before its reader; it fuses as a written temp would (silu of
# a matmul read once runs in the matmul's epilogue), the same text twice is
# one temp, and the CUDA spells the name as an identifier.
#
# RUN: %mkc --emit=expand %s | FileCheck %s --check-prefix=EXP
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SCH
#
# EXP: silu(matmul(X, Wg))  temp  bf16[128, 64]
# EXP: matmul(X, Wu)  temp  bf16[128, 64]
# EXP: 0 matmul(X, Wg) silu(matmul(X, Wg)) = matmul(X, Wg)  then silu in the epilogue
# EXP: 1 matmul(X, Wu) matmul(X, Wu) = matmul(X, Wu)
# EXP: 2 A A = mul(silu(matmul(X, Wg)), matmul(X, Wu))
# EXP: 3 B B = add(matmul(X, Wu), U)
# CU: T_silu_matmul_X__Wg___{{[0-9]+}} =
# CU: // stage matmul_X__Wg__0: silu_matmul_X__Wg___{{[0-9]+}} = matmul(X, Wg)
# SCH: matmul matmul(X, Wg) silu(matmul(X, Wg))@0[0:128, 0:64] <- X@0
pipeline nested {
  in  X  : bf16[128, 64]
  in  Wg : bf16[64, 64]
  in  Wu : bf16[64, 64]
  in  U  : bf16[128, 64]
  out A  : bf16[128, 64]
  out B  : bf16[128, 64]
  A = mul(silu(matmul(X, Wg)), matmul(X,
                                     Wu))
  B = add(matmul(X, Wu), U)
}
