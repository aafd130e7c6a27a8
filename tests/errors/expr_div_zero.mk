# division and modulo by zero
pipeline p {
  param M = 64, Z = M - 64
  param A = M / Z, B = M % (Z * 2)
}
