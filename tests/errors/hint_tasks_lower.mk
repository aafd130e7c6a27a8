# ARGS: --emit=schedule
# a batched matmul makes at least one task per batch entry: a bound of 2
# for 4 experts cannot be met
pipeline p {
  in  X : bf16[4, 256, 64]
  in  V : bf16[4, 64, 64]
  out Y : bf16[4, 256, 64]
  Y = matmul(X, V)  tasks 2
}
