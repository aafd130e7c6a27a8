# ARGS: --emit=schedule
# a sum over rows cut into more row blocks than a lowering makes is an
# error at the op (it once lowered to no task at all: 0 CTAs, exit 0)
pipeline p {
  in  X : f32[65537, 1, 16]
  out Y : f32[65537, 1]
  Y = sum(X, 2)
}
