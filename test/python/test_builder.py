"""The graph builder: scan's variants and rules, every DSL op against NumPy, every error path.

Expected values are computed with NumPy or plain Python in the tests.
Functions are batched (many outputs per compiled function) to keep the number
of compilations, and the run time, small.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T

F = theano.function


# -- element-wise ops ----------------------------------------------------------------


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


FLOAT_UNARY = {
    "exp": (T.exp, np.exp), "log": (T.log, np.log), "log1p": (T.log1p, np.log1p), "sqrt": (T.sqrt, np.sqrt),
    "tanh": (T.tanh, np.tanh), "sigmoid": (T.sigmoid, _sigmoid), "nnet.sigmoid": (T.nnet.sigmoid, _sigmoid),
    "softplus": (T.softplus, lambda x: np.log1p(np.exp(x))), "sin": (T.sin, np.sin), "cos": (T.cos, np.cos),
    "floor": (T.floor, np.floor), "ceil": (T.ceil, np.ceil), "abs": (abs, np.abs), "abs_": (T.abs_, np.abs),
    "neg": (lambda x: -x, np.negative), "sqr": (T.sqr, np.square), "pos": (lambda x: +x, lambda x: x),
}
FLOAT_BINARY = {
    "+": (operator.add, np.add), "-": (operator.sub, np.subtract), "*": (operator.mul, np.multiply),
    "/": (operator.truediv, np.true_divide), "//": (operator.floordiv, np.floor_divide),
    "%": (operator.mod, np.mod), "**": (operator.pow, np.power), "maximum": (T.maximum, np.maximum),
    "minimum": (T.minimum, np.minimum), "<": (operator.lt, np.less), "<=": (operator.le, np.less_equal),
    ">": (operator.gt, np.greater), ">=": (operator.ge, np.greater_equal), "eq": (T.eq, np.equal),
    "neq": (T.neq, np.not_equal),
}


def test_float_elementwise_against_numpy():
    x, y = T.dvector("x"), T.dvector("y")
    names = list(FLOAT_UNARY) + list(FLOAT_BINARY)
    outs = [FLOAT_UNARY[n][0](x) for n in FLOAT_UNARY] + [FLOAT_BINARY[n][0](x, y) for n in FLOAT_BINARY]
    f = F([x, y], outs)
    xv = np.array([0.25, 1.5, 2.0, 3.75, 0.5, 7.0])
    yv = np.array([0.5, -1.25, 2.0, 1.5, -3.0, 2.5])
    got = f(xv, yv)
    for name, value in zip(names, got):
        ref = FLOAT_UNARY[name][1](xv) if name in FLOAT_UNARY else FLOAT_BINARY[name][1](xv, yv)
        np.testing.assert_allclose(value, ref, rtol=1e-13, err_msg=name)
        assert value.dtype == ref.dtype, name


def test_float32_stays_float32():
    x = T.fvector("x")
    outs = [T.exp(x), x * 2, x + 1.5, x / 2, T.tanh(x), x ** 2, T.sqrt(x)]
    assert [o.dtype for o in outs] == ["float32"] * len(outs)
    xv = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    got = F([x], outs)(xv)
    refs = [np.exp(xv), xv * 2, xv + np.float32(1.5), xv / 2, np.tanh(xv), xv**2, np.sqrt(xv)]
    for g, r in zip(got, refs):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, r, rtol=1e-6)


def test_integer_elementwise_against_numpy():
    a, b = T.ivector("a"), T.ivector("b")
    ops = {
        "+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
        "&": operator.and_, "|": operator.or_, "^": operator.xor, "max": np.maximum, "min": np.minimum,
        "<": operator.lt, ">=": operator.ge,
    }
    av = np.array([7, -7, 7, -7, 0, 13, -128, 5], dtype=np.int32)
    bv = np.array([2, 2, -2, -2, 3, 5, 3, 1], dtype=np.int32)
    sym = {"max": T.maximum, "min": T.minimum}
    outs = [sym.get(k, op)(a, b) for k, op in ops.items()]
    outs += [~a, -a, abs(a), a / b, a ** abs(b) % 1000, 100 // a, 7 - a]
    got = F([a, b], outs)(av, bv)
    refs = [op(av, bv) for op in ops.values()]
    with np.errstate(divide="ignore"):
        refs += [~av, -av, np.abs(av), av / bv, (av ** np.abs(bv)) % 1000,
                 np.where(av == 0, 0, 100 // np.where(av == 0, 1, av)), 7 - av]
    for name, g, r in zip(list(ops) + ["~", "neg", "abs", "/", "**", "r//", "r-"], got, refs):
        np.testing.assert_array_equal(g, r, err_msg=name)
        assert g.dtype == r.dtype, name


def test_integer_division_by_zero_does_not_trap():
    a, b = T.lvector("a"), T.lvector("b")
    f = F([a, b], [a // b, a % b])
    low = np.iinfo(np.int64).min
    q, r = f(np.array([5, -5, low, 3]), np.array([0, 0, -1, -1]))
    np.testing.assert_array_equal(q, [0, 0, low, -3])  # NumPy: 0 for /0, wraps for MIN // -1
    np.testing.assert_array_equal(r, [0, 0, 0, 0])


def test_bool_ops():
    p, q = T.bvector("p") > 0, T.bvector("q") > 0
    outs = [p & q, p | q, p ^ q, ~p, T.switch(p, 1.5, -1.0), p + q, T.eq(p, q), p < q, p * q, p - q]
    assert outs[0].dtype == "bool" and outs[5].dtype == "bool" and outs[9].dtype == "int8"
    pv = np.array([1, 1, 0, 0], dtype=np.int8)
    qv = np.array([1, 0, 1, 0], dtype=np.int8)
    got = F([p.owner.inputs[0], q.owner.inputs[0]], outs)(pv, qv)
    P, Q = pv > 0, qv > 0
    refs = [P & Q, P | Q, P ^ Q, ~P, np.where(P, 1.5, -1.0), P + Q, P == Q, P < Q, P * Q,
            P.astype(np.int8) - Q.astype(np.int8)]
    for g, r in zip(got, refs):
        np.testing.assert_array_equal(g, r)


def test_reflected_operators_and_python_scalars():
    x = T.dvector("x")
    outs = [2 - x, 2 / x, 2 ** x, 7 // x, 7 % x, 3 * x, 1 + x, x - 1, abs(-x)]
    xv = np.array([0.5, 2.0, -3.0])
    got = F([x], outs)(xv)
    refs = [2 - xv, 2 / xv, 2**xv, 7 // xv, 7 % xv, 3 * xv, 1 + xv, xv - 1, np.abs(xv)]
    for g, r in zip(got, refs):
        np.testing.assert_allclose(g, r)


def test_switch_clip_where_and_broadcasting():
    m, v, s = T.dmatrix("m"), T.dvector("v"), T.dscalar("s")
    outs = [m + v, m * s, T.switch(m > v, m, v), T.where(m > 0, 1, 0), T.clip(m, -1, 2), v - m.T.T,
            T.maximum(m, s)]
    mv = np.arange(6.0).reshape(2, 3) - 2
    vv = np.array([1.0, -1.0, 0.5])
    got = F([m, v, s], outs)(mv, vv, 1.5)
    refs = [mv + vv, mv * 1.5, np.where(mv > vv, mv, vv), np.where(mv > 0, 1, 0), np.clip(mv, -1, 2),
            vv - mv, np.maximum(mv, 1.5)]
    for g, r in zip(got, refs):
        np.testing.assert_allclose(g, r)
    row, col = T.row("row"), T.col("col")
    f = F([row, col], row + col)
    np.testing.assert_array_equal(f(np.ones((1, 3)), np.arange(4.0)[:, None]), np.ones((1, 3)) + np.arange(4.0)[:, None])


# -- dtype promotion --------------------------------------------------------------------


DTYPES = ["bool", "int8", "int16", "int32", "int64", "float32", "float64"]


@pytest.mark.parametrize("d1", DTYPES)
def test_dtype_promotion_follows_numpy(d1):
    for d2 in DTYPES:
        x, y = T.vector(dtype=d1), T.vector(dtype=d2)
        expected = np.result_type(d1, d2).name
        assert (x * y).dtype == expected and (x + y).dtype == expected
        assert (x - y).dtype == ("int8" if expected == "bool" else expected)  # NumPy rejects bool - bool
        assert (x < y).dtype == "bool"
        div = expected if expected.startswith("float") else "float64"
        assert (x / y).dtype == div
        assert T.maximum(x, y).dtype == expected


def test_python_scalar_dtypes():
    assert T.as_tensor_variable(0).dtype == "int8"
    assert T.as_tensor_variable(1000).dtype == "int16"
    assert T.as_tensor_variable(2**40).dtype == "int64"
    assert T.as_tensor_variable(1.5).dtype == "float64"
    assert T.constant(1.0).dtype == "float64"
    assert T.as_tensor_variable(np.asarray(0, "int32")).dtype == "int32"
    assert (T.fvector() + 1).dtype == "float32"
    assert (T.fvector() * 1.5).dtype == "float32"
    assert (T.ivector() + 1).dtype == "int32"
    assert (T.ivector() * 1.5).dtype == "float64"
    assert (T.bvector() + 1000).dtype == "int16"
    assert (T.iscalar() / T.iscalar()).dtype == "float64"
    assert (T.fscalar() / 2).dtype == "float32"
    assert T.exp(T.ivector()).dtype == "float64" and T.exp(T.bvector()).dtype == "float32"
    assert T.arange(T.iscalar()).dtype == "int64" and T.arange(10).dtype == "int64"  # (Theano: no narrow ints)
    assert T.arange(0.0, 1.0, 0.25).dtype == "float64"


def test_placeholders():
    cases = {
        T.scalar: ((), "float64"), T.iscalar: ((), "int32"), T.lscalar: ((), "int64"),
        T.fscalar: ((), "float32"), T.dscalar: ((), "float64"), T.bscalar: ((), "int8"),
        T.vector: (1, "float64"), T.ivector: (1, "int32"), T.fvector: (1, "float32"), T.lvector: (1, "int64"),
        T.matrix: (2, "float64"), T.imatrix: (2, "int32"), T.fmatrix: (2, "float32"), T.dmatrix: (2, "float64"),
        T.tensor3: (3, "float64"), T.ftensor3: (3, "float32"), T.itensor3: (3, "int32"), T.wvector: (1, "int16"),
    }
    for make, (ndim, dtype) in cases.items():
        v = make("name")
        assert v.name == "name" and v.dtype == dtype and v.ndim == (ndim if ndim else 0)
    assert T.vector(dtype="int16").dtype == "int16"
    assert T.tensor("float32", (None, 3)).type.shape == (None, 3)
    assert T.tensor("int64", broadcastable=(True, False)).type.shape == (1, None)


# -- indexing --------------------------------------------------------------------------


STATIC_KEYS = [
    1, -1, (1, 2), (-1, -2), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(-3, None),
    (slice(None), 0), (slice(1, None), slice(None, None, -2)), (Ellipsis, 0), slice(10, 20), slice(-10, 2),
    (2, slice(4, 0, -1)), (slice(None, None, -3), -1), (None, 1), (1, None), slice(3, 1), (slice(-2, None, -1),),
]


def test_static_indexing_against_numpy():
    x = T.dmatrix("x")
    outs = [x[k] for k in STATIC_KEYS]
    xv = np.arange(20.0).reshape(4, 5)
    got = F([x], outs)(xv)
    for k, g in zip(STATIC_KEYS, got):
        np.testing.assert_array_equal(g, xv[k], err_msg=str(k))
    # Static shapes are known when the input's are.
    s = T.tensor("float64", (4, 5))
    assert s[1:3].type.shape == (2, 5) and s[::-2, 1].type.shape == (2,)


def test_empty_static_slices_of_static_sizes():
    # ``v[1:]`` of a one-row ``v``: an empty slice whose offset is past the end. MLIR
    # rejects such a static offset even for an empty extract_slice (PyTensor's graph
    # of a scan with n_steps=0 reads its one-row buffer this way).
    v, w = T.tensor("float64", (1, None), "v"), T.tensor("float64", (3,), "w")
    keys_v = [np.s_[1:], np.s_[1:, 1:], np.s_[5:], np.s_[1:, ::-1]]
    keys_w = [np.s_[3:], np.s_[5:], np.s_[3:3], np.s_[-1:3], np.s_[2:0], np.s_[:-7:-1], np.s_[4::-2]]
    outs = ([v[k] for k in keys_v] + [w[k] for k in keys_w] + [w[::-1][3:], w[2:][1:]]
            + [T.set_subtensor(v[1:], 5.0), T.inc_subtensor(w[3:], 1.0), T.set_subtensor(w[5:], T.zeros((0,)))])
    vv, wv = np.ones((1, 3)), np.arange(3.0)
    want = ([vv[k] for k in keys_v] + [wv[k] for k in keys_w] + [wv[::-1][3:], wv[2:][1:]] + [vv, wv, wv])
    got = F([v, w], outs)(vv, wv)
    for n, (g, r) in enumerate(zip(got, want)):
        assert g.shape == r.shape, n
        np.testing.assert_array_equal(g, r, err_msg=str(n))


def test_symbolic_indexing_against_numpy():
    x = T.dmatrix("x")
    i, j, k = T.iscalar("i"), T.lscalar("j"), T.iscalar("k")
    exprs = {
        "x[i]": (lambda: x[i], lambda a, i, j, k: a[i]),
        "x[i, j % 6]": (lambda: x[i, j % 6], lambda a, i, j, k: a[i, j % 6]),
        "x[i:j]": (lambda: x[i:j], lambda a, i, j, k: a[i:j]),
        "x[:, j:]": (lambda: x[:, j:], lambda a, i, j, k: a[:, j:]),
        "x[::k]": (lambda: x[::k], lambda a, i, j, k: a[::k]),
        "x[j::k, i]": (lambda: x[j::k, i], lambda a, i, j, k: a[j::k, i]),
        "x[-i]": (lambda: x[-i], lambda a, i, j, k: a[-i]),
        "x[i, ::-1]": (lambda: x[i, ::-1], lambda a, i, j, k: a[i, ::-1]),
    }
    f = F([x, i, j, k], [e() for e, _ in exprs.values()])
    xv = np.arange(30.0).reshape(5, 6)
    for args in [(1, 3, 2), (-2, -1, -1), (0, 10, 3), (3, -4, -2), (-4, 0, 1), (4, -9, 5)]:
        got = f(xv, *args)
        for (name, (_, ref)), g in zip(exprs.items(), got):
            np.testing.assert_array_equal(g, ref(xv, *args), err_msg=f"{name} with {args}")


def test_symbolic_index_errors_at_run_time():
    x, i, k = T.dvector("x"), T.iscalar("i"), T.iscalar("k")
    f = F([x, i], x[i])
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        f(np.zeros(3), 3)
    with pytest.raises(IndexError, match="out of bounds"):
        f(np.zeros(3), -4)
    g = F([x, k], x[::k])
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        g(np.zeros(3), 0)


def test_set_and_inc_subtensor_against_numpy():
    x, v, i = T.dmatrix("x"), T.dvector("v"), T.iscalar("i")
    cases = [
        (T.set_subtensor(x[1], v), lambda a, b, i: _set(a, 1, b)),
        (T.inc_subtensor(x[:, 2], v[:4]), lambda a, b, i: _inc(a, (slice(None), 2), b[:4])),
        (T.set_subtensor(x[1:3], 7.0), lambda a, b, i: _set(a, slice(1, 3), 7.0)),
        (T.inc_subtensor(x[::2], v), lambda a, b, i: _inc(a, slice(None, None, 2), b)),
        (T.set_subtensor(x[i, ::-1], v), lambda a, b, i: _set(a, (i, slice(None, None, -1)), b)),
        (T.inc_subtensor(x[i, -1], 100), lambda a, b, i: _inc(a, (i, -1), 100)),
        (T.set_subtensor(x[::-2, 1:4], -1.0), lambda a, b, i: _set(a, (slice(None, None, -2), slice(1, 4)), -1.0)),
        (T.set_subtensor(x[:, i::2], v[0]), lambda a, b, i: _set(a, (slice(None), slice(i, None, 2)), b[0])),
        (T.inc_subtensor(x[1:, ::i], 1.0), lambda a, b, i: _inc(a, (slice(1, None), slice(None, None, i)), 1.0)),
    ]
    f = F([x, v, i], [c for c, _ in cases])
    xv = np.arange(20.0).reshape(4, 5)
    vv = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    for iv in (1, -1, 2, -2):
        got = f(xv, vv, iv)
        for n, ((_, ref), g) in enumerate(zip(cases, got)):
            np.testing.assert_array_equal(g, ref(xv, vv, iv), err_msg=f"case {n} with i={iv}")
    np.testing.assert_array_equal(xv, np.arange(20.0).reshape(4, 5))  # inputs unchanged


def _set(a, key, value):
    out = a.copy()
    out[key] = value
    return out


def _inc(a, key, value):
    out = a.copy()
    out[key] += value
    return out


def test_indexing_errors_at_build_time():
    x = T.dvector("x")
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0]
    with pytest.raises(IndexError, match="must be an integer"):
        x[T.dscalar()]
    with pytest.raises(IndexError, match="integer type"):
        x[T.dvector()]
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match="out of bounds"):
        T.tensor("float64", (3,))[5]
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1.0
    with pytest.raises(TypeError, match="subtensor"):
        T.set_subtensor(x + 1, 2.0)
    with pytest.raises(TypeError, match="downcast"):
        T.set_subtensor(T.ivector()[0], 1.5)
    with pytest.raises(ValueError, match="cannot be broadcast|does not fit"):
        T.set_subtensor(T.tensor("float64", (4,))[1:3], T.tensor("float64", (3,)))


# -- reductions, dot and structure ------------------------------------------------------------


def test_reductions_against_numpy():
    x = T.dtensor3("x")
    axes = [None, 0, 1, 2, -1, (0, 2), (1, 2), ()]
    outs, refs = [], []
    xv = np.random.RandomState(0).normal(size=(2, 3, 4))
    for name in ("sum", "mean", "max", "min", "prod"):
        for ax in axes:
            for keep in (False, True):
                outs.append(getattr(x, name)(axis=ax, keepdims=keep))
                refs.append(getattr(np, name)(xv, axis=ax, keepdims=keep))
    i = T.imatrix("i")
    outs += [i.sum(), i.sum(axis=0), i.mean(axis=1), i.max(), T.all(i > -10), T.any(i > 4, axis=0), i.prod(axis=1)]
    iv = np.arange(-4, 8, dtype=np.int32).reshape(3, 4)
    refs += [iv.sum(), iv.sum(axis=0), iv.mean(axis=1), iv.max(), np.all(iv > -10), np.any(iv > 4, axis=0),
             iv.prod(axis=1)]
    got = F([x, i], outs)(xv, iv)
    for n, (g, r) in enumerate(zip(got, refs)):
        np.testing.assert_allclose(g, r, rtol=1e-12, err_msg=str(n))
        assert g.shape == np.shape(r) and g.dtype == np.asarray(r).dtype, n


def test_dot_every_combination():
    v, w = T.dvector("v"), T.dvector("w")
    A, B = T.dmatrix("A"), T.dmatrix("B")
    X = T.dtensor3("X")
    iv, iA = T.ivector("iv"), T.imatrix("iA")
    fv = T.fvector("fv")
    s = T.dscalar("s")
    outs = [T.dot(v, w), T.dot(A, v), T.dot(v, A), T.dot(A, B), theano.dot(A, B.T), A @ B, T.dot(X, v[:4]),
            T.dot(X, B), T.dot(s, v), T.dot(iA, iv), T.dot(fv, fv), v.dot(w)]
    rng = np.random.RandomState(1)
    vv, wv = rng.normal(size=4), rng.normal(size=4)
    Av, Bv = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    Xv = rng.normal(size=(2, 3, 4))
    ivv, iAv = np.arange(3, dtype=np.int32), np.arange(6, dtype=np.int32).reshape(2, 3)
    fvv = np.array([1.5, 2.0], dtype=np.float32)
    got = F([v, w, A, B, X, iv, iA, fv, s], outs)(vv, wv, Av, Bv, Xv, ivv, iAv, fvv, 2.5)
    refs = [vv @ wv, Av @ vv, vv @ Av, Av @ Bv, Av @ Bv.T, Av @ Bv, np.dot(Xv, vv[:4]), np.dot(Xv, Bv), 2.5 * vv,
            iAv @ ivv, fvv @ fvv, vv @ wv]
    for n, (g, r) in enumerate(zip(got, refs)):
        np.testing.assert_allclose(g, r, rtol=1e-12, err_msg=str(n))
        assert g.dtype == np.asarray(r).dtype, n
    with pytest.raises(ValueError, match="not aligned"):
        T.dot(T.tensor("float64", (2, 3)), T.tensor("float64", (4,)))
    f = F([A, v], T.dot(A, v))
    with pytest.raises(ValueError, match="not aligned"):
        f(np.ones((2, 3)), np.ones(4))


def test_dot_of_a_dimshuffle_that_drops_an_axis():
    # ``X.dimshuffle(1, 0)`` of an (n, m, 1) tensor transposes AND drops the size-1
    # axis: Dot's shortcut for ``x.T @ y`` (read x's source in place) must not take
    # the rank-3 source for a matrix (it emitted a rank-3 linalg operand).
    X = T.tensor("float64", (None, None, 1), "X")
    A, B = T.dmatrix("A"), T.dmatrix("B")
    outs = [T.dot(X.dimshuffle(1, 0), A), T.dot(X.dimshuffle(1, 0), X.dimshuffle(0, 1)), T.dot(B.T, A)]
    rng = np.random.RandomState(3)
    Xv, Av, Bv = rng.normal(size=(3, 2, 1)), rng.normal(size=(3, 4)), rng.normal(size=(3, 3))
    X2 = Xv[:, :, 0]
    got = F([X, A, B], outs)(Xv, Av, Bv)
    for g, r in zip(got, [X2.T @ Av, X2.T @ X2, Bv.T @ Av]):
        np.testing.assert_allclose(g, r, rtol=1e-12)


def test_structure_ops_against_numpy():
    x, y, n = T.dmatrix("x"), T.dmatrix("y"), T.lscalar("n")
    s = T.dscalar("s")
    outs = [
        x.T, x.transpose(), T.transpose(x, (1, 0)), x.dimshuffle("x", 1, 0), x[0].dimshuffle(0, "x"),
        x.reshape((3, 4)), x.reshape((-1,)), x.reshape((2, -1, 3)), T.reshape(x, (n, -1)), x.flatten(),
        T.concatenate([x, y]), T.concatenate([x, y], axis=1), T.concatenate([x, T.cast(y, "int32")], axis=-1),
        T.stack([x, y]), T.stack([x, y], axis=2), T.stack([s, s * 2, s + 1]), T.join(0, x, y),
        T.cast(x * 1.7, "int32"), (x - 5).astype("bool"), T.cast(x > 5, "float32"), x.shape, x.shape[1],
        T.outer(x[0], x[1]), T.nnet.softmax(x), T.zeros_like(x), T.ones_like(x, dtype="int8"),
        T.zeros((2, n)), T.ones((n,), dtype="int32"), T.alloc(s, 2, 3), T.alloc(x[0], n, 4), T.fill(x, 3.0),
        x.size,
    ]
    xv = np.arange(12.0).reshape(3, 4)
    yv = np.arange(12.0, 24.0).reshape(3, 4)
    got = F([x, y, n, s], outs)(xv, yv, 2, 1.5)
    e = np.exp(xv - xv.max(axis=1, keepdims=True))
    refs = [
        xv.T, xv.T, xv.T, xv.T[None], xv[0][:, None], xv.reshape(3, 4), xv.reshape(-1), xv.reshape(2, -1, 3),
        xv.reshape(2, -1), xv.flatten(), np.concatenate([xv, yv]), np.concatenate([xv, yv], axis=1),
        np.concatenate([xv, yv.astype(np.int32)], axis=-1), np.stack([xv, yv]), np.stack([xv, yv], axis=2),
        np.array([1.5, 3.0, 2.5]), np.concatenate([xv, yv]), (xv * 1.7).astype(np.int32), (xv - 5).astype(bool),
        (xv > 5).astype(np.float32), np.array(xv.shape), 4, np.outer(xv[0], xv[1]), e / e.sum(axis=1, keepdims=True),
        np.zeros_like(xv), np.ones_like(xv, dtype=np.int8), np.zeros((2, 2)), np.ones(2, dtype=np.int32),
        np.full((2, 3), 1.5), np.broadcast_to(xv[0], (2, 4)), np.full_like(xv, 3.0), 12,
    ]
    for k, (g, r) in enumerate(zip(got, refs)):
        np.testing.assert_allclose(g, r, rtol=1e-12, err_msg=str(k))
        assert g.shape == np.shape(r), k
        assert g.dtype == np.asarray(r).dtype or k in (21, 31), (k, g.dtype, np.asarray(r).dtype)


def test_arange_against_numpy():
    a, b, c = T.lscalar("a"), T.lscalar("b"), T.lscalar("c")
    fa, fb, fc = T.dscalar("fa"), T.dscalar("fb"), T.dscalar("fc")
    f = F([a, b, c, fa, fb, fc], [T.arange(a, b, c), T.arange(b), T.arange(fa, fb, fc), T.arange(5, 0, -2),
                                   T.arange(a, b)])
    for args in [(0, 10, 3), (10, 0, -3), (5, 5, 1), (3, -4, -2), (-2, 7, 4)]:
        fargs = (0.5, 2.0, 0.25) if args[2] > 0 else (2.0, 0.5, -0.5)
        got = f(*args, *fargs)
        refs = [np.arange(*args), np.arange(args[1]) if args[1] > 0 else np.arange(0), np.arange(*fargs),
                np.arange(5, 0, -2), np.arange(args[0], args[1])]
        for g, r in zip(got, refs):
            np.testing.assert_allclose(g, r)
    with pytest.raises(ValueError, match="step must not be zero"):
        f(0, 5, 0, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="step must not be zero"):
        T.arange(0, 5, 0)
    # a NaN or infinite bound or step: NumPy's "cannot compute length" (was a negative-size
    # allocation error)
    for bad in [(0.0, 1.0, np.nan), (0.0, np.nan, 1.0), (np.nan, 1.0, 1.0), (0.0, np.inf, 1.0)]:
        with pytest.raises(ValueError, match="arange: cannot compute length"):
            f(0, 5, 1, *bad)


def test_structure_errors():
    with pytest.raises(ValueError, match="cannot be broadcast"):
        T.tensor("float64", (3,)) + T.tensor("float64", (4,))
    with pytest.raises(ValueError, match="rank"):
        T.concatenate([T.vector(), T.matrix()])
    with pytest.raises(ValueError, match="cannot reshape"):
        T.tensor("float64", (2, 3)).reshape((4, 2))
    with pytest.raises(ValueError, match="out of bounds"):
        T.matrix().sum(axis=2)
    with pytest.raises(TypeError, match="dtype"):
        T.vector(dtype="complex64")
    with pytest.raises(TypeError, match="bitwise"):
        T.vector() & T.vector()
    with pytest.raises(TypeError, match="truth value"):
        bool(T.scalar() > 0)
    x = T.dmatrix("x")
    f = F([x, T.lscalar("n")], x.reshape((x.shape[0] + 0, -1)), on_unused_input="ignore")
    np.testing.assert_array_equal(f(np.ones((2, 3)), 0), np.ones((2, 3)))
    g = F([x], x.reshape((5, -1)))
    with pytest.raises(ValueError, match="cannot reshape"):
        g(np.ones((2, 3)))
    h = F([x, T.dmatrix("y")], T.concatenate([x, x.T]), on_unused_input="ignore")
    with pytest.raises(ValueError, match="concatenate"):
        h(np.ones((2, 3)), np.ones(1).reshape(1, 1))


# -- scan ------------------------------------------------------------------------------------------


def test_map_against_python():
    xs, ys, c = T.dvector("xs"), T.dvector("ys"), T.dscalar("c")
    r1, u1 = theano.map(lambda x: x * 2 + 1, sequences=xs)
    r2, _ = theano.map(lambda x, y, c: x * y + c, sequences=[xs, ys], non_sequences=c)
    r3, _ = theano.map(lambda x: x, sequences=xs, go_backwards=True)
    assert u1 == {}
    f = F([xs, ys, c], [r1, r2, r3])
    a, b = [1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 2.0]
    got = f(a, b, 10.0)
    np.testing.assert_array_equal(got[0], [x * 2 + 1 for x in a])
    np.testing.assert_array_equal(got[1], [x * y + 10.0 for x, y in zip(a, b)])  # shortest sequence
    np.testing.assert_array_equal(got[2], a[::-1])


def test_reduce_and_folds_against_python():
    xs, init = T.dvector("xs"), T.dscalar("init")
    total, _ = theano.reduce(lambda x, acc: acc + x, sequences=xs, outputs_info=init)
    product, _ = theano.reduce(lambda x, acc: acc * x, sequences=xs, outputs_info=T.constant(1.0))
    left, _ = theano.foldl(lambda x, acc: acc * 2 + x, sequences=xs, outputs_info=init)
    right, _ = theano.foldr(lambda x, acc: acc * 2 + x, sequences=xs, outputs_info=init)
    assert total.ndim == 0
    f = F([xs, init], [total, product, left, right])
    for values in ([1.0, 2.0, 3.0, 4.0], [5.0], []):
        got = f(values, 0.5)
        assert got[0] == functools.reduce(lambda acc, x: acc + x, values, 0.5)
        assert got[1] == functools.reduce(lambda acc, x: acc * x, values, 1.0)
        assert got[2] == functools.reduce(lambda acc, x: acc * 2 + x, values, 0.5)
        assert got[3] == functools.reduce(lambda acc, x: acc * 2 + x, values[::-1], 0.5)


def test_go_backwards():
    xs = T.dvector("xs")
    fwd, _ = theano.scan(lambda x, acc: acc * 10 + x, sequences=xs, outputs_info=T.constant(0.0))
    bwd, _ = theano.scan(lambda x, acc: acc * 10 + x, sequences=xs, outputs_info=T.constant(0.0), go_backwards=True)
    taps, _ = theano.scan(lambda a, b: a - b, sequences=dict(input=xs, taps=[-1, 0]), go_backwards=True)
    f = F([xs], [fwd, bwd, taps])
    v = [1.0, 2.0, 3.0, 5.0]
    got = f(v)
    np.testing.assert_array_equal(got[0], [1, 12, 123, 1235])
    np.testing.assert_array_equal(got[1], [5, 53, 532, 5321])
    # Theano: tap -1 reads v[:-1] reversed, tap 0 v[1:] reversed (each tap's
    # slice is cut, then reversed; PyTensor gives the same)
    np.testing.assert_array_equal(got[2], [v[2] - v[3], v[1] - v[2], v[0] - v[1]])


def test_n_steps_zero_and_negative():
    x, n = T.dvector("x"), T.lscalar("n")
    rows, _ = theano.scan(lambda p: p * 2, outputs_info=x, n_steps=0)
    nits, _ = theano.scan(lambda: T.constant(1.0), n_steps=0)
    sym, _ = theano.scan(lambda p: p * 2, outputs_info=x, n_steps=n)
    f = F([x, n], [rows, nits, sym])
    a, b, c = f([1.0, 2.0], 0)
    assert a.shape == (0, 2) and b.shape == (0,) and c.shape == (0, 2)
    np.testing.assert_array_equal(f([1.0, 2.0], 3)[2], [[2, 4], [4, 8], [8, 16]])
    with pytest.raises(ValueError, match="n_steps is -2, must be >= 0"):
        f([1.0], -2)
    with pytest.raises(ValueError, match="n_steps is -1"):
        theano.scan(lambda p: p, outputs_info=x, n_steps=-1)
    with pytest.raises(TypeError, match="n_steps"):
        theano.scan(lambda p: p, outputs_info=x, n_steps=2.5)
    with pytest.raises(TypeError, match="n_steps"):
        theano.scan(lambda p: p, outputs_info=x, n_steps=T.dscalar())


def test_sequence_lengths_and_taps():
    xs, ys, n = T.dvector("xs"), T.dvector("ys"), T.lscalar("n")
    short, _ = theano.scan(lambda x, y: x + y, sequences=[xs, ys])
    tapped, _ = theano.scan(lambda a, b, c: a * 100 + b * 10 + c, sequences=dict(input=xs, taps=[1, -2, 0]))
    given, _ = theano.scan(lambda x: x * 2, sequences=xs, n_steps=n)
    f = F([xs, ys, n], [short, tapped, given])
    v = np.arange(10.0)
    got = f(v, [1.0, 1.0, 1.0], 4)
    np.testing.assert_array_equal(got[0], v[:3] + 1)
    # taps [1, -2, 0]: fn gets x[t+1], x[t-2], x[t] in that order; t runs from 2 to 8.
    np.testing.assert_array_equal(got[1], [v[t + 1] * 100 + v[t - 2] * 10 + v[t] for t in range(2, 9)])
    np.testing.assert_array_equal(got[2], v[:4] * 2)
    with pytest.raises(ValueError, match="sequence #0 has 10 rows but the steps and taps need 11"):
        f(v, [1.0], 11)


def test_mitsot_taps_order():
    x0 = T.dvector("x0")
    fib, _ = theano.scan(lambda a, b: a + b, outputs_info=dict(initial=x0, taps=[-2, -1]), n_steps=8)
    rev, _ = theano.scan(lambda b, a: a * 10 + b, outputs_info=dict(initial=x0, taps=[-1, -2]), n_steps=3)
    f = F([x0], [fib, rev])
    got = f([0.0, 1.0])
    np.testing.assert_array_equal(got[0], [1, 2, 3, 5, 8, 13, 21, 34])
    seq = [0.0, 1.0]
    for _ in range(3):
        seq.append(seq[-2] * 10 + seq[-1])
    np.testing.assert_array_equal(got[1], seq[2:])
    # Extra rows: the first -min(taps) are used (Theano's and PyTensor's initial[:2]).
    for a, b in zip(f([0.0, 1.0, 2.0]), got):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="init has 1 rows but its taps need 2"):
        f([0.0])


def test_multiple_outputs_and_return_forms():
    xs = T.dvector("xs")
    c = theano.shared(0.0, name="c")

    def step(x, acc):
        return [x * 2, acc + x], {c: c + x}

    (doubled, sums), upd = theano.scan(step, sequences=xs, outputs_info=[None, T.constant(0.0)])

    def step2(x, acc):
        return {c: c + 1}, [acc + x]

    sums2, upd2 = theano.scan(step2, sequences=xs, outputs_info=[T.constant(0.0)], return_list=True)
    assert isinstance(sums2, list) and len(sums2) == 1
    f = F([xs], [doubled, sums, sums2[0]], updates=upd)
    got = f([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(got[0], [2, 4, 6])
    np.testing.assert_array_equal(got[1], [1, 3, 6])
    np.testing.assert_array_equal(got[2], [1, 3, 6])
    assert float(c.get_value()) == 6.0
    g = F([xs], sums2[0], updates=list(upd2.items()))
    g([1.0, 1.0])
    assert float(c.get_value()) == 8.0


def test_free_variables_and_nested_scans():
    W = T.dmatrix("W")
    W_2 = W ** 2
    x0 = T.dvector("x0")
    out, _ = theano.scan(lambda x: T.dot(x, W_2), outputs_info=x0, n_steps=3)
    assert out.owner.op.n_nonseqs == 1  # W ** 2 is computed once, outside the loop

    def row_sums(row):
        s, _ = theano.scan(lambda v, acc: acc + v, sequences=row, outputs_info=T.constant(0.0))
        return s[-1]

    nested, _ = theano.map(row_sums, sequences=W)
    f = F([W, x0], [out, nested])
    Wv = np.arange(1.0, 5.0).reshape(2, 2) / 4
    got = f(Wv, [1.0, -1.0])
    ref, x = [], np.array([1.0, -1.0])
    for _ in range(3):
        x = x @ Wv**2
        ref.append(x)
    np.testing.assert_allclose(got[0], ref)
    np.testing.assert_allclose(got[1], Wv.sum(axis=1))


def test_outputs_of_other_kinds():
    xs = T.dvector("xs")
    k = T.dscalar("k")
    const, _ = theano.map(lambda x: T.constant(3.0), sequences=xs)
    outer, _ = theano.map(lambda x: k, sequences=xs)
    ident, _ = theano.map(lambda x: x, sequences=xs)
    rows, _ = theano.map(lambda x, k: T.stack([x, k, x * k]), sequences=xs, non_sequences=k)
    f = F([xs, k], [const, outer, ident, rows])
    got = f([1.0, 2.0], 5.0)
    np.testing.assert_array_equal(got[0], [3, 3])
    np.testing.assert_array_equal(got[1], [5, 5])
    np.testing.assert_array_equal(got[2], [1, 2])
    np.testing.assert_array_equal(got[3], [[1, 5, 5], [2, 5, 10]])


def test_output_upcast_to_the_state_dtype():
    x0 = T.dvector("x0")
    out, _ = theano.scan(lambda p: T.cast(p, "float32") * 2, outputs_info=x0, n_steps=2)
    assert out.dtype == "float64"
    np.testing.assert_array_equal(F([x0], out)([1.0]), [[2.0], [4.0]])


def test_map_rows_with_dynamic_shape():
    m, n = T.dmatrix("m"), T.lscalar("n")
    out, _ = theano.map(lambda row, n: T.concatenate([row, T.zeros((n,))]), sequences=m, non_sequences=n)
    got = F([m, n], out)(np.ones((2, 3)), 2)
    np.testing.assert_array_equal(got, [[1, 1, 1, 0, 0], [1, 1, 1, 0, 0]])
    # Rows sized by a value of the step: the first step sizes the output (Theano).
    k = T.lvector("k")
    sized, _ = theano.map(lambda i: T.zeros((i,)), sequences=k)
    assert F([k], sized)([2, 2]).shape == (2, 2)
    with pytest.raises(ValueError, match="a step's row has size 3 where the first step's rows have 2"):
        F([k], sized)([2, 3])


def test_state_shape_checked_at_run_time():
    x, a = T.dvector("x"), T.dvector("a")
    out, _ = theano.scan(lambda p, a: p * 0 + a, outputs_info=x, non_sequences=a, n_steps=2)
    f = F([x, a], out)
    np.testing.assert_array_equal(f([1.0, 1.0], [2.0, 3.0]), [[2, 3], [2, 3]])
    with pytest.raises(ValueError, match="shapes do not match|must have the shape of its initial state"):
        f([1.0, 1.0], [2.0, 3.0, 4.0])


def test_scan_checkpoints_padding():
    xs = T.dvector("xs")
    out, _ = theano.scan_checkpoints(lambda x, acc: acc + x, sequences=[xs], outputs_info=[T.constant(0.0)],
                                     save_every_N=3)
    f = F([xs], out)
    for n in (1, 3, 7, 9):
        v = np.arange(1.0, n + 1)
        idx = [min(i, n - 1) for i in range(2, ((n + 2) // 3) * 3, 3)]
        np.testing.assert_allclose(f(v), np.cumsum(v)[idx])


# -- scan errors (all raised while building the graph) ----------------------------------------------


def test_scan_argument_errors():
    xs, x0 = T.dvector("xs"), T.dvector("x0")
    with pytest.raises(TypeError, match="fn takes 1 positional argument.* but scan passes 2"):
        theano.scan(lambda x: x, sequences=xs, outputs_info=T.constant(0.0))
    with pytest.raises(TypeError, match="fn takes 3 .* scan passes 1"):
        theano.scan(lambda a, b, c: a, sequences=xs)
    with pytest.raises(ValueError, match="returned 2 output.* outputs_info has 1"):
        theano.scan(lambda x, p: [p + x, p], sequences=xs, outputs_info=T.constant(0.0))
    with pytest.raises(ValueError, match="returned 1 output.* outputs_info has 2"):
        theano.scan(lambda x, p: p + x, sequences=xs, outputs_info=[T.constant(0.0), None])
    with pytest.raises(TypeError, match="dtype int8 .* implicit downcast"):
        theano.scan(lambda x, p: p + x, sequences=T.ivector(), outputs_info=T.as_tensor_variable(0))
    with pytest.raises(ValueError, match=r"outputs_info\[0\] has shape \(\?,\) but fn's output #0 has rank 0"):
        theano.scan(lambda x, p: p.sum() + x, sequences=xs, outputs_info=x0)
    with pytest.raises(ValueError, match="dimension 0: 3 != 2"):
        theano.scan(lambda p: T.zeros((2,)), outputs_info=T.zeros((3,)), n_steps=2)
    with pytest.raises(ValueError, match="taps must be negative"):
        theano.scan(lambda p: p, outputs_info=dict(initial=x0, taps=[1]), n_steps=2)
    with pytest.raises(ValueError, match="repeated tap"):
        theano.scan(lambda a, b: a, sequences=dict(input=xs, taps=[0, 0]))
    with pytest.raises(ValueError, match="need an initial state with 3 rows"):
        theano.scan(lambda a, b: a + b, outputs_info=dict(initial=T.zeros((2,)), taps=[-3, -1]), n_steps=2)
    with pytest.raises(ValueError, match="scalar"):
        theano.scan(lambda a: a, sequences=T.dscalar())
    with pytest.raises(ValueError, match="n_steps must be given"):
        theano.scan(lambda p: p, outputs_info=x0)
    with pytest.raises(ValueError, match="until condition must be the last"):
        theano.scan(lambda p: (theano.until(p.sum() > 0), p), outputs_info=x0, n_steps=3)
    with pytest.raises(TypeError, match="until: the condition must be a scalar"):
        theano.until(xs > 0)
    with pytest.raises(TypeError, match="callable"):
        theano.scan(3, sequences=xs)
    with pytest.raises(ValueError, match="unknown keys"):
        theano.scan(lambda a: a, sequences=dict(input=xs, tap=[0]))
    with pytest.raises(ValueError, match="needs an 'input'"):
        theano.scan(lambda a: a, sequences=dict(taps=[0]))
    with pytest.raises(TypeError, match="must have shared variables as keys"):
        theano.scan(lambda p: (p, {x0: p}), outputs_info=x0, n_steps=1)
    with pytest.raises(TypeError, match="neither outputs, updates nor until"):
        theano.scan(lambda p: (p, "oops"), outputs_info=x0, n_steps=1)
    with pytest.raises(ValueError, match="truncate_gradient"):
        theano.scan(lambda a: a, sequences=xs, truncate_gradient=0)


def test_info_for_some_outputs_only_is_an_error():
    xs = T.dvector("xs")
    with pytest.raises(ValueError, match="one entry per output"):
        theano.scan(lambda x, p: [x, p + x, p], sequences=xs, outputs_info=[None, T.constant(0.0)])


# -- shared variables and functions -------------------------------------------------------------------


def test_shared_values_and_updates():
    s = theano.shared(np.arange(3.0), name="s")
    assert s.type.shape == (None,) and s.dtype == "float64"
    count = theano.shared(0)
    x = T.dvector("x")
    f = F([x], s * x, updates={s: s + 1, count: count + 1})
    np.testing.assert_array_equal(f([1.0, 1.0, 2.0]), [0, 1, 4])
    np.testing.assert_array_equal(s.get_value(), [1, 2, 3])
    assert int(count.get_value()) == 1
    s.set_value([5, 6])  # Python ints convert exactly
    np.testing.assert_array_equal(f([1.0, 1.0]), [5, 6])
    with pytest.raises(TypeError, match="rank"):
        s.set_value(np.zeros((2, 2)))
    i = theano.shared(np.int32(3))
    with pytest.raises(TypeError, match="without loss"):
        i.set_value(2.5)
    with pytest.raises(TypeError, match="downcast"):
        F([], [], updates={i: i * 1.5})
    with pytest.raises(TypeError, match="shared variable"):
        F([s], s * 2)
    assert theano.shared(1.5).dtype == "float64" and theano.shared(True).dtype == "bool"


def test_function_arguments():
    x, k = T.fvector("x"), T.iscalar("k")
    f = F([x, k], x * k)
    np.testing.assert_array_equal(f([1, 2], 3), [3, 6])
    np.testing.assert_array_equal(f(k=2, x=np.ones(2, np.float32)), [2, 2])
    with pytest.raises(TypeError, match=r"argument #1 \(k\): 2.5 cannot be converted to int32"):
        f([1.0], 2.5)
    with pytest.raises(TypeError, match=r"argument #0 \(x\).*float64 cannot be converted to float32"):
        f(np.ones(2), 1)
    np.testing.assert_array_equal(F([x, k], x * k, allow_input_downcast=True)(np.ones(2), 2.0), [2, 2])
    with pytest.raises(TypeError, match="rank"):
        f(np.ones((2, 2), np.float32), 1)
    with pytest.raises(TypeError, match="expected 2 argument"):
        f([1.0])
    with pytest.raises(theano.MissingInputError, match="not provided"):
        F([x], x * k)
    with pytest.raises(theano.UnusedInputError, match="not used"):
        F([x, k], x * 2)
    with pytest.raises(ValueError, match="given twice"):
        F([x, x], x)
    # An intermediate input cuts the graph (Theano): x is upstream of the cut.
    with pytest.raises(theano.MissingInputError):
        F([x * 2], x)


def test_function_options_and_ir():
    x, y = T.dvector("x"), T.dvector("y")
    out, _ = theano.scan(lambda v, acc: acc + v, sequences=x, outputs_info=T.constant(0.0))
    f = F([x], out, mode="FAST_COMPILE")
    np.testing.assert_array_equal(f([1.0, 2.0]), [1, 3])
    assert "scan.scan" in f.ir and "func.func @f" in f.ir
    assert "scf.for" in f.program.ir("scf")
    g = F([y], out, givens={x: y * 2})
    np.testing.assert_array_equal(g([1.0, 2.0]), [2, 6])
    h = F([x], [], on_unused_input="ignore")
    assert h([1.0]) == []
    single = F([x], x + 1)
    assert isinstance(single([1.0]), np.ndarray)
    assert isinstance(F([x], [x + 1])([1.0]), list)
    r = F([], T.constant(2.0) * 3)()
    assert r.shape == () and float(r) == 6.0
    np.testing.assert_array_equal(F([x], [x, x])([1.0, 2.0])[1], [1, 2])


def test_random_streams():
    srng = T.shared_randomstreams.RandomStreams(seed=42)
    u = srng.uniform((20000,), low=-1.0, high=3.0)
    n = srng.normal((20000,), avg=1.0, std=2.0, dtype="float32")
    b = srng.binomial((20000,), n=4, p=0.25)
    p = T.dvector("p")
    bp = srng.binomial(p=p)
    f = F([p], [u, n, b, bp])
    uv, nv, bv, bpv = f([0.0, 1.0, 0.0])
    assert uv.dtype == np.float64 and nv.dtype == np.float32 and bv.dtype == np.int64
    assert -1 <= uv.min() and uv.max() < 3 and abs(uv.mean() - 1.0) < 0.05
    assert abs(nv.mean() - 1.0) < 0.06 and abs(nv.std() - 2.0) < 0.06
    assert set(np.unique(bv)) <= {0, 1, 2, 3, 4} and abs(bv.mean() - 1.0) < 0.05
    np.testing.assert_array_equal(bpv, [0, 1, 0])
    again = f([0.0, 1.0, 0.0])
    assert (again[0] != uv).all()
    srng.seed(42)
    np.testing.assert_array_equal(f([0.0, 1.0, 0.0])[0], uv)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scans_of_every_dtype(dtype):
    xs, m, s = T.vector(dtype=dtype), T.matrix(dtype=dtype), T.scalar(dtype=dtype)
    if dtype == "bool":
        acc, _ = theano.scan(lambda x, a: a | x, sequences=xs, outputs_info=T.constant(False))
        mapped, _ = theano.map(lambda r: ~r, sequences=m)
        xv, mv = np.array([False, True, False]), np.array([[True, False], [False, False]])
        ref_acc, ref_map = np.logical_or.accumulate(xv), ~mv
    else:
        acc, _ = theano.scan(lambda x, a: a + x, sequences=xs, outputs_info=T.constant(np.asarray(0, dtype)))
        mapped, _ = theano.map(lambda r: r * 2, sequences=m)
        xv, mv = np.array([1, 2, 3], dtype=dtype), np.arange(4, dtype=dtype).reshape(2, 2)
        ref_acc, ref_map = np.cumsum(xv).astype(dtype), mv * 2
    out = F([xs, m, s], [acc, mapped, s, xs[0], m[1]])(xv, mv, xv[1])
    np.testing.assert_array_equal(out[0], ref_acc)
    np.testing.assert_array_equal(out[1], ref_map)
    assert out[0].dtype == np.dtype(dtype) and out[1].dtype == np.dtype(dtype)
    assert out[2] == xv[1] and out[3] == xv[0]
    np.testing.assert_array_equal(out[4], mv[1])


def test_inputs_and_shared_values_are_never_modified():
    x = T.dvector("x")
    s = theano.shared(np.arange(3.0))
    out, _ = theano.scan(lambda p: T.set_subtensor(p[0], p[0] + 1), outputs_info=x, n_steps=2)
    f = F([x], [T.set_subtensor(x[0], 9.0), T.inc_subtensor(s[1:], 1.0), out, x])
    xv = np.zeros(3)
    got = f(xv)
    np.testing.assert_array_equal(xv, np.zeros(3))
    np.testing.assert_array_equal(s.get_value(), np.arange(3.0))
    np.testing.assert_array_equal(got[0], [9, 0, 0])
    np.testing.assert_array_equal(got[1], [0, 2, 3])
    np.testing.assert_array_equal(got[2], [[1, 0, 0], [2, 0, 0]])
    got[3][0] = 5.0  # a returned input is a copy
    assert xv[0] == 0.0


def test_theano_import_forms_and_nested_random_scans():
    from mlir_scan.tensor.nnet import sigmoid
    from mlir_scan.tensor.shared_randomstreams import RandomStreams

    assert sigmoid is T.nnet.sigmoid and RandomStreams is T.shared_randomstreams.RandomStreams
    trng = RandomStreams(3)
    xs = T.dvector("xs")

    def outer(x):
        r, upd = theano.scan(lambda: trng.uniform((2,)), n_steps=3)
        return r.sum() + x, upd

    values, updates = theano.scan(outer, sequences=xs)
    f = F([xs], values, updates=updates)
    a, b = f(np.zeros(4)), f(np.zeros(4))
    assert a.shape == (4,) and (0 <= a).all() and (a < 6).all()
    assert len(set(a) | set(b)) == 8  # every outer step and every call draws fresh numbers


def test_static_sequence_too_short_is_a_build_error():
    with pytest.raises(ValueError, match=r"sequences\[0\] has 3 rows but 2 steps with taps \[-4, 0\] need 6"):
        theano.scan(lambda a, b: a + b, sequences=dict(input=T.tensor("float64", (3,)), taps=[-4, 0]), n_steps=2)
    with pytest.raises(ValueError, match="too short for their taps"):
        theano.scan(lambda a, b: a + b, sequences=dict(input=T.tensor("float64", (3,)), taps=[-4, 0]))


def test_out_of_bounds_indices_read_and_write_nothing():
    x, i = T.dmatrix("x"), T.iscalar("i")
    f = F([x, i], [x[i], x[i, 0], T.set_subtensor(x[i], 1.0), T.inc_subtensor(x[i, 0], 2.0)])
    for _ in range(10):  # a zero-row input: any read of a row would be out of bounds
        with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
            f(np.zeros((0, 100000)), 0)
    got = f(np.ones((2, 3)), -1)
    np.testing.assert_array_equal(got[0], [1, 1, 1])
    np.testing.assert_array_equal(got[3], [[1, 1, 1], [3, 1, 1]])


@pytest.mark.parametrize("taps", [[-2], [2], [-1, 0], [0, 1], [-1, 1], [1, -1], [-3, -1, 2]])
@pytest.mark.parametrize("n_steps", [None, 2])
def test_go_backwards_with_taps_as_pytensor(taps, n_steps):
    """go_backwards with sequence taps: Theano/PyTensor cut each tap's slice,
    then reverse it (the op reverses first: the builder negates the taps).
    Values and the gradient with respect to the sequence equal PyTensor's."""
    pytensor = pytest.importorskip("pytensor")
    pt = pytensor.tensor

    def step(*args):
        return sum((10.0 ** i) * a for i, a in enumerate(args))

    u = np.arange(1.0, 9.0) ** 1.5
    x = pt.dvector("x")
    out = pytensor.scan(step, sequences=dict(input=x, taps=taps), go_backwards=True, n_steps=n_steps,
                        return_updates=False)
    cost = (out ** 2).sum()
    want = pytensor.function([x], [out, pytensor.grad(cost, x)], mode="FAST_COMPILE")(u)
    xs = T.dvector("xs")
    ours, _ = theano.scan(step, sequences=dict(input=xs, taps=taps), go_backwards=True, n_steps=n_steps)
    got = F([xs], [ours, T.grad((ours ** 2).sum(), xs)])(u)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_an_allocated_operand_is_read_broadcast_and_its_sizes_checked():
    """``alloc(s, n, m) * y`` (the gradient of a sum times something) reads
    `s` broadcast instead of filling an (n, m) tensor, and a size that does
    not match `y`'s still fails the call (PyTensor's local_elemwise_alloc)."""
    y, s = T.matrix("y"), T.dscalar("s")
    n, m = T.lscalar("n"), T.lscalar("m")
    f = theano.function([y, s, n, m], T.alloc(s, n, m) * y)
    np.testing.assert_array_equal(f(np.ones((2, 3)), 2.0, 2, 3), np.full((2, 3), 2.0))
    assert f.program.ir("bufferized").count("linalg.generic") == 1  # the product only
    with pytest.raises(ValueError, match="size 4 != 3 along dimension 1"):
        f(np.ones((2, 3)), 2.0, 2, 4)
    # The gradient of a sum: the same values as before, no tensor of ones.
    x = T.matrix("x")
    g = theano.function([x], T.grad((x ** 2).sum(), x))
    np.testing.assert_array_equal(g(np.arange(6.0).reshape(2, 3)), 2 * np.arange(6.0).reshape(2, 3))
