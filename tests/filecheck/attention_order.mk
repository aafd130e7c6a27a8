# The task order of attention over several heads (compiler/plan.c,
# attn_order): every query tile reads its head's K and V, so the tiles go
# group of heads by group of heads, a group's K and V within half the L2
# (`l2_bytes`, docs/costmodel.md), longest (causal) tiles first in a group.
#   PLAN  8 heads of 32768 keys at D = 128 (16 MB of K and V a head): one
#         head at a time on the H200 defaults (60 MB of L2)
#   ORDER the first CTAs take head 0's last (longest) query tiles, the
#         132nd CTA still head 0
#   CACHE a device with 200 MB of L2: groups of 6 heads would leave 6 + 2,
#         so two groups of 4
#   OFF   MK_NO_HGROUP=1 (the A/B switch): tile by tile over the heads, so
#         CTA 1 takes head 1's last tile
#   FITS  8 heads of 4096 keys (2 MB a head) fit together: no grouping
#   SPLIT split-KV decode ranges read disjoint keys: no grouping
#
# RUN: %mkc --emit=plan samples/ring_attention_causal.mk | FileCheck %s --check-prefix=PLAN
# RUN: %mkc --emit=schedule samples/ring_attention_causal.mk | FileCheck %s --check-prefix=ORDER
# RUN: printf 'l2_bytes = 209715200\n' > %t.dev
# RUN: %mkc --emit=plan --device=%t.dev samples/ring_attention_causal.mk | FileCheck %s --check-prefix=CACHE
# RUN: env MK_NO_HGROUP=1 %mkc --emit=plan samples/ring_attention_causal.mk | FileCheck %s --check-prefix=OFF-PLAN
# RUN: env MK_NO_HGROUP=1 %mkc --emit=schedule samples/ring_attention_causal.mk | FileCheck %s --check-prefix=OFF
# RUN: %mkc --emit=plan -D S=4096 samples/ring_attention_causal.mk | FileCheck %s --check-prefix=FITS
# RUN: %mkc --emit=plan -D T=1 samples/decode_attention.mk | FileCheck %s --check-prefix=SPLIT
#
# PLAN: attention {{.*}}tensor maps 0-2, tasks 1 head at a time;
#
# ORDER:      CTA 0 (compute)
# ORDER-NEXT: 0 t0 {{.*}} attn O O@0[0:1, 32640:32768, 0:128]
# ORDER:      CTA 1 (compute)
# ORDER-NEXT: 0 t{{[0-9]+}} {{.*}} attn O O@0[0:1, 32512:32640, 0:128]
# ORDER:      CTA 131 (compute)
# ORDER-NEXT: 0 t{{[0-9]+}} {{.*}} attn O O@0[0:1, 15872:16000, 0:128]
#
# CACHE: attention {{.*}}, tasks 4 heads at a time;
#
# OFF-PLAN: attention {{.*}}tensor maps 0-2; smem
# OFF:      CTA 1 (compute)
# OFF-NEXT: 0 t{{[0-9]+}} {{.*}} attn O O@0[1:2, 32640:32768, 0:128]
#
# FITS: attention {{.*}}tensor maps 0-2; smem
# SPLIT: attention {{.*}}split-KV 4 x 1024 keys into O__kvsplit; smem
