# The layer ops' CUDA (issue 20): layernorm and rope are row stages (rope's
# tables read at the box's tokens), gelu_tanh an elementwise functor (and a
# matmul epilogue), heads a copy per head from that head's D columns.
#
# RUN: %mkc --emit=cu -D gpus=2 %s | FileCheck %s
#
# CHECK: // stage Y: Y = layernorm(X, W, B), whole rows
# CHECK: mkd_layernorm((const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_X, X, rank, e, lo[1], lo[2]), X.st[1], w, b,
# CHECK: // stage G: G = gelu_tanh(X), elementwise over the box
# CHECK: mkd_ew1(mkd_gelu_tanh(),
# CHECK: // stage R: R = rope(Q, Cs, Sn), whole rows
# CHECK: (const float *)mkd_at<MK_GPUS>(p, T_Cs, C, rank, 0, lo[1], 0),
# CHECK: // stage Qh: Qh = heads(R), a copy: one head, a block of tokens
# CHECK: const mkd_box s = mkd_read_box(rank, t, 0);
# CHECK: mkd_ew1(mkd_ident(), (const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_R, X, s.rank, 0, s.lo[1], s.lo[2]), X.st[1],
# CHECK: // stage M: Z = matmul(X, Wm)
# CHECK-SAME: then gelu_tanh in the epilogue
# CHECK: mkd_gelu_tanh()
pipeline ops {
  param T = 64, H = 4, D = 32
  in  X  : bf16[T, H * D]
  in  W  : bf16[H * D]
  in  B  : bf16[H * D]
  in  Q  : bf16[T, H * D] split(1)
  in  Cs : f32[T, D]
  in  Sn : f32[T, D]
  in  Wm : bf16[H * D, H * D]
  out Y  : bf16[T, H * D]
  out G  : bf16[T, H * D]
  out Qh : bf16[H, T, D] split(0)
  out Z  : bf16[T, H * D]
  Y  = layernorm(X, W, B)
  G  = gelu_tanh(X)
  R  = rope(Q, Cs, Sn)
  Qh = heads(R, H)
  stage M : compute M = matmul(X, Wm)
  Z  = gelu_tanh(M)
}
