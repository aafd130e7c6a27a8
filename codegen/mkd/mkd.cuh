/* mkd/mkd.cuh - the device library that generated kernels include.
 *
 *   base.cuh   types, bf16/f16 conversions, timers
 *   abi.cuh    the parameter block shared with the host runtime
 *   flags.cuh  epoch-counter flags, bounded waits, stall reports
 *   copy.cuh   16-byte vectorised copies and TMA bulk copies (local, peer, NVLink)
 *   mbar.cuh   shared-memory mbarriers (bounded waits) for the copy engines
 *   mma.cuh    tensor-core GEMM tile (mma.sync, any sm_80+)
 *   ew.cuh     elementwise and row-wise tiles, reductions
 *   attn.cuh   attention tile with online softmax
 *   moe.cuh    MoE routing: route tables, dispatch, combine
 *   mesh.cuh   the rank-symmetry map sigma_r on the device
 *   tensor.cuh where a logical element lives on a rank
 *   proxy.cuh  commands to the host proxy thread (RDMA writes)
 *   tables.cuh the rows of a generated kernel's task tables
 *
 * Two more headers are the fixed part of every generated kernel and need
 * its tables first, so the generated file includes them itself: task.cuh
 * (a task's waits and read boxes, before its stage functions) and
 * kernel.cuh (the persistent loop, after them; the entry points that call
 * it follow).
 */
#ifndef MKD_CUH
#define MKD_CUH

#include "base.cuh"
#include "abi.cuh"
#include "flags.cuh"
#include "copy.cuh"
#include "mma.cuh"
#include "wgmma.cuh"
#include "ew.cuh"
#include "attn.cuh"
#include "attn_wg.cuh"
#include "mesh.cuh"
#include "tensor.cuh"
#include "proxy.cuh"
#include "moe.cuh"
#include "split.cuh"
#include "tables.cuh"

#endif
