# row-wise ops need whole rows
pipeline p {
  in  X : bf16[64, 128] split(1)
  out Y : bf16[64, 128] split(1)
  Y = softmax(X)
}
