# a parameter may only use parameters defined before it
pipeline p {
  param M = 2 * N
  param N = 64, K = Q
}
