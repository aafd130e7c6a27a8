# a 1-D operand broadcast over rows must be local; it comes second
pipeline p {
  in  X : bf16[64, 128] split(0)
  in  b : bf16[128] split(0)
  in  c : bf16[128]
  out Y : bf16[64, 128] split(0)
  out Z : bf16[64, 128] split(0)
  Y = add(X, b)
  Z = mul(c, X)
}
