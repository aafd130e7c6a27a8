# an unclosed shape list
pipeline p {
  in  A : bf16[64, 64 split(0)
}
