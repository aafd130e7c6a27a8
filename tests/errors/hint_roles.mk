# the roles hint: known roles, each once, positive counts
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  B = relu(A)
  roles compte 100, rdma 0, nvlink 4, nvlink 8
}
