# A unary elementwise op that is the only reader of a matmul's result runs
# in the matmul's epilogue; a result read twice, or an output, stays stored.
#   ONE  G = gelu(matmul): fused; H2 is read by two ops: not fused
#
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=ONE
#
# ONE: // stage H1: G = matmul(X, W), tile {{.*}}; then gelu in the epilogue
# ONE: mkd_gelu()
# ONE: // stage H2: H2 = matmul(X, W), tile
# ONE-NOT: epilogue
# ONE: // stage R: R = relu(H2), elementwise
# ONE: // stage S: S = add(R, H2), elementwise
pipeline epi {
  param M = 256, N = 256, K = 128
  in  X : bf16[M, K]
  in  W : bf16[K, N]
  out G : bf16[M, N]
  out S : bf16[M, N]
  stage H1 : compute H1 = matmul(X, W)
  G  = gelu(H1)
  H2 = matmul(X, W)
  R  = relu(H2)
  S  = add(R, H2)
}
