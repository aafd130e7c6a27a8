"""baseline_common.py - what the PyTorch baselines of make bench share
(ring_baseline.py, moe_baseline.py, decode_baseline.py): the environment
NCCL needs, this process's device and rank, timing, the read rate of
device memory and the check against a reference.

Import it before torch: it sets NCCL's environment.  It imports torch only
when a Job is made, so a script can still say "skipped" without torch.
"""
import os
import sys
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"  # never NVLink multicast (docs/bench.md)
if os.environ.get("LOCAL_WORLD_SIZE", "1") == os.environ.get("WORLD_SIZE", "1"):
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")  # one host, as bench_patterns

TOL = 2e-2


class Job:
    """This process: its device (the GPU of LOCAL_RANK, else the CPU), and
    under torchrun its rank in a process group (NCCL, or gloo on the CPU)."""

    def __init__(self):
        import torch
        import torch.distributed as dist
        self.torch, self.dist = torch, dist
        self.cuda = torch.cuda.is_available()
        self.dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if self.cuda \
            else torch.device("cpu")
        if self.cuda:
            torch.cuda.set_device(self.dev)
        self.distributed = "RANK" in os.environ  # started by torchrun
        if self.distributed:
            dist.init_process_group("nccl" if self.cuda else "gloo")
        self.rank = dist.get_rank() if self.distributed else 0
        self.world = dist.get_world_size() if self.distributed else 1

    def barrier(self):
        if self.cuda:
            self.torch.cuda.synchronize()
        if self.distributed and self.cuda:
            self.dist.barrier(device_ids=[self.dev.index])
        elif self.distributed:
            self.dist.barrier()

    def reduce(self, values, op):
        """values (floats) reduced over the ranks with op ("max" or "min")."""
        t = self.torch.tensor(values, dtype=self.torch.float64, device=self.dev)
        if self.distributed:
            self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX if op == "max" else self.dist.ReduceOp.MIN)
        return t.tolist()

    def time(self, fn, warmup, iters):
        """Runs fn() warmup + iters times after a barrier each; returns the
        sorted times in us (a run lasts as long as its slowest rank: CUDA
        events, else the host clock) and fn's last result."""
        times, out = [], None
        for it in range(warmup + iters):
            self.barrier()
            if self.cuda:
                ev = self.torch.cuda.Event
                t0, t1 = ev(enable_timing=True), ev(enable_timing=True)
                t0.record()
                out = fn()
                t1.record()
                t1.synchronize()
                us = t0.elapsed_time(t1) * 1e3
            else:
                t = time.perf_counter()
                out = fn()
                us = (time.perf_counter() - t) * 1e6
            if it >= warmup:
                times.append(us)
        return sorted(self.reduce(times, "max")), out

    def check(self, name, out, ref):
        """out against the float32 reference ref on every rank: max |out -
        ref| / max(1, |ref|) <= TOL (bf16 rounds outputs above 1 by up to
        |ref| / 256).  Rank 0 prints one line; returns the exit code."""
        d = (out.float() - ref).abs()
        err = self.reduce([d.max().item(), (d / ref.abs().clamp(min=1)).max().item()], "max")
        rc = int(not err[1] <= TOL)
        if self.rank == 0:
            print("%s: check: max abs error %.3g, scaled %.3g over %d rank%s (tolerance %g): %s" %
                  (name, err[0], err[1], self.world, "s" if self.world > 1 else "", TOL,
                   "MISMATCH" if rc else "ok"))
        return rc

    def close(self):
        if self.distributed:
            self.dist.destroy_process_group()


def median(times):
    return times[len(times) // 2]  # as mkrun


def skipped(name, e):
    """No torch: one line (rank 0) and exit 0."""
    if os.environ.get("RANK", "0") == "0":
        print("%s: skipped: no torch (%s)" % (name, e))
    sys.exit(0)


def timed(fn, warmup, iters):
    """fn's CUDA-event times in us, sorted, after warmup runs."""
    import torch
    ts = []
    for it in range(warmup + iters):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        if it >= warmup:
            ts.append(a.elapsed_time(b) * 1e3)
    return sorted(ts)


def read_rate_gbps(warmup, iters):
    """Device memory's read rate as a reduction over 2 GiB measures it,
    GB/s: the floors of make bench (bytes a layer must read / this)."""
    import torch
    x = torch.ones(1 << 29, dtype=torch.float32, device="cuda")  # 2 GiB
    t = median(timed(lambda: x.sum(), warmup, iters))
    return x.numel() * 4 / (t * 1e-6) / 1e9


def graphed(fn, warmup):
    """fn captured into a CUDA graph (after warm-up on a side stream)."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay
