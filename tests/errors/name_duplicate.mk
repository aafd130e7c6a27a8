# one name, two definitions
pipeline p {
  param M = 64
  in  A : bf16[M]
  in  A : bf16[M]
  out M : bf16[M]
}
