# a mesh size is an integer or the built-in of its place
pipeline p {
  mesh gpus x 8
  in  A : bf16[64]
}
