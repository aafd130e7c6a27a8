# ARGS: --emit=plan
# Issue 21, finding 6: a head dimension the GPU tiles do not take is an
# error at the op, with its location (D = 448 once ended in exit 3 when the
# shared memory did not fit; D = 48 is not a multiple of 32).
pipeline attn_headdim {
  param S = 256
  in  Q  : bf16[S, 448]
  in  K  : bf16[S, 448]
  in  V  : bf16[S, 448]
  in  Q2 : bf16[S, 48]
  in  K2 : bf16[S, 48]
  in  V2 : bf16[S, 48]
  out O  : bf16[S, 448]
  out O2 : bf16[S, 48]
  O  = attention(Q, K, V)
  O2 = attention(Q2, K2, V2)
}
