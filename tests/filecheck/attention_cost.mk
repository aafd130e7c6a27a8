# What an attention tile costs (docs/costmodel.md): its arithmetic, per
# flop of the keys its rows see, at its tile's measured rate
# (`cost_attn_eff`: `attn_eff` for the Hopper tile at D >= 128,
# `attn_k64_eff` for it at D = 128 with 64 keys a stage, `attn_d64_eff` at
# D = 64, `attn_mma_eff` for the mma.sync tile), and K and V from device
# memory once for the head's query tiles (the L2 serves the rest: ncu saw
# 85% L2 hits and device memory 4% busy on 8 causal heads of 16384 keys).
# On samples/ring_attention_causal.mk (8 heads of 32768 keys, D = 128):
#   CAUSAL  tiles of late queries cost more: the longest tile over 30 times
#           the shortest (256 times the keys, less the fixed cost of a
#           tile; when every tile streamed all of its head's K and V from
#           device memory they all cost the same), and the list
#           schedule balances the CTAs within 2% of the last one's end
#           (dealt round-robin the same tiles were 6% apart)
#   FLAT    without the mask (samples/ring_attention.mk) every tile costs
#           the same
#   DEV     a device file's attn_eff: half the rate, the causal prediction
#           about twice
#   SERIAL  the llama layer's attention (beside the matmul engine: 64 keys
#           a stage) costs by attn_k64_eff: the same device file leaves its
#           prediction as it was, halving attn_k64_eff does not
#   BAD     the keys are checked as every other (a positive number)
#
# RUN: %mkc --emit=json samples/ring_attention_causal.mk > %t.json
# RUN: python3 tests/tools/check_schedule.py -q %t.json
# RUN: python3 -c "import json,sys; T=[t for t in json.load(open(sys.argv[1]))['tasks'] if t['kind']=='attn']; d=[t['predicted_us'][1]-t['predicted_us'][0] for t in T]; e={}; [e.__setitem__(t['cta'], max(e.get(t['cta'], 0), t['predicted_us'][1])) for t in T]; print('CAUSAL', len(T), max(d) > 30 * min(d), min(e.values()) > 0.98 * max(e.values()))" %t.json | FileCheck %s --check-prefix=CAUSAL
# RUN: %mkc --emit=json samples/ring_attention.mk > %t.flat.json
# RUN: python3 -c "import json,sys; T=[t for t in json.load(open(sys.argv[1]))['tasks'] if t['kind']=='attn']; d=[t['predicted_us'][1]-t['predicted_us'][0] for t in T]; print('FLAT', len(T), max(d) - min(d) < 1e-6)" %t.flat.json | FileCheck %s --check-prefix=FLAT
# RUN: printf 'attn_eff = 0.38\n' > %t.dev
# RUN: %mkc --emit=schedule samples/ring_attention_causal.mk > %t.slow.txt
# RUN: %mkc --emit=schedule --device=%t.dev samples/ring_attention_causal.mk > %t.fast.txt
# RUN: python3 -c "import re,sys; a, b = (float(re.search(r'predicted ([0-9.]+) us', open(f).read()).group(1)) for f in sys.argv[1:]); print('DEV', 1.7 < b / a < 2.1)" %t.slow.txt %t.fast.txt | FileCheck %s --check-prefix=DEV
# RUN: %mkc --emit=schedule samples/llama_layer.mk > %t.l0.txt
# RUN: %mkc --emit=schedule --device=%t.dev samples/llama_layer.mk > %t.l1.txt
# RUN: printf 'attn_k64_eff = 0.255\n' > %t.dev2
# RUN: %mkc --emit=schedule --device=%t.dev2 samples/llama_layer.mk > %t.l2.txt
# RUN: python3 -c "import re,sys; a, b, c = (float(re.search(r'predicted ([0-9.]+) us', open(f).read()).group(1)) for f in sys.argv[1:]); print('SERIAL', a == b, c > 1.02 * a)" %t.l0.txt %t.l1.txt %t.l2.txt | FileCheck %s --check-prefix=SERIAL
# RUN: printf 'attn_eff = 0\n' > %t.bad
# RUN: ! %mkc --emit=plan --device=%t.bad samples/ring_attention.mk 2> %t.err
# RUN: FileCheck %s --check-prefix=BAD < %t.err
#
# CAUSAL: CAUSAL 2048 True True
# FLAT: FLAT 256 True
# DEV: DEV True
# SERIAL: SERIAL True True
# BAD: .bad:1: bad value '0' for attn_eff (a positive number)
