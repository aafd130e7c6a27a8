# sum removes a dimension; scale takes a constant; sums of 1-D tensors refused
pipeline p {
  in  X : bf16[64, 128]
  in  v : bf16[64]
  out s : bf16[64]
  out t : bf16[64]
  out u : bf16[64, 128]
  s = sum(X, 1)
  t = sum(v, 0)
  u = scale(X, 1.0 % 2)
}
