# elementwise ops need equal shapes, or a 1-D second operand of the last dim
pipeline p {
  in  X : bf16[64, 128]
  in  Y : bf16[128, 64]
  in  b : bf16[64]
  out Z : bf16[64, 128]
  out W : bf16[64, 128]
  Z = add(X, Y)
  W = add(X, b)
}
