"""The tensor API around scans: Theano's and PyTensor's names, NumPy's numbers.

Placeholders (``T.drow``, ``T.TensorType(dtype, broadcastable)(name)``,
``T.dscalars``), element-wise math (``round``, ``sgn``, ``isnan``, ``erf``,
``arctan2``...), ``argmax``/``argmin``, ``eye``, ``cumsum``/``cumprod``,
``tile``/``repeat``, ``squeeze`` and padding, ``tensordot``/``batched_dot``,
the lazy ``ifelse``, ``zero_grad``/``grad_clip``, and the random streams'
draws (``multinomial`` with a tensor ``n``, ``integers``, ``choice``,
``poisson``, ``permutation``, ``gamma``...). Values are checked against NumPy
in float64 and float32 (and inside a scan step for some), gradients against
central finite differences (``gradcheck.check_grad``), random draws
statistically with fixed seeds and generous bounds, and bad arguments by
the exception they raise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T
from mlir_scan.ifelse import ifelse
from mlir_scan.tensor.random.utils import RandomStream

from gradcheck import check_grad

RNG = np.random.default_rng(11)


def F(inputs, outputs, **kwargs):
    return theano.function(inputs, outputs, **kwargs)


def _u(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


# -- placeholders ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix,dtype", [("b", "int8"), ("w", "int16"), ("i", "int32"), ("l", "int64"),
                                          ("f", "float32"), ("d", "float64")])
def test_row_and_col_placeholders(prefix, dtype):
    r, c = getattr(T, prefix + "row")("r"), getattr(T, prefix + "col")("c")
    assert r.name == "r" and r.dtype == dtype and r.broadcastable == (True, False)
    assert c.dtype == dtype and c.broadcastable == (False, True) and c.type.shape == (None, 1)
    f = F([r, c], r + c)  # broadcasts to (n, m)
    got = f(np.arange(3).reshape(1, 3).astype(dtype), np.arange(2).reshape(2, 1).astype(dtype))
    np.testing.assert_array_equal(got, np.arange(3)[None, :] + np.arange(2)[:, None])
    with pytest.raises((TypeError, ValueError)):
        f(np.zeros((2, 3), dtype), np.zeros((2, 1), dtype))  # a row must have one row


def test_tensor_type_call_form_and_plural_constructors():
    x = T.TensorType("float32", (False, True))("x")
    assert x.name == "x" and x.dtype == "float32" and x.broadcastable == (False, True)
    assert T.TensorType(dtype="int32", broadcastable=(False,))().type == T.ivector().type
    assert T.TensorType("float64", shape=(None, 3)).make_variable("y").type.shape == (None, 3)
    a, b = T.dscalars("a", "b")
    assert (a.name, b.name, a.dtype) == ("a", "b", "float64")
    assert [v.name for v in T.fmatrices("pq")] == ["p", "q"]  # Theano splits a string of one-letter names
    assert T.ivectors("v").name == "v" and len(T.lscalars(3)) == 3
    assert T.tensor5("t").ndim == 5 and T.ftensor5().dtype == "float32" and T.tensor7().ndim == 7
    f = F([a, b], a * b)
    assert float(f(2.0, 3.0)) == 6.0
    with pytest.raises(ValueError, match="bad static dimension"):
        T.TensorType("float64", (True, 3))
    with pytest.raises(TypeError, match="broadcastable must hold booleans"):
        T.TensorType("float64", broadcastable=(True, 3))
    with pytest.raises(TypeError, match="not both"):
        T.TensorType("float64", shape=(None,), broadcastable=(False,))


# -- element-wise math -----------------------------------------------------------------------------------

UNARY = {
    "log2": (T.log2, np.log2, (0.1, 4.0)),
    "log10": (T.log10, np.log10, (0.1, 4.0)),
    "expm1": (T.expm1, np.expm1, (-2.0, 2.0)),
    "exp2": (T.exp2, np.exp2, (-3.0, 3.0)),
    "sinh": (T.sinh, np.sinh, (-2.0, 2.0)),
    "cosh": (T.cosh, np.cosh, (-2.0, 2.0)),
    "tan": (T.tan, np.tan, (-1.2, 1.2)),
    "arcsin": (T.arcsin, np.arcsin, (-0.95, 0.95)),
    "arccos": (T.arccos, np.arccos, (-0.95, 0.95)),
    "arctan": (T.arctan, np.arctan, (-3.0, 3.0)),
    "arcsinh": (T.arcsinh, np.arcsinh, (-3.0, 3.0)),
    "arccosh": (T.arccosh, np.arccosh, (1.1, 4.0)),
    "arctanh": (T.arctanh, np.arctanh, (-0.9, 0.9)),
    "erf": (T.erf, np.vectorize(math.erf), (-2.5, 2.5)),
    "erfc": (T.erfc, np.vectorize(math.erfc), (-2.5, 2.5)),
    "deg2rad": (T.deg2rad, np.deg2rad, (-180.0, 180.0)),
    "rad2deg": (T.rad2deg, np.rad2deg, (-3.0, 3.0)),
    "reciprocal": (T.reciprocal, np.reciprocal, (0.5, 3.0)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_against_numpy(name, dtype):
    fn, ref, (lo, hi) = UNARY[name]
    x = T.vector("x", dtype=dtype)
    value = RNG.uniform(lo, hi, size=7).astype(dtype)
    got = F([x], fn(x))(value)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, ref(value.astype(np.float64)), rtol=1e-5 if dtype == "float32" else 1e-12,
                               atol=1e-6 if dtype == "float32" else 1e-14)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_arctan2_round_sign_and_tests(dtype):
    x, y = T.vector("x", dtype=dtype), T.vector("y", dtype=dtype)
    xv = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, 3.7, np.nan, np.inf, -np.inf], dtype)
    yv = np.array([1.0, -1.0, 2.0, -3.0, 0.5, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0], dtype)
    f = F([x, y], [T.arctan2(x, y), T.round(x), T.round(x, mode="half_away_from_zero"),
                   T.round_half_to_even(x), T.sgn(x), T.sign(x), T.isnan(x), T.isinf(x), x.round()])
    atan2, even, away, even2, sgn, sign, isnan, isinf, method = f(xv, yv)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(atan2, np.arctan2(xv, yv), rtol=1e-6)
        np.testing.assert_array_equal(even, np.round(xv))  # NumPy: half to even
        np.testing.assert_array_equal(away, np.where(np.isfinite(xv), np.sign(xv) * np.floor(np.abs(xv) + 0.5), xv))
        np.testing.assert_array_equal(even2, np.round(xv))
        np.testing.assert_array_equal(sgn, np.sign(xv))
        np.testing.assert_array_equal(sign, np.sign(xv))
    np.testing.assert_array_equal(method, np.round(xv))
    assert isnan.dtype == np.bool_ and isnan.tolist() == np.isnan(xv).tolist()
    assert isinf.tolist() == np.isinf(xv).tolist()
    assert even.dtype == dtype and sgn.dtype == dtype
    with pytest.raises(ValueError, match="mode"):
        T.round(x, mode="half_up")


def test_integer_inputs_follow_numpy_and_theano_dtypes():
    i, j = T.ivector("i"), T.ivector("j")
    b = T.bvector("b")
    iv, jv = np.array([3, -7, 0, 5], "int32"), np.array([2, 2, 3, -2], "int32")
    f = F([i, j, b], [i / j, i / 2, T.round(i), T.sgn(i), T.isnan(i), T.isinf(i), T.erf(i), T.log2(b),
                      T.true_div(i, j), T.arctan2(i, j)])
    div, half, rnd, sgn, isnan, isinf, erf, log2b, tdiv, atan2 = f(iv, jv, np.array([1, 2, 4, 8], "int8"))
    np.testing.assert_array_equal(div, iv / jv)
    assert div.dtype == np.float64 and half.dtype == np.float64 and tdiv.dtype == np.float64
    np.testing.assert_array_equal(half, iv / 2)
    assert rnd.dtype == np.int32 and rnd.tolist() == iv.tolist()  # rounding an integer keeps it
    assert sgn.dtype == np.int32 and sgn.tolist() == np.sign(iv).tolist()
    assert not isnan.any() and not isinf.any()
    np.testing.assert_allclose(erf, [math.erf(v) for v in iv])
    assert erf.dtype == np.float64 and log2b.dtype == np.float32  # Theano: small ints compute in float32
    np.testing.assert_allclose(log2b, [0, 1, 2, 3])
    np.testing.assert_allclose(atan2, np.arctan2(iv, jv))


def test_new_math_inside_a_scan_step():
    m = T.dmatrix("m")

    def step(row, acc):
        return acc + T.erf(row).sum() + T.round(row * 2.5).sum() + T.arctan2(row, 1.0 + acc).sum()

    out, _ = theano.scan(step, sequences=m, outputs_info=T.constant(0.0))
    value = _u(4, 3)
    acc, want = 0.0, []
    for row in value:
        acc = acc + sum(math.erf(v) for v in row) + np.round(row * 2.5).sum() + np.arctan2(row, 1.0 + acc).sum()
        want.append(acc)
    np.testing.assert_allclose(F([m], out)(value), want, rtol=1e-12)


GRADS = {
    "log2_log10": (lambda a: (T.log2(a) * T.log10(a)).sum(), [_u(5, lo=0.5, hi=2.0)]),
    "expm1_exp2": (lambda a: (T.expm1(a) + T.exp2(a) * a).sum(), [_u(5)]),
    "sinh_cosh_tan": (lambda a: (T.sinh(a) * T.cosh(a) + T.tan(a)).sum(), [_u(5)]),
    "arc": (lambda a: (T.arcsin(a) + T.arccos(a) * a + T.arctan(a)).sum(), [_u(5, lo=-0.8, hi=0.8)]),
    "arc_hyperbolic": (lambda a: (T.arcsinh(a) + T.arctanh(a) + T.arccosh(a + 2.0)).sum(), [_u(5, lo=-0.8, hi=0.8)]),
    "erf_erfc": (lambda a: (T.erf(a) * a + T.erfc(a)).sum(), [_u(5)]),
    "arctan2": (lambda a, b: (T.arctan2(a, b) ** 2).sum(), [_u(4), _u(4, lo=0.5, hi=2.0)]),
    "round_sgn_are_flat": (lambda a: (T.round(a) * a + T.sgn(a) * a ** 2).sum(), [np.array([0.3, -1.2, 2.2])]),
    "cumsum": (lambda a: (T.cumsum(a, axis=1) ** 2 * T.arange(4)).sum() + (T.cumsum(a) ** 2).sum(), [_u(3, 4)]),
    "cumprod": (lambda a: (T.cumprod(a, axis=0) ** 2).sum() + T.cumprod(a).sum(), [_u(3, 2, lo=0.5, hi=1.5)]),
    "tile": (lambda a: (T.tile(a, (2, 3)) ** 2 * T.arange(9)).sum(), [_u(2, 3)]),
    "repeat": (lambda a: (T.repeat(a, 2, axis=0) ** 2 * T.arange(3)).sum() + T.repeat(a, [1, 0, 2], axis=1).sum(),
               [_u(2, 3)]),
    "tensordot": (lambda a, b: (T.tensordot(a, b, axes=[[0, 2], [1, 0]]) ** 2).sum(), [_u(2, 3, 4), _u(4, 2, 3)]),
    "tensordot_int": (lambda a, b: (T.tensordot(a, b, 1) ** 2).sum(), [_u(2, 3), _u(3, 2)]),
    "batched_dot": (lambda a, b: (T.batched_dot(a, b) ** 2).sum(), [_u(2, 3, 4), _u(2, 4, 2)]),
    "batched_dot_vectors": (lambda a, b: (T.batched_dot(a, b) ** 2).sum(), [_u(3, 4), _u(3, 4)]),
    "squeeze_pad_swap": (lambda a: (T.swapaxes(T.shape_padright(T.squeeze(a)), 0, 1) ** 2 * T.arange(3)).sum(),
                         [_u(1, 3)]),
    "ptp_max_and_argmax": (lambda a: T.ptp(a, axis=1).sum() + T.max_and_argmax(a, axis=0)[0].sum(),
                           [np.array([[0.1, 0.7, -0.3], [0.9, -0.8, 0.2]])]),
    "ifelse_then": (lambda a, b: ifelse(T.gt(a.sum(), 0), (a * b).sum(), (a ** 2).sum()), [_u(3, lo=0.1), _u(3)]),
    "ifelse_else": (lambda a, b: ifelse(T.gt(a.sum(), 0), (a * b).sum(), (a ** 3 * b).sum()),
                    [_u(3, lo=-1.0, hi=-0.1), _u(3)]),
    "grad_scale": (lambda a: theano.gradient.grad_scale(a, 1.0).sum() ** 2, [_u(3)]),
    "eye_identity_like": (lambda a: (T.dot(a, T.eye(3, 3, 1)) ** 2).sum() + (T.identity_like(a) * a).sum(),
                          [_u(3, 3)]),
    "trace_diagonal": (lambda a: T.trace(a) ** 2, [_u(3, 3)]),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_against_finite_differences(name):
    fn, values = GRADS[name]
    check_grad(fn, values)


# -- argmax, eye, cumsum, tile, repeat -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_argmax_argmin_like_numpy(dtype):
    x = T.matrix("x", dtype=dtype)
    value = RNG.integers(-3, 3, size=(4, 5)).astype(dtype)  # ties on purpose
    f = F([x], [T.argmax(x), T.argmax(x, axis=0), T.argmax(x, axis=-1), T.argmin(x, axis=1),
                T.argmin(x), x.argmax(axis=1, keepdims=True), T.argmax(x, axis=[0, 1]),
                *T.max_and_argmax(x, axis=1)])
    got = f(value)
    want = [np.argmax(value), np.argmax(value, 0), np.argmax(value, -1), np.argmin(value, 1), np.argmin(value),
            np.argmax(value, 1)[:, None], np.argmax(value), np.max(value, 1), np.argmax(value, 1)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[0].dtype == np.int64 and got[1].dtype == np.int64


def test_argmax_nan_empty_and_errors():
    x = T.dvector("x")
    f = F([x], [T.argmax(x), T.argmin(x)])
    value = np.array([1.0, np.nan, 5.0, np.nan])
    assert [int(v) for v in f(value)] == [np.argmax(value), np.argmin(value)] == [1, 1]
    assert [int(v) for v in f(np.array([-np.inf, -np.inf]))] == [0, 0]
    with pytest.raises(ValueError, match="empty sequence"):
        f(np.zeros(0))
    with pytest.raises(ValueError, match="out of bounds"):
        T.argmax(x, axis=1)
    with pytest.raises(TypeError, match="axis"):
        T.argmax(x, axis=T.iscalar())
    m = T.dmatrix("m")
    rows, _ = theano.scan(lambda r: T.argmax(r), sequences=m)  # inside a step
    value = _u(5, 4)
    np.testing.assert_array_equal(F([m], rows)(value), np.argmax(value, axis=1))


def test_eye_and_identity_like():
    n, m, k = T.iscalar("n"), T.iscalar("m"), T.iscalar("k")
    f = F([n, m, k], [T.eye(n), T.eye(n, m, k), T.eye(n, m, k, dtype="int32")])
    for args in [(3, 3, 0), (2, 4, 1), (4, 2, -1), (3, 5, 7), (0, 2, 0)]:
        a, b, c = f(*args)
        np.testing.assert_array_equal(a, np.eye(args[0]))
        np.testing.assert_array_equal(b, np.eye(*args))
        assert c.dtype == np.int32 and a.dtype == np.float64
    assert T.eye(3).type.shape == (3, 3) and T.eye(2, 5, dtype="float32").eval().dtype == np.float32
    x = T.fmatrix("x")
    eye = F([x], T.identity_like(x))(np.zeros((2, 3), "float32"))
    assert eye.dtype == np.float32 and eye.tolist() == np.eye(2, 3).tolist()
    with pytest.raises(TypeError):
        T.eye(2.5)
    with pytest.raises(ValueError):
        T.eye(-1)
    for bad in [(-1, 2, 0), (2, -3, 0)]:  # NumPy's error, not an empty matrix
        with pytest.raises(ValueError, match="eye: negative dimensions are not allowed"):
            f(*bad)
    with pytest.raises(TypeError, match="matrix"):
        T.identity_like(T.vector())


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8", "bool"])
def test_cumsum_cumprod_like_numpy(dtype):
    x = T.tensor3("x", dtype=dtype)
    value = RNG.integers(-2, 3, size=(2, 3, 4)).astype(dtype)
    f = F([x], [T.cumsum(x), T.cumsum(x, axis=1), T.cumprod(x, axis=-1), T.cumprod(x, axis=0), x.cumsum(axis=2),
                T.extra_ops.cumprod(x)])
    got = f(value)
    want = [np.cumsum(value), np.cumsum(value, 1), np.cumprod(value, -1), np.cumprod(value, 0), np.cumsum(value, 2),
            np.cumprod(value)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype  # NumPy: small ints and bools accumulate in int64
    assert F([x], T.cumsum(x, axis=0))(np.zeros((0, 2, 2), dtype)).shape == (0, 2, 2)
    with pytest.raises(ValueError, match="out of bounds"):
        T.cumsum(x, axis=3)


@pytest.mark.parametrize("mode", ["FAST_COMPILE", "FAST_RUN"])
def test_cumsum_inside_a_scan_step_and_its_gradient_through_the_scan(mode):
    xs = T.dmatrix("xs")
    out, _ = theano.scan(lambda r, acc: acc + T.cumsum(r), sequences=xs, outputs_info=T.zeros((3,)))
    value = _u(4, 3)
    np.testing.assert_allclose(F([xs], out, mode=mode)(value), np.cumsum(np.cumsum(value, axis=1), axis=0))
    check_grad(lambda a: (theano.scan(lambda r, acc: acc * 0.5 + T.cumsum(r) ** 2, sequences=a,
                                      outputs_info=T.zeros((3,)))[0][-1]).sum(), [value], mode=mode)


def test_tile_and_repeat_like_numpy():
    x = T.dmatrix("x")
    n = T.iscalar("n")
    value = np.arange(6.0).reshape(2, 3)
    f = F([x, n], [T.tile(x, (2, 3)), T.tile(x, 2), T.tile(x, (2, 1, 2)), T.tile(x, (n, 1)), T.repeat(x, 2),
                   T.repeat(x, 3, axis=0), T.repeat(x, n, axis=-1), T.repeat(x, [2, 0, 1], axis=1), x.repeat(2, 0),
                   T.repeat(x, 0, axis=1)])
    got = f(value, 3)
    want = [np.tile(value, (2, 3)), np.tile(value, 2), np.tile(value, (2, 1, 2)), np.tile(value, (3, 1)),
            np.repeat(value, 2), np.repeat(value, 3, axis=0), np.repeat(value, 3, axis=-1),
            np.repeat(value, [2, 0, 1], axis=1), np.repeat(value, 2, 0), np.repeat(value, 0, axis=1)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    iv = T.ivector("iv")
    got = F([iv], [T.tile(iv, 3), T.repeat(iv, 2)])(np.array([1, 2], "int32"))
    assert got[0].dtype == np.int32 and got[0].tolist() == [1, 2] * 3 and got[1].tolist() == [1, 1, 2, 2]
    with pytest.raises(ValueError, match="negative"):
        T.repeat(x, -1)
    with pytest.raises(TypeError):
        T.repeat(x, 1.5)
    with pytest.raises(NotImplementedError, match="vector of counts"):
        T.repeat(x, T.ivector(), axis=0)
    with pytest.raises(ValueError, match="counts"):
        T.repeat(T.dvector().reshape((3,)), [1, 2])
    with pytest.raises(ValueError):
        T.tile(x, (-1, 2))


def test_squeeze_padding_swapaxes_ptp():
    x = T.TensorType("float64", (False, True, False, True))("x")
    value = _u(2, 1, 3, 1)
    y = T.dtensor3("y")
    f = F([x, y], [T.squeeze(x), T.squeeze(x, axis=1), x.squeeze(), T.shape_padleft(y, 2), T.shape_padright(y),
                   T.shape_padaxis(y, 1), T.shape_padaxis(y, -1), T.expand_dims(y, (0, 2)), T.swapaxes(y, 0, 2),
                   y.swapaxes(1, -1), T.ptp(y), T.ptp(y, axis=1), T.extra_ops.squeeze(y, axis=0)])
    yv = _u(1, 2, 3)
    got = f(value, yv)
    want = [np.squeeze(value), np.squeeze(value, axis=1), np.squeeze(value), yv[None, None], yv[..., None],
            np.expand_dims(yv, 1), np.expand_dims(yv, -1), np.expand_dims(yv, (0, 2)), np.swapaxes(yv, 0, 2),
            np.swapaxes(yv, 1, -1), np.ptp(yv), np.ptp(yv, axis=1), np.squeeze(yv, axis=0)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # squeezing a dimension that is not of size 1 fails the call (Theano checks it at run time)
    with pytest.raises(AssertionError):
        F([y], T.squeeze(y, axis=0))(_u(2, 2, 3))
    with pytest.raises(ValueError, match="size not equal to one"):
        T.squeeze(T.specify_shape(y, (2, 2, 3)), axis=0)
    with pytest.raises(IndexError):
        T.shape_padaxis(y, 5)


def test_tensordot_and_batched_dot_like_numpy():
    a, b = T.dtensor3("a"), T.dtensor3("b")
    m, v = T.dmatrix("m"), T.dvector("v")
    av, bv = _u(2, 3, 4), _u(2, 4, 5)
    mv = _u(4, 3)
    f = F([a, b, m, v], [T.batched_dot(a, b), T.tensordot(a, b, axes=[[2], [1]]), T.tensordot(a, m, axes=1),
                         T.tensordot(m, m.T, axes=[[0, 1], [1, 0]]), T.tensordot(a, v, axes=[[1], [0]]),
                         T.batched_dot(m, m), T.tensordot(v, v, axes=0), T.batched_dot(a, m.T[:2])])
    vv = _u(3)
    got = f(av, bv, mv, vv)
    want = [np.einsum("bij,bjk->bik", av, bv), np.tensordot(av, bv, axes=[[2], [1]]), np.tensordot(av, mv, axes=1),
            np.tensordot(mv, mv.T, axes=[[0, 1], [1, 0]]), np.tensordot(av, vv, axes=[[1], [0]]),
            np.einsum("ij,ij->i", mv, mv), np.tensordot(vv, vv, axes=0), np.einsum("bij,bj->bi", av, mv.T[:2])]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    fa, fb = T.ftensor3("fa"), T.ftensor3("fb")
    got32 = F([fa, fb], T.batched_dot(fa, fb))(av.astype("float32"), bv.astype("float32"))
    assert got32.dtype == np.float32
    # float32 products summed in float32: the error bound scales with sum |a||b|, not with the result,
    # which can cancel to near zero (module RNG state depends on test order under xdist).
    bound = 4 * np.finfo(np.float32).eps * np.einsum("bij,bjk->bik", np.abs(av), np.abs(bv))
    assert np.all(np.abs(got32 - want[0]) <= bound)
    with pytest.raises(ValueError, match="shape-mismatch"):
        T.tensordot(T.specify_shape(a, (2, 3, 4)), T.specify_shape(b, (2, 5, 5)), axes=[[2], [1]])
    with pytest.raises(ValueError, match="same length"):
        T.tensordot(a, b, axes=[[1, 2], [1]])
    with pytest.raises(ValueError, match="shape mismatch"):  # found at run time
        F([a, b], T.tensordot(a, b, axes=[[2], [1]]))(_u(2, 3, 4), _u(2, 3, 5))


def test_roll_stacking_closeness_and_iround():
    x, s = T.dmatrix("x"), T.iscalar("s")
    value = np.arange(6.0).reshape(2, 3)
    f = F([x, s], [T.roll(x, 1), T.roll(x, s, axis=1), T.roll(x, -4, axis=0), T.iround(x * 0.5),
                   T.isclose(x, x + 1e-9), T.allclose(x, x * 2), T.largest(x, 2.0), T.smallest(x, 2.0, x - 1),
                   T.stacklists([[s, s], [s, 1]]), T.horizontal_stack(x, x), T.vertical_stack(x, x[0])])
    got = f(value, -2)
    want = [np.roll(value, 1), np.roll(value, -2, axis=1), np.roll(value, -4, axis=0), np.round(value * 0.5),
            np.isclose(value, value + 1e-9), np.allclose(value, value * 2), np.maximum(value, 2.0),
            np.minimum(np.minimum(value, 2.0), value - 1), np.array([[-2, -2], [-2, 1]]), np.hstack([value, value]),
            np.vstack([value, value[0]])]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[3].dtype == np.int64
    np.testing.assert_array_equal(F([x], T.isclose(x, np.inf, equal_nan=True))(np.array([[np.inf, np.nan, 1.0]])),
                                  [[True, False, False]])


# -- ifelse ----------------------------------------------------------------------------------------------


def test_ifelse_is_lazy_and_importable_as_theano_ifelse():
    assert theano.ifelse.ifelse is ifelse
    a, b = T.dscalars("a", "b")
    x, y = T.dmatrices("x", "y")
    # The guide's example: only the selected mean is computed.
    f = F([a, b, x, y], ifelse(T.lt(a, b), T.mean(x), T.mean(y)))
    assert float(f(1, 2, np.ones((3, 3)), np.zeros((2, 2)))) == 1.0
    assert float(f(3, 2, np.ones((3, 3)), np.zeros((2, 2)))) == 0.0
    assert "scf.if" in f.ir
    # The other branch would fail (an index out of bounds, a shape mismatch): it does not run.
    v, i = T.dvector("v"), T.lscalar("i")
    g = F([v, i], ifelse(T.lt(i, v.shape[0]), v[i], (v + v[:2]).sum()))
    assert float(g([1.0, 2.0, 3.0], 2)) == 3.0
    with pytest.raises(ValueError, match="shapes do not match"):
        g([1.0, 2.0, 3.0], 5)
    assert float(g([1.0, 2.0], 7)) == 6.0
    # Several outputs, as lists or tuples; Python numbers take the other branch's dtype.
    out = ifelse(a > 0, [a * 2, x.sum()], [b, 0.0])
    assert isinstance(out, list)
    t = ifelse(a > 0, (a, a), (1.0, b))
    assert isinstance(t, tuple)
    h = F([a, b, x], out + list(t))
    assert [float(r) for r in h(1.0, 5.0, np.ones((2, 2)))] == [2.0, 4.0, 1.0, 1.0]
    assert [float(r) for r in h(-1.0, 5.0, np.ones((2, 2)))] == [5.0, 0.0, 1.0, 5.0]


@pytest.mark.parametrize("mode", ["FAST_COMPILE", "FAST_RUN"])
def test_ifelse_inside_a_scan_step_with_gradient(mode):
    xs = T.dvector("xs")

    def step(v, acc):
        return ifelse(T.gt(v, 0), acc + v ** 2, acc * 0.5)

    out, _ = theano.scan(step, sequences=xs, outputs_info=T.constant(0.0))
    value = np.array([1.0, -1.0, 2.0, -3.0, 0.5])
    acc, want = 0.0, []
    for v in value:
        acc = acc + v ** 2 if v > 0 else acc * 0.5
        want.append(acc)
    np.testing.assert_allclose(F([xs], out, mode=mode)(value), want)
    check_grad(lambda a: theano.scan(step, sequences=a, outputs_info=T.constant(0.0))[0][-1], [value], mode=mode)


def test_ifelse_bad_arguments():
    a = T.dscalar("a")
    v, iv = T.dvector("v"), T.ivector("iv")
    with pytest.raises(TypeError, match="identical types"):
        ifelse(a > 0, v, iv)
    with pytest.raises(TypeError, match="identical types"):
        ifelse(a > 0, v, a)
    with pytest.raises(TypeError, match="scalar"):
        ifelse(v, a, a)
    with pytest.raises(ValueError, match="same number of outputs"):
        ifelse(a > 0, [a, a], [a])


# -- gradient helpers ------------------------------------------------------------------------------------


def test_zero_grad_grad_clip_and_consider_constant():
    x = T.dscalar("x")
    g_zero = T.grad(theano.gradient.zero_grad(x) * x, x)
    g_clip = T.grad(theano.gradient.grad_clip(x, -1.0, 1.0) ** 2, x)
    g_const = T.grad(theano.gradient.consider_constant(x ** 2) + x, x)
    only = T.grad(theano.gradient.zero_grad(x ** 2), x)  # connected: zeros, no DisconnectedInputError
    f = F([x], [theano.gradient.zero_grad(x) * 3, g_zero, g_clip, g_const, only])
    assert [float(r) for r in f(3.0)] == [9.0, 3.0, 1.0, 1.0, 0.0]
    assert [float(r) for r in f(0.25)][2] == 0.5  # inside the bounds: unclipped
    v = T.dvector("v")
    gv = F([v], T.grad((theano.gradient.grad_clip(v, -0.5, 2.0) ** 3).sum(), v))(np.array([-1.0, 0.5, 2.0]))
    np.testing.assert_allclose(gv, np.clip(3 * np.array([-1.0, 0.5, 2.0]) ** 2, -0.5, 2.0))
    with pytest.raises(ValueError, match="lower bound"):
        theano.gradient.grad_clip(x, 1.0, -1.0)
    with pytest.raises(TypeError, match="constant"):
        theano.gradient.grad_clip(x, T.dscalar(), 1.0)


def test_more_of_t_nnet():
    x, t = T.dmatrix("x"), T.dmatrix("t")
    v, w = RNG.uniform(0.05, 0.95, size=(2, 3)), RNG.uniform(0, 1, size=(2, 3))
    f = F([x, t], [T.nnet.logsoftmax(x), T.nnet.elu(x - 0.5, 0.7), T.nnet.softsign(x - 0.5),
                   T.nnet.hard_sigmoid(x * 8 - 4), T.nnet.binary_crossentropy(x, t), T.nnet.logsoftmax(x, axis=0)])
    got = f(v, w)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    want = [np.log(e / e.sum(axis=1, keepdims=True)), np.where(v > 0.5, v - 0.5, 0.7 * np.expm1(v - 0.5)),
            (v - 0.5) / (1 + np.abs(v - 0.5)), np.clip(0.2 * (v * 8 - 4) + 0.5, 0, 1),
            -(w * np.log(v) + (1 - w) * np.log(1 - v)), v - np.log(np.exp(v).sum(axis=0, keepdims=True))]
    for g, want_ in zip(got, want):
        np.testing.assert_allclose(g, want_, rtol=1e-12)
    check_grad(lambda a, b: (T.nnet.logsoftmax(a) * b).sum() + T.nnet.binary_crossentropy(T.nnet.sigmoid(a), b).sum(),
               [_u(2, 3), _u(2, 3, lo=0.0)])


# -- random streams --------------------------------------------------------------------------------------


def test_multinomial_with_a_vector_or_symbolic_n():
    srng = T.shared_randomstreams.RandomStreams(seed=5)
    nv, n = T.lvector("nv"), T.lscalar("n")
    pvals = np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0], [0.1, 0.1, 0.8]])
    rows = srng.multinomial(n=nv, pvals=pvals)  # one count per row of pvals
    many = srng.multinomial(size=(3000,), n=n, pvals=[0.25, 0.75])
    big = srng.multinomial(n=5000, pvals=[[0.3, 0.7]])  # more than the 64 unrolled trials
    b = srng.binomial((4000,), n=n, p=0.3)
    f = F([nv, n], [rows, many, big, b])
    r, m, g, bb = f(np.array([10, 1000, 0]), 20)
    assert r.shape == (3, 3) and r.dtype == np.int64
    assert r.sum(axis=1).tolist() == [10, 1000, 0] and r[1, 2] == 0
    assert abs(r[1, 0] / 1000 - 0.6) < 0.06
    assert m.shape == (3000, 2) and (m.sum(axis=1) == 20).all() and abs(m[:, 1].mean() / 20 - 0.75) < 0.02
    assert g.sum() == 5000 and abs(g[0, 0] / 5000 - 0.3) < 0.03
    assert abs(bb.mean() - 6.0) < 0.15 and abs(bb.var() - 4.2) < 0.4
    r2 = f(np.array([10, 1000, 0]), 20)[0]
    assert (r2 != r).any()  # the state advanced
    assert rows.rng in [s for s, _ in srng.state_updates] and rows.update[0] is rows.rng  # Theano's attributes
    with pytest.raises(ValueError, match="n < 0"):
        f(np.array([1, -1, 2]), 3)
    with pytest.raises(TypeError):
        srng.multinomial(n=T.dscalar(), pvals=[0.5, 0.5])
    with pytest.raises(TypeError):
        srng.multinomial(n=2.5, pvals=[0.5, 0.5])


def test_multinomial_rows_that_do_not_sum_to_one_raise():
    srng = T.shared_randomstreams.RandomStreams(seed=5)
    p = T.dmatrix("p")
    f = F([p], srng.multinomial(n=4, pvals=p))
    assert f(np.array([[0.5, 0.5], [1.0, 0.0]])).sum(axis=1).tolist() == [4, 4]
    for bad in ([[0.7, 0.7]], [[0.2, 0.2]], [[1.5, -0.5]], [[np.nan, 1.0]]):
        with pytest.raises(ValueError, match="pvals"):
            f(np.array(bad))
    mrg = theano.sandbox.rng_mrg.MRG_RandomStreams(seed=1)
    g = F([p], mrg.multinomial(pvals=p, n=3))
    with pytest.raises(ValueError, match="pvals"):
        g(np.array([[0.9, 0.9]]))


def test_invalid_distribution_parameters_raise_as_numpy_does():
    # NumPy's (and so Theano's RandomStreams') checks: binomial p outside [0, 1] or NaN, normal
    # std < 0 (a NaN std gives NaNs), poisson lam < 0 or NaN; for every number of trials.
    srng = T.shared_randomstreams.RandomStreams(seed=5)
    p, s = T.dscalar("p"), T.dscalar("s")
    for n in (1, 5, 100, T.iscalar("n")):
        ins = [p] + ([n] if isinstance(n, theano.graph.Variable) else [])
        f = F(ins, srng.binomial((3,), n=n, p=p))
        extra = [7] if len(ins) == 2 else []
        assert all(0 <= f(0.3, *extra)) and f(1.0, *extra).tolist() == [f(1.0, *extra)[0]] * 3
        for bad in (1.5, -0.1, np.nan):
            with pytest.raises(ValueError, match=r"binomial: p < 0, p > 1 or p is NaN"):
                f(bad, *extra)
    g = F([s], srng.normal((3,), std=s))
    assert np.isnan(g(np.nan)).all() and np.isfinite(g(0.5)).all()
    with pytest.raises(ValueError, match="normal: std < 0"):
        g(-1.0)
    h = F([s], srng.poisson((3,), lam=s))
    for bad in (-1.0, np.nan):
        with pytest.raises(ValueError, match="poisson: lam < 0 or lam is NaN"):
            h(bad)


def _chi2_against(samples: np.ndarray, log_pmf, support: np.ndarray) -> tuple[float, int]:
    """Pearson's statistic of `samples` against a pmf over the cells expecting > 20 counts
    (the rest pooled), and its degrees of freedom."""
    expected = np.exp([log_pmf(int(k)) for k in support]) * samples.size
    observed = np.array([(samples == k).sum() for k in support], dtype=float)
    big = expected > 20
    exp_cells = np.append(expected[big], samples.size - expected[big].sum())
    obs_cells = np.append(observed[big], samples.size - observed[big].sum())
    return float(((obs_cells - exp_cells) ** 2 / exp_cells).sum()), int(big.sum())


@pytest.mark.parametrize("dist,params", [
    ("poisson", (15.0,)), ("poisson", (250.5,)),                      # PTRS
    ("binomial", (500, 0.01)), ("binomial", (200, 0.2)), ("binomial", (1000, 0.85)),  # inversion, BTRS, flipped
])
def test_large_rates_and_counts_are_sampled_exactly(dist, params):
    # Poisson rates >= 10 and binomials of more than 64 trials are sampled by rejection
    # (PTRS, BTRS) or inversion: the frequencies match the pmf (Pearson's chi-square, at a
    # fixed seed, below its 0.999 quantile ~ df + 3.1 sqrt(2 df) + 10).
    srng = T.shared_randomstreams.RandomStreams(seed=17)
    size = 100_000
    if dist == "poisson":
        (lam,) = params
        x = F([], srng.poisson((size,), lam=lam))()
        log_pmf = lambda k: k * math.log(lam) - lam - math.lgamma(k + 1)  # noqa: E731
        mean, var = lam, lam
    else:
        n, p = params
        x = F([], srng.binomial((size,), n=n, p=p))()
        log_pmf = lambda k: (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)  # noqa: E731
                             + k * math.log(p) + (n - k) * math.log1p(-p))
        mean, var = n * p, n * p * (1 - p)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / size)
    support = np.arange(max(0, int(mean - 10 * math.sqrt(var))), int(mean + 10 * math.sqrt(var)) + 1)
    stat, df = _chi2_against(x, log_pmf, support)
    assert stat < df + 3.1 * math.sqrt(2 * df) + 10, (stat, df)


def test_huge_rates_and_counts_take_bounded_time():
    # binomial(n=2**40) and poisson(1e15) loop over their trials/rate no longer (they hung):
    # the samples have the right mean; rates past NumPy's largest are a ValueError.
    srng = T.shared_randomstreams.RandomStreams(seed=2)
    lam, n, p = T.dscalar("lam"), T.lscalar("n"), T.dscalar("p")
    fp = F([lam], srng.poisson((2000,), lam=lam))
    fb = F([n, p], srng.binomial((2000,), n=n, p=p))
    assert abs(fp(1e15).mean() / 1e15 - 1) < 1e-6
    for count, prob in ((2 ** 40, 0.5), (2 ** 40, 1e-12), (2 ** 62, 0.999), (10 ** 6, 0.0), (10 ** 6, 1.0)):
        x = fb(count, prob)
        assert ((0 <= x) & (x <= count)).all()
        sd = math.sqrt(count * prob * (1 - prob))
        assert abs(x.mean() - count * prob) <= 5 * sd / math.sqrt(x.size) + 1e-9 * count * prob
    with pytest.raises(ValueError, match="poisson: lam value too large"):
        fp(1e19)
    # a multinomial still counts its trials, at most the 2**32 - 1 counters of a row
    pv = T.dvector("pv")
    fm = F([n, pv], srng.multinomial(n=n, pvals=pv))
    assert fm(1000, np.array([0.25, 0.75])).sum() == 1000
    with pytest.raises(ValueError, match="multinomial: n > 4294967295"):
        fm(2 ** 40, np.array([0.25, 0.75]))


def test_pytensor_random_stream_draws():
    rs = RandomStream(seed=3)
    lo = T.lscalar("lo")
    n = 20000
    draws = [rs.integers(3, 7, size=(n,)), rs.integers(lo, size=(5000,)), rs.poisson(4.0, size=(n,)),
             rs.poisson(750.0, size=(2000,)), rs.exponential(2.0, size=(n,)), rs.gamma(3.0, scale=2.0, size=(n,)),
             rs.gamma(0.5, scale=1.0, size=(n,)), rs.categorical([0.1, 0.6, 0.3], size=(n,)),
             rs.choice(5, size=(n,)), rs.choice(4, size=(n,), p=[0.1, 0.2, 0.3, 0.4]),
             rs.bernoulli(0.3, size=(n,)), rs.binomial(100, 0.4, size=(5000,)), rs.gamma(2.0, rate=4.0, size=(n,))]
    f = F([lo], draws)
    (ints, ints0, pois, pois_big, expo, gam, gam_small, cat, choice, choice_p, bern, binom, gam_rate) = f(4)
    assert ints.min() == 3 and ints.max() == 6 and np.all(np.abs(np.bincount(ints)[3:] / 20000 - 0.25) < 0.02)
    assert ints0.min() == 0 and ints0.max() == 3 and ints.dtype == np.int64
    assert abs(pois.mean() - 4.0) < 0.1 and abs(pois.var() - 4.0) < 0.3 and pois.dtype == np.int64
    assert abs(pois_big.mean() - 750) < 3 and abs(pois_big.var() / 750 - 1) < 0.15
    assert abs(expo.mean() - 2.0) < 0.08 and abs(expo.var() - 4.0) < 0.4 and expo.min() >= 0
    assert abs(gam.mean() - 6.0) < 0.15 and abs(gam.var() - 12.0) < 1.0
    assert abs(gam_small.mean() - 0.5) < 0.03 and abs(gam_small.var() - 0.5) < 0.06 and gam_small.min() >= 0
    assert abs(gam_rate.mean() - 0.5) < 0.02
    assert np.all(np.abs(np.bincount(cat, minlength=3) / 20000 - [0.1, 0.6, 0.3]) < 0.02)
    assert np.all(np.abs(np.bincount(choice) / 20000 - 0.2) < 0.02)
    assert np.all(np.abs(np.bincount(choice_p) / 20000 - [0.1, 0.2, 0.3, 0.4]) < 0.02)
    assert set(np.unique(bern)) == {0, 1} and abs(bern.mean() - 0.3) < 0.02
    assert abs(binom.mean() - 40) < 0.5 and abs(binom.var() - 24) < 3
    with pytest.raises(ValueError, match="low >= high"):
        f(0)
    with pytest.raises(ValueError, match="scale"):
        rs.gamma(2.0, rate=1.0, scale=1.0)


def test_permutations_and_choice_without_replacement():
    rs = RandomStream(seed=9)
    x = T.dvector("x")
    perm = rs.permutation(7)
    shuffled = rs.permutation(x)
    picks = rs.choice(np.array([10.0, 20.0, 30.0, 40.0]), size=(2, 2), replace=False)
    f = F([x], [perm, shuffled, picks])
    seen = set()
    for _ in range(20):
        p, s, c = f(np.arange(5.0))
        assert sorted(p.tolist()) == list(range(7)) and sorted(s.tolist()) == list(range(5))
        assert c.shape == (2, 2) and len(set(c.ravel().tolist())) == 4 and set(c.ravel()) <= {10, 20, 30, 40}
        seen.add(tuple(p))
    assert len(seen) > 15  # not always the same permutation
    srng = T.shared_randomstreams.RandomStreams(seed=2)
    rows = srng.permutation(size=(3,), n=5)
    ints = srng.random_integers((4000,), 1, 3)
    ch = srng.choice(size=(4000,), a=3)
    got = F([], [rows, ints, ch])()
    assert got[0].shape == (3, 5) and all(sorted(r) == list(range(5)) for r in got[0].tolist())
    assert set(np.unique(got[1])) == {1, 2, 3} and set(np.unique(got[2])) == {0, 1, 2}
    # the first element of 4000 permutations of 4 is uniform
    firsts = F([], srng.permutation(size=(4000,), n=4)[:, 0])()
    assert np.all(np.abs(np.bincount(firsts) / 4000 - 0.25) < 0.03)
    with pytest.raises(ValueError, match="larger sample than population"):
        F([], rs.choice(3, size=(4,), replace=False))()
    with pytest.raises(NotImplementedError):
        rs.choice(3, size=(2,), replace=False, p=[0.2, 0.3, 0.5])


def test_random_draws_in_a_scan_step_advance_each_step():
    srng = T.shared_randomstreams.RandomStreams(seed=4)
    n = T.lscalar("n")
    out, updates = theano.scan(lambda: [srng.poisson(lam=3.0), srng.binomial(n=n, p=0.5)], n_steps=2000)
    f = F([n], out, updates=updates)
    pois, binom = f(10)
    assert len(set(pois.tolist())) > 5 and abs(pois.mean() - 3.0) < 0.15
    assert abs(binom.mean() - 5.0) < 0.15 and binom.max() <= 10
    assert (f(10)[0] != pois).any()


def test_reshape_with_zero_sizes_as_numpy():
    """Sizes of 0 in the new shape: an empty result of that shape, never a
    crash (expand_shape beside a static 0 made the LLVM 22 lowering divide by
    0 and the bindings abort); -1 beside sizes that multiply to 0 raises
    ValueError, as NumPy does, at build time when the 0 is static, at the call
    otherwise."""
    x, n = T.dmatrix("x"), T.lscalar("n")
    f = theano.function([x, n], [x.reshape((0, n)), x.reshape((n, 0, 2)), x.reshape((n, -1))])
    got = f(np.zeros((0, 3)), 4)
    assert [g.shape for g in got[:2]] == [(0, 4), (4, 0, 2)]
    assert got[2].shape == (4, 0)
    with pytest.raises(ValueError, match="cannot reshape 6 elements"):
        f(np.zeros((2, 3)), 4)
    with pytest.raises(ValueError, match=r"unknown dimension \(-1\) when the other dimensions multiply to 0"):
        f(np.zeros((0, 3)), 0)
    for shape in [(0, -1), (-1, 0), (2, 0, -1)]:
        with pytest.raises(ValueError, match="the other dimensions multiply to 0"):
            x.reshape(shape)
        with pytest.raises(ValueError):
            np.zeros((0, 3)).reshape(shape)
    g = theano.function([x], x.reshape((3, 0)))
    assert g(np.zeros((0, 5))).shape == (3, 0)


def test_softplus_does_not_overflow():
    x, f = T.dvector("x"), T.fvector("f")
    v = np.array([40.0, 710.0, 800.0, -800.0, -30.0, 0.0, 1e-10])
    np.testing.assert_allclose(theano.function([x], T.nnet.softplus(x))(v), np.logaddexp(0, v), rtol=1e-15, atol=0)
    got = theano.function([f], T.nnet.softplus(f))(np.array([89.0, 100.0, -80.0], "float32"))
    np.testing.assert_allclose(got, np.logaddexp(0, np.array([89.0, 100.0, -80.0])), rtol=1e-6)


def test_arange_of_integer_scalars_is_int64():
    """Theano and PyTensor: arange of integer bounds is int64 (no wrap-around of a
    narrow type: arange(int8 3) * 100 is [0, 100, 200])."""
    n, b = T.iscalar("n"), T.bscalar("b")
    assert T.arange(n).dtype == "int64" and T.arange(b).dtype == "int64"
    np.testing.assert_array_equal(theano.function([b], T.arange(b) * 100)(np.int8(3)), [0, 100, 200])


@pytest.mark.parametrize("n", [2, 3, 4, -1, 2.0, -1.0])
def test_small_integer_powers_are_products_with_pows_values(n):
    # Theano's local_pow_specialize: no libm pow call per element, the same
    # values as NumPy's power at zeros, infinities and NaN.
    x = T.dvector("x")
    f = theano.function([x], x ** n)
    assert "math.powf" not in f.ir
    vals = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-300, 1e300, 3.0])
    with np.errstate(all="ignore"):
        want = vals ** n
    np.testing.assert_array_equal(f(vals), want)
    g = theano.function([x], T.grad((x ** n).sum(), x))
    assert "math.powf" not in g.ir
    finite = np.array([1.5, -2.25, 3.0, 0.7])
    np.testing.assert_allclose(g(finite), n * finite ** (n - 1), rtol=1e-15)


def test_other_powers_keep_pow():
    x, i = T.dvector("x"), T.ivector("i")
    assert "math.powf" in theano.function([x], x ** 0.5).ir
    assert "math.powf" in theano.function([x], x ** 5).ir
    np.testing.assert_array_equal(theano.function([i], i ** 2)(np.array([3, -4], "int32")), [9, 16])


def test_split_static_and_symbolic_sizes():
    xv = np.arange(12.0).reshape(3, 4)
    x, sz = T.matrix("x"), T.lvector("sz")
    f = theano.function([x, sz], [*T.split(x, [2, 1], 2, axis=0), *T.split(x, sz, 3, axis=-1)])
    got = f(xv, np.array([0, 3, 1]))
    want = np.split(xv, [2], axis=0) + np.split(xv, [0, 3], axis=1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match="sum"):
        f(xv, np.array([1, 1, 1]))
    with pytest.raises(ValueError, match="negative"):
        f(xv, np.array([-1, 4, 1]))
    with pytest.raises(ValueError, match="Split sizes sum to 4; expected 3"):
        T.split(T.matrix("m", shape=(3, 2)), [1, 3], 2)
    check_grad(lambda a: T.sum(T.split(a, [1, 3], 2, axis=1)[1] ** 2) + T.sum(T.split(a, [1, 3], 2, axis=1)[0]),
               [xv])


def test_scan_drawing_random_numbers_compiles_without_its_updates():
    """Theano: a function of a scan whose step draws random numbers may leave out the
    scan's updates; the stream is then not advanced (found running rnnrbm.py's graphs)."""
    from mlir_scan.tensor.shared_randomstreams import RandomStreams

    rng = RandomStreams(1)
    v = T.matrix("v")
    chain, upd = theano.scan(lambda x: rng.binomial(size=x.shape, n=1, p=T.nnet.sigmoid(x), dtype="float64"),
                             outputs_info=[v], n_steps=2)
    without = theano.function([v], chain[-1].sum())
    state = [s.get_value().copy() for s in upd]
    x = np.full((4, 3), 0.5)
    first = without(x)
    assert without(x) == first  # the stream does not move
    assert all(np.array_equal(s.get_value(), old) for s, old in zip(upd, state))
    assert 0 <= first <= 12
    with_upd = theano.function([v], chain[-1].sum(), updates=upd)
    with_upd(x)
    assert any(not np.array_equal(s.get_value(), old) for s, old in zip(upd, state))
