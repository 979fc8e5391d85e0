"""Large matrix products through BLAS (``scan-call-blas``, python/runtime/ScanBlas.cpp).

Every product is checked against NumPy, the reference interpreter on the
same IR, and the program compiled with ``blas=False`` and with every
optional lowering feature off (``threeway.py``); ``_blas.calls()`` tells
whether BLAS computed it or the program's own loops ran. A product outside
the program's loops always goes through BLAS (on a copy of an operand whose
layout BLAS cannot read); one in a scan's steps only when it is large and
not thin. The layouts are the ones a program's views make:
transposed operands, row and column steps, offsets, reversed rows, the
leading dimensions of a tensor3, rows and columns of size 1.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlir_scan
import mlir_scan as theano
from mlir_scan import _blas
from mlir_scan import tensor as T
from threeway import PLAIN, ThreeWay

pytestmark = pytest.mark.skipif(not _blas.available(), reason="scipy-openblas32 is not installed")

VARIANTS = {"no-blas": {"blas": False}, "plain": PLAIN}
RNG = np.random.default_rng(23)


def _tol(dtype: str) -> float:
    return 1e-12 if dtype == "float64" else 2e-5


def _run(f, values, want, dtype, via_blas: bool) -> int:
    """`f(*values)` equals `want`, every way, and went through BLAS or not;
    returns how many products of the call BLAS computed."""
    before = _blas.calls()
    got = f(*values)
    count = _blas.calls() - before
    assert (count > 0) == via_blas, "BLAS path" if via_blas else "loops path"
    got = got if isinstance(got, list) else [got]
    want = want if isinstance(want, list) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=_tol(dtype), atol=_tol(dtype) * np.abs(w).max())
    ThreeWay(f, VARIANTS).check(values, rtol=_tol(dtype), atol=_tol(dtype))
    return count


# (name, build(A, B) on the symbolic inputs, the same on arrays, A's shape, B's shape, through BLAS)
MATRIX_CASES = [
    ("A @ B", lambda a, b: T.dot(a, b), lambda a, b: a @ b, (70, 40), (40, 50), True),
    ("A.T @ B", lambda a, b: T.dot(a.T, b), lambda a, b: a.T @ b, (40, 70), (40, 50), True),
    ("A @ B.T", lambda a, b: T.dot(a, b.T), lambda a, b: a @ b.T, (70, 40), (50, 40), True),
    ("A.T @ B.T", lambda a, b: T.dot(a.T, b.T), lambda a, b: a.T @ b.T, (40, 70), (50, 40), True),
    # rows two apart: a leading dimension BLAS takes
    ("A[::2] @ B", lambda a, b: T.dot(a[::2], b), lambda a, b: a[::2] @ b, (140, 40), (40, 50), True),
    # an offset view
    ("A[:, 3:43] @ B", lambda a, b: T.dot(a[:, 3:43], b), lambda a, b: a[:, 3:43] @ b, (70, 50), (40, 50), True),
    # thin products (a row of one, an outer product): outside a loop, BLAS
    # too (inside one, the generated loops: test_small_products_in_a_loop_stay_loops)
    ("row @ B", lambda a, b: T.dot(a[2:3], b), lambda a, b: a[2:3] @ b, (5, 300), (300, 300), True),
    ("col @ row", lambda a, b: T.dot(a[:, :1], b[:1]), lambda a, b: a[:, :1] @ b[:1], (300, 4), (4, 300), True),
    ("small", lambda a, b: T.dot(a, b), lambda a, b: a @ b, (10, 10), (10, 10), True),
    # 16 rows, columns and terms: BLAS
    ("16 x 16 @ 16 x 256", lambda a, b: T.dot(a, b), lambda a, b: a @ b, (16, 16), (16, 256), True),
    # reversed rows: the builder copies them, BLAS takes the copy
    ("A[::-1] @ B", lambda a, b: T.dot(a[::-1], b), lambda a, b: a[::-1] @ b, (70, 40), (40, 50), True),
]
# Layouts BLAS does not take (a column step): BLAS on a row-major copy.
DECLINED_CASES = [
    ("A[:, ::2] @ B", lambda a, b: T.dot(a[:, ::2], b), lambda a, b: a[:, ::2] @ b, (70, 80), (40, 50)),
    ("A @ B[:, ::3]", lambda a, b: T.dot(a, b[:, ::3]), lambda a, b: a @ b[:, ::3], (70, 40), (40, 150)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", MATRIX_CASES, ids=[c[0] for c in MATRIX_CASES])
def test_matrix_products_through_blas(case, dtype):
    name, build, numpy_build, sa, sb, via_blas = case
    a, b = T.matrix("a", dtype=dtype), T.matrix("b", dtype=dtype)
    f = theano.function([a, b], build(a, b))
    va, vb = RNG.standard_normal(sa).astype(dtype), RNG.standard_normal(sb).astype(dtype)
    _run(f, [va, vb], numpy_build(va, vb), dtype, via_blas)


@pytest.mark.parametrize("case", DECLINED_CASES, ids=[c[0] for c in DECLINED_CASES])
def test_layouts_blas_cannot_read_go_through_a_copy(case):
    name, build, numpy_build, sa, sb = case
    a, b = T.matrix("a"), T.matrix("b")
    f = theano.function([a, b], build(a, b))
    va, vb = RNG.standard_normal(sa), RNG.standard_normal(sb)
    _run(f, [va, vb], numpy_build(va, vb), "float64", via_blas=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matrix_vector_products_stay_loops(dtype):
    A, v, w = T.matrix("A", dtype=dtype), T.vector("v", dtype=dtype), T.vector("w", dtype=dtype)
    f = theano.function([A, v, w], [T.dot(A, v), T.dot(w, A), T.dot(A.T, w), T.dot(w[::3], A[::3]),
                                    T.dot(A, v[::-1])])
    vA = RNG.standard_normal((600, 330)).astype(dtype)
    vv, vw = RNG.standard_normal(330).astype(dtype), RNG.standard_normal(600).astype(dtype)
    want = [vA @ vv, vw @ vA, vA.T @ vw, vw[::3] @ vA[::3], vA @ vv[::-1]]
    _run(f, [vA, vv, vw], want, dtype, via_blas=False)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_batched_dot_and_its_gradient(dtype):
    """The LSTM tutorial's dot(state_below, W) and its gradient (issue 23):
    the leading dimensions collapse, and W.T is read in place."""
    x, W = T.tensor3("x", dtype=dtype), T.matrix("W", dtype=dtype)
    cost = (T.dot(x, W) ** 2).sum()
    f = theano.function([x, W], T.grad(cost, [W, x]))
    vx = RNG.standard_normal((9, 16, 32)).astype(dtype)
    vW = (RNG.standard_normal((32, 256)) * 0.1).astype(dtype)
    dy = 2 * (vx @ vW)
    want = [vx.reshape(-1, 32).T @ dy.reshape(-1, 256), dy @ vW.T]
    assert _run(f, [vx, vW], want, dtype, via_blas=True) == 3  # y, d/dW, d/dx
    # A transposed tensor3 (the builder makes it contiguous first).
    g = theano.function([x, W], T.dot(x.dimshuffle(1, 0, 2), W))
    _run(g, [vx, vW], np.swapaxes(vx, 0, 1) @ vW, dtype, via_blas=True)


def test_batched_rnn_steps_and_their_gradient():
    """A batched RNN's ``h W`` (16 x 64 times 64 x 64) in every step, and the
    gradient's products, through BLAS; results agree with finite differences
    and every other way."""
    W, x = T.matrix("W"), T.tensor3("x")
    h, _ = theano.scan(lambda x_t, h: T.tanh(x_t + T.dot(h, W)), sequences=x, outputs_info=T.zeros((16, 64)))
    cost = h.sum()
    f = theano.function([W, x], [cost, *T.grad(cost, [W, x])])
    vW, vx = RNG.standard_normal((64, 64)) * 0.1, RNG.standard_normal((7, 16, 64))

    def numpy_cost(W):
        hh, total = np.zeros((16, 64)), 0.0
        for t in range(7):
            hh = np.tanh(vx[t] + hh @ W)
            total += hh.sum()
        return total

    before = _blas.calls()
    got = f(vW, vx)
    assert _blas.calls() - before >= 7  # the forward steps at least
    assert np.isclose(got[0], numpy_cost(vW), rtol=1e-12)
    E = RNG.standard_normal((64, 64))
    eps = 1e-6
    fd = (numpy_cost(vW + eps * E) - numpy_cost(vW - eps * E)) / (2 * eps)
    assert np.isclose(np.sum(got[1] * E), fd, rtol=1e-6)
    ThreeWay(f, VARIANTS).check([vW, vx], rtol=1e-10, atol=1e-12)


def test_blas_off_by_option():
    a, b = T.matrix("a"), T.matrix("b")
    f = theano.function([a, b], T.dot(a, b))
    va, vb = RNG.standard_normal((70, 40)), RNG.standard_normal((40, 50))
    off = mlir_scan.compile(f.ir, blas=False)
    before = _blas.calls()
    np.testing.assert_allclose(off.f(va, vb), va @ vb, rtol=1e-12)
    assert _blas.calls() == before
    assert "mlir_scan_blas" not in off.ir("llvm") and "mlir_scan_gemm" not in off.ir("llvm")
    with pytest.raises(TypeError, match="blas must be True or False"):
        mlir_scan.compile(f.ir, blas="no")


@pytest.mark.parametrize("batch", [4, 10])
def test_small_products_in_a_loop_stay_loops(batch):
    """Inside a scan's steps, a thin product (4 rows) or one below the work
    threshold (10 x 10 x 10) runs the generated loops, not BLAS."""
    W, x, h0 = T.matrix("W"), T.tensor3("x"), T.matrix("h0")
    h, _ = theano.scan(lambda x_t, h: T.tanh(x_t + T.dot(h, W)), sequences=x, outputs_info=h0)
    f = theano.function([W, x, h0], h[-1])
    vW, vx = RNG.standard_normal((10, 10)) * 0.3, RNG.standard_normal((6, batch, 10))
    hh = RNG.standard_normal((batch, 10))
    vh0 = hh.copy()
    for t in range(6):
        hh = np.tanh(vx[t] + hh @ vW)
    _run(f, [vW, vx, vh0], hh, "float64", via_blas=False)
    lowered = f.program.ir("llvm")
    assert "mlir_scan_blas_gemm" in lowered and "mlir_scan_gemm" not in lowered


def test_mismatched_sizes_still_raise():
    a, b = T.matrix("a"), T.matrix("b")
    f = theano.function([a, b], T.dot(a, b))
    with pytest.raises(ValueError, match="not aligned"):
        f(np.ones((300, 300)), np.ones((299, 300)))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_empty_products(dtype):
    """No terms (k = 0: zeros), no rows, no columns: outside a loop the
    library computes them whatever their size."""
    a, b = T.matrix("a", dtype=dtype), T.matrix("b", dtype=dtype)
    f = theano.function([a, b], T.dot(a, b))
    for sa, sb in [((70, 0), (0, 50)), ((0, 40), (40, 50)), ((70, 40), (40, 0))]:
        va, vb = RNG.standard_normal(sa).astype(dtype), RNG.standard_normal(sb).astype(dtype)
        got = f(va, vb)
        assert got.shape == (sa[0], sb[1])
        np.testing.assert_array_equal(got, np.zeros((sa[0], sb[1]), dtype))


_NO_BLAS_CHILD = """
import numpy as np
import mlir_scan as theano
from mlir_scan import _blas
from mlir_scan import tensor as T
assert not _blas.available()
rng = np.random.default_rng(5)
for dtype in ("float64", "float32"):
    a, b, x = T.matrix("a", dtype=dtype), T.matrix("b", dtype=dtype), T.tensor3("x", dtype=dtype)
    f = theano.function([a, b, x], [T.dot(a, b), T.dot(a[:, ::2], b[::2, ::3]), T.dot(a.T, a[::-1]),
                                     T.dot(x, b), T.dot(a[:, :0], b[:0])])
    va, vb = rng.standard_normal((70, 40)).astype(dtype), rng.standard_normal((40, 50)).astype(dtype)
    vx = rng.standard_normal((3, 5, 40)).astype(dtype)
    want = [va @ vb, va[:, ::2] @ vb[::2, ::3], va.T @ va[::-1], vx @ vb, np.zeros((70, 50), dtype)]
    tol = 1e-12 if dtype == "float64" else 2e-5
    for g, w in zip(f(va, vb, vx), want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, np.abs(w).max()))
assert _blas.calls() == 0
print("ok")
"""


def test_products_without_blas_run_the_librarys_loops():
    """With BLAS off (``MLIR_SCAN_BLAS=0``), the products outside loops that
    the program has no loops of its own for run in the run-time library's:
    transposed, strided, reversed and collapsed operands, and no terms."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, MLIR_SCAN_BLAS="0")
    done = subprocess.run([sys.executable, "-c", _NO_BLAS_CHILD], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
