# Ring attention: the sequence is split over the ranks; K and V blocks
# travel around the ring while each rank's queries attend to them (online
# softmax), so no rank ever holds the whole K or V.
pipeline ring_attention {
  mesh  nodes x gpus
  param S = 32768, D = 128      # sequence length, head dimension

  in  Q : bf16[S, D] split(0)
  in  K : bf16[S, D] split(0)
  in  V : bf16[S, D] split(0)
  out O : bf16[S, D] split(0)

  O = attention(Q, K, V)
}
