# built-in names and element types cannot be redefined
pipeline p {
  param world = 4
  in  f32 : bf16[64]
}
