"""ctypes over libmk.so: the structures and functions of runtime/mk.h.

Which library: $MKC_LIB if set, else the libmk.so installed beside this
package (pip install), else build/libmk.so of the source tree this package
sits in (an editable install or PYTHONPATH=python), else the system's.
"""
import ctypes
import ctypes.util
import os

c_ll = ctypes.c_longlong


class CtxOpts(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("cache_dir", ctypes.c_char_p),
                ("no_cache", ctypes.c_int), ("cpu", ctypes.c_int)]


class Param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", c_ll)]


class LoadOpts(ctypes.Structure):
    _fields_ = [("params", ctypes.POINTER(Param)), ("nparams", ctypes.c_int),
                ("ranks", ctypes.c_int), ("timeout_ms", ctypes.c_uint),
                ("trace", ctypes.c_int), ("comm", ctypes.c_void_p),
                ("ranks_per_gpu", ctypes.c_int)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int),
                ("dtype", ctypes.c_char_p), ("elem_size", ctypes.c_int),
                ("ndim", ctypes.c_int), ("shape", c_ll * 4), ("local", c_ll * 4),
                ("bytes", ctypes.c_size_t), ("stored", ctypes.c_int)]


MK_OK, MK_ERR_NO_DRIVER, MK_ERR_NO_GPU, MK_ERR_SOURCE = 0, 3, 4, 6
TENSOR_IN, TENSOR_OUT, TENSOR_TEMP = 0, 1, 2


def _candidates():
    env = os.environ.get("MKC_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libmk.so")
    yield os.path.join(here, "..", "..", "build", "libmk.so")
    found = ctypes.util.find_library("mk")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("mkc: libmk.so not found; build it with `make` in the mkc tree or "
                      "set MKC_LIB.  Tried: " + "; ".join(tried))


lib = _load()

_sigs = {
    "mk_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "mk_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "mk_version": (ctypes.c_char_p, []),
    "mk_ctx_create": (ctypes.c_int, [ctypes.POINTER(CtxOpts), ctypes.POINTER(ctypes.c_void_p)]),
    "mk_ctx_destroy": (None, [ctypes.c_void_p]),
    "mk_ctx_error": (ctypes.c_char_p, [ctypes.c_void_p]),
    "mk_ctx_log": (ctypes.c_char_p, [ctypes.c_void_p]),
    "mk_ctx_device": (ctypes.c_char_p, [ctypes.c_void_p]),
    "mk_comm_create": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                      ctypes.c_size_t]),
    "mk_comm_destroy": (None, [ctypes.c_void_p]),
    "mk_comm_rank": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_comm_size": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_comm_local_rank": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_comm_local_size": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_comm_barrier": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_pipeline_load_file": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                             ctypes.POINTER(LoadOpts),
                                             ctypes.POINTER(ctypes.c_void_p)]),
    "mk_pipeline_load_string": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                               ctypes.POINTER(LoadOpts),
                                               ctypes.POINTER(ctypes.c_void_p)]),
    "mk_pipeline_destroy": (None, [ctypes.c_void_p]),
    "mk_pipeline_ntensors": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_pipeline_ranks": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_pipeline_first_rank": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_tensor_info_get": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                          ctypes.POINTER(TensorInfo)]),
    "mk_tensor_write_f32": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                           ctypes.c_void_p, ctypes.c_size_t]),
    "mk_tensor_read_f32": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                          ctypes.c_void_p, ctypes.c_size_t]),
    "mk_tensor_bind": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                      ctypes.c_ulonglong, ctypes.c_size_t]),
    "mk_tensor_devptr": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_ulonglong)]),
    "mk_run": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_run_on": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "mk_sync": (ctypes.c_int, [ctypes.c_void_p]),
    "mk_stall_report": (ctypes.c_char_p, [ctypes.c_void_p]),
}
for _name, (_res, _args) in _sigs.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args
