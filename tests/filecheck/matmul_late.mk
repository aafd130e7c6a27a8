# Matmul tiles that wait per operand (plan `late`, docs/gemm.md): one tile a
# task that always runs the Hopper engine waits for its flags itself -- B's
# (the weights: none) before its first loads, A's before A's loads, the
# epilogue operand's just before the epilogue -- so a tile streams weights
# while the rmsnorm before it, or the gate of silu(G) * U, is still being
# written.  The plan does it where another rank delivers A or the epilogue
# operand (B's loads then run under the transfer); MK_LATE=1 makes every
# such tile do it, as the checks below on samples/decode_mlp.mk at T = 4,
# D = 512, F = 1024 (computed operands: measured no faster on the H200).
#   DEFAULT  without MK_LATE no tile of decode_mlp waits per operand; the
#            matmul of ag_gemm does at 2 ranks (A gathered), not at 1
#   PLAN     every matmul of the block waits per operand
#   CU       the stage waits per read on sm_90a only (MKD_WG_LATE: the
#            mma.sync tile keeps the kernel loop's waits), and the engine
#            gets A's, B's and the epilogue operand's tensors
#   JSON     U's tiles list their waits as late_waits (N's flag, G's tile)
#   TIME     the schedule lets some U tile start before the G tile its
#            epilogue reads has ended (and the checker accepts it)
#   OFF      MK_NO_LATE=1: no late waits, every flag before the start
#
# RUN: %mkc --emit=plan samples/decode_mlp.mk -D T=4 -D D=512 -D F=1024 | FileCheck %s --check-prefix=DEFAULT --implicit-check-not='waits per operand'
# RUN: %mkc --emit=plan -D gpus=2 samples/ag_gemm.mk | FileCheck %s --check-prefix=AG2
# RUN: %mkc --emit=plan -D gpus=1 samples/ag_gemm.mk | FileCheck %s --check-prefix=AG1 --implicit-check-not='waits per operand'
# RUN: env MK_LATE=1 %mkc --emit=plan samples/decode_mlp.mk -D T=4 -D D=512 -D F=1024 | FileCheck %s --check-prefix=PLAN
# RUN: env MK_LATE=1 %mkc --emit=cu samples/decode_mlp.mk -D T=4 -D D=512 -D F=1024 | FileCheck %s --check-prefix=CU
# RUN: env MK_LATE=1 %mkc --emit=ptx samples/decode_mlp.mk -D T=4 -D D=512 -D F=1024 -o %t.ptx
# RUN: env MK_LATE=1 %mkc --emit=json samples/decode_mlp.mk -D T=4 -D D=512 -D F=1024 > %t.json
# RUN: FileCheck %s --check-prefix=JSON < %t.json
# RUN: python3 tests/tools/check_schedule.py -q %t.json
# RUN: python3 -c "import json,sys; d=json.load(open(sys.argv[1])); T=d['tasks']; end={}; [end.setdefault(f, []).append(t['predicted_us'][1]) for t in T for f in t['signals']]; sys.exit(0 if any(t['stage']=='U' and any(t['predicted_us'][0] < max(end[f]) for f in t.get('late_waits', [])) for t in T) else 1)" %t.json
# RUN: env MK_NO_LATE=1 %mkc --emit=json samples/decode_mlp.mk -D T=4 -D D=512 -D F=1024 | FileCheck %s --check-prefix=OFF --implicit-check-not=late_waits
# RUN: env MK_NO_LATE=1 %mkc --emit=cu samples/decode_mlp.mk -D T=4 -D D=512 -D F=1024 | FileCheck %s --check-prefix=OFFCU
#
# DEFAULT: G matmul
# AG2: C matmul {{.*}}, waits per operand
# AG1: C matmul
# PLAN: G matmul {{.*}}, waits per operand
# PLAN: U matmul {{.*}}, waits per operand{{.*}}, mul S in the epilogue
# PLAN: M matmul {{.*}}, waits per operand
# CU: mkd_mm_waits<false>{p, rank, cta, i, epoch, T_N, T_Wg, -1},
# CU: mkd_mm_waits<true>{p, rank, cta, i, epoch, T_N, T_Wu, T_S},
# CU: MK_PROGRESSIVE[] = {{{.*}}MKD_WG_LATE
# JSON: "stage": "U"{{.*}}"late_waits": [
# OFF: "tasks": [
# OFFCU: mkd_wg_waited(),
