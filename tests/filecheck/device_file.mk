# Cost-model constants from a file (`mkc --device=FILE`, docs/costmodel.md),
# on samples/decode_mlp.mk at T = 1: keys not in the file keep their H200
# defaults; a bad file stops mkc with FILE:LINE and exit status 2.
#   H100   tools/devices/h100.txt (slower device memory): the weights
#          stream longer than on the H200 defaults
#   H200   the defaults
#   BAD    an unknown key, and a value that is not a positive number
#
# RUN: %mkc --emit=schedule --device=tools/devices/h100.txt samples/decode_mlp.mk -D T=1 | FileCheck %s --check-prefix=H100
# RUN: %mkc --emit=schedule samples/decode_mlp.mk -D T=1 | FileCheck %s --check-prefix=H200
# RUN: printf 'mem_gbps = 3000\nwarp_size = 32\n' > %t.bad
# RUN: ! %mkc --emit=schedule --device=%t.bad samples/decode_mlp.mk -D T=1 2> %t.err
# RUN: FileCheck %s --check-prefix=BAD < %t.err
# RUN: printf '# a comment\n\nmem_gbps = -1\n' > %t.neg
# RUN: ! %mkc --emit=schedule --device=%t.neg samples/decode_mlp.mk -D T=1 2> %t.err2
# RUN: FileCheck %s --check-prefix=NEG < %t.err2
#
# H100: predicted {{[0-9.]+}} us; floor 130.0 us
# H200: predicted {{[0-9.]+}} us; floor 94.5 us
# BAD: mkc: {{.*}}.bad:2: unknown key 'warp_size'
# NEG: mkc: {{.*}}.neg:3: bad value '-1' for mem_gbps
