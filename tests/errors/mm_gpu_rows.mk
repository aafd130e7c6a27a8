# ARGS: --emit=plan
# the GPU's matmul tiles load rows in pieces of 8 elements: a K that is not
# a multiple of 8 is refused at the op (it compiled, and cp.async read rows
# that are not 16-byte aligned)
pipeline p {
  in  A : bf16[128, 100]
  in  B : bf16[100, 64]
  out C : bf16[128, 64]
  C = matmul(A, B)
}
