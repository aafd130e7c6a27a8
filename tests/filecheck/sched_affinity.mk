# The list schedule's CTA for a task (compiler/sched.c affine_cta): of the
# CTAs free by the time it may start, one whose last task is its producer.
#   AFF  split-KV decode attention (samples/decode_attention.mk), 32
#        heads of one query, 4 ranges each: head h's merge follows one of
#        its own ranges (CTA 4h runs range 0 of head h, then head h's
#        merge), the 4 CTAs past the ranges idle (no list after CTA 127);
#        the prediction as without it
#   OFF  MK_SCHED_AFFINITY=0: the CTA that frees first, lowest first: the
#        4 idle CTAs merge heads 0-3 and CTA 0 merges head 4 after its
#        range of head 0 (it waited for that range: 0.6-2.9 us on an H100)
#   GATE the decode MLP: up tile j on the CTA of gate tile j, whose output
#        its epilogue multiplies by
#
# RUN: %mkc --emit=schedule -D T=1 samples/decode_attention.mk | FileCheck %s --check-prefix=AFF
# RUN: env MK_SCHED_AFFINITY=0 %mkc --emit=schedule -D T=1 samples/decode_attention.mk | FileCheck %s --check-prefix=OFF
# RUN: %mkc --emit=schedule -D T=1 samples/decode_mlp.mk | FileCheck %s --check-prefix=GATE
#
# AFF: predicted 28.3 us
# AFF: CTA 0 (compute)
# AFF-NEXT: attnpart O {{.*}}K@0[0:1, 0:1024, 0:128]
# AFF-NEXT: attnsum O {{ *}}O@0[0:1, 0:1, 0:128]
# AFF: CTA 4 (compute)
# AFF-NEXT: attnpart O {{.*}}K@0[1:2, 0:1024, 0:128]
# AFF-NEXT: attnsum O {{ *}}O@0[1:2, 0:1, 0:128]
# AFF: CTA 127 (compute)
# AFF-NEXT: attnpart O {{.*}}K@0[31:32, 3072:4096, 0:128]
# AFF-NOT: CTA
# OFF: predicted 28.3 us
# OFF: CTA 0 (compute)
# OFF-NEXT: attnpart O {{.*}}K@0[0:1, 0:1024, 0:128]
# OFF-NEXT: attnsum O {{ *}}O@0[4:5, 0:1, 0:128]
# OFF: CTA 128 (compute)
# OFF-NEXT: attnsum O {{ *}}O@0[0:1, 0:1, 0:128]
# GATE: matmul G {{ *}}S@0[0:1, 0:128] <-
# GATE-NEXT: matmul U {{ *}}A@0[0:1, 0:128] <-
