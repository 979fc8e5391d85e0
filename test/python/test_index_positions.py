"""Positions: results that depend on where an element is, compared with NumPy.

Some ops compute an element from its own position (``arange``, ``eye``,
``diag``, the triangles, ``argmax``, gathers of strided, reversed or advanced
indices, the counters of random draws), and several lowerings run an op on a
part of its iteration space: ``scan-parallelize-linalg`` runs parts of one
dimension on subviews (its parts' ``linalg.index`` once restarted at 0, and
``T.arange(300000)`` was 0..149999 twice on two cores), its reduction split
(``split-reductions``) runs parts of a sum's rows into rows of partial sums,
``scan-vectorize-linalg-loops`` leaves a scalar remainder after its vector
loop, ``scan-order-linalg-loops`` interchanges loops, ``convert-scan-to-scf``
runs the steps in blocks of 64 (a sequence's producer recomputed a block of
rows at a time, sums of a nitsot's rows added block by block), the scan
rewrites read sequences at taps, backwards or from a slice, and keep only the
last rows of an output (ring buffers). Each test here puts positions through
one of those at sizes around vector widths (1, 7, 16, 17, 33), the blocks (63,
64, 65, ...) and the parallel split (300,000 elements, 700 x 700 matrices).

The split only happens when the op is large enough and the process has several
threads: ``test_split_parts_see_the_whole_ops_positions`` runs its programs in
a child process with ``MLIR_SCAN_NUM_THREADS=3`` (as test_parallel.py does),
so that they run in parts on any machine, and checks that they were split
(chunk functions in the program, the thread pool started by the first one).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import mlir_scan
import mlir_scan as theano
from mlir_scan import tensor as T

WIDTHS = (1, 7, 16, 17, 33)
DTYPES = ("float32", "float64", "int64")


def _same(got, want, what=""):
    """Exact equality of shape and values (the values here are integers, or sums
    of a few products of small integers, exact in every dtype used)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert np.array_equal(got, want), (what, got.ravel()[:8], want.ravel()[:8])


# --------------------------------------------------------------------------- #
# Ops that read their own position
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("dtype", DTYPES)
def test_aranges_at_vector_widths_and_a_split_size(dtype):
    n = T.lscalar("n")
    f = theano.function([n], [T.arange(n, dtype=dtype), T.arange(3, n, 2, dtype=dtype),
                              T.arange(n, 0, -1, dtype=dtype), T.arange(n, dtype=dtype)[::-1] + 1])
    for size in (0, *WIDTHS, 300001):
        got = f(size)
        want = [np.arange(size, dtype=dtype), np.arange(3, size, 2, dtype=dtype),
                np.arange(size, 0, -1, dtype=dtype), np.arange(size, dtype=dtype)[::-1] + 1]
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, (size, i))
            assert g.dtype == w.dtype


def test_float_aranges_with_fractional_steps():
    a, b, c = T.dscalars("a", "b", "c")
    for dtype in ("float32", "float64"):
        f = theano.function([a, b, c], T.arange(a, b, c, dtype=dtype))
        for start, stop, step in ((0.0, 1.0, 0.1), (0.5, 1000.3, 0.7), (10.0, -3.0, -0.25),
                                  (1e6, 1e6 + 3e5, 1.0)):
            got, want = f(start, stop, step), np.arange(start, stop, step, dtype=dtype)
            assert got.shape == want.shape, (dtype, start, stop, step)
            # (NumPy fills start + i * (second - first); the op computes start + i * step)
            np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("k", [-3, -1, 0, 2, 20])
def test_eye_diag_diagonal_and_triangles(k):
    n, m = T.lscalars("n", "m")
    x, v = T.dmatrix("x"), T.dvector("v")
    f = theano.function([n, m, x, v], [T.eye(n, m, k), T.diag(v, k), T.diagonal(x, k),
                                       T.slinalg.tril(x, k), T.slinalg.triu(x, k), x * T.eye(n, m, k)])
    for rows, cols in ((1, 1), (7, 17), (17, 7), (16, 33), (33, 16), (700, 700)):
        X = np.arange(rows * cols, dtype=float).reshape(rows, cols) - 5.0
        V = np.arange(cols, dtype=float) + 1.0
        got = f(rows, cols, X, V)
        want = [np.eye(rows, cols, k), np.diag(V, k), np.diagonal(X, k), np.tril(X, k), np.triu(X, k),
                X * np.eye(rows, cols, k)]
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, (rows, cols, k, i))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
def test_argmax_and_argmin_count_positions_from_the_start(axis):
    # Every maximum planted at a position no part of the loops starts at, ties
    # going to the first: a restart of a part's counter would move them.
    x = T.dmatrix("x")
    f = theano.function([x], [T.argmax(x, axis=axis), T.argmin(x, axis=axis),
                              T.argmax(x[:, ::-1] * 1.0, axis=axis)])
    rng = np.random.default_rng(0)
    for shape in ((1, 1), (7, 17), (17, 7), (33, 16), (700, 700), (300, 1100)):
        X = rng.integers(0, 4, size=shape).astype(float)
        got = f(X)
        ax = None if axis == (0, 1) else axis  # (over every axis: NumPy's flat position)
        want = [np.argmax(X, axis=ax), np.argmin(X, axis=ax), np.argmax(X[:, ::-1], axis=ax)]
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, (shape, axis, i))


def test_gathers_of_strided_reversed_and_advanced_indices():
    v, x = T.dvector("v"), T.lmatrix("x")
    length = v.shape[0]
    f = theano.function([v, x], [
        v[::-1], v[1::3], v[-2::-3], T.roll(v, 5), T.roll(v, -3), T.repeat(v, 3), T.tile(v, (3,)),
        T.concatenate([v, v[::-1] * 2.0]), v[(T.arange(length) * 7) % length], v * T.arange(length),
        x.T[::-1, 1:], x.flatten()[::-1], x.T.reshape((x.shape[0] * x.shape[1],)),
        T.arange(x.shape[0] * x.shape[1]).reshape((x.shape[0], x.shape[1])) + x,
        T.set_subtensor(v[1:], v[:-1]), T.inc_subtensor(v[2:], v[:-2]), T.set_subtensor(v[::-1][1:], v[:-1]),
    ])
    for size in (*WIDTHS, 300001):
        V = np.arange(size, dtype=float) * 1.5 + 1.0
        rows = {1: 1, 7: 7, 16: 4, 17: 17, 33: 3, 300001: 700}[size]
        X = np.arange(rows * 9, dtype=np.int64).reshape(rows, 9) * 3 - 11
        sr, inc, rev = V.copy(), V.copy(), V[::-1].copy()
        sr[1:] = V[:-1]
        inc[2:] += V[:-2]
        rev[1:] = V[:-1]  # (set_subtensor of a view of a view sets into v[::-1], as Theano does)
        want = [V[::-1], V[1::3], V[-2::-3], np.roll(V, 5), np.roll(V, -3), np.repeat(V, 3), np.tile(V, 3),
                np.concatenate([V, V[::-1] * 2]), V[(np.arange(size) * 7) % size], V * np.arange(size),
                X.T[::-1, 1:], X.ravel()[::-1], X.T.ravel(), np.arange(X.size).reshape(X.shape) + X,
                sr, inc, rev]
        for i, (g, w) in enumerate(zip(f(V, X), want)):
            _same(g, w, (size, i))


@pytest.mark.parametrize("dtype", ["int64", "int32", "float64"])
def test_products_and_sums_at_vector_remainders(dtype):
    # Generated loops (no BLAS for integers, nor for products this small): vector loops of 4 to 16
    # lanes, a scalar remainder, blocks of 4 rows and 4 reduction steps, each
    # with its remainder; small integers keep every float sum exact.
    A, B, v = T.matrix("A", dtype=dtype), T.matrix("B", dtype=dtype), T.vector("v", dtype=dtype)
    f = theano.function([A, B, v], [T.dot(A, B), T.dot(v, B), T.dot(A, v), A.sum(axis=0), A.sum(axis=1),
                                    (A * T.arange(A.shape[1], dtype=dtype)).sum(axis=1),
                                    A[:, ::-1] * T.arange(A.shape[1], dtype=dtype)])
    rng = np.random.default_rng(0)
    for m in WIDTHS:
        for k in WIDTHS:
            for n in (1, 5, 16, 17, 33):
                a = rng.integers(-5, 6, size=(m, k)).astype(dtype)
                b = rng.integers(-5, 6, size=(k, n)).astype(dtype)
                vv = rng.integers(-5, 6, size=k).astype(dtype)
                ar = np.arange(k, dtype=dtype)
                want = [a @ b, vv @ b, a @ vv, a.sum(0), a.sum(1), (a * ar).sum(1), a[:, ::-1] * ar]
                for i, (g, w) in enumerate(zip(f(a, b, vv), want)):
                    _same(g, w, (m, k, n, i))


def test_large_sums_over_rows_count_every_row_once():
    # (sums over >= 256 rows of a wide matrix: the reduction split of
    # scan-parallelize-linalg, parts of rows into rows of partial sums)
    A, v = T.lmatrix("A"), T.lvector("v")
    f = theano.function([A, v], [A.sum(axis=0), T.dot(v, A), (A * T.arange(A.shape[0])[:, None]).sum(axis=0),
                                 T.dot(v[::-1], A[::-1, ::-1])])
    for rows in (255, 256, 257, 1025):
        for cols in (1, 17, 700):
            rng = np.random.default_rng(rows + cols)
            a, vv = rng.integers(-9, 10, size=(rows, cols)), rng.integers(-9, 10, size=rows)
            want = [a.sum(0), vv @ a, (a * np.arange(rows)[:, None]).sum(0), vv[::-1] @ a[::-1, ::-1]]
            for i, (g, w) in enumerate(zip(f(a, vv), want)):
                _same(g, w, (rows, cols, i))


_INDEXED_ROW_SUM = """
func.func @f(%w: tensor<?x?xi64>) -> tensor<?xi64> {
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %n = tensor.dim %w, %c1 : tensor<?x?xi64>
  %e = tensor.empty(%n) : tensor<?xi64>
  %f = linalg.fill ins(%z : i64) outs(%e : tensor<?xi64>) -> tensor<?xi64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                       iterator_types = ["reduction", "parallel"]} ins(%w : tensor<?x?xi64>) outs(%f : tensor<?xi64>) {
  ^bb0(%a: i64, %o: i64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %p = arith.muli %a, %ii : i64
    %q = arith.addi %p, %jj : i64
    %s = arith.addi %o, %q : i64
    linalg.yield %s : i64
  } -> tensor<?xi64>
  return %r : tensor<?xi64>
}
"""


def test_a_sum_that_reads_the_index_of_its_reduction():
    # sum_i (W[i, j] * i + j): no builder op reads the index of a sum's rows,
    # hand-written IR can. Split along the rows (>= 256 of them) each part
    # counts i from its first row; split along j, each from its first column.
    f = mlir_scan.compile(_INDEXED_ROW_SUM).f
    for rows, cols in ((5, 3), (255, 33), (256, 1100), (300, 700), (1025, 700)):
        W = np.random.default_rng(rows).integers(-9, 10, size=(rows, cols))
        _same(f(W), (W * np.arange(rows)[:, None]).sum(0) + rows * np.arange(cols), (rows, cols))


_GOLDEN, _M1, _M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _uniform_reference(state: int, size: int, dtype: str) -> np.ndarray:
    """What random.py documents: element ``j`` of a draw from state ``s`` is
    ``mix(s + (j + 1) * G)`` (SplitMix64's finalizer), whose top 53 (f64) or
    24 (f32) bits make the uniform float."""
    with np.errstate(over="ignore"):
        z = np.uint64(state % 2**64) + (np.arange(size, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z = z ^ (z >> np.uint64(31))
    if dtype == "float64":
        return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return (z >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_draws_are_the_counters_of_their_positions(dtype):
    # A draw's element is a function of its flat (row-major) position: a part
    # of a split draw, or a row of a matrix draw, must not count from 0.
    for size in (*WIDTHS, 300001):
        rows = size // 7 + 1
        srng = T.shared_randomstreams.RandomStreams(seed=size)
        u, m = srng.uniform((size,), dtype=dtype), srng.uniform((rows, 7), dtype=dtype)
        f = theano.function([], [u, m], no_default_updates=True)
        got_u, got_m = f()
        _same(got_u, _uniform_reference(int(u.rng.get_value()), size, dtype), size)
        _same(got_m, _uniform_reference(int(m.rng.get_value()), rows * 7, dtype).reshape(rows, 7), (rows, 7))


# --------------------------------------------------------------------------- #
# Scans: taps, steps, blocks of steps, kept rows
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("backwards", [False, True])
def test_sequence_taps_of_an_arange(backwards):
    # Past and future taps of a sequence an arange computes (pushed out of the
    # loop by scan-push-out-seq; a nitsot that is just one tap is forwarded as
    # a slice of the sequence); each unused tap dropped (scan-remove-unused
    # moves the window). Going backwards runs the same steps in reverse order.
    n = T.lscalar("n")
    s = T.arange(n, dtype="float64") * 1.5 + 1.0
    taps = dict(input=s, taps=[-2, 0, 3])
    outs = [theano.scan(step, sequences=taps, go_backwards=backwards)[0]
            for step in (lambda a, b, c: a + 10 * b + 100 * c, lambda a, b, c: b,
                         lambda a, b, c: c * 2 - b, lambda a, b, c: a * c)]
    f = theano.function([n], outs)
    for size in (6, 7, 16, 17, 33, 64, 65, 69, 70, 133):
        x = np.arange(size, dtype=float) * 1.5 + 1.0
        t = np.arange(size - 5)
        a, b, c = x[t], x[t + 2], x[t + 5]
        want = [a + 10 * b + 100 * c, b, c * 2 - b, a * c]
        if backwards:
            want = [w[::-1] for w in want]
        for i, (g, w) in enumerate(zip(f(size), want)):
            _same(g, w, (size, i))


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_steps_aranges_and_eye_rows(dtype):
    # The body builds position-dependent rows from the step's value: arange(k) * i,
    # arange(i, i + k), the row of eye(k) at i % k, a reversed row, its argmax.
    k, n = T.lscalars("k", "n")
    x = T.matrix("x", dtype=dtype)

    def step(i, row, acc):
        a = T.arange(k, dtype=dtype) * T.cast(i, dtype) + T.arange(i, i + k, dtype=dtype)
        e = T.cast(T.eye(k)[i % k], dtype)
        return acc + a + e + row[::-1] + T.cast(T.argmax(row), dtype), T.argmax(x[:, ::-1], axis=0) + i

    (accs, ams), _ = theano.scan(step, sequences=[T.arange(n), x],
                                 outputs_info=[T.zeros((k,), dtype=dtype), None])
    f = theano.function([n, k, x], [accs, ams, accs[-1]])
    rng = np.random.default_rng(1)
    for steps, width in ((1, 1), (3, 7), (17, 16), (40, 33), (70, 17)):
        X = rng.integers(-4, 5, size=(steps, width)).astype(dtype)
        acc, A, M = np.zeros(width, dtype), [], []
        for i in range(steps):
            acc = acc + np.arange(width) * i + np.arange(i, i + width) + np.eye(width)[i % width] + X[i][::-1] \
                + np.argmax(X[i])
            A.append(acc.astype(dtype))
            M.append(np.argmax(X[:, ::-1], axis=0) + i)
        got = f(steps, width, X)
        _same(got[0], np.array(A), "accs")
        _same(got[1], np.array(M), "argmaxes")
        _same(got[2], A[-1], "last")


def test_wide_tap_windows_and_the_last_rows_kept():
    # A scalar mitsot whose window (10 rows) is too wide for registers, and a
    # tensor mitsot: only the last rows read (scan-save-mem keeps a ring of
    # them, gathered oldest first after the loop); too few steps for a tail
    # read is an IndexError, as in NumPy.
    n = T.lscalar("n")
    x0, X0, s = T.dvector("x0"), T.dmatrix("X0"), T.dmatrix("s")
    o, _ = theano.scan(lambda a, b, c: a * 0.5 + b - 0.25 * c,
                       outputs_info=dict(initial=x0, taps=[-10, -7, -1]), n_steps=n)
    f_all = theano.function([x0, n], [o, o[-1], o[-4:], o[-10]])
    f_tail = theano.function([x0, n], [o[-1], o[-4:], o[-10]])
    f_short = theano.function([x0, n], [o[-1], o[-4:]])
    o2, _ = theano.scan(lambda s_t, a, b: T.tanh(a * 0.5 - b + s_t), sequences=T.exp(s),
                        outputs_info=dict(initial=X0, taps=[-4, -2]))
    g_tail = theano.function([X0, s], [o2[-1], o2[-3:], o2.sum(axis=0)])
    rng = np.random.default_rng(3)
    for steps in range(0, 24):
        init = rng.normal(size=10)
        rows = list(init)
        for _ in range(steps):
            rows.append(rows[-10] * 0.5 + rows[-7] - 0.25 * rows[-1])
        H = np.array(rows[10:])
        if steps == 0:
            with pytest.raises(IndexError):
                f_short(init, steps)
        else:
            for i, (g, w) in enumerate(zip(f_short(init, steps), [H[-1], H[-4:]])):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{steps} steps, short {i}")
        if steps < 10:
            for fn in (f_all, f_tail):
                with pytest.raises(IndexError):
                    fn(init, steps)
            continue
        want = [H, H[-1], H[-4:], H[-10]]
        for i, (g, w) in enumerate(zip(f_all(init, steps), want)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{steps} steps, {i}")
        for i, (g, w) in enumerate(zip(f_tail(init, steps), want[1:])):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{steps} steps, tail {i}")
    for steps in (3, 5, 63, 64, 65, 130):
        init, S = rng.normal(size=(4, 3)), rng.normal(size=(steps, 3))
        rows = list(init)
        for t in range(steps):
            rows.append(np.tanh(rows[-4] * 0.5 - rows[-2] + np.exp(S[t])))
        H = np.array(rows[4:])
        for i, (g, w) in enumerate(zip(g_tail(init, S), [H[-1], H[-3:], H.sum(0)])):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{steps} steps, {i}")


def test_blocks_of_steps_read_the_right_rows():
    # A sequence computed by a row-wise op (recomputed 64 rows at a time, with
    # the window of its taps) and a nitsot read only by sums over slices of its
    # rows (added block by block, each block the part of the slice it holds).
    x, W, P = T.dmatrix("x"), T.dmatrix("W"), T.dmatrix("P")
    h0 = T.dvector("h0")
    lo, hi, at = T.lscalars("lo", "hi", "at")

    def step(a, b, c, h):
        hn = T.tanh(a + 0.5 * b - 0.25 * c + 0.1 * h)
        return hn, hn * b

    (hs, ys), _ = theano.scan(step, sequences=dict(input=T.tanh(T.dot(x, W)), taps=[-1, 0, 2]),
                              outputs_info=[h0, None])
    f_states = theano.function([x, W, h0], [hs, hs[-1], hs[-3:]])
    f_sums = theano.function([x, W, h0, P, lo, hi, at],
                             [ys[lo:hi].sum(axis=0), T.dot(ys[lo:hi].T, P[at:at + (hi - lo)]), hs[-1]])
    assert "step %c64" in f_states.program.ir("scf") and "step %c64" in f_sums.program.ir("scf")
    rng = np.random.default_rng(0)
    for size in (4, 5, 6, 64, 65, 66, 67, 68, 130, 131, 200):
        X, Wv, H0 = rng.normal(size=(size, 5)), rng.normal(size=(5, 4)), rng.normal(size=4)
        Pv = rng.normal(size=(size + 5, 2))
        S = np.tanh(X @ Wv)
        h, H, Y = H0, [], []
        for t in range(size - 3):
            h = np.tanh(S[t] + 0.5 * S[t + 1] - 0.25 * S[t + 3] + 0.1 * h)
            H.append(h)
            Y.append(h * S[t + 1])
        H, Y = np.array(H), np.array(Y)
        for i, (g, w) in enumerate(zip(f_states(X, Wv, H0), [H, H[-1], H[-3:]])):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{size}: {i}")
        steps = size - 3
        for a, b, c in ((0, steps, 0), (1, steps - 1, 2), (steps // 2, steps, 1), (2, 3, 0), (60, 70, 3)):
            if not 0 <= a <= b <= steps:
                continue
            want = [Y[a:b].sum(0), Y[a:b].T @ Pv[c:c + b - a], H[-1]]
            for i, (g, w) in enumerate(zip(f_sums(X, Wv, H0, Pv, a, b, c), want)):
                np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11, err_msg=f"{size} {(a, b, c)}: {i}")


# --------------------------------------------------------------------------- #
# The parallel split, in parts whatever this machine's cores
# --------------------------------------------------------------------------- #

_SPLIT_SCRIPT = r"""
import os
import numpy as np, mlir_scan as theano
from mlir_scan import tensor as T

def threads():
    return len(os.listdir("/proc/self/task"))

def split(f):
    # the program has chunk functions: its large ops run in parts
    assert "__mlir_scan_chunk" in f.program.ir("llvm"), f.program.ir("bufferized")[:3000]

G, M1, M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)

def uniform_reference(state, size, dtype):  # (as _uniform_reference in the test file)
    with np.errstate(over="ignore"):
        z = np.uint64(state % 2**64) + (np.arange(size, dtype=np.uint64) + np.uint64(1)) * G
        z = (z ^ (z >> np.uint64(30))) * M1
        z = (z ^ (z >> np.uint64(27))) * M2
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53

def same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and np.array_equal(got, want), (what, got.ravel()[:8], want.ravel()[:8])

n = T.lscalar("n")
for dtype in ("float32", "float64", "int64"):
    f = theano.function([n], [T.arange(n, dtype=dtype), T.arange(3, n, 2, dtype=dtype),
                              T.arange(n, 0, -1, dtype=dtype)])
    split(f)
    if dtype == "float32":
        # the pool's workers start at the first loop run in parts
        f(5)
        before = threads()
        f(300001)
        print("workers started:", threads() - before)
    for N in (300001, 1000003):
        for i, (g, w) in enumerate(zip(f(N), [np.arange(N, dtype=dtype), np.arange(3, N, 2, dtype=dtype),
                                             np.arange(N, 0, -1, dtype=dtype)])):
            same(g, w, (dtype, N, i))

x = T.dmatrix("x")
m = T.lscalar("m")
f = theano.function([n, m, x], [T.eye(n, m, 3) + x, T.slinalg.tril(x, -2), T.slinalg.triu(x, 5),
                                T.arange(n * m).reshape((n, m)) + x, x * T.arange(m)])
split(f)
for rows, cols in ((700, 700), (513, 1100)):
    X = np.arange(rows * cols, dtype=float).reshape(rows, cols) % 13
    want = [np.eye(rows, cols, 3) + X, np.tril(X, -2), np.triu(X, 5), np.arange(rows * cols).reshape(rows, cols) + X,
            X * np.arange(cols)]
    for i, (g, w) in enumerate(zip(f(rows, cols, X), want)):
        same(g, w, (rows, cols, i))

f = theano.function([x], [T.argmax(x, axis=0), T.argmax(x, axis=1), T.argmin(x, axis=1)])
split(f)
rng = np.random.default_rng(0)
X = rng.integers(0, 3, size=(700, 700)).astype(float)
X[np.arange(700), (np.arange(700) * 37) % 700] = 9.0
for i, (g, w) in enumerate(zip(f(X), [X.argmax(0), X.argmax(1), X.argmin(1)])):
    same(g, w, ("argmax", i))

A, v = T.lmatrix("A"), T.lvector("v")
f = theano.function([A, v], [(A * T.arange(A.shape[0])[:, None]).sum(axis=0), T.dot(v, A)])
split(f)
a, vv = rng.integers(-9, 10, size=(1025, 700)), rng.integers(-9, 10, size=1025)
for i, (g, w) in enumerate(zip(f(a, vv), [(a * np.arange(1025)[:, None]).sum(0), vv @ a])):
    same(g, w, ("row sums", i))

# steps whose rows are position-dependent: arange(k) * i, arange(i, i + k)
k = T.lscalar("k")
rows, _ = theano.scan(lambda i, k: T.arange(k) * i + T.arange(i, i + k), sequences=T.arange(3), non_sequences=k)
g = theano.function([k], rows)
split(g)
same(g(300000), np.arange(3)[:, None] * np.arange(300000) + np.arange(3)[:, None] + np.arange(300000), "steps")

# random draws: counters from the flat position; the same numbers on any
# number of threads (printed, compared with the one-thread run)
srng = T.shared_randomstreams.RandomStreams(seed=11)
du, dz, db = srng.uniform((300000,)), srng.normal((600, 500)), srng.binomial((300000,), n=5, p=0.3)
r = theano.function([], [du, dz, db], no_default_updates=True)
split(r)
u, z, b = r()
same(u, uniform_reference(int(du.rng.get_value()), 300000, "float64"), "uniform")
assert not np.array_equal(z[:300], z[300:])
print(repr([float(z.sum()), int(b.sum()), float(z[-1, -1]), int(b[-7:].sum())]))
"""


def _run_split_script(threads: int) -> str:
    # (one tier: no background compile threads besides the pool's workers)
    env = dict(os.environ, MLIR_SCAN_NUM_THREADS=str(threads), MLIR_SCAN_TIERED="0")
    result = subprocess.run([sys.executable, "-c", _SPLIT_SCRIPT], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


def test_split_parts_see_the_whole_ops_positions():
    # Three threads: every large op below runs in parts (in three), each on
    # subviews starting past 0 (the pool's two workers start with the first
    # split loop: proof that the parts ran); one thread runs each op whole.
    # Both must give NumPy's numbers, and the same random draws.
    three = _run_split_script(3)
    one = _run_split_script(1)
    assert three.startswith("workers started: 2\n"), three
    assert one.startswith("workers started: 0\n"), one
    assert three.splitlines()[1:] == one.splitlines()[1:], (three, one)


# --------------------------------------------------------------------------- #
# The GPU lowering (kernels emulated on the CPU)
# --------------------------------------------------------------------------- #


def test_gpu_kernels_use_the_loops_positions():
    # convert-linalg-to-parallel-loops, scf-parallel-loop-fusion and the
    # mapping of the loops onto blocks and threads (grid: thread i is
    # iteration i; block: iterations strided by the block's threads), run by
    # scan-gpu-emulate.
    v, x, n = T.dvector("v"), T.dmatrix("x"), T.lscalar("n")
    y = v * 2.0 + 1.0
    f = theano.function([v, x, n], [
        y[1:] - y[:-1], y[::-1] + y, T.roll(y, 3) * y, T.arange(n, dtype="float64")[::-1] * T.arange(n),
        (x * 3.0)[::-1, 1:] + (x * 3.0)[:, :0:-1], T.argmax(x * T.arange(x.shape[1]), axis=1),
        (x * 2.0).T[:, ::-1] + x.T, T.eye(n, x.shape[1], 1) + x[:n],
    ])
    width = 37

    def step(i, acc):
        return acc + T.arange(width, dtype="float64") * i + T.arange(width, 0, -1, dtype="float64") + T.eye(width)[3]

    accs, _ = theano.scan(step, sequences=[T.arange(n)], outputs_info=[T.zeros((width,), dtype="float64")])
    g = theano.function([n], accs)
    rng = np.random.default_rng(0)
    for mode in ("auto", "kernel"):
        fe = mlir_scan.compile(f.ir, target="cuda", mode=mode, emulate=True).f
        ge = mlir_scan.compile(g.ir, target="cuda", mode=mode, emulate=True).f
        for size in (1, 7, 17, 33):
            V, X = rng.normal(size=size), rng.normal(size=(size, size + 2))
            Y = V * 2 + 1
            want = [Y[1:] - Y[:-1], Y[::-1] + Y, np.roll(Y, 3) * Y, np.arange(size)[::-1] * np.arange(size),
                    (X * 3)[::-1, 1:] + (X * 3)[:, :0:-1], np.argmax(X * np.arange(size + 2), axis=1),
                    (X * 2).T[:, ::-1] + X.T, np.eye(size, size + 2, 1) + X]
            for i, (got, w) in enumerate(zip(fe(V, X, size), want)):
                np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12, err_msg=f"{mode} {size}: {i}")
        for steps in (0, 1, 5, 70):
            acc, rows = np.zeros(width), []
            for i in range(steps):
                acc = acc + np.arange(width) * i + np.arange(width, 0, -1) + np.eye(width)[3]
                rows.append(acc)
            _same(ge(steps), np.array(rows).reshape(steps, width), (mode, steps))
