# ARGS: --emit=schedule
# tasks bounds the tasks of a matmul: one count, at least 1, for matmuls
# only, and no fewer than one task per batch entry (here 4 experts)
pipeline p {
  in  A : bf16[256, 64]
  in  W : bf16[64, 64]
  in  X : bf16[4, 256, 64]
  in  V : bf16[4, 64, 64]
  out B : bf16[256, 64]
  out C : bf16[256, 64]
  out D : bf16[256, 64]
  out Y : bf16[4, 256, 64]
  B = matmul(A, W)  tasks 0
  C = matmul(A, W)  tasks 2 x 2
  D = relu(A)       tasks 4
  Y = matmul(X, V)  tasks 2
}
