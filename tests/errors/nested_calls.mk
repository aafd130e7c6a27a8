# errors inside nested calls are located at the inner call; a call where
# an integer is wanted is refused
pipeline p {
  in  G : f32[64, 128]
  in  U : f32[64, 128]
  out A : f32[64, 128]
  out B : f32[64]
  A = mul(silu(G, U), U)
  B = sum(relu(U), relu(1))
}
