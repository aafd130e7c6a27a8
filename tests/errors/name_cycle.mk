# assignments may come in any order, but not in a circle
pipeline p {
  in  A : bf16[64]
  out D : bf16[64]
  B = add(A, C)
  C = relu(B)
  D = relu(C)
  E = relu(E)
}
