# the roles hint: known roles, positive counts, at most 132 CTAs in all
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  B = relu(A)
  roles compute 120, nvlink 24
  roles compte 100, rdma 0
}
