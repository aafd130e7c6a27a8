#!/bin/sh
# tools/deps.sh - check the build's dependencies; install the missing ones.
#
# Debian packages: flex, bison, FileCheck (llvm-14-tools, or llvm), the
# libibverbs and libfabric headers, clang, python3 (the schedule checker).
# As root the missing ones are installed with apt-get; otherwise the one
# command to run is printed and the exit status is 1.  The CUDA toolkit
# (headers cuda.h and nvrtc.h, libnvrtc) is not a Debian package here: it is
# only checked for.
# Quiet and fast (no apt call) when everything is present.
set -u

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
missing=""

have() { command -v "$1" >/dev/null 2>&1; }
need() { missing="$missing $1"; }

check() {
	missing=""
	have flex || need flex
	have bison || need bison
	have clang || need clang
	have cc || need gcc
	have make || need make
	have python3 || need python3
	have pkg-config || need pkg-config
	if ! have FileCheck && ! have FileCheck-14 && ! [ -x /usr/lib/llvm-14/bin/FileCheck ]; then
		need "$filecheck_pkg"
	fi
	[ -f /usr/include/infiniband/verbs.h ] || need libibverbs-dev
	[ -f /usr/include/rdma/fabric.h ] || need libfabric-dev
	# RDMA at run time (dlopen'ed; tests use libfabric's tcp provider)
	[ -n "$(ls /usr/lib/*/libfabric.so.1 /usr/lib/libfabric.so.1 2>/dev/null)" ] || need libfabric1
	[ -n "$(ls /usr/lib/*/libibverbs.so.1 /usr/lib/libibverbs.so.1 2>/dev/null)" ] || need libibverbs1
	[ -d /etc/libibverbs.d ] || need ibverbs-providers
}

filecheck_pkg=llvm-14-tools
check
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ] && have apt-get; then
		echo "deps: installing:$missing" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null || { echo "deps: apt-get update failed" >&2; exit 1; }
		# Newer Debian has no llvm-14-tools; plain llvm carries FileCheck.
		case "$missing" in *llvm-14-tools*)
			apt-cache show llvm-14-tools >/dev/null 2>&1 || filecheck_pkg=llvm
			check ;;
		esac
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
			{ echo "deps: apt-get install$missing failed" >&2; exit 1; }
		check
		if [ -n "$missing" ]; then
			echo "deps: still missing after install:$missing" >&2
			exit 1
		fi
	else
		echo "deps: missing:$missing" >&2
		echo "deps: run: sudo apt-get install -y$missing" >&2
		exit 1
	fi
fi

if ! [ -f "$CUDA_HOME/include/cuda.h" ] || ! [ -f "$CUDA_HOME/include/nvrtc.h" ]; then
	echo "deps: no CUDA toolkit at $CUDA_HOME (need include/cuda.h and include/nvrtc.h)" >&2
	echo "deps: install CUDA 12 or 13 from https://developer.nvidia.com/cuda-downloads" >&2
	echo "deps: (or NVIDIA's apt repository, package cuda-toolkit), then set CUDA_HOME" >&2
	exit 1
fi
exit 0
