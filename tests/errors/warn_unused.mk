# ARGS: -Werror
# unused inputs and temps are warnings (errors under -Werror)
pipeline p {
  in  A : bf16[64]
  in  Unused : bf16[64]
  out B : bf16[64]
  T = relu(A)
  B = gelu(A)
  temp Z : bf16[64]
}
