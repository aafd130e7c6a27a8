"""mkc from Python: load a .mk pipeline, call it with tensors.

    import mkc, torch
    mlp = mkc.load("samples/tp_mlp.mk", M=128, D=512, F=2048, mesh=(1, 2))
    y = mlp(X=[x0, x1], W1=[...], W2=[...])   # torch CUDA tensors, per rank

Torch CUDA tensors run the GPU kernel on the current stream, zero-copy: the
tensors' memory is bound to the pipeline (data_ptr), outputs are new torch
tensors the kernel writes into; nothing waits (pipe.sync() does, and raises
what the kernel reported).  NumPy arrays run libmk's CPU reference.  With
virtual ranks (mesh or ranks > 1, one process) each tensor is a list, one
piece per rank; under torchrun / mpirun / srun each process is one rank
(the bootstrap reads the launcher's environment) and passes its own piece.
Errors in the .mk source raise SourceError with file, line, column and the
rendered diagnostics (source line and caret).
"""
import ctypes
import os
import re

from . import _lib
from ._lib import lib

__all__ = ["load", "Pipeline", "Error", "SourceError", "version"]


class Error(RuntimeError):
    """A libmk call failed: .status (a number of mk.h), .name, the message."""

    def __init__(self, status, message):
        self.status = status
        self.name = lib.mk_status_name(status).decode()
        super().__init__(message)


class SourceError(Error):
    """The pipeline has errors: .file, .line, .col of the first; str() is
    the whole rendered log (file:line:col: error: ..., the source line, ^)."""

    def __init__(self, log):
        m = re.search(r"^(.*?):(\d+):(\d+): error", log, re.M)
        self.file, self.line, self.col = (m.group(1), int(m.group(2)), int(m.group(3))) \
            if m else (None, None, None)
        self.log = log
        super().__init__(_lib.MK_ERR_SOURCE, log.rstrip())


def version():
    return lib.mk_version().decode()


def _check(st, ctx, what):
    if st != _lib.MK_OK:
        detail = lib.mk_ctx_error(ctx).decode(errors="replace") if ctx else ""
        raise Error(st, "%s: %s%s" % (what, lib.mk_strerror(st).decode(),
                                      ": " + detail if detail else ""))


def _launched():
    """One process per rank: the variables mk_comm_create reads."""
    e = os.environ
    return ("MK_RANK" in e or ("RANK" in e and "WORLD_SIZE" in e) or "OMPI_COMM_WORLD_RANK" in e
            or "PMI_RANK" in e or ("SLURM_PROCID" in e and "SLURM_NTASKS" in e
                                   and int(e.get("SLURM_NTASKS", "1")) > 1))


_comm = None


def _get_comm():
    global _comm
    if _comm is None:
        h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        st = lib.mk_comm_create(ctypes.byref(h), err, len(err))
        if st != _lib.MK_OK:
            raise Error(st, "joining the job: %s: %s" % (lib.mk_strerror(st).decode(),
                                                         err.value.decode(errors="replace")))
        _comm = h
    return _comm


# mk.h dtype -> (torch dtype name, numpy dtype name)
_DTYPES = {"bf16": ("bfloat16", None), "f16": ("float16", "float16"),
           "f32": ("float32", "float32"), "i32": ("int32", "int32"),
           "e4m3": ("float8_e4m3fn", None)}


class _Tensor:
    def __init__(self, info):
        self.name = info.name.decode()
        self.kind = info.kind
        self.dtype = info.dtype.decode()
        self.local = tuple(info.local[d] for d in range(info.ndim))
        self.shape = tuple(info.shape[d] for d in range(info.ndim))
        self.bytes = info.bytes
        self.stored = bool(info.stored)

    def __repr__(self):
        kind = {0: "in", 1: "out", 2: "temp"}[self.kind]
        return "%s %s: %s%s per rank (logical %s)" % (kind, self.name, self.dtype,
                                                     list(self.local), list(self.shape))


class _Loaded:
    """One mk_pipeline in one mk_ctx (CPU or a GPU)."""

    def __init__(self, spec, cpu, device):
        self.ctx = ctypes.c_void_p()
        o = _lib.CtxOpts(device=device, cache_dir=None, no_cache=0, cpu=1 if cpu else 0)
        st = lib.mk_ctx_create(ctypes.byref(o), ctypes.byref(self.ctx))
        if st != _lib.MK_OK:
            msg = lib.mk_ctx_error(self.ctx).decode(errors="replace")
            lib.mk_ctx_destroy(self.ctx)
            self.ctx = None
            raise Error(st, "%s: %s" % (lib.mk_strerror(st).decode(), msg))
        self.p = ctypes.c_void_p()
        params = (_lib.Param * max(1, len(spec.params)))(
            *[_lib.Param(k.encode(), int(v)) for k, v in spec.params.items()])
        # one process per rank: the CPU copy (source checks, the query)
        # holds every rank itself
        ranks = spec.world if cpu and spec.process else spec.ranks
        lo = _lib.LoadOpts(params, len(spec.params), ranks, spec.timeout_ms, 0,
                           _get_comm() if spec.process and not cpu else None, 0)
        if spec.path is not None:
            st = lib.mk_pipeline_load_file(self.ctx, spec.path.encode(), ctypes.byref(lo),
                                           ctypes.byref(self.p))
        else:
            st = lib.mk_pipeline_load_string(self.ctx, spec.name.encode(), spec.text.encode(),
                                             ctypes.byref(lo), ctypes.byref(self.p))
        if st == _lib.MK_ERR_SOURCE:
            log = lib.mk_ctx_log(self.ctx).decode(errors="replace")
            self.close()
            raise SourceError(log)
        if st != _lib.MK_OK:
            log = lib.mk_ctx_log(self.ctx).decode(errors="replace")
            err = lib.mk_ctx_error(self.ctx).decode(errors="replace")
            self.close()
            raise Error(st, "loading the pipeline: %s%s%s" % (
                lib.mk_strerror(st).decode(), ": " + err if err else "",
                "\n" + log if log else ""))
        self.ranks = lib.mk_pipeline_ranks(self.p)
        self.first = lib.mk_pipeline_first_rank(self.p)
        self.tensors = []
        for i in range(lib.mk_pipeline_ntensors(self.p)):
            info = _lib.TensorInfo()
            _check(lib.mk_tensor_info_get(self.p, i, ctypes.byref(info)), self.ctx, "tensor info")
            self.tensors.append(_Tensor(info))

    def close(self):
        if getattr(self, "p", None):
            lib.mk_pipeline_destroy(self.p)
            self.p = None
        if getattr(self, "ctx", None):
            lib.mk_ctx_destroy(self.ctx)
            self.ctx = None

    def __del__(self):
        self.close()


class _Spec:
    def __init__(self, src, params, mesh, ranks, timeout_ms):
        looks_like_text = "\n" in src or "{" in src
        self.path = None if looks_like_text else src
        self.text = src if looks_like_text else None
        self.name = "<string>"
        if self.path is not None and not os.path.exists(self.path):
            raise FileNotFoundError("mkc.load: no file %s" % self.path)
        self.params = dict(params)
        if mesh is not None:
            nodes, gpus = (1, mesh) if isinstance(mesh, int) else mesh
            self.params["nodes"], self.params["gpus"] = nodes, gpus
        self.process = _launched()
        self.world = world = self.params.get("nodes", 1) * self.params.get("gpus", 1)
        self.ranks = 1 if self.process else (ranks if ranks is not None else world)
        self.timeout_ms = timeout_ms


def load(path_or_text, mesh=None, ranks=None, timeout_ms=5000, **params):
    """A pipeline from a .mk file (a path) or its text (anything with a
    newline or a brace).  params set the file's `param`s; mesh=(nodes, gpus)
    or mesh=gpus the mesh; ranks the virtual ranks of this process (default:
    every rank of the mesh; 1 under a launcher).  Nothing is compiled until
    the first call: a CPU one for NumPy inputs, a GPU one for torch."""
    p = Pipeline(_Spec(path_or_text, params, mesh, ranks, timeout_ms))
    p._loaded(cpu=True)  # compile now: source errors show at load
    return p


class Pipeline:
    def __init__(self, spec):
        self._spec = spec
        self._cpu = None
        self._gpu = None

    def _loaded(self, cpu):
        if cpu:
            if self._cpu is None:
                self._cpu = _Loaded(self._spec, True, 0)
            return self._cpu
        if self._gpu is None:
            import torch
            dev = torch.cuda.current_device()
            torch.cuda.init()
            torch.cuda.synchronize(dev)  # the primary context exists and is current
            self._gpu = _Loaded(self._spec, False, dev)
            self._gpu.device = dev
        return self._gpu

    @property
    def tensors(self):
        """Every tensor: kind, dtype, per-rank (local) and logical shapes."""
        return list(self._loaded(True).tensors)

    @property
    def inputs(self):
        return [t for t in self.tensors if t.kind == _lib.TENSOR_IN and t.stored]

    @property
    def outputs(self):
        return [t for t in self.tensors if t.kind == _lib.TENSOR_OUT and t.stored]

    @property
    def ranks(self):
        return self._loaded(True).ranks

    def __call__(self, **tensors):
        is_torch = False
        for v in tensors.values():
            v0 = v[0] if isinstance(v, (list, tuple)) and v else v
            if type(v0).__module__.startswith("torch"):
                is_torch = True
        return self._run_torch(tensors) if is_torch else self._run_numpy(tensors)

    # ---- checks common to both paths ------------------------------------
    def _pieces(self, L, tensors):
        names = {t.name for t in L.tensors if t.kind == _lib.TENSOR_IN and t.stored}
        unknown = sorted(set(tensors) - names)
        if unknown:
            raise TypeError("%s: no input named %s (inputs: %s)" % (
                self._spec.path or "pipeline", ", ".join(unknown), ", ".join(sorted(names))))
        missing = sorted(names - set(tensors))
        if missing:
            raise TypeError("missing input%s %s" % ("s" if len(missing) > 1 else "",
                                                    ", ".join(missing)))
        out = {}
        for t in L.tensors:
            if t.name not in tensors:
                continue
            v = tensors[t.name]
            if L.ranks == 1 and not isinstance(v, (list, tuple)):
                v = [v]
            if not isinstance(v, (list, tuple)) or len(v) != L.ranks:
                raise ValueError("%s: want a list of %d pieces, one per rank (%s each)" % (
                    t.name, L.ranks, list(t.local)))
            for r, x in enumerate(v):
                if tuple(x.shape) != t.local:
                    raise ValueError("%s on rank %d: shape %s, but the pipeline wants %s "
                                     "(%s per rank of logical %s)" % (
                                         t.name, L.first + r, list(x.shape), list(t.local),
                                         t.dtype, list(t.shape)))
            out[t.name] = v
        return out

    def _result(self, L, outs):
        if L.ranks == 1:
            outs = {k: v[0] for k, v in outs.items()}
        if len(outs) == 1:
            return next(iter(outs.values()))
        return outs

    # ---- NumPy: the CPU reference -------------------------------------------
    def _run_numpy(self, tensors):
        import numpy as np
        L = self._loaded(True)
        pieces = self._pieces(L, tensors)
        for name, v in pieces.items():
            for r, x in enumerate(v):
                a = np.ascontiguousarray(x, dtype=np.float32)
                _check(lib.mk_tensor_write_f32(L.p, name.encode(), L.first + r,
                                               a.ctypes.data, a.size), L.ctx, "writing " + name)
        _check(lib.mk_run(L.p), L.ctx, "running the CPU reference")
        outs = {}
        for t in L.tensors:
            if t.kind != _lib.TENSOR_OUT or not t.stored:
                continue
            outs[t.name] = []
            for r in range(L.ranks):
                a = np.empty(t.local, dtype=np.float32)
                _check(lib.mk_tensor_read_f32(L.p, t.name.encode(), L.first + r,
                                              a.ctypes.data, a.size), L.ctx,
                       "reading " + t.name)
                outs[t.name].append(a)
        return self._result(L, outs)

    # ---- torch: the GPU kernel on the current stream --------------------------
    def _run_torch(self, tensors):
        import torch
        L = self._loaded(False)
        pieces = self._pieces(L, tensors)
        for name, v in pieces.items():
            t = next(x for x in L.tensors if x.name == name)
            want = getattr(torch, _DTYPES[t.dtype][0])
            for r, x in enumerate(v):
                where = "%s on rank %d" % (name, L.first + r)
                if not isinstance(x, torch.Tensor):
                    raise TypeError("%s: a torch tensor, not %s" % (where, type(x).__name__))
                if not x.is_cuda or x.device.index != L.device:
                    raise ValueError("%s: on %s, but the pipeline runs on cuda:%d" % (
                        where, x.device, L.device))
                if x.dtype != want:
                    raise TypeError("%s: dtype %s, but the pipeline wants %s (%s)" % (
                        where, x.dtype, want, t.dtype))
                if not x.is_contiguous():
                    raise ValueError("%s: not contiguous (strides %s); pass x.contiguous()" % (
                        where, list(x.stride())))
                if x.data_ptr() % 16:
                    raise ValueError("%s: its memory is not 16-byte aligned (an offset view?)"
                                     % where)
        outs = {}
        if self._spec.process:
            # peers map the runtime's own memory: inputs are copied in on the
            # stream, outputs are views of the runtime's buffers (the next
            # call overwrites them: clone() to keep one)
            for name, v in pieces.items():
                self._view(L, name, L.first).copy_(v[0])
            for t in L.tensors:
                if t.kind == _lib.TENSOR_OUT and t.stored:
                    outs[t.name] = [self._view(L, t.name, L.first)]
        else:
            for name, v in pieces.items():
                for r, x in enumerate(v):
                    _check(lib.mk_tensor_bind(L.p, name.encode(), L.first + r, x.data_ptr(),
                                              x.numel() * x.element_size()), L.ctx,
                           "binding " + name)
            for t in L.tensors:
                if t.kind != _lib.TENSOR_OUT or not t.stored:
                    continue
                outs[t.name] = []
                for r in range(L.ranks):
                    y = torch.empty(t.local, dtype=getattr(torch, _DTYPES[t.dtype][0]),
                                    device="cuda:%d" % L.device)
                    _check(lib.mk_tensor_bind(L.p, t.name.encode(), L.first + r, y.data_ptr(),
                                              t.bytes), L.ctx, "binding " + t.name)
                    outs[t.name].append(y)
        s = torch.cuda.current_stream(L.device).cuda_stream
        _check(lib.mk_run_on(L.p, ctypes.c_void_p(s if s else 1)), L.ctx,
               "running the kernel")  # 1: CU_STREAM_LEGACY, torch's stream 0
        self._keep = pieces  # the bound inputs live until the next call
        return self._result(L, outs)

    def _view(self, L, name, rank):
        import torch
        t = next(x for x in L.tensors if x.name == name)
        d = ctypes.c_ulonglong()
        _check(lib.mk_tensor_devptr(L.p, name.encode(), rank, ctypes.byref(d)), L.ctx,
               "the device memory of " + name)

        class _Cai:  # __cuda_array_interface__: torch wraps it without a copy
            __cuda_array_interface__ = {
                "shape": t.local, "typestr": {"f16": "<f2", "f32": "<f4", "i32": "<i4",
                                              "bf16": "<f2", "e4m3": "|u1"}[t.dtype],
                "data": (d.value, False), "version": 2, "strides": None}
        x = torch.as_tensor(_Cai(), device="cuda:%d" % L.device)
        if t.dtype in ("bf16", "e4m3"):
            x = x.view(getattr(torch, _DTYPES[t.dtype][0]))
        return x

    def sync(self):
        """Wait for the last GPU run; raise what the kernel reported (a
        stall, bad routing data, a failed peer)."""
        if self._gpu is None:
            return
        L = self._gpu
        st = lib.mk_sync(L.p)
        if st != _lib.MK_OK:
            rep = lib.mk_stall_report(L.p).decode(errors="replace")
            err = lib.mk_ctx_error(L.ctx).decode(errors="replace")
            raise Error(st, "%s: %s\n%s" % (lib.mk_strerror(st).decode(), err, rep))

    def close(self):
        for L in (self._cpu, self._gpu):
            if L is not None:
                L.close()
        self._cpu = self._gpu = None
