# Causal ring attention over several heads: [heads, sequence, head dim],
# split along the sequence (dim 1).  With the causal mask, a rank's queries
# skip the K/V blocks of later positions.
pipeline ring_attention_causal {
  mesh  nodes x gpus
  param NH = 8, S = 32768, D = 128

  in  Q : bf16[NH, S, D] split(1)
  in  K : bf16[NH, S, D] split(1)
  in  V : bf16[NH, S, D] split(1)
  out O : bf16[NH, S, D] split(1)

  O = attention(Q, K, V, causal)
}
