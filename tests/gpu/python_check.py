"""The Python package on the GPU (issue 22): torch tensors in and out with
no copies (checked by pointer), a pipeline captured in a CUDA graph and
replayed 100 times matching torch, and the per-call cost of the Python
path beside the C call it wraps (a benchmark row, not a timed test).

    PYTHONPATH=python MKC_LIB=build/libmk.so python3 tests/gpu/python_check.py

Prints "python_check: skipped: ..." and exits 0 without torch or a GPU;
exit 1 on any mismatch.
"""
import ctypes
import os
import sys
import time

try:
    import torch
except ImportError:
    print("python_check: skipped: no torch (pip install torch)")
    sys.exit(0)
if not torch.cuda.is_available():
    print("python_check: skipped: torch sees no GPU")
    sys.exit(0)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import mkc  # noqa: E402
from mkc._lib import lib  # noqa: E402

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
fail = 0


def check(ok, what):
    global fail
    print("  %-58s %s" % (what, "ok" if ok else "FAIL"), flush=True)
    fail |= not ok


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def devptr(pipe, name, rank=0):
    d = ctypes.c_ulonglong()
    L = pipe._gpu
    assert lib.mk_tensor_devptr(L.p, name.encode(), rank, ctypes.byref(d)) == 0
    return d.value


M = N = K = 1024
pipe = mkc.load(os.path.join(TOP, "samples", "gemm.mk"), M=M, N=N, K=K)
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) / 32
c = pipe(A=a, B=b)
pipe.sync()
print("python_check: gemm %dx%dx%d on %s" % (M, N, K, torch.cuda.get_device_name()))
check(c.dtype == torch.bfloat16 and tuple(c.shape) == (M, N) and c.is_cuda, "C is a bf16 CUDA tensor")
check(devptr(pipe, "A") == a.data_ptr() and devptr(pipe, "B") == b.data_ptr(),
      "inputs bound by pointer (no copy)")
check(devptr(pipe, "C") == c.data_ptr(), "output written in place (no copy)")
e = rel(c, a.float() @ b.float())
check(e < 1e-2, "C matches torch (rel l2 %.2e)" % e)
# stream order: a producer before and a consumer after on the same stream
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    a2 = a * 2
    c2 = pipe(A=a2, B=b)
    d2 = c2 + 1
s.synchronize()
pipe.sync()
e = rel(d2 - 1, (a2.float() @ b.float()))
check(e < 1e-2, "on a side stream, in order with torch's kernels (%.2e)" % e)

# a CUDA graph: static inputs, captured once, replayed 100 times
sa = a.clone()
sb = b.clone()
pipe(A=sa, B=sb)  # warm: compiled and bound outside the capture
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        sc = pipe(A=sa, B=sb)
    captured = True
except Exception as ex:  # noqa: BLE001
    print("  capture failed: %s" % ex)
    captured = False
check(captured, "captured into a CUDA graph")
if captured:
    worst = 0.0
    for i in range(100):
        sa.copy_(torch.randn(M, K, device="cuda", dtype=torch.bfloat16))
        g.replay()
        if i % 10 == 9 or i < 3:
            torch.cuda.synchronize()
            worst = max(worst, rel(sc, sa.float() @ sb.float()))
    torch.cuda.synchronize()
    pipe.sync()
    check(worst < 1e-2, "100 replays match torch (worst rel l2 %.2e)" % worst)
    c3 = pipe(A=a, B=b)  # and a plain run after the graph
    pipe.sync()
    check(rel(c3, a.float() @ b.float()) < 1e-2, "a plain run after the replays")

# per-call cost: the Python path (checks, binds, launch) against the bare C
# mk_run_on of the same bound pipeline, and the GPU time, per call
n = 200
L = pipe._gpu
stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream or 1)
for _ in range(10):
    pipe(A=a, B=b)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(n):
    pipe(A=a, B=b)
t_py_enq = (time.perf_counter() - t0) / n
torch.cuda.synchronize()
t_py = (time.perf_counter() - t0) / n
t0 = time.perf_counter()
for _ in range(n):
    lib.mk_run_on(L.p, stream)
t_c_enq = (time.perf_counter() - t0) / n
torch.cuda.synchronize()
t_c = (time.perf_counter() - t0) / n
ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ev0.record()
for _ in range(n):
    lib.mk_run_on(L.p, stream)
ev1.record()
torch.cuda.synchronize()
t_gpu = ev0.elapsed_time(ev1) / n / 1e3
pipe.sync()
print("python_check: per call (us): python enqueue %.1f, python total %.1f | C mk_run_on "
      "enqueue %.1f, total %.1f | GPU %.1f | python overhead over C %.1f"
      % (t_py_enq * 1e6, t_py * 1e6, t_c_enq * 1e6, t_c * 1e6, t_gpu * 1e6,
         (t_py_enq - t_c_enq) * 1e6))
pipe.close()
print("python_check: %s" % ("all ok" if not fail else "FAILED"))
sys.exit(1 if fail else 0)
