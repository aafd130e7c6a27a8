# ARGS: -D nodes=4 -D gpus=8
# a literal mesh is fixed: a -D that disagrees is an error naming both
# places, and the file's other errors are still reported
pipeline p {
  mesh 2 x 8
  in  A : f32[64, 16] split(0)
  out B : f32[64, 16] split(0)
  B = relu(Z)
}
