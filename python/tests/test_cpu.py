"""The mkc package without a GPU: the NumPy path runs libmk's CPU reference;
loading, the tensor query, shape and name checks and source errors."""
import os

import numpy as np
import pytest

import mkc

TOP = os.path.join(os.path.dirname(__file__), "..", "..")
SAMPLES = os.path.join(TOP, "samples")

CHAIN = """pipeline chain {
  param M = 4, N = 2, K = 3
  in  X : f32[M, K]
  in  W : f32[K, N]
  out Y : f32[M, N]
  H = matmul(X, W)
  Y = relu(H)
}
"""


def bf16(a):
    """NumPy float32 rounded to bf16 (nearest even), as the pipeline stores it."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def test_text_numpy_by_hand():
    p = mkc.load(CHAIN)
    x = np.array([[1, 2, 3], [4, 5, 6], [-1, -2, -3], [0, 1, 0]], np.float32)
    w = np.array([[1, -1], [0, 1], [1, 0]], np.float32)
    y = p(X=x, W=w)
    assert y.shape == (4, 2) and y.dtype == np.float32
    np.testing.assert_array_equal(y, np.maximum(x @ w, 0))
    # the query: what to pass, per rank
    assert [t.name for t in p.inputs] == ["X", "W"]
    assert [(t.name, t.local, t.dtype) for t in p.outputs] == [("Y", (4, 2), "f32")]


def test_params_and_file():
    p = mkc.load(os.path.join(SAMPLES, "gemm.mk"), M=8, N=16, K=32)
    shapes = {t.name: t.local for t in p.tensors}
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shapes["A"]).astype(np.float32)
    b = rng.standard_normal(shapes["B"]).astype(np.float32)
    c = p(A=a, B=b)
    ref = bf16(bf16(a).astype(np.float64) @ bf16(b).astype(np.float64))
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)


def test_virtual_ranks_tp_mlp():
    # two ranks of one mesh: every tensor is a list of per-rank pieces
    S, H = 256, 256
    F = 4 * H
    p = mkc.load(os.path.join(SAMPLES, "tp_mlp.mk"), mesh=(1, 2), S=S, H=H)
    assert p.ranks == 2
    loc = {t.name: t.local for t in p.tensors}
    assert loc["X"] == (S // 2, H) and loc["W1"] == (H, F // 2) and loc["W2"] == (F // 2, H)
    rng = np.random.default_rng(2)
    X = rng.standard_normal((S, H)).astype(np.float32)
    W1 = (rng.standard_normal((H, F)) / np.sqrt(H)).astype(np.float32)
    W2 = (rng.standard_normal((F, H)) / np.sqrt(F)).astype(np.float32)
    Y = p(X=[X[:S // 2], X[S // 2:]], W1=[W1[:, :F // 2], W1[:, F // 2:]],
          W2=[W2[:F // 2], W2[F // 2:]])
    assert isinstance(Y, list) and len(Y) == 2
    u = bf16(X).astype(np.float64) @ bf16(W1).astype(np.float64)
    g = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))
    ref = g @ bf16(W2).astype(np.float64)
    got = np.concatenate(Y)
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 3e-2


def test_checks_have_clear_messages():
    p = mkc.load(CHAIN)
    x, w = np.zeros((4, 3), np.float32), np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match=r"X on rank 0: shape \[3, 4\], but the pipeline wants \[4, 3\]"):
        p(X=x.T, W=w)
    with pytest.raises(TypeError, match="missing input W"):
        p(X=x)
    with pytest.raises(TypeError, match="no input named Q"):
        p(X=x, W=w, Q=x)
    p2 = mkc.load(os.path.join(SAMPLES, "tp_mlp.mk"), mesh=(1, 2), S=256, H=256)
    with pytest.raises(ValueError, match="list of 2 pieces"):
        p2(X=np.zeros((128, 256)), W1=np.zeros((256, 512)), W2=np.zeros((512, 256)))


def test_source_error_located():
    bad = "pipeline x {\n  in A : bf16[4]\n  B = relu(Q)\n}\n"
    with pytest.raises(mkc.SourceError) as e:
        mkc.load(bad)
    assert (e.value.file, e.value.line) == ("<string>", 3) and e.value.col > 0
    assert "relu(Q)" in str(e.value) and "^" in str(e.value)
    assert e.value.name == "MK_ERR_SOURCE"


def test_bad_param_and_missing_file():
    with pytest.raises(mkc.SourceError, match="Q"):
        mkc.load(CHAIN, Q=3)
    with pytest.raises(FileNotFoundError):
        mkc.load("/nonexistent/x.mk")


def test_torch_without_gpu_or_torch():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: tests/gpu/python_check.py covers torch")
    p = mkc.load(CHAIN)
    with pytest.raises(Exception):
        p(X=torch.zeros(4, 3), W=torch.zeros(3, 2))
