# attention: K and V alike, Q's head dimension; causal needs square
pipeline p {
  in  Q : bf16[128, 64]
  in  K : bf16[256, 64]
  in  V : bf16[256, 32]
  in  V2 : bf16[256, 64]
  out O : bf16[128, 64]
  out O2 : bf16[128, 64]
  O  = attention(Q, K, V)
  O2 = attention(Q, K, V2, causal)
}
