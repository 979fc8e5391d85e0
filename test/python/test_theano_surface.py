"""The parts of Theano's public surface real programs touch (issue 24, section 2).

Values are checked against NumPy, PyTensor or hand-computed numbers, and
gradients against finite differences.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import mlir_scan as theano
import mlir_scan.tensor as T


def _fd(f, x, eps=1e-6):
    """Central finite differences of the scalar function `f` at `x`."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


# -- variable truthiness ------------------------------------------------------------------------


def test_variables_are_truthy():
    x = T.dvector("x")
    assert bool(x) and bool(x + 1) and bool(T.constant(0.0)) and bool(theano.shared(np.zeros(2)))
    # Theano 1.0: only the comparison *operators* mark their result; T.lt does not.
    assert bool(T.lt(x, 1)) and bool(T.eq(x, 1))
    value = None if not x else x  # the idiom of real code: ``if not input:``
    assert value is x


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_comparison_operators_are_not_truthy(op):
    a, b, c = T.dscalar("a"), T.dscalar("b"), T.dscalar("c")
    with pytest.raises(TypeError, match="boolean operations"):
        bool(eval(f"a {op} b"))
    with pytest.raises(TypeError, match="boolean operations"):
        eval(f"a {op} b {op} c")  # (a < b) and (b < c)
    # the operators still build the element-wise comparison
    f = theano.function([a, b], eval(f"a {op} b"))
    for x, y in [(1.0, 2.0), (2.0, 2.0), (3.0, 2.0)]:
        assert bool(f(x, y)) == bool(eval(f"x {op} y"))


# -- NumPy on the left of an operator ---------------------------------------------------------


def test_numpy_array_on_the_left():
    v = T.dvector("v")
    outs = [np.ones(3) + v, np.arange(3.0) - v, np.full(3, 2.0) * v, np.ones(3) / v, np.arange(3) ** v,
            np.arange(3.0) < v, np.arange(3.0) >= v, np.ones((2, 3)) @ v]
    for o in outs:
        assert isinstance(o, theano.graph.Variable), type(o)
    vv = np.array([0.5, 1.0, 2.0])
    got = theano.function([v], outs)(vv)
    expect = [1 + vv, np.arange(3.0) - vv, 2 * vv, 1 / vv, np.arange(3) ** vv, np.arange(3.0) < vv,
              np.arange(3.0) >= vv, np.ones((2, 3)) @ vv]
    for g, e in zip(got, expect):
        np.testing.assert_allclose(g, e)


@pytest.mark.parametrize("scalar", [np.float32(0.5), np.float64(0.5), np.int64(2), np.int32(2)])
def test_numpy_scalar_on_the_left_of_a_static_shape(scalar):
    w = theano.shared(np.arange(6.0).reshape(2, 3), name="w")
    x = T.TensorType("float64", (2, 3))("x")
    g = T.grad((w * x).sum(), w)  # a gradient of static shape, as in ``np.float32(0.5) * grad``
    for var in (x, g):
        out = scalar * var
        assert isinstance(out, theano.graph.Variable), type(out)
        out2 = scalar + var
        assert isinstance(out2, theano.graph.Variable), type(out2)
    xv = np.arange(6.0).reshape(2, 3) + 1
    r1, r2 = theano.function([x], [scalar * g, scalar - x])(xv)
    np.testing.assert_allclose(r1, float(scalar) * xv)
    np.testing.assert_allclose(r2, float(scalar) - xv)


# -- T.nnet --------------------------------------------------------------------------------


def test_softmax_of_a_vector_is_a_row():
    v = T.dvector("v")
    s = T.nnet.softmax(v)
    assert s.ndim == 2 and s.broadcastable == (True, False)
    vv = np.array([1.0, -2.0, 0.5])
    e = np.exp(vv - vv.max())
    np.testing.assert_allclose(s.eval({v: vv}), (e / e.sum())[None, :], rtol=1e-12)
    # PyTensor's spelling with an explicit axis keeps the rank
    assert T.nnet.softmax(v, axis=-1).ndim == 1
    assert T.nnet.logsoftmax(v).ndim == 2
    np.testing.assert_allclose(T.nnet.logsoftmax(v).eval({v: vv}), np.log(e / e.sum())[None, :], rtol=1e-12)
    # rnnslu.py reads s[:, 0, :] of a scan of such softmaxes
    m = T.dmatrix("m")
    seq, _ = theano.scan(lambda r: T.nnet.softmax(r), sequences=m)
    mv = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]])
    em = np.exp(mv - mv.max(axis=1, keepdims=True))
    np.testing.assert_allclose(theano.function([m], seq[:, 0, :])(mv), em / em.sum(axis=1, keepdims=True),
                               rtol=1e-12)
    # the gradient through the padded row
    w = T.dvector("w")
    cost = (T.nnet.softmax(v)[0] * w).sum()
    wv = np.array([0.3, -1.0, 2.0])
    g = theano.function([v, w], T.grad(cost, v))(vv, wv)

    def f(z):
        ez = np.exp(z - z.max())
        return (ez / ez.sum() * wv).sum()

    np.testing.assert_allclose(g, _fd(f, vv), rtol=1e-6, atol=1e-9)


def test_softmax_graph_and_crossentropies():
    m, y = T.dmatrix("m"), T.lvector("y")
    mv = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]])
    yv = np.array([2, 0])
    sm = np.exp(mv) / np.exp(mv).sum(axis=1, keepdims=True)
    nll, smx = T.nnet.crossentropy_softmax_1hot(m, y)
    got = theano.function([m, y], [T.nnet.softmax_graph(m), T.nnet.softmax_graph(m[0]), nll, smx,
                                   T.nnet.crossentropy_categorical_1hot(T.nnet.softmax(m), y)])(mv, yv)
    np.testing.assert_allclose(got[0], sm, rtol=1e-12)
    np.testing.assert_allclose(got[1], sm[0], rtol=1e-12)
    np.testing.assert_allclose(got[2], -np.log(sm[[0, 1], yv]), rtol=1e-12)
    np.testing.assert_allclose(got[3], sm, rtol=1e-12)
    np.testing.assert_allclose(got[4], -np.log(sm[[0, 1], yv]), rtol=1e-12)


def test_selu_and_sigmoid_binary_crossentropy_against_pytensor():
    pytensor = pytest.importorskip("pytensor")
    pt = pytensor.tensor

    xv = np.array([-40.0, -2.0, -0.5, 0.0, 0.5, 3.0, 40.0])
    tv = np.array([0.0, 1.0, 0.3, 0.5, 1.0, 0.0, 1.0])
    # PyTensor has no sigmoid_binary_crossentropy: its binary_crossentropy of the sigmoid, where that is exact
    px, ptt = pt.dvector("x"), pt.dvector("t")
    s = pt.sigmoid(px)
    pc = -(ptt * pt.log(s) + (1 - ptt) * pt.log(1 - s))
    ref = pytensor.function([px, ptt], [pc, pt.grad(pc.sum(), px), pt.grad(pc.sum(), ptt)])(xv[1:-1], tv[1:-1])
    x, t = T.dvector("x"), T.dvector("t")
    c = T.nnet.sigmoid_binary_crossentropy(x, t)
    got = theano.function([x, t], [c, T.grad(c.sum(), x), T.grad(c.sum(), t)])(xv, tv)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g[1:-1], r, rtol=1e-10)
    # far from 0 the naive formula under/overflows; Theano's stable one does not: log1p(exp(-40)) each
    np.testing.assert_allclose(got[0][[0, -1]], np.log1p(np.exp(-40.0)), rtol=1e-12)
    np.testing.assert_allclose(got[1][[0, -1]], [1 / (1 + np.exp(40.0)), 1 / (1 + np.exp(-40.0)) - 1.0], rtol=1e-12)
    np.testing.assert_allclose(got[2], -xv, rtol=1e-12)  # Theano's gradient for the target: -output
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    np.testing.assert_allclose(T.nnet.selu(x).eval({x: xv}),
                               scale * np.where(xv > 0, xv, alpha * np.expm1(xv)), rtol=1e-12)


# -- T.xlogx --------------------------------------------------------------------------------


def test_xlogx_values_and_gradients():
    x, y = T.dvector("x"), T.dvector("y")
    xv = np.array([0.0, 0.25, 1.0, 3.0])
    yv = np.array([0.0, 0.5, 2.0, 0.1])
    a, b = T.xlogx.xlogx(x), T.xlogx.xlogy0(x, y)
    ga = T.grad(a.sum(), x)
    gbx, gby = T.grad(b.sum(), [x, y])
    got = theano.function([x, y], [a, b, ga, gbx, gby])(xv, yv)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(got[0], [0.0, 0.25 * np.log(0.25), 0.0, 3 * np.log(3.0)], rtol=1e-12)
        np.testing.assert_allclose(got[1], [0.0, 0.25 * np.log(0.5), np.log(2.0), 3 * np.log(0.1)], rtol=1e-12)
        # Theano's gradients: 1 + log(x) (-inf at 0), log(y), x / y (nan for 0 / 0)
        np.testing.assert_allclose(got[2], 1 + np.log(xv), rtol=1e-12)
        np.testing.assert_allclose(got[3], np.log(yv), rtol=1e-12)
        np.testing.assert_allclose(got[4], xv / yv, rtol=1e-12)
    # finite differences away from 0
    pos = np.array([0.3, 1.7, 2.5])
    ypos = np.array([0.2, 0.9, 4.0])
    fa = theano.function([x], ga)
    np.testing.assert_allclose(fa(pos), _fd(lambda z: (z * np.log(z)).sum(), pos), rtol=1e-6)
    fb = theano.function([x, y], [gbx, gby])
    gx, gy = fb(pos, ypos)
    np.testing.assert_allclose(gx, _fd(lambda z: (z * np.log(ypos)).sum(), pos), rtol=1e-6)
    np.testing.assert_allclose(gy, _fd(lambda z: (pos * np.log(z)).sum(), ypos), rtol=1e-6)
    # the entropy of a distribution with zeros, as real code writes it
    p = T.dvector("p")
    h = -T.xlogx.xlogx(p).sum()
    np.testing.assert_allclose(h.eval({p: [0.5, 0.5, 0.0]}), np.log(2.0), rtol=1e-12)
    # integer inputs become floats (Theano's upgrade_to_float)
    assert T.xlogx.xlogx(T.ivector()).dtype == "float64"
    assert T.xlogx.xlogx(T.bvector()).dtype == "float32"
    assert T.xlogx.xlogy0(T.fvector(), T.fvector()).dtype == "float32"


def test_xlogx_in_a_scan_and_its_gradient():
    x = T.dmatrix("x")
    h, _ = theano.scan(lambda r, acc: acc + T.xlogx.xlogx(r).sum(), sequences=x, outputs_info=T.constant(0.0))
    g = T.grad(h[-1], x)
    xv = np.array([[0.5, 1.5], [2.0, 0.1]])
    got_h, got_g = theano.function([x], [h[-1], g])(xv)
    np.testing.assert_allclose(got_h, (xv * np.log(xv)).sum(), rtol=1e-12)
    np.testing.assert_allclose(got_g, 1 + np.log(xv), rtol=1e-12)
