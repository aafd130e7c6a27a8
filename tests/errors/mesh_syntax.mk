# the mesh statement names the built-ins; sizes come from -D
pipeline p {
  mesh 2 x 8
  in  A : bf16[64]
}
