# 64-bit overflow in parameter arithmetic
pipeline p {
  param M = 4G, N = M * M * M, P = -(-9223372036854775807 - 1)
}
