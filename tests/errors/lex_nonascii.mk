# UTF-8 is fine in comments (µs, ×), not in code
pipeline p {
  in  A : bf16[64 × 64]
}
