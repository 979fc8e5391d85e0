"""Linear algebra (``T.nlinalg``, ``T.slinalg``, :mod:`mlir_scan.builder.ops.linalg`) and its PyTensor translations.

Every value is compared with NumPy/SciPy, every gradient with central
differences of the compiled cost (``gradcheck.check_grad``), and the results
on bad input (singular, not positive-definite) with PyTensor's default mode.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mlir_scan as ms
from mlir_scan import tensor as T
from gradcheck import check_grad

sl = pytest.importorskip("scipy.linalg")  # (installed with PyTensor, in the test extra)

N, S = T.nlinalg, T.slinalg
RNG = np.random.default_rng(20261128)


def _close(got, want, rtol=1e-10, atol=1e-10):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _general(n, *batch):
    return RNG.normal(size=batch + (n, n)) + n * np.eye(n)


def _spd(n, *batch):
    m = RNG.normal(size=batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


# -- values against NumPy / SciPy -----------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 7])
def test_general_ops_against_numpy(n):
    A, b, B = T.dmatrix("A"), T.dvector("b"), T.dmatrix("B")
    a = RNG.normal(size=(n, n))
    bv, Bv = RNG.normal(size=n), RNG.normal(size=(n, 3))
    sign, logabs = N.slogdet(A)
    f = ms.function([A, b, B], [N.matrix_inverse(A), N.det(A), sign, logabs, S.solve(A, b), S.solve(A, B),
                                S.solve(A, b, transposed=True), S.solve(A, B, assume_a="sym", lower=True),
                                S.solve(A, B, assume_a="tridiagonal")])
    got = f(a, bv, Bv)
    want = [np.linalg.inv(a), np.linalg.det(a), *np.linalg.slogdet(a), np.linalg.solve(a, bv),
            np.linalg.solve(a, Bv), np.linalg.solve(a.T, bv), sl.solve(a, Bv, assume_a="sym", lower=True),
            sl.solve(a, Bv, assume_a="tridiagonal")]
    for g, w in zip(got, want):
        _close(g, w, rtol=1e-9, atol=1e-9)


def test_pivoting_matches_lapack():
    # A zero in the leading position and a tiny pivot: without row exchanges the results are wrong.
    a = np.array([[0.0, 2.0, 1.0], [1e-14, 1.0, 3.0], [4.0, 1.0, 1.0]])
    A, b = T.dmatrix("A"), T.dvector("b")
    f = ms.function([A, b], [S.solve(A, b), N.det(A), N.matrix_inverse(A)])
    bv = np.array([1.0, 2.0, 3.0])
    x, d, inv = f(a, bv)
    _close(x, np.linalg.solve(a, bv), rtol=1e-12)
    _close(d, np.linalg.det(a), rtol=1e-12)
    _close(inv, np.linalg.inv(a), rtol=1e-12)


@pytest.mark.parametrize("lower", [True, False])
def test_triangular_cholesky_and_positive_definite(lower):
    n = 5
    A, C, b, B = T.dmatrix("A"), T.dmatrix("C"), T.dvector("b"), T.dmatrix("B")
    a, spd = RNG.normal(size=(n, n)) + 3 * np.eye(n), _spd(n)
    bv, Bv = RNG.normal(size=n), RNG.normal(size=(n, 2))
    c = sl.cholesky(spd, lower=lower)
    outs = [S.solve_triangular(A, b, lower=lower, trans=t, unit_diagonal=u) for t in (0, 1) for u in (False, True)]
    outs += [S.solve_triangular(A, B, lower=lower, trans="T"), S.cholesky(C, lower=lower),
             S.cho_solve((S.cholesky(C, lower=lower), lower), B), S.solve(C, b, assume_a="pos", lower=lower)]
    f = ms.function([A, C, b, B], outs)
    got = f(a, spd, bv, Bv)
    want = [sl.solve_triangular(a, bv, lower=lower, trans=t, unit_diagonal=u) for t in (0, 1) for u in (False, True)]
    want += [sl.solve_triangular(a, Bv, lower=lower, trans="T"), c, sl.cho_solve((c, lower), Bv),
             sl.solve(spd, bv, assume_a="pos", lower=lower)]
    for g, w in zip(got, want):
        _close(g, w, rtol=1e-9, atol=1e-12)


def test_only_the_named_triangle_is_read():
    n = 4
    spd = _spd(n)
    junk = spd + np.triu(RNG.normal(size=(n, n)), 1) * 100  # garbage above the diagonal
    C, b = T.dmatrix("C"), T.dvector("b")
    bv = RNG.normal(size=n)
    f = ms.function([C, b], [S.cholesky(C), S.solve(C, b, assume_a="pos", lower=True),
                             S.solve(C, b, assume_a="sym", lower=True), S.solve_triangular(C, b, lower=True)])
    got = f(junk, bv)
    want = [sl.cholesky(junk, lower=True), sl.solve(junk, bv, assume_a="pos", lower=True),
            sl.solve(junk, bv, assume_a="sym", lower=True), sl.solve_triangular(junk, bv, lower=True)]
    for g, w in zip(got, want):
        _close(g, w, rtol=1e-9, atol=1e-12)


def test_block_diag_matrix_power_and_float32():
    A, B, C = T.dmatrix("A"), T.dmatrix("B"), T.fmatrix("C")
    a, bb = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 1))
    c = (RNG.normal(size=(3, 3)) + 3 * np.eye(3)).astype("float32")
    f = ms.function([A, B, C], [S.block_diag(A, B, A), N.matrix_power(C, 3), N.matrix_power(C, -2),
                                N.matrix_inverse(C), N.det(C)])
    got = f(a, bb, c)
    _close(got[0], sl.block_diag(a, bb, a))
    assert got[1].dtype == got[3].dtype == np.float32 and np.asarray(got[4]).dtype == np.float32
    _close(got[1], np.linalg.matrix_power(c, 3), rtol=1e-5, atol=1e-5)
    _close(got[2], np.linalg.matrix_power(c.astype(float), -2), rtol=1e-4, atol=1e-5)
    _close(got[3], np.linalg.inv(c), rtol=1e-4, atol=1e-5)
    _close(got[4], np.linalg.det(c), rtol=1e-5)


def test_integer_inputs_become_float64():
    A = T.lmatrix("A")
    f = ms.function([A], [N.det(A), N.matrix_inverse(A)])
    a = np.array([[2, 1], [1, 3]])
    d, inv = f(a)
    assert inv.dtype == np.float64
    _close(d, 5.0)
    _close(inv, np.linalg.inv(a))


# -- batched forms ------------------------------------------------------------------------------


def test_batched_with_broadcasting():
    n = 3
    X, Y, b = T.dtensor3("X"), T.tensor("float64", (1, None, None), "Y"), T.dvector("b")
    x, y, bv = _general(n, 4), RNG.normal(size=(1, n, 2)), RNG.normal(size=n)
    spd = _spd(n, 4)
    Sp = T.dtensor3("Sp")
    sign, logabs = N.slogdet(X)
    f = ms.function([X, Y, b, Sp], [S.solve(X, Y), S.solve(X, b, b_ndim=1), N.matrix_inverse(X), N.det(X), sign,
                                    logabs, S.cholesky(Sp), S.solve_triangular(X, Y, lower=True),
                                    S.cho_solve((S.cholesky(Sp), True), b, b_ndim=1), S.block_diag(X, Y),
                                    N.matrix_dot(X, X, Y)])
    got = f(x, y, bv, spd)
    chol = np.linalg.cholesky(spd)
    want = [np.linalg.solve(x, np.broadcast_to(y, (4, n, 2))), np.linalg.solve(x, bv[:, None])[..., 0],
            np.linalg.inv(x), np.linalg.det(x), *np.linalg.slogdet(x), chol,
            np.stack([sl.solve_triangular(m, y[0], lower=True) for m in x]),
            np.stack([sl.cho_solve((c, True), bv) for c in chol]),
            np.stack([sl.block_diag(m, y[0]) for m in x]), x @ x @ y]
    for g, w in zip(got, want):
        _close(g, w, rtol=1e-9, atol=1e-10)


def test_batch_sizes_that_differ_fail_at_run_time():
    X, Y = T.dtensor3("X"), T.dtensor3("Y")
    f = ms.function([X, Y], S.solve(X, Y))
    with pytest.raises(ValueError, match="batch dimension 0"):
        f(_general(2, 3), RNG.normal(size=(2, 2, 1)))


def test_diagonal_of_stacks():
    """``ops.linalg.diagonal``: NumPy's ``diagonal`` at any rank (batched Cholesky/LU diagonals)."""
    from mlir_scan.builder.ops.linalg import diagonal

    X, Y = T.dtensor3("X"), T.dtensor4("Y")
    x, y = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 3, 4, 5))
    cases = [(k, a1, a2) for k in (-1, 0, 2) for a1, a2 in ((1, 2), (0, 2), (2, 1))]
    got = ms.function([X, Y], [diagonal(X, *c) for c in cases] + [diagonal(Y, 1, 1, 3)])(x, y)
    for g, w in zip(got, [np.diagonal(x, *c) for c in cases] + [np.diagonal(y, 1, 1, 3)]):
        _close(g, w)
    check_grad(lambda X: (diagonal(X, 1, 1, 2) ** 2).sum(), [x])


# -- shapes and bad input -----------------------------------------------------------------------


def test_shape_errors():
    A, b = T.dmatrix("A"), T.dvector("b")
    f = ms.function([A, b], [S.solve(A, b), N.det(A)])
    with pytest.raises(ValueError, match="square"):
        f(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="right-hand side"):
        f(np.eye(3), np.ones(2))
    with pytest.raises(ValueError, match="square"):
        N.det(T.constant(np.ones((2, 3))))
    assert f(np.eye(2), np.ones(2))[1] == 1.0  # the function survives its errors
    g = ms.function([A], [N.det(A), N.matrix_inverse(A)])
    d, inv = g(np.zeros((0, 0)))
    assert d == 1.0 and inv.shape == (0, 0)  # NumPy: det of 0x0 is 1


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])
ZERO_DIAG = np.array([[0.0, 0.0], [1.0, 1.0]])


def _bad_input_cases(lib):
    """(name, builder-or-PyTensor graph maker, input values) for PyTensor's rules on bad input."""
    return [
        ("det", lambda A, b: lib["det"](A), SINGULAR),
        ("slogdet", lambda A, b: list(lib["slogdet"](A)), SINGULAR),
        ("solve", lambda A, b: lib["solve"](A, b), SINGULAR),
        ("solve_sym", lambda A, b: lib["solve"](A, b, assume_a="sym"), SINGULAR),
        ("solve_pos", lambda A, b: lib["solve"](A, b, assume_a="pos"), NOT_PD),
        ("solve_triangular", lambda A, b: lib["solve_triangular"](A, b, lower=True), ZERO_DIAG),
        ("cholesky", lambda A, b: lib["cholesky"](A), NOT_PD),
        ("cho_solve", lambda A, b: lib["cho_solve"]((A, True), b), ZERO_DIAG),
    ]


def _same_bad_result(got, want, name):
    """Equal results (NaN equal to NaN). PyTensor 2.38's Python ``Solve`` (its C mode's) returns NaN
    of `A`'s shape for a vector `b` (``np.full(a.shape, nan)``), not of its output type's; PyTensor 3's
    default mode (NUMBA) gives NaN of `b`'s shape, as the output type says, and so does mlir-scan."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape and got.ndim == 1 and want.ndim == 2 and np.isnan(want).all():
        assert np.isnan(got).all() and got.shape == want.shape[:1], name
        return
    np.testing.assert_array_equal(got, want, err_msg=name)


def _pt_lib():
    from pytensor.tensor import linalg as L

    return {k: getattr(L, k) for k in ("det", "slogdet", "solve", "solve_triangular", "cholesky", "cho_solve",
                                       "inv")}


BUILDER_LIB = {"det": N.det, "slogdet": N.slogdet, "solve": S.solve, "solve_triangular": S.solve_triangular,
               "cholesky": S.cholesky, "cho_solve": S.cho_solve, "inv": N.matrix_inverse}


def test_bad_input_gives_pytensors_results():
    pytensor = pytest.importorskip("pytensor")
    import pytensor.tensor as pt

    bv = np.array([1.0, 2.0])
    for (name, make_b, value), (_, make_p, _) in zip(_bad_input_cases(BUILDER_LIB), _bad_input_cases(_pt_lib())):
        A, b = T.dmatrix("A"), T.dvector("b")
        ours = ms.function([A, b], make_b(A, b), on_unused_input="ignore")(value, bv)
        pA, pb = pt.dmatrix("A"), pt.dvector("b")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = pytensor.function([pA, pb], make_p(pA, pb), on_unused_input="ignore")(value, bv)
        ours = ours if isinstance(ours, list) else [ours]
        ref = ref if isinstance(ref, list) else [ref]
        for o, r in zip(ours, ref):
            _same_bad_result(o, r, name)
    # A singular inverse raises, in both.
    A = T.dmatrix("A")
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        ms.function([A], N.matrix_inverse(A))(SINGULAR)
    pA = pt.dmatrix("A")
    with pytest.raises(np.linalg.LinAlgError):
        pytensor.function([pA], _pt_lib()["inv"](pA))(SINGULAR)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        ms.function([A], S.cholesky(A, on_error="raise"))(NOT_PD)
    _close(ms.function([A], S.cholesky(A, on_error="raise"))(np.eye(2) * 4), np.eye(2) * 2)


def test_nan_input_gives_nan_not_a_crash():
    A, b = T.dmatrix("A"), T.dvector("b")
    a = np.array([[np.nan, 1.0], [1.0, 2.0]])
    got = ms.function([A, b], [S.solve(A, b), N.det(A), S.cholesky(A)])(a, np.ones(2))
    assert all(np.isnan(g).all() for g in got)


# -- gradients against finite differences ---------------------------------------------------------


def _c(x):
    return np.ascontiguousarray(x)


W4 = RNG.normal(size=(4, 4))
B42 = RNG.normal(size=(4, 2))
GRAD_CASES = {
    "inv": (lambda A: (N.matrix_inverse(A) * W4).sum(), lambda: [_general(4)]),
    "det": (lambda A: N.det(A), lambda: [_general(4)]),
    "slogdet": (lambda A: N.slogdet(A)[1], lambda: [_general(4)]),
    "solve": (lambda A, b: (S.solve(A, b) ** 2).sum(), lambda: [_general(4), RNG.normal(size=4)]),
    "solve_matrix": (lambda A, B: (S.solve(A, B) * B42).sum(), lambda: [_general(4), RNG.normal(size=(4, 2))]),
    "solve_sym": (lambda M, b: (S.solve(M + M.T, b, assume_a="sym") ** 2).sum(),
                  lambda: [_general(4), RNG.normal(size=4)]),
    "solve_pos": (lambda M, b: (S.solve(T.dot(M, M.T) + 4 * T.eye(4), b, assume_a="pos", lower=True) ** 2).sum(),
                  lambda: [RNG.normal(size=(4, 4)), RNG.normal(size=4)]),
    "solve_triangular": (lambda A, B: (S.solve_triangular(A, B, lower=True) * B42).sum(),
                         lambda: [_c(np.tril(_general(4))), RNG.normal(size=(4, 2))]),
    "solve_triangular_trans": (lambda A, b: (S.solve_triangular(A, b, trans=1) ** 2).sum(),
                               lambda: [_c(np.triu(_general(4))), RNG.normal(size=4)]),
    "solve_triangular_unit": (lambda A, b: (S.solve_triangular(A, b, lower=True, unit_diagonal=True) ** 2).sum(),
                              lambda: [_c(np.tril(_general(4))), RNG.normal(size=4)]),
    "cholesky": (lambda M: (S.cholesky(T.dot(M, M.T) + 4 * T.eye(4)) * W4).sum(), lambda: [RNG.normal(size=(4, 4))]),
    "cholesky_upper": (lambda M: (S.cholesky(T.dot(M, M.T) + 4 * T.eye(4), lower=False) * W4).sum(),
                       lambda: [RNG.normal(size=(4, 4))]),
    "cho_solve": (lambda C, b: (S.cho_solve((C, True), b) ** 2).sum(), lambda: [_c(np.linalg.cholesky(_spd(4))),
                                                                               RNG.normal(size=4)]),
    "cho_solve_upper": (lambda C, B: (S.cho_solve((C, False), B) * B42).sum(),
                        lambda: [_c(np.linalg.cholesky(_spd(4)).T), RNG.normal(size=(4, 2))]),
    "block_diag": (lambda A, B: (S.block_diag(A, B) ** 2 * T.arange(6.0)).sum(),
                   lambda: [_general(4), RNG.normal(size=(2, 2))]),
    "batched_det_inv": (lambda X: N.det(X).sum() + (N.matrix_inverse(X) * W4).sum(), lambda: [_general(4, 3)]),
    "batched_solve_broadcast": (lambda X, b: (S.solve(X, b, b_ndim=1) ** 2).sum(),
                                lambda: [_general(4, 3), RNG.normal(size=4)]),
    "batched_cholesky": (lambda X: (S.cholesky(X + X.swapaxes(1, 2) + 10 * T.eye(4)) * W4).sum(),
                         lambda: [RNG.normal(size=(2, 4, 4))]),
    "matmul": (lambda X, Y: (N.matrix_dot(X, Y) ** 2).sum(), lambda: [RNG.normal(size=(2, 3, 4)),
                                                                    RNG.normal(size=(1, 4, 2))]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradient_against_finite_differences(name):
    cost, values = GRAD_CASES[name]
    check_grad(cost, values(), rtol=1e-5)


def test_gradient_formulas_match_pytensors():
    """The symmetric solve's gradient is PyTensor's (the full -b_bar x^T, not one triangle)."""
    pytensor = pytest.importorskip("pytensor")
    import pytensor.tensor as pt
    from pytensor.tensor import linalg as L

    a, bv = _general(3), RNG.normal(size=3)
    A, b = T.dmatrix("A"), T.dvector("b")
    ours = ms.function([A, b], T.grad((S.solve(A, b, assume_a="sym") ** 2).sum(), A))(a, bv)
    pA, pb = pt.dmatrix("A"), pt.dvector("b")
    ref = pytensor.function([pA, pb], pytensor.grad((L.solve(pA, pb, assume_a="sym") ** 2).sum(), pA))(a, bv)
    _close(ours, ref, rtol=1e-9)


# -- inside a scan: a Kalman filter ---------------------------------------------------------------


def _kalman_numpy(ys, Tm, Z, H, Q, x0, P0):
    x, P, ll = x0, P0, 0.0
    for y in ys:
        v = y - Z @ x
        F = Z @ P @ Z.T + H
        K = Tm @ P @ Z.T @ np.linalg.inv(F)
        ll += -0.5 * (np.linalg.slogdet(F)[1] + v @ np.linalg.solve(F, v)) + 1e-3 * np.linalg.det(F)
        x = Tm @ x + K @ v
        P = Tm @ P @ Tm.T - K @ F @ K.T + Q
    return ll


def _kalman_data(steps=12, k=2, p=3):
    Tm = 0.5 * np.eye(p) + 0.1 * RNG.normal(size=(p, p))
    Z = RNG.normal(size=(k, p))
    H, Q = _spd(k) / k, _spd(p) / (4 * p)
    return RNG.normal(size=(steps, k)), Tm, Z, H, Q, np.zeros(p), np.eye(p)


def _kalman_builder(ys, Tm, Z, H, Q, x0, P0):
    def step(y, x, P, ll, Tm, Z, H, Q):
        v = y - T.dot(Z, x)
        F = T.dot(T.dot(Z, P), Z.T) + H
        K = T.dot(T.dot(T.dot(Tm, P), Z.T), N.matrix_inverse(F))
        ll = ll - 0.5 * (N.slogdet(F)[1] + T.dot(v, S.solve(F, v))) + 1e-3 * N.det(F)
        x = T.dot(Tm, x) + T.dot(K, v)
        P = T.dot(T.dot(Tm, P), Tm.T) - T.dot(T.dot(K, F), K.T) + Q
        return x, P, ll

    (xs, Ps, lls), _ = ms.scan(step, sequences=ys, outputs_info=[x0, P0, T.constant(0.0)],
                               non_sequences=[Tm, Z, H, Q])
    return lls[-1]


def test_kalman_filter_in_a_scan_and_its_gradient():
    data = _kalman_data()
    names = ["ys", "Tm", "Z", "H", "Q", "x0", "P0"]
    check_grad(_kalman_builder, data, wrt=[1, 3, 4], reference=lambda *v: _kalman_numpy(*v), rtol=1e-5, names=names)


# -- the PyTensor mode --------------------------------------------------------------------------


def _ref_mode():
    """PyTensor's rewrites with its Python linker: PyTensor's values, without numba's compile time."""
    from pytensor.compile.mode import Mode

    return Mode(linker="py", optimizer="fast_run")


def _pt():
    pytensor = pytest.importorskip("pytensor")
    import pytensor.tensor as pt
    from pytensor.tensor import linalg as L

    import mlir_scan.pytensor as mp

    return pytensor, pt, L, mp


def _pt_costs(pt, L):
    """Costs of every op (and of the batched forms), over inputs A (general), P (positive-definite),
    C (a lower Cholesky factor), b, B and X, Y (stacks of general matrices).

    The batched det has its own matrices: with a solve of the same stack, PyTensor rewrites it to the
    product of the diagonals of the solve's LU factors, a batched ``ExtractDiag``, which the mode does
    not translate yet (``T.diagonal`` takes matrices only).
    """
    A, P, C = pt.dmatrix("A"), pt.dmatrix("P"), pt.dmatrix("C")
    b, B, X, Y = pt.dvector("b"), pt.dmatrix("B"), pt.dtensor3("X"), pt.dtensor3("Y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        costs = {
            "inv": L.inv(A).sum() + (L.inv(A) ** 2).sum(),
            "det": L.det(A),
            "slogdet": L.slogdet(A)[1] + pt.log(pt.abs(L.det(A))),
            "solve": (L.solve(A, b) ** 2).sum(),
            "solve_pos": L.solve(P, B, assume_a="pos").sum(),
            "solve_sym": L.solve(A, b, assume_a="sym", lower=True).sum(),
            "solve_triangular": (L.solve_triangular(A, b, lower=True) ** 2).sum(),
            "cholesky": (L.cholesky(P) ** 2).sum(),
            "cho_solve": (L.cho_solve((C, True), b) ** 2).sum(),
            "block_diag": (L.block_diag(A, B) ** 2).sum(),
            "batched_det": L.det(Y).sum(),
            "batched_solve": (L.solve(X, b, b_ndim=1) ** 2).sum(),
            "batched_inv": (L.inv(X) ** 2).sum(),
        }
    return [A, P, C, b, B, X, Y], costs


def test_pytensor_mode_compiles_linalg_and_gradients_whole():
    """Every op and its gradient, in one function (one compile), against PyTensor."""
    pytensor, pt, L, mp = _pt()
    ins, costs = _pt_costs(pt, L)
    outs = []
    for name, cost in costs.items():
        wrt = [v for v in ins if v in pytensor.graph.traversal.graph_inputs([cost])]
        try:
            grads = pytensor.grad(cost, wrt)
        except NotImplementedError:  # PyTensor 2.38's CholeskySolve has no gradient
            grads = []
        outs += [cost] + grads
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = pytensor.function(ins, outs, mode=mp.get_mode(strict=True))
        ref = pytensor.function(ins, outs, mode=_ref_mode())
    assert ours.maker.linker.whole_graph
    vals = [_general(4), _spd(4), np.linalg.cholesky(_spd(4)), RNG.normal(size=4), RNG.normal(size=(4, 2)),
            _general(4, 3), _general(4, 2)]
    for k, (o, r) in enumerate(zip(ours(*vals), ref(*vals))):
        np.testing.assert_allclose(o, r, rtol=1e-9, atol=1e-10, err_msg=str(outs[k]))


def test_pytensor_mode_batched_cholesky_value():
    pytensor, pt, L, mp = _pt()
    X = pt.dtensor3("X")
    f = pytensor.function([X], L.cholesky(X), mode=mp.get_mode(strict=True))
    x = _spd(3, 2)
    _close(f(x), np.linalg.cholesky(x))


def test_pytensor_mode_bad_input():
    pytensor, pt, L, mp = _pt()
    bv = np.array([1.0, 2.0])
    for name, make, value in _bad_input_cases(_pt_lib()):
        A, b = pt.dmatrix("A"), pt.dvector("b")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = pytensor.function([A, b], make(A, b), mode=mp.get_mode(strict=True), on_unused_input="ignore")
            ref = pytensor.function([A, b], make(A, b), on_unused_input="ignore")
        got, want = ours(value, bv), ref(value, bv)
        got = got if isinstance(got, list) else [got]
        want = want if isinstance(want, list) else [want]
        for g, w in zip(got, want):
            _same_bad_result(g, w, name)
    A = pt.dmatrix("A")
    with pytest.raises(np.linalg.LinAlgError):
        pytensor.function([A], L.inv(A), mode=mp.get_mode(strict=True))(SINGULAR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = pytensor.function([A], L.cholesky(A, on_error="raise"), mode=mp.get_mode(strict=True))
    with pytest.raises(np.linalg.LinAlgError):
        f(NOT_PD)


def test_pytensor_mode_kalman_filter_scan_and_gradient():
    pytensor, pt, L, mp = _pt()
    ys, Tm, Z, H, Q, x0, P0 = _kalman_data()
    pys, pT, pZ, pH, pQ = pt.dmatrix("ys"), pt.dmatrix("Tm"), pt.dmatrix("Z"), pt.dmatrix("H"), pt.dmatrix("Q")
    px0, pP0 = pt.dvector("x0"), pt.dmatrix("P0")

    def step(y, x, P, ll, Tm, Z, H, Q):
        v = y - Z @ x
        F = Z @ P @ Z.T + H
        K = Tm @ P @ Z.T @ L.inv(F)
        ll = ll - 0.5 * (L.slogdet(F)[1] + v @ L.solve(F, v)) + 1e-3 * L.det(F)
        return Tm @ x + K @ v, Tm @ P @ Tm.T - K @ F @ K.T + Q, ll

    outs = pytensor.scan(step, sequences=pys, outputs_info=[px0, pP0, pt.constant(0.0, dtype="float64")],
                         non_sequences=[pT, pZ, pH, pQ], return_updates=False)
    ll = outs[2][-1]
    grads = pytensor.grad(ll, [pT, pH, pQ])
    ins = [pys, pT, pZ, pH, pQ, px0, pP0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = pytensor.function(ins, [ll] + grads, mode=mp.get_mode(strict=True))
        ref = pytensor.function(ins, [ll] + grads, mode=_ref_mode())
    assert ours.maker.linker.whole_graph
    vals = [ys, Tm, Z, H, Q, x0, P0]
    got, want = ours(*vals), ref(*vals)
    _close(got[0], _kalman_numpy(*vals), rtol=1e-10)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)


def test_pytensor_mode_rewritten_forms():
    """What PyTensor's rewrites make of these ops: a solve with a scan's non-sequence matrix (its LU
    factorization pushed out of the loop: LUFactor, PivotToPermutations, ArgSortOp, triangular solves),
    the SLogDet op, batched products (BatchedDot), a batched Cholesky with on_error="raise"."""
    pytensor, pt, L, mp = _pt()
    from pytensor.tensor.blockwise import Blockwise

    try:
        from pytensor.tensor.linalg.summary import SLogDet
    except ImportError:  # PyTensor 2.38
        from pytensor.tensor.nlinalg import SLogDet
    A, ys, x0, X, Y = pt.dmatrix("A"), pt.dmatrix("ys"), pt.dvector("x0"), pt.dtensor3("X"), pt.dtensor3("Y")
    xs = pytensor.scan(lambda y, x, A: L.solve(A, x + y) * 0.5, sequences=ys, outputs_info=x0, non_sequences=A,
                       return_updates=False)
    cost = (xs[-1] ** 2).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = [cost, *pytensor.grad(cost, [A, x0]), *Blockwise(SLogDet())(X), X @ Y,
                pytensor.grad((X @ Y).sum() + (L.inv(X) ** 2).sum(), X),
                L.cholesky(Y + Y.mT + 8 * pt.eye(3), on_error="raise")]
        ins = [ys, x0, A, X, Y]
        ours = pytensor.function(ins, outs, mode=mp.get_mode(strict=True))
        ref = pytensor.function(ins, outs, mode=_ref_mode())
    assert ours.maker.linker.whole_graph
    vals = [RNG.normal(size=(6, 3)), RNG.normal(size=3), _general(3), _general(3, 2), RNG.normal(size=(2, 3, 3))]
    for o, r in zip(ours(*vals), ref(*vals)):
        np.testing.assert_allclose(o, r, rtol=1e-9, atol=1e-12)
    names = {type(n.op).__name__ for n in ours.maker.fgraph.apply_nodes}
    assert "BatchedDot" in names or "Blockwise" in names


@pytest.mark.parametrize("mode", ["r", "economic", "full"])
def test_qr_matches_scipy(mode):
    """Householder QR with LAPACK's sign conventions: SciPy's Q and R (not only up to signs), every
    shape (tall, wide, square, empty, a column already zero below its diagonal), batched."""
    sl = pytest.importorskip("scipy.linalg")
    from mlir_scan.builder.ops.linalg import QR

    x, xs = T.dmatrix("x"), T.dtensor3("xs")
    f = ms.function([x], QR(mode)(x))
    fb = ms.function([xs], QR(mode)(xs))
    zero_below = np.array([[2.0, 1.0], [0.0, 3.0], [0.0, 1.0]])
    for a in [RNG.normal(size=s) for s in [(3, 3), (5, 3), (3, 5), (1, 1), (4, 1), (0, 3), (3, 0)]] + [zero_below]:
        got = f(a)
        want = sl.qr(a, mode=mode)
        for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, tuple) else [want]):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, atol=1e-12)
    stack = RNG.normal(size=(3, 4, 2))
    got = fb(stack)
    for i in range(3):
        want = sl.qr(stack[i], mode=mode)
        for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, tuple) else [want]):
            np.testing.assert_allclose(g[i], w, atol=1e-12)


def test_pytensor_mode_qr_and_its_gradient():
    """PyTensor's QR (mode r, economic; Blockwise) and the gradient PyTensor builds for it
    (an economic QR and triangular solves), whole. (Static shapes: PyTensor's QR gradient with
    unknown shapes fails in PyTensor itself, 2.38 and 3.0: ``ifelse`` names its module there.)"""
    pytensor, pt, L, mp = _pt()
    A, X = pt.tensor("A", dtype="float64", shape=(5, 3)), pt.dtensor3("X")
    r = L.qr(A, mode="r")
    q, r2 = L.qr(A, mode="economic")
    rb = L.qr(X, mode="r")
    cost = (r ** 2 * pt.arange(1, 4)).sum() + (q.sum(0) ** 3).sum() + (r2 * pt.tril(pt.ones((3, 3)))).sum()
    outs = [r, q, r2, rb, *pytensor.grad(cost, [A])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = pytensor.function([A, X], outs, mode=mp.get_mode(strict=True))
        ref = pytensor.function([A, X], outs, mode=_ref_mode())
    assert ours.maker.linker.whole_graph
    vals = [RNG.normal(size=(5, 3)), RNG.normal(size=(2, 4, 3))]
    for k, (o, r_) in enumerate(zip(ours(*vals), ref(*vals))):
        np.testing.assert_allclose(o, r_, rtol=1e-9, atol=1e-10, err_msg=str(outs[k]))
