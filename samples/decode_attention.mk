# Decode attention: T new queries per head (T = 1 or a few) against the S
# keys and values of the cache, H heads of D.  Few query tiles and long
# keys: the plan splits the keys across CTAs (split-KV, flash-decoding) and
# merges the partial results, so every SM streams the cache.
pipeline decode_attention {
  param H = 32, T = 16, S = 4096, D = 128
  in  Q : bf16[H, T, D]
  in  K : bf16[H, S, D]
  in  V : bf16[H, S, D]
  out O : bf16[H, T, D]
  O = attention(Q, K, V)
}
