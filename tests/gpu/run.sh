#!/bin/sh
# tests/gpu/run.sh BUILD - the GPU checks (make gpu-test), on a machine with
# an sm_80+ GPU (the H200 machine); MK_GPU_ONLY=PATTERN runs the checks whose
# names match (MK_GPU_FROM=NAME: from the check NAME on, to resume a run cut
# short); MK_GPU_PART=K/N runs the K-th of N parts (every N-th check,
# from the K-th: the whole takes more than 9 minutes on an H100, and two
# parts each took more than 275 s there in the twenty-ninth session: run
# three under the device's 10-minute bound on one command).  Each check runs a command that must
# exit 0 (and, for mkrun, print "match"); the last line is "N passed, N failed".
set -u
B=${1:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
MKRUN="$B/mkrun"
pass=0
fail=0
failed=""
log=${MK_GPU_LOG:-/tmp/mk-gpu-test.log}
: >"$log"
# libfabric carried with the build (tools/carry-libfabric.sh) where the image
# has none; RDMA between the "nodes" of one machine goes over loopback
if [ -d "$top/.devlibs" ]; then
	LD_LIBRARY_PATH=$top/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi
FI_TCP_IFACE=${FI_TCP_IFACE:-lo}
export FI_TCP_IFACE

check() {  # name, command...
	cname=$1
	shift
	# MK_GPU_ONLY=PATTERN runs only the checks whose names match (grep -E)
	if [ -n "${MK_GPU_ONLY:-}" ] && ! echo "$cname" | grep -qE "$MK_GPU_ONLY"; then return; fi
	nth=$((nth + 1))
	if [ -n "$part_n" ] && [ $(((nth - 1) % part_n + 1)) -ne "$part_k" ]; then return; fi
	# MK_GPU_FROM=NAME: resume a run cut short, from the check NAME on
	if [ -n "${MK_GPU_FROM:-}" ] && [ -z "$from_seen" ]; then
		[ "$cname" = "$MK_GPU_FROM" ] || return
		from_seen=1
	fi
	if [ -n "$prewarm" ]; then  # the first pass: list the kernels to compile
		case "$1" in *mkrun) ;; *) return ;; esac
		case " $* " in *" -n "*) return ;; esac  # ranks of a job compile their own
		printf 'MK_ATTN_ENGINE=%s %s\n' "${MK_ATTN_ENGINE:-}" "$*" >>"$prewarm"
		return
	fi
	printf '== %s: %s\n' "$cname" "$*" >>"$log"
	if out=$("$@" 2>&1); then
		cmd=  # the program run: the first word past `env NAME=VALUE ...`
		for w in "$@"; do
			case "$w" in env|*=*) ;; *) cmd=$w; break ;; esac
		done
		case "$cmd" in
		*mkrun) echo "$out" | grep -q ': match' || { fail_it "$cname" "$out"; return; } ;;
		esac
		pass=$((pass + 1))
		echo "$out" >>"$log"
		printf 'ok   %s  %s\n' "$cname" "$(echo "$out" | tail -1 | cut -c1-110)"
	else
		fail_it "$cname" "$out"
	fi
}
fail_it() {
	fail=$((fail + 1))
	failed="$failed $1"
	echo "$2" >>"$log"
	printf 'FAIL %s\n' "$1"
	echo "$2" | tail -15 | sed 's/^/     /'
}

if ! "$MKRUN" --cpu samples/chain.mk --quiet >/dev/null 2>&1; then
	echo "gpu-test: build first (make)"; exit 2
fi
probe=$("$MKRUN" samples/chain.mk --iters 0 --quiet 2>&1)
case "$probe" in *"no GPU here"*) echo "gpu-test: skipped: $probe"; exit 0 ;; esac

checks() {
# every sample the compiler supports, at 1, 2, 4 and 8 virtual ranks
while read -r name ranks args; do
	for r in $(echo "$ranks" | tr , ' '); do
		# shellcheck disable=SC2086
		check "$name.r$r" "$MKRUN" "samples/$name.mk" --ranks "$r" $args --iters 5 --quiet
	done
done <<EOF
ag_gemm 1,2,4,8 -D M=1024 -D N=256 -D K=512
ag_gemm_explicit 1 -D M=1024 -D N=256 -D K=512
gemm_rs 1,2,4,8 -D M=1024 -D N=512 -D K=1024
gemm_ar 1,2,4,8 -D M=1024 -D N=512 -D K=1024
tp_mlp 1,2,4,8 -D S=1024 -D H=512
ring_attention 1,2,4,8 -D S=1024
ring_attention_causal 1,2,4,8 -D S=512 -D NH=2
chain 1,2,4,8
mlp_chain 1,2,4,8
moe_dispatch_gemm 1,2,4,8 -D T=1024 -D E=32 -D H=512 -D F=256
llama_layer 1,2,4,8 -D T=256 -D E=512 -D H=8 -D D=64 -D F=1024
EOF
# the layer's ops on their own (layernorm, gelu_tanh, rope on split heads)
for r in 1 2 4; do
	check "layer_ops.r$r" "$MKRUN" tests/gpu/layer_ops.mk --ranks "$r" --iters 3 --quiet
done
# the Llama layer against PyTorch (eager, CUDA graph), same inputs (.npy):
# Llama-3-8B sizes at 1 rank, and tensor-parallel over 2 virtual ranks
check "llama_layer.torch.r1" python3 tests/gpu/llama_layer.py --mkrun "$MKRUN"
check "llama_layer.torch.r2" python3 tests/gpu/llama_layer.py --mkrun "$MKRUN" -T 1024 --ranks 2
# MK_WG_BN=128 (128-column engine tiles where the plan takes 256, A/B)
for r in 1 2; do
	check "llama_layer.bn128.r$r" env MK_WG_BN=128 "$MKRUN" samples/llama_layer.mk --ranks $r -D T=256 \
		-D E=512 -D H=8 -D D=64 -D F=1024 --iters 3 --quiet
done
# MoE routing data (tests/tools/moe_inputs.py): skewed routing with empty
# experts checks against the CPU reference; a bucket over its capacity and
# an expert id out of range must fail the run with the data error named
moe_sz="-D T=1024 -D E=32 -D H=512 -D F=256"
moe_dir=$(mktemp -d)
for m in skew over bad; do
	python3 tests/tools/moe_inputs.py "$moe_dir/$m" "$m" 4 1024 32 512 256 8 >/dev/null
done
# shellcheck disable=SC2086
check "moe.skew.r4" "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 4 $moe_sz -D C=1024 \
	--inputs "$moe_dir/skew" --iters 3 --quiet
moe_bad() {  # mode, expected text, more mkrun arguments
	m=$1 want=$2
	shift 2
	# shellcheck disable=SC2086
	out=$("$MKRUN" samples/moe_dispatch_gemm.mk --ranks 4 $moe_sz --no-check --inputs "$moe_dir/$m" "$@" 2>&1)
	rc=$?
	echo "$out" | tail -4
	[ "$rc" != 0 ] && echo "$out" | grep -q "$want"
}
check "moe.over.r4" moe_bad over "expert 0 receives 8192 tokens, over its capacity 512"
check "moe.bad.r4" moe_bad bad "routes to 32, not an expert in \\[0, 32)"
# between nodes (virtual ranks: the RDMA writes become stores): rows packed
# per node and sent to the same GPU there, sums sent back
for mesh in 2x2 4x1; do
	# shellcheck disable=SC2086
	check "moe.$mesh.r4" "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 4 -D nodes="${mesh%x*}" \
		-D gpus="${mesh#*x}" $moe_sz --iters 3 --quiet
done
# shellcheck disable=SC2086
check "moe.2x2.skew.r4" "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 4 -D nodes=2 -D gpus=2 $moe_sz -D C=1024 \
	--inputs "$moe_dir/skew" --iters 3 --quiet
check "moe.2x2.over.r4" moe_bad over "expert 0 receives 8192 tokens, over its capacity 512" -D nodes=2 -D gpus=2
check "moe.2x2.bad.r4" moe_bad bad "'idx' on rank 3: token 3 (of the rank's piece) choice 0 routes to 32" \
	-D nodes=2 -D gpus=2
# shellcheck disable=SC2086
check "moe.2x8.r16" "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 16 -D nodes=2 -D gpus=8 $moe_sz --iters 3 --quiet
# attention tiles: ragged query tiles and key chunks (1000 = 7 x 128 + 104
# rows, blocks of 500 and 250 keys), head dims 64 and 256 (the tensor-core
# tile's two chunk widths), fp32 inputs (the CUDA-core tile)
for r in 1 2 4; do
	check "ring_attention_causal.ragged.r$r" "$MKRUN" samples/ring_attention_causal.mk --ranks "$r" \
		-D S=1000 -D NH=2 --iters 3 --quiet
done
check "ring_attention.d64.r2" "$MKRUN" samples/ring_attention.mk --ranks 2 -D S=1000 -D D=64 --iters 3 --quiet
check "ring_attention.d256.r2" "$MKRUN" samples/ring_attention.mk --ranks 2 -D S=1024 -D D=256 --iters 3 --quiet
attn_f32=$(mktemp -d)/ring_attention_f32.mk
sed -e 's/bf16\[/f32[/g' -e 's/pipeline ring_attention_causal/pipeline ring_attention_f32/' \
	samples/ring_attention_causal.mk >"$attn_f32"
check "ring_attention.f32.r2" "$MKRUN" "$attn_f32" --ranks 2 -D S=512 -D NH=2 --iters 3 --quiet
# the Hopper attention tile (mkd/attn_wg.cuh, sm_90a) against the CPU
# reference, and the mma.sync tile it replaces (MK_ATTN_ENGINE=mma, the
# A/B switch): D = 64, 128 and 256, causal and not, ragged S (1000: a
# query tile of 104 rows, blocks of 500 / 250 / 125 keys, ragged 64-key
# chunks), 1, 2, 4 and 8 virtual ranks (ring attention block by block);
# heads split over ranks; split-KV decode (end_part + merge).  The plan
# must name the engine.  (MK_ATTN_ENGINE=wgmma: the plan's own tile, the
# Hopper one at every D.)  Then the tile's other shapes (the A/B switches
# MK_ATTN_KEYS=64, MK_ATTN_OVERLAP=0, MK_ATTN_ROTATE=0) at D = 64 and 128,
# ragged.
for eng in wgmma mma; do
	export MK_ATTN_ENGINE=$eng
	plan=$("$B/mkc" --emit=plan -D gpus=2 samples/ring_attention.mk)
	if [ "$eng" = mma ]; then
		check "attn.$eng.plan" sh -c '! printf "%s\n" "$1" | grep -q "TMA + wgmma"' sh "$plan"
	else
		check "attn.$eng.plan" sh -c 'printf "%s\n" "$1" | grep -q "TMA + wgmma"' sh "$plan"
	fi
	for d in 64 128 256; do
		for S in 1024 1000; do
			for r in 1 2 4 8; do
				check "attn.$eng.ring.d$d.s$S.r$r" "$MKRUN" samples/ring_attention.mk --ranks "$r" \
					-D S=$S -D D=$d --iters 3 --quiet
				check "attn.$eng.causal.d$d.s$S.r$r" "$MKRUN" samples/ring_attention_causal.mk --ranks "$r" \
					-D S=$S -D D=$d -D NH=2 --iters 3 --quiet
			done
		done
		[ $d -le 128 ] || continue
		check "attn.$eng.decode.d$d" "$MKRUN" samples/decode_attention.mk -D D=$d -D H=4 -D S=4000 --iters 3 --quiet
		check "attn.$eng.decode.t200.d$d" "$MKRUN" samples/decode_attention.mk -D D=$d -D H=4 -D T=200 -D S=1000 --iters 3 --quiet
	done
done
unset MK_ATTN_ENGINE
# several tiles a CTA (8 ranks: 16 CTAs each, 32 causal tiles): the tile's
# ring and counts start afresh each tile
check "attn.wgmma.tiles.r8" "$MKRUN" samples/ring_attention_causal.mk --ranks 8 -D S=4096 -D NH=8 \
	--iters 3 --quiet
for ab in MK_ATTN_KEYS=64 MK_ATTN_OVERLAP=0 MK_ATTN_ROTATE=0; do
	for d in 64 128; do
		for r in 1 2; do
			check "attn.$ab.ring.d$d.r$r" env "$ab" "$MKRUN" samples/ring_attention.mk --ranks "$r" \
				-D S=1000 -D D=$d --iters 3 --quiet
			check "attn.$ab.causal.d$d.r$r" env "$ab" "$MKRUN" samples/ring_attention_causal.mk --ranks "$r" \
				-D S=1000 -D D=$d -D NH=2 --iters 3 --quiet
		done
	done
done
unset MK_ATTN_ENGINE
# matmuls bounded to fewer tasks than tiles walk boxes of tiles: the MoE
# expert GEMMs (with skewed routing: empty experts, zero tiles inside a
# walk) and a ragged dense GEMM
moe_walk=$(mktemp -d)/moe_walk.mk
sed -e 's/^  He = matmul(Xe, W1).*$/  He = matmul(Xe, W1)  tasks 40/' \
	-e 's/^  Ye = matmul(Ae, W2).*$/  Ye = matmul(Ae, W2)  tasks 40/' \
	-e 's/pipeline moe_dispatch_gemm/pipeline moe_walk/' samples/moe_dispatch_gemm.mk >"$moe_walk"
for r in 1 2; do
	# shellcheck disable=SC2086
	check "moe.walk.r$r" "$MKRUN" "$moe_walk" --ranks "$r" $moe_sz --iters 3 --quiet
done
# shellcheck disable=SC2086
check "moe.walk.skew.r4" "$MKRUN" "$moe_walk" --ranks 4 $moe_sz -D C=1024 --inputs "$moe_dir/skew" \
	--iters 3 --quiet
# Ye walking 128 x 128 tiles beside He's 128 x 256 engine, which does not
# walk (plan.c walks_wide: only a walking matmul narrows its tiles)
moe_walk_ye=$(mktemp -d)/moe_walk_ye.mk
sed -e 's/^  Ye = matmul(Ae, W2).*$/  Ye = matmul(Ae, W2)  tasks 40/' \
	-e 's/pipeline moe_dispatch_gemm/pipeline moe_walk_ye/' samples/moe_dispatch_gemm.mk >"$moe_walk_ye"
# shellcheck disable=SC2086
check "moe.walk_ye.skew.r4" "$MKRUN" "$moe_walk_ye" --ranks 4 $moe_sz -D C=1024 --inputs "$moe_dir/skew" \
	--iters 3 --quiet
# shellcheck disable=SC2086
check "moe.walk_ye.r1" "$MKRUN" "$moe_walk_ye" $moe_sz --iters 3 --quiet
# the expert GEMMs' tiles where the list schedule puts them, not taken at
# run time (MK_NO_POOL=1; the pools are the default, every row above)
for r in 1 4; do
	# shellcheck disable=SC2086
	check "moe.nopool.r$r" env MK_NO_POOL=1 "$MKRUN" samples/moe_dispatch_gemm.mk --ranks "$r" $moe_sz \
		--iters 3 --quiet
done
# shellcheck disable=SC2086
check "moe.nopool.skew.r4" env MK_NO_POOL=1 "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 4 $moe_sz \
	-D C=1024 --inputs "$moe_dir/skew" --iters 3 --quiet
# rows past the tokens zeroed as the CPU reference holds them (the plan
# leaves them unwritten where nothing reads them: every row above)
# shellcheck disable=SC2086
check "moe.MK_ZERO_PAST=1.skew.r4" env MK_ZERO_PAST=1 "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 4 \
	$moe_sz -D C=1024 --inputs "$moe_dir/skew" --iters 3 --quiet
# the pools' opt-in (docs/gemm.md, Pools): empty tasks signalled, not run
# (MK_POOL_SKIP=1)
# shellcheck disable=SC2086
check "moe.MK_POOL_SKIP=1.skew.r4" env MK_POOL_SKIP=1 "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 4 \
	$moe_sz -D C=1024 --inputs "$moe_dir/skew" --iters 3 --quiet
# the pools' tiles in pairs on 2-CTA clusters (MK_CLUSTER=2, docs/gemm.md,
# clusters): B multicast, a tile past the tokens kept for its pair, the
# tickets taken by both CTAs; virtual ranks, skewed routing (empty
# experts, full ones), a zeroed bucket past the tokens, K = 7168
# an expert's last row tile with 64, 1, 127 or 126 tokens, or 65 over two
# (moe_inputs.py edge): the bucket tiles load A by 64-row halves, the
# second only where tokens reach it (plan.c a_box), or whole with
# MK_A_HALVES=0; alone and in clusters
for w in 1 4; do
	python3 tests/tools/moe_inputs.py "$moe_dir/edge$w" edge "$w" 1024 32 512 256 8 >/dev/null
done
for r in 1 4; do
	# shellcheck disable=SC2086
	check "moe.edge.r$r" "$MKRUN" samples/moe_dispatch_gemm.mk --ranks "$r" $moe_sz -D C=1024 \
		--inputs "$moe_dir/edge$r" --iters 3 --quiet
done
# shellcheck disable=SC2086
check "moe.edge.MK_A_HALVES=0.r4" env MK_A_HALVES=0 "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 4 \
	$moe_sz -D C=1024 --inputs "$moe_dir/edge4" --iters 3 --quiet
# shellcheck disable=SC2086
check "moe.edge.MK_CLUSTER=2.r1" env MK_CLUSTER=2 "$MKRUN" samples/moe_dispatch_gemm.mk $moe_sz \
	-D C=1024 --inputs "$moe_dir/edge1" --iters 3 --quiet
# (virtual ranks: 132 / R CTAs a rank, an even number at R = 1, 2 only;
# at 4 the rows run without clusters, as the plan says)
for r in 1 2; do
	# shellcheck disable=SC2086
	check "moe.MK_CLUSTER=2.r$r" env MK_CLUSTER=2 "$MKRUN" samples/moe_dispatch_gemm.mk --ranks "$r" \
		$moe_sz --iters 3 --quiet
done
python3 tests/tools/moe_inputs.py "$moe_dir/skew2" skew 2 1024 32 512 256 8 >/dev/null
# shellcheck disable=SC2086
check "moe.MK_CLUSTER=2.skew.r2" env MK_CLUSTER=2 "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 2 \
	$moe_sz -D C=1024 --inputs "$moe_dir/skew2" --iters 3 --quiet
# shellcheck disable=SC2086
check "moe.MK_CLUSTER=2.MK_ZERO_PAST=1.skew.r2" env MK_CLUSTER=2 MK_ZERO_PAST=1 "$MKRUN" \
	samples/moe_dispatch_gemm.mk --ranks 2 $moe_sz -D C=1024 --inputs "$moe_dir/skew2" --iters 3 --quiet
check "moe.MK_CLUSTER=2.k7168.r1" env MK_CLUSTER=2 "$MKRUN" samples/moe_dispatch_gemm.mk -D T=1024 \
	-D E=32 --iters 2 --quiet
# He declared an output: its rows past the tokens hold zeros, so the
# dispatch zeroes Xe's (He's partly filled tiles are made of them)
moe_out=$(mktemp -d)/moe_out.mk
sed -e 's/^  He = matmul(Xe, W1).*$/  out He : bf16[E, C, F] split(0)\n  He = matmul(Xe, W1)/' \
	samples/moe_dispatch_gemm.mk >"$moe_out"
# shellcheck disable=SC2086
check "moe.out_he.skew.r4" "$MKRUN" "$moe_out" --ranks 4 $moe_sz -D C=1024 --inputs "$moe_dir/skew" \
	--iters 3 --quiet
gemm_walk=$(mktemp -d)/gemm_walk.mk
sed -e 's/^  C = matmul(A, B)$/  C = matmul(A, B)  tasks 3/' -e 's/pipeline gemm/pipeline gemm_walk/' \
	samples/gemm.mk >"$gemm_walk"
check "gemm.walk" "$MKRUN" "$gemm_walk" -D M=1000 -D N=520 -D K=256 --iters 3 --quiet
# the matmul's tiles in pairs on 2-CTA clusters (MK_CLUSTER=2, sched.c
# static_pairs: the ring carried into the next pair): ragged rows (the
# last tile of 104), columns of 128 and of 64 past 256, waves of pairs,
# tasks that walk columns, 2 virtual ranks (66 CTAs each), f32 output
check "gemm.MK_CLUSTER=2.ragged" env MK_CLUSTER=2 "$MKRUN" samples/gemm.mk -D M=1000 -D N=520 \
	-D K=264 --iters 3 --quiet
check "gemm.MK_CLUSTER=2.waves" env MK_CLUSTER=2 "$MKRUN" samples/gemm.mk -D M=4096 -D N=4096 \
	-D K=1024 --iters 3 --quiet
gemm_walk16=$(mktemp -d)/gemm_walk16.mk
sed -e 's/^  C = matmul(A, B)$/  C = matmul(A, B)  tasks 16/' -e 's/pipeline gemm/pipeline gemm_walk16/' \
	samples/gemm.mk >"$gemm_walk16"
check "gemm.MK_CLUSTER=2.walk" env MK_CLUSTER=2 "$MKRUN" "$gemm_walk16" -D M=1024 -D N=1024 -D K=256 \
	--iters 3 --quiet
check "gemm.MK_CLUSTER=2.r2" env MK_CLUSTER=2 "$MKRUN" samples/gemm.mk --ranks 2 -D M=2048 \
	-D N=1024 -D K=512 --iters 3 --quiet
check "ag_gemm.ragged" "$MKRUN" samples/ag_gemm.mk --ranks 2 -D M=1000 -D N=264 -D K=264 --quiet
# the engine's epilogue from the registers (MK_WG_STAGED=0, the A/B of the
# staged default, docs/gemm.md Epilogue): whole tiles, ragged rows and
# columns (M = 1000, N = 520: a last tile of 8 columns), epilogue ops
# (tp_mlp's bias and gelu, the MoE's silu and mul, the layer's residual
# add), split-K partials (fp32), views
for r in 1 2; do
	check "gemm.MK_WG_STAGED=0.r$r" env MK_WG_STAGED=0 "$MKRUN" samples/gemm.mk --ranks "$r" \
		-D M=2048 -D N=1024 -D K=512 --iters 3 --quiet
	# shellcheck disable=SC2086
	check "moe.MK_WG_STAGED=0.r$r" env MK_WG_STAGED=0 "$MKRUN" samples/moe_dispatch_gemm.mk \
		--ranks "$r" $moe_sz --iters 3 --quiet
	check "tp_mlp.MK_WG_STAGED=0.r$r" env MK_WG_STAGED=0 "$MKRUN" samples/tp_mlp.mk --ranks "$r" \
		-D S=1024 -D H=512 --iters 3 --quiet
	check "llama_layer.MK_WG_STAGED=0.r$r" env MK_WG_STAGED=0 "$MKRUN" samples/llama_layer.mk \
		--ranks "$r" -D T=256 -D E=512 -D H=8 -D D=64 -D F=1024 --iters 3 --quiet
done
check "gemm.MK_WG_STAGED=0.ragged" env MK_WG_STAGED=0 "$MKRUN" samples/gemm.mk -D M=1000 -D N=520 \
	-D K=264 --iters 3 --quiet
check "gemm.MK_WG_STAGED=0.walk" env MK_WG_STAGED=0 "$MKRUN" "$gemm_walk" -D M=1000 -D N=520 \
	-D K=256 --iters 3 --quiet
check "decode_mlp.MK_WG_STAGED=0.t100.r2" env MK_WG_STAGED=0 "$MKRUN" samples/decode_mlp.mk \
	--ranks 2 -D T=100 --iters 3 --quiet
check "runs.views.MK_WG_STAGED=0" env MK_WG_STAGED=0 "$MKRUN" tests/runs/views.mk --iters 3 --quiet
# the staged epilogue stored by TMA, the default for a result nothing in
# the kernel reads (plan.c mm_tma_store; every row above whose last matmul
# qualifies runs it: tp_mlp's, mlp_chain's, the layer's, chain's, ag_gemm's,
# gemm_rs's and gemm_ar's at one rank): gemm alone at 1 and 2 ranks, a task
# that walks tiles, resident runs; and MK_WG_TMA=0, the staged stores
# there (A/B)
for r in 1 2; do
	check "gemm.tma.r$r" "$MKRUN" samples/gemm.mk --ranks "$r" -D M=2048 -D N=1024 -D K=512 \
		--iters 3 --quiet
	check "gemm.MK_WG_TMA=0.r$r" env MK_WG_TMA=0 "$MKRUN" samples/gemm.mk --ranks "$r" \
		-D M=2048 -D N=1024 -D K=512 --iters 3 --quiet
	check "tp_mlp.MK_WG_TMA=0.r$r" env MK_WG_TMA=0 "$MKRUN" samples/tp_mlp.mk --ranks "$r" \
		-D S=1024 -D H=512 --iters 3 --quiet
done
check "gemm.tma.walk" "$MKRUN" "$gemm_walk16" -D M=1024 -D N=1024 -D K=256 --iters 3 --quiet
check "chain.tma.resident100" "$MKRUN" samples/chain.mk --resident --iters 100 --quiet
check "llama_layer.MK_WG_TMA=0.r1" env MK_WG_TMA=0 "$MKRUN" samples/llama_layer.mk -D T=256 \
	-D E=512 -D H=8 -D D=64 -D F=1024 --iters 3 --quiet
# each run starting with its CTA's table rows kept in L2 (MK_PREFETCH=1, an
# opt-in: mkd/kernel.cuh, mkd_prefetch_tables): split-KV merges and split-K
# sums (flag waits), the MoE's pools, several ranks
for r in 1 2; do
	check "decode_attention.MK_PREFETCH=1.r$r" env MK_PREFETCH=1 "$MKRUN" samples/decode_attention.mk \
		--ranks "$r" -D T=3 -D H=8 -D S=1000 --iters 3 --quiet
	check "decode_mlp.MK_PREFETCH=1.t17.r$r" env MK_PREFETCH=1 "$MKRUN" samples/decode_mlp.mk \
		--ranks "$r" -D T=17 -D D=1024 -D F=2048 --iters 3 --quiet
	# shellcheck disable=SC2086
	check "moe.MK_PREFETCH=1.r$r" env MK_PREFETCH=1 "$MKRUN" samples/moe_dispatch_gemm.mk \
		--ranks "$r" $moe_sz --iters 3 --quiet
done
check "chain.MK_PREFETCH=1.resident100" env MK_PREFETCH=1 "$MKRUN" samples/chain.mk --resident \
	--iters 100 --quiet
# the decode plans (split-K matmuls, split-KV attention) as the cost model
# chooses them, at ragged token counts and 1, 2, 8 virtual ranks
for t in 1 3 17 100; do
	for r in 1 2 8; do
		check "decode_mlp.t$t.r$r" "$MKRUN" samples/decode_mlp.mk --ranks "$r" -D T="$t" -D D=1024 -D F=2048 \
			--iters 3 --quiet
	done
done
# rows of 8 KB: the rmsnorm's blocks of two rows (the last one ragged)
for t in 3 17; do
	for r in 1 2; do
		check "decode_mlp.rows2.t$t.r$r" "$MKRUN" samples/decode_mlp.mk --ranks "$r" -D T="$t" -D D=4096 \
			-D F=1024 --iters 3 --quiet
	done
done
for t in 1 3 17; do
	for r in 1 2 8; do
		check "decode_attention.t$t.r$r" "$MKRUN" samples/decode_attention.mk --ranks "$r" -D T="$t" -D H=8 \
			-D S=2048 -D D=128 --iters 3 --quiet
	done
done
# plans the hint forces: 3 pieces of a ragged K (1000 = 7 x 128 + 104
# columns; pieces of unequal length), split-KV over ragged keys at D = 64,
# and split-KV of a causal square attention (the pieces past a query's
# diagonal are empty)
dec_dir=$(mktemp -d)
sed -e 's/^  M = matmul(A, Wd)$/  M = matmul(A, Wd)  split 3/' \
	-e 's/^  G = matmul(N, Wg)$/  G = matmul(N, Wg)  split 5/' samples/decode_mlp.mk >"$dec_dir/mlp_split.mk"
check "decode_mlp.split3" "$MKRUN" "$dec_dir/mlp_split.mk" -D T=5 -D D=1000 -D F=1000 --iters 3 --quiet
# tile hints over fewer rows than the tile (rows pad up to 128): 64-wide
# gate and up tiles, ragged T, 1 and 2 ranks
sed -e 's/^  G = matmul(N, Wg)$/  G = matmul(N, Wg)  tile 128 x 64/' \
	-e 's/^  U = matmul(N, Wu)$/  U = matmul(N, Wu)  tile 128 x 64/' samples/decode_mlp.mk >"$dec_dir/mlp_tile.mk"
for r in 1 2; do
	check "decode_mlp.tile64.r$r" "$MKRUN" "$dec_dir/mlp_tile.mk" --ranks "$r" -D T=3 -D D=512 -D F=1000 \
		--iters 3 --quiet
done
# gate-up tiles (MK_GATEUP=1: one matmul computes silu(N Wg) * (N Wu) for
# 64 columns, the engine's warpgroups one weight each): ragged T, 1 and 2
# ranks, and the portable tile's two-tile path
for t in 1 3 17; do
	for r in 1 2; do
		check "decode_mlp.gateup.t$t.r$r" env MK_GATEUP=1 "$MKRUN" samples/decode_mlp.mk --ranks "$r" \
			-D T="$t" -D D=512 -D F=1000 --iters 3 --quiet
	done
done
check "decode_mlp.gateup.mma" env MK_GATEUP=1 MK_NO_WGMMA=1 "$MKRUN" samples/decode_mlp.mk -D T=5 \
	-D D=512 -D F=1000 --iters 3 --quiet
# the rmsnorm in the tiles that read it (MK_NORMFOLD=1: the gate and up
# tiles read X and normalise each stage themselves, compiler/expand.c
# fuse_norms): ragged T and K (D 1000: a last k block of 40), 1, 2 and 8
# ranks, T = 100 (128-row tiles: two rows a normalising thread), the
# portable tile, an rmsnorm without a weight, X's rows split over 2 ranks,
# tasks that walk several tiles (both engines), and the Llama layer at a decode size (its second rmsnorm's rows made in
# the kernel)
for t in 1 3 17 100; do
	for r in 1 2 8; do
		check "decode_mlp.normfold.t$t.r$r" env MK_NORMFOLD=1 "$MKRUN" samples/decode_mlp.mk --ranks "$r" \
			-D T="$t" -D D=1024 -D F=2048 --iters 3 --quiet
	done
done
check "decode_mlp.normfold.d1000" env MK_NORMFOLD=1 "$MKRUN" samples/decode_mlp.mk -D T=3 -D D=1000 \
	-D F=1000 --iters 3 --quiet
check "decode_mlp.normfold.mma" env MK_NORMFOLD=1 MK_NO_WGMMA=1 "$MKRUN" samples/decode_mlp.mk -D T=5 \
	-D D=1000 -D F=1000 --iters 3 --quiet
sed -e 's/^  N = rmsnorm(X, g)$/  N = rmsnorm(X)/' -e '/^  in  g  : bf16\[D\]$/d' samples/decode_mlp.mk \
	>"$dec_dir/mlp_now.mk"
for r in 1 2; do
	check "decode_mlp.normfold.noweight.r$r" env MK_NORMFOLD=1 "$MKRUN" "$dec_dir/mlp_now.mk" --ranks "$r" \
		-D T=3 -D D=512 -D F=1000 --iters 3 --quiet
done
sed -e 's/^  in  X  : bf16\[T, D\]$/  in  X  : bf16[T, D] split(0)/' \
	-e 's/^  out Y  : bf16\[T, D\]$/  out Y  : bf16[T, D] split(0)/' samples/decode_mlp.mk >"$dec_dir/mlp_rows.mk"
check "decode_mlp.normfold.rows.r2" env MK_NORMFOLD=1 "$MKRUN" "$dec_dir/mlp_rows.mk" --ranks 2 \
	-D T=6 -D D=512 -D F=1000 --iters 3 --quiet
sed -e 's/^  G = matmul(N, Wg)$/  G = matmul(N, Wg)  tasks 2/' samples/decode_mlp.mk >"$dec_dir/mlp_walk.mk"
check "decode_mlp.normfold.walk" env MK_NORMFOLD=1 "$MKRUN" "$dec_dir/mlp_walk.mk" -D T=3 -D D=512 \
	-D F=1000 --iters 3 --quiet
check "decode_mlp.normfold.walk.mma" env MK_NORMFOLD=1 MK_NO_WGMMA=1 "$MKRUN" "$dec_dir/mlp_walk.mk" \
	-D T=3 -D D=512 -D F=1000 --iters 3 --quiet
for r in 1 2; do
	check "llama_layer.normfold.t16.r$r" env MK_NORMFOLD=1 "$MKRUN" samples/llama_layer.mk --ranks "$r" \
		-D T=16 -D E=512 -D H=8 -D D=64 -D F=1024 --iters 3 --quiet
done
# the list schedule by wave (MK_SCHED_ORDER=wave; the model takes it for
# the llama layer and for ring attention over virtual ranks at their own
# sizes): G's and U's tiles side by side with the waits per operand, and
# ring attention's blocks, against the CPU reference
for r in 1 2; do
	check "decode_mlp.wave.r$r" env MK_SCHED_ORDER=wave MK_LATE=1 "$MKRUN" samples/decode_mlp.mk \
		--ranks "$r" -D T=3 -D D=512 -D F=1000 --iters 3 --quiet
	check "ring_attention_causal.wave.r$((2 * r))" env MK_SCHED_ORDER=wave "$MKRUN" \
		samples/ring_attention_causal.mk --ranks $((2 * r)) -D S=1024 -D NH=2 --iters 3 --quiet
done
sed -e 's/^  O = attention(Q, K, V)$/  O = attention(Q, K, V)  split 3/' samples/decode_attention.mk \
	>"$dec_dir/attn_split.mk"
check "decode_attention.split3.d64" "$MKRUN" "$dec_dir/attn_split.mk" -D T=3 -D H=4 -D S=1000 -D D=64 \
	--iters 3 --quiet
sed -e 's/^  O = attention(Q, K, V)$/  O = attention(Q, K, V, causal)  split 2/' samples/decode_attention.mk \
	>"$dec_dir/attn_causal.mk"
check "decode_attention.causal.split2" "$MKRUN" "$dec_dir/attn_causal.mk" -D T=300 -D H=2 -D S=300 \
	-D D=128 --iters 3 --quiet
# 16-row tiles load K and V by TMA on sm_90 (the plan's: boxes of two
# tensor maps): ragged ranges (the boxes reach past the keys: V's values
# there zeroed in registers), the last head's boxes past the maps' rows;
# MK_ATTN_BULK=rows keeps a bulk copy a row tested (V rows past the keys
# zeroed in shared memory), as D = 96 takes it, and MK_ATTN_BULK=0 the
# cp.async path
check "decode_attention.split3.d128" "$MKRUN" "$dec_dir/attn_split.mk" -D T=5 -D H=4 -D S=1000 -D D=128 \
	--iters 3 --quiet
check "decode_attention.split3.d96" "$MKRUN" "$dec_dir/attn_split.mk" -D T=2 -D H=3 -D S=700 -D D=96 \
	--iters 3 --quiet
for r in 1 2; do
	check "decode_attention.MK_ATTN_BULK=0.t3.r$r" env MK_ATTN_BULK=0 "$MKRUN" "$dec_dir/attn_split.mk" \
		--ranks "$r" -D T=3 -D H=4 -D S=1000 -D D=128 --iters 3 --quiet
	check "decode_attention.MK_ATTN_BULK=rows.t3.r$r" env MK_ATTN_BULK=rows "$MKRUN" \
		"$dec_dir/attn_split.mk" --ranks "$r" -D T=3 -D H=4 -D S=1000 -D D=128 --iters 3 --quiet
done
# the list schedule's plain CTA pick (MK_SCHED_AFFINITY=0; the default
# puts a merge after one of its own ranges, an up tile after its gate tile)
for r in 1 2; do
	check "decode_attention.MK_SCHED_AFFINITY=0.t1.r$r" env MK_SCHED_AFFINITY=0 "$MKRUN" \
		samples/decode_attention.mk --ranks "$r" -D T=1 -D H=8 -D S=2048 --iters 3 --quiet
	check "decode_mlp.MK_SCHED_AFFINITY=0.t3.r$r" env MK_SCHED_AFFINITY=0 "$MKRUN" samples/decode_mlp.mk \
		--ranks "$r" -D T=3 -D D=512 -D F=1000 --iters 3 --quiet
done
# a 2 x 2 mesh in one launch: the RDMA stages become stores between virtual ranks
check "ag_gemm.2x2.r4" "$MKRUN" samples/ag_gemm.mk --ranks 4 -D nodes=2 -D gpus=2 -D M=1024 -D N=256 -D K=512 --iters 5 --quiet
check "gemm_rs.2x2.r4" "$MKRUN" samples/gemm_rs.mk --ranks 4 -D nodes=2 -D gpus=2 -D M=1024 -D N=512 -D K=1024 --iters 5 --quiet
check "gemm_ar.2x2.r4" "$MKRUN" samples/gemm_ar.mk --ranks 4 -D nodes=2 -D gpus=2 -D M=1024 -D N=512 -D K=1024 --iters 5 --quiet
# not causal between nodes: key blocks of 1 MB arrive in several RDMA writes
# (mkd_task_wait_all, issue 20)
check "ring_attention.2x2.r4" "$MKRUN" samples/ring_attention.mk --ranks 4 -D nodes=2 -D gpus=2 \
	-D S=16384 -D D=256 --iters 3 --quiet
check "ring_attention_causal.2x2.r4" "$MKRUN" samples/ring_attention_causal.mk --ranks 4 -D nodes=2 -D gpus=2 \
	-D S=1024 -D NH=2 --iters 5 --quiet
# 16 ranks: two nodes of 8 (key blocks by RDMA stores between virtual
# ranks), one NVLink domain of 16 (also for MoE routing)
check "ring_attention_causal.2x8.r16" "$MKRUN" samples/ring_attention_causal.mk --ranks 16 -D nodes=2 -D gpus=8 \
	-D S=2048 -D NH=2 --iters 3 --quiet
check "ring_attention.1x16.r16" "$MKRUN" samples/ring_attention.mk --ranks 16 -D gpus=16 -D S=2048 --iters 3 --quiet
# shellcheck disable=SC2086
check "moe.1x16.r16" "$MKRUN" samples/moe_dispatch_gemm.mk --ranks 16 -D gpus=16 $moe_sz --iters 3 --quiet
# what check accepts must run (issue 20): tests/runs/*.mk on the GPU, each
# mesh of its "# MESHES:" line as virtual ranks, against the CPU reference
for f in tests/runs/*.mk; do
	defs=$(sed -n 's/^# DEFS: *//p' "$f" | sed 's/\([^ ]*=[^ ]*\)/-D \1/g')
	for m in $(sed -n 's/^# MESHES: *//p' "$f"); do
		nn=${m%x*} gg=${m#*x}
		# shellcheck disable=SC2086
		check "runs.$(basename "$f" .mk).$m" "$MKRUN" "$f" --ranks $((nn * gg)) -D nodes=$nn \
			-D gpus=$gg $defs --iters 3 --quiet
	done
done
check "chain" "$MKRUN" samples/chain.mk
check "chain.resident100" "$MKRUN" samples/chain.mk --resident --iters 100 --quiet
check "chain.trace" "$MKRUN" samples/chain.mk --iters 2 --trace /tmp/mk-chain-trace.json --quiet
check "embed" "$B/embed" samples/ag_gemm.mk

# one process per rank, sharing the GPU under MPS (started here, stopped below)
mps=0
if [ -z "$prewarm" ] && command -v nvidia-cuda-mps-control >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	if nvidia-cuda-mps-control -d >/dev/null 2>&1; then
		mps=1
		# a run cut short (timeout's TERM, ^C) stops it too: left running,
		# it keeps ncu and other tools off the GPU
		trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; exit 130' INT TERM
		sleep 1
	fi
fi
while read -r name args; do
	for n in 2 4; do
		# shellcheck disable=SC2086
		check "$name.n$n" "$MKRUN" -n "$n" "samples/$name.mk" $args --iters 5 --quiet
	done
done <<EOF2
ag_gemm -D M=1024 -D N=256 -D K=512
gemm_rs -D M=1024 -D N=512 -D K=1024
gemm_ar -D M=1024 -D N=512 -D K=1024
tp_mlp -D S=1024 -D H=512
moe_dispatch_gemm -D T=1024 -D E=32 -D H=512 -D F=256
ring_attention_causal -D S=1024 -D NH=2
EOF2
# shellcheck disable=SC2086
check "moe.skew.n4" "$MKRUN" -n 4 samples/moe_dispatch_gemm.mk $moe_sz -D C=1024 \
	--inputs "$moe_dir/skew" --iters 3 --quiet
# two "nodes" of two ranks on this machine: four processes, NVLink-path
# sharing inside each node, RDMA between them through the proxy FIFO and
# libfabric's tcp provider (docs/rdma.md)
while read -r name args; do
	# shellcheck disable=SC2086
	check "$name.2x2.n4" "$MKRUN" -n 4 "samples/$name.mk" -D nodes=2 -D gpus=2 $args --iters 5 --quiet
done <<EOF3
ag_gemm -D M=1024 -D N=256 -D K=512
gemm_ar -D M=1024 -D N=512 -D K=1024
gemm_rs -D M=1024 -D N=512 -D K=1024
ring_attention_causal -D S=1024 -D NH=2
moe_dispatch_gemm -D T=1024 -D E=32 -D H=512 -D F=256
EOF3
check "ag_gemm.2x2.n4.resident" "$MKRUN" -n 4 samples/ag_gemm.mk -D nodes=2 -D gpus=2 -D M=1024 -D N=256 \
	-D K=512 --resident --iters 20 --quiet
# a rank killed mid-run: the others report it within their timeout
killtest() {
	t0=$(date +%s)
	out=$(MK_TEST_KILL_RANK=1 MK_TEST_KILL_AFTER_MS=400 timeout 60 "$MKRUN" -n 2 samples/ag_gemm.mk \
		-D M=4096 -D N=1024 -D K=4096 --iters 100000 --timeout 1500 2>&1)
	rc=$?
	dt=$(( $(date +%s) - t0 ))
	echo "$out" | tail -8
	echo "exit $rc after ${dt}s"
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$dt" -lt 30 ] &&
		echo "$out" | grep -q "rank 1 was killed" &&
		echo "$out" | grep -qE "rank 0: .*(a wait timed out|peer rank failed)"
}
check "kill.n2" killtest
# the same across "nodes": rank 3 dies; rank 1 (which sends to it over RDMA)
# and the rest report it (a stall, a failed proxy, or the peer's memory gone).
# Under MPS a client that dies with its kernel running can take the server's
# other clients down with it: then rank 1 reports the fault the server
# passed on (seen once in session 7; the CUDA error, still within the bound).
killtest22() {
	t0=$(date +%s)
	out=$(MK_TEST_KILL_RANK=3 MK_TEST_KILL_AFTER_MS=600 timeout 90 "$MKRUN" -n 4 samples/ag_gemm.mk \
		-D nodes=2 -D gpus=2 -D M=4096 -D N=1024 -D K=4096 --iters 100000 --timeout 1500 2>&1)
	rc=$?
	dt=$(( $(date +%s) - t0 ))
	echo "$out" | tail -12
	echo "exit $rc after ${dt}s"
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$dt" -lt 45 ] &&
		echo "$out" | grep -q "rank 3 was killed" &&
		{ echo "$out" | grep -qE "rank 1: .*(a wait timed out|peer rank failed)" ||
			{ [ "$mps" = 1 ] && echo "$out" | grep -qE "rank 1: CUDA driver call failed: .*CUDA_ERROR_ILLEGAL_ADDRESS"; }; }
}
check "kill.2x2.n4" killtest22
[ "$mps" = 1 ] && [ -z "$prewarm" ] && echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 &&
	trap - INT TERM
# the Python package: zero-copy torch tensors, CUDA graph replays, the
# torchrun example with 2 processes under MPS (its own MPS start and stop)
check "python" sh tests/gpu/python_check.sh "$B"
for t in "$B"/tests/gpu_*; do
	[ -x "$t" ] && check "$(basename "$t")" "$t"
done

}

# Two passes over the same checks.  The first only lists the virtual-rank
# runs and compiles their kernels into the JIT cache on every core at once
# (mkrun --compile-only): NVRTC is most of a check's time, and on one core
# after another it was most of the suite's.  The second runs every check,
# loading the cached cubins.  MK_GPU_NO_PREWARM=1 skips the first.
# MK_GPU_PART=K/N (above): part K of N, 1 <= K <= N
part_k= part_n= from_seen=
if [ -n "${MK_GPU_PART:-}" ]; then
	part_k=${MK_GPU_PART%/*} part_n=${MK_GPU_PART#*/}
	case "$part_k/$part_n" in
	*[!0-9/]*|/*|*/|*/*/*) echo "gpu-test: MK_GPU_PART=$MK_GPU_PART: not K/N"; exit 2 ;;
	esac
	if [ "$part_n" -lt 1 ] || [ "$part_k" -lt 1 ] || [ "$part_k" -gt "$part_n" ]; then
		echo "gpu-test: MK_GPU_PART=$MK_GPU_PART: K must be 1 to N"; exit 2
	fi
fi
prewarm=
if [ -z "${MK_GPU_NO_PREWARM:-}" ]; then
	prewarm=$(mktemp)
	nth=0
	checks
	t0=$(date +%s)
	njobs=$(nproc 2>/dev/null || echo 4)
	sort -u "$prewarm" | xargs -P "$njobs" -I{} sh -c 'env {} --compile-only --quiet >/dev/null 2>&1' || true
	echo "prewarm: $(sort -u "$prewarm" | wc -l) kernels compiled into the cache in $(($(date +%s) - t0)) s on $njobs cores"
	rm -f "$prewarm"
	prewarm=
fi
nth=0
from_seen=
checks
[ -n "${MK_GPU_FROM:-}" ] && [ -z "$from_seen" ] && { echo "gpu-test: MK_GPU_FROM=$MK_GPU_FROM: no such check here"; exit 2; }

[ "$fail" -gt 0 ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
