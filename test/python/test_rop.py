"""Forward mode (``T.Rop``) and ``T.Lop`` (issue 24, section 3).

Every Jacobian-vector product is checked against central differences of the
compiled forward values, against ``J @ v`` with ``J`` from
``theano.gradient.jacobian`` (reverse mode), against NumPy, or against
PyTensor's ``Rop``/``Lop``; never against the code under test. The Rop of a
scan is checked to be a forward scan carrying the tangents (no MITMOT, same
direction), for sequences with taps, SITSOT, MITSOT, NITSOT, non-sequences
(given and free), shared parameters, ``until``, ``go_backwards``, ``reduce``,
nested scans, and the MITMOT scans of a gradient (Hessian-vector products).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T
from mlir_scan.builder.gradient import DisconnectedInputError
from mlir_scan.builder.ops.scan import ScanOp

RNG = np.random.default_rng(1234)
EPS = 1e-6


def _fd(f_primal, values, idx, directions, n_out):
    """Central differences of the outputs of `f_primal` along `directions` of the inputs `idx`."""
    plus, minus = list(values), list(values)
    for i, d in zip(idx, directions):
        plus[i] = values[i] + EPS * d
        minus[i] = values[i] - EPS * d
    hi, lo = f_primal(*plus)[:n_out], f_primal(*minus)[:n_out]
    return [(np.asarray(a) - np.asarray(b)) / (2 * EPS) for a, b in zip(hi, lo)]


def check_rop(build, values, wrt_idx, rtol=1e-5, atol=1e-7, disconnected_outputs="raise"):
    """``build(*xs)`` -> list of outputs; their Rop along random directions of ``xs[wrt_idx]``
    against central differences of the outputs. Returns the Rop variables."""
    values = [np.asarray(v, dtype=np.float64) for v in values]
    xs = [T.tensor("float64", (None,) * v.ndim, f"x{i}") for i, v in enumerate(values)]
    outs = build(*xs)
    vs = [T.tensor("float64", (None,) * values[i].ndim, f"v{i}") for i in wrt_idx]
    rops = T.Rop(list(outs), [xs[i] for i in wrt_idx], vs, disconnected_outputs=disconnected_outputs)
    assert isinstance(rops, list) and len(rops) == len(outs)
    f = theano.function(xs + vs, list(outs) + rops, on_unused_input="ignore")
    dirs = [RNG.normal(size=values[i].shape) for i in wrt_idx]
    res = f(*values, *dirs)
    n = len(outs)
    got = res[n:]
    want = _fd(lambda *a: f(*a, *dirs), values, wrt_idx, dirs, n)
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.shape(g) == np.shape(w), f"output {k}: {np.shape(g)} != {np.shape(w)}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * max(1.0, np.max(np.abs(w), initial=0)),
                                   err_msg=f"output {k} ({outs[k]})")
    return rops


def scans_of(v):
    """The ScanOps of `v`'s graph."""
    from mlir_scan.builder.graph import toposort
    return [n.op for n in toposort([v]) if isinstance(n.op, ScanOp)]


# -- element-wise, dot, reductions, shapes, indexing ---------------------------------------------------


def test_elemwise_ops():
    x = RNG.uniform(0.2, 0.8, size=5)
    y = RNG.uniform(0.3, 0.9, size=5)
    s = np.float64(0.7)

    def build(x, y, s):
        return [T.exp(x), T.log(x), T.log1p(x), T.sqrt(x), T.tanh(x), T.sin(x), T.cos(x), T.nnet.sigmoid(x),
                T.nnet.softplus(x), T.sqr(x), x ** 3, x ** y, T.log2(x), T.log10(x), T.expm1(x), T.exp2(x),
                T.sinh(x), T.cosh(x), T.tan(x), T.arcsin(x), T.arccos(x), T.arctan(x), T.arcsinh(x),
                T.arccosh(x + 1.5), T.arctanh(x), T.erf(x), T.erfc(x), T.arctan2(x, y), x + y, x - y, x * y,
                x / y, -x, abs(x - 0.5), T.maximum(x, y), T.minimum(x, y), T.switch(x > y, x * y, x + y),
                x * s, (x + s) / s, T.floor(x * 10) * x, T.clip(x, 0.3, 0.6),
                x % 0.3]
    check_rop(build, [x, y, s], [0, 1, 2], rtol=1e-4)


def test_structure_ops():
    M = RNG.normal(size=(3, 4))
    v = RNG.normal(size=4)
    A = RNG.uniform(0.5, 1.5, size=(3, 4))

    def build(M, v, A):
        return [T.dot(M, v), T.dot(M.T, M), T.dot(v, M.T), T.dot(v, v), T.dot(M.dimshuffle(0, "x", 1), A.T),
                M.sum(axis=0), M.sum(), M.mean(axis=1), A.prod(axis=1), A.prod(), M.max(axis=1), M.min(),
                M.T, M.reshape((2, 6)), T.flatten(M), T.concatenate([M, A * 2], axis=0), T.stack([v, v * v]),
                M[1:, ::2], M[-1], M[::-1, 1], T.set_subtensor(M[0], v), T.inc_subtensor(M[:, 1], A[:, 2]),
                T.set_subtensor(M[1:, 2], 0.0), T.alloc(v, 2, 4), T.cumsum(M, axis=1), T.extra_ops.cumprod(A, axis=0),
                T.diag(M[:, :3]), T.diag(v), T.nnet.softmax(M), T.var(M, axis=0), M.dimshuffle(1, "x", 0),
                T.outer(v, v), T.tile(v, 2), T.zeros_like(M) + M * A, T.specify_shape(M, (3, 4)) * 2]
    check_rop(build, [M, v, A], [0, 1, 2], rtol=1e-4)


def test_internal_and_indexing_ops():
    """Ops the gradient builds (AddDotT, CollapseLeading, RowsReversed, Copy), checks and re-typings,
    integer-array indexing (reads, inc/set with repeated indices)."""
    from mlir_scan.builder.ops.basic import AddDotT, CollapseLeading, Copy
    from mlir_scan.builder.ops.subtensor import RowsReversed
    C = RNG.normal(size=(3, 4))
    A = RNG.normal(size=(5, 3))
    B = RNG.normal(size=(5, 4))
    X3 = RNG.normal(size=(2, 3, 4))
    idx = np.array([2, 0, 2, 1])

    def build(C, A, B, X3):
        i = T.constant(idx)
        return [AddDotT()(C, A, B), CollapseLeading()(X3) * 2, RowsReversed()(A) ** 2,
                Copy()(C) * C, T.opt.assert_op(C * 3, T.gt(C.shape[0], 0)), T.unbroadcast(C.dimshuffle("x", 0, 1), 0),
                T.sqr(A[i]), A[i, 1:], T.inc_subtensor(A[i], A[i] * 2), T.set_subtensor(A[i[:2], 0], B[:2, 1]),
                T.argmax(C, axis=0) * C.sum(axis=0)]
    check_rop(build, [C, A, B, X3], [0, 1, 2, 3])


def test_ifelse_and_gradient_only_ops():
    from mlir_scan.ifelse import ifelse
    x = RNG.normal(size=3)
    c = np.float64(1.0)

    def build(x, c):
        return [ifelse(T.gt(c, 0), T.tanh(x), x ** 2), ifelse(T.lt(c, 0), T.tanh(x), x ** 2),
                theano.gradient.grad_clip(x, -1, 1) * 2, theano.gradient.grad_scale(x, 3.0) ** 2]
    check_rop(build, [x, c], [0])
    # zero_grad: zero tangent; disconnected_grad: no tangent (Theano's R_ops).
    xv, vv = T.dvector("x"), T.dvector("v")
    z = T.Rop(theano.gradient.zero_grad(xv) * 2, xv, vv)
    f = theano.function([xv, vv], z, on_unused_input="ignore")
    np.testing.assert_array_equal(f(np.ones(3), np.ones(3)), np.zeros(3))
    with pytest.raises(DisconnectedInputError):
        T.Rop(theano.gradient.disconnected_grad(xv), xv, vv)


def test_fallback_double_lop():
    """Ops without a forward rule of their own (cumprod, a float arange) go through the double L_op."""
    x = RNG.uniform(0.5, 1.5, size=4)
    s = np.float64(0.3)

    def build(x, s):
        return [T.extra_ops.cumprod(x), T.arange(0, 7, dtype="float64") * s + T.arange(s, s + 4.0, s * 2)]
    check_rop(build, [x, s], [0, 1])


def test_rop_equals_jacobian_times_vector():
    """``Rop(f, x, v) == J v`` with ``J`` from ``theano.gradient.jacobian`` (reverse mode)."""
    x, W, v, Vw = T.dvector("x"), T.dmatrix("W"), T.dvector("v"), T.dmatrix("Vw")
    f = T.tanh(T.dot(W, x)) * x.sum() + T.exp(x[::-1])
    jx = theano.gradient.jacobian(f, x)
    jw = theano.gradient.jacobian(f, W)
    rop = T.Rop(f, [x, W], [v, Vw])
    fn = theano.function([x, W, v, Vw], [jx, jw, rop])
    xv, Wv = RNG.normal(size=3), RNG.normal(size=(3, 3))
    vv, Vv = RNG.normal(size=3), RNG.normal(size=(3, 3))
    jxv, jwv, got = fn(xv, Wv, vv, Vv)
    np.testing.assert_allclose(got, jxv @ vv + jwv.reshape(3, 9) @ Vv.ravel(), rtol=1e-10)


def test_lop():
    """``Lop(f, wrt, u) == u J``: against the grad-based Jacobian and NumPy; list/single forms."""
    x, W, u = T.dvector("x"), T.dmatrix("W"), T.dvector("u")
    f = T.tanh(T.dot(W, x))
    lx, lw = T.Lop(f, [x, W], u)
    single = T.Lop(f, x, u)
    tup = T.Lop([f], (x,), [u])
    assert isinstance(tup, tuple) and len(tup) == 1
    fn = theano.function([x, W, u], [lx, lw, single, tup[0], theano.gradient.jacobian(f, x)])
    xv, Wv, uv = RNG.normal(size=3), RNG.normal(size=(3, 3)), RNG.normal(size=3)
    gx, gw, gs, gt, J = fn(xv, Wv, uv)
    d = (1 - np.tanh(Wv @ xv) ** 2) * uv
    np.testing.assert_allclose(gx, Wv.T @ d, rtol=1e-12)
    np.testing.assert_allclose(gw, np.outer(d, xv), rtol=1e-12)
    np.testing.assert_allclose(gx, uv @ J, rtol=1e-10)
    np.testing.assert_array_equal(gs, gx)
    np.testing.assert_array_equal(gt, gx)
    with pytest.raises(ValueError):
        T.Lop([f, f], x, u)


def test_api_forms_and_errors():
    assert theano.gradient.Rop is T.Rop and theano.gradient.Lop is T.Lop
    x, y, v = T.dvector("x"), T.dvector("y"), T.dvector("v")
    f = x * 2
    assert isinstance(T.Rop(f, x, v), type(f))
    assert isinstance(T.Rop([f], x, v), list)
    assert isinstance(T.Rop((f,), [x], [v]), tuple)
    assert T.Rop(x, x, v) is not None
    with pytest.raises(ValueError, match="dimensionality"):
        T.Rop(f, x, T.dmatrix())
    with pytest.raises(ValueError):
        T.Rop(f, [x, y], [v])
    # Theano's rule: a variable outside wrt is disconnected; an output computed
    # without wrt has a zero tangent (the other inputs' tangents are zeros).
    with pytest.raises(DisconnectedInputError):
        T.Rop(y, x, v)
    with pytest.raises(ValueError):
        T.Rop(f, x, v, disconnected_outputs="bogus")
    assert T.Rop([f, y], x, v, disconnected_outputs="ignore", return_disconnected="None")[1] is None
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        zero = T.Rop(y, x, v, disconnected_outputs="warn")
    assert w
    unrelated = T.Rop(y * 2, x, v)
    # An op with neither a rule nor a gradient (a random draw's parameters) raises.
    from mlir_scan.builder.graph import NullTypeGradError
    with pytest.raises(NullTypeGradError, match="Rop"):
        T.Rop(T.shared_randomstreams.RandomStreams(1).normal(size=(3,), avg=x[0]), x, v)
    # Non-differentiable (integer) outputs raise, as in Theano's test_rop (a ValueError).
    for nondiff in (x.shape[0], T.argmax(x), T.cast(x, "int32") * 2):
        with pytest.raises(ValueError):
            T.Rop(nondiff, x, v)
    # Casts: the tangent has the output's dtype.
    c32 = T.Rop(T.cast(x, "float32") * 3, x, v)
    assert c32.dtype == "float32"
    # Integer paths carry no tangent: zeros.
    int_path = T.Rop(T.cast(x, "int64") * 2 + y, x, v)
    # A NumPy eval point, the output itself in wrt, the zeros of a disconnected output.
    g = theano.function([x, y], [T.Rop(T.sqr(x), x, np.ones(3)), T.Rop(x, x, y), zero,
                                 T.Rop(T.cast(x, "float32") * 3, x, y), unrelated, int_path])
    a, b, c, d, e, i = g(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(e, np.zeros(3))
    np.testing.assert_array_equal(i, np.zeros(3))
    np.testing.assert_array_equal(d, np.float32([12.0, 15.0, 18.0]))
    np.testing.assert_array_equal(a, [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(b, [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(c, np.zeros(3))


# -- scan ------------------------------------------------------------------------------------------


def test_scan_all_kinds_forward_scan():
    """Sequences with taps, MITSOT, SITSOT, NITSOT and non-sequences, all with tangents at once."""
    seq = RNG.normal(size=(7, 2))
    m0 = RNG.normal(size=(2, 2)) * 0.5
    s0 = RNG.normal(size=2) * 0.5
    W = RNG.normal(size=(2, 2)) * 0.5

    def build(seq, m0, s0, W):
        def step(u_m1, u_0, u_p1, m_m2, m_m1, s_m1, W):
            m = T.tanh(T.dot(m_m1, W) + 0.5 * m_m2 + u_0 * u_m1)
            s = s_m1 * T.cos(m) + u_p1
            y = (m * s).sum() + T.exp(u_0).sum()
            return m, s, y
        (ms, ss, ys), _ = theano.scan(step, sequences=dict(input=seq, taps=[-1, 0, 1]),
                                      outputs_info=[dict(initial=m0, taps=[-2, -1]), s0, None],
                                      non_sequences=W)
        return [ms, ss, ys]

    rops = check_rop(build, [seq, m0, s0, W], [0, 1, 2, 3])
    # One forward scan carries the tangents: no MITMOT (no gradient scan), not reversed, states doubled.
    ops = [o for r in rops for o in scans_of(r)]
    tangent_ops = [o for o in ops if o.n_outputs > 3]
    assert tangent_ops, "the Rop has no scan carrying tangents"
    for o in tangent_ops:
        assert o.n_mitmot == 0 and not o.go_backwards
        assert o.n_mitsot == 2 and o.n_sitsot == 2 and o.n_nitsot == 2 and o.n_seqs == 2


def test_scan_tangent_through_one_input_only():
    """Only the non-sequence has a tangent: the states get one from the step (the fixed point)."""
    seq = RNG.normal(size=(5, 3))
    W = RNG.normal(size=(3, 3)) * 0.4
    h0 = np.zeros(3)

    def build(seq, W, h0):
        hs, _ = theano.scan(lambda x, h, W: T.tanh(x + T.dot(h, W)), sequences=seq, outputs_info=h0,
                            non_sequences=W)
        return [hs, hs[-1].sum()]
    check_rop(build, [seq, W, h0], [1])
    check_rop(build, [seq, W, h0], [0])
    check_rop(build, [seq, W, h0], [2])


def test_scan_free_variables_and_shared():
    """Parameters the step uses without receiving them (free variables, shared variables)."""
    Wsh = theano.shared(RNG.normal(size=(3, 3)) * 0.5, name="Wsh")
    b = T.dvector("b")
    xs = T.dmatrix("xs")
    hs, _ = theano.scan(lambda x, h: T.tanh(x + T.dot(h, Wsh) + b), sequences=xs, outputs_info=T.zeros((3,)))
    vW, vb = T.dmatrix("vW"), T.dvector("vb")
    rop = T.Rop(hs, [Wsh, b], [vW, vb])
    jw = theano.gradient.jacobian(hs.flatten(), Wsh)
    jb = theano.gradient.jacobian(hs.flatten(), b)
    f = theano.function([xs, b, vW, vb], [rop, jw, jb])
    x, bv, vWv, vbv = RNG.normal(size=(4, 3)), RNG.normal(size=3), RNG.normal(size=(3, 3)), RNG.normal(size=3)
    got, JW, Jb = f(x, bv, vWv, vbv)
    want = JW.reshape(12, 9) @ vWv.ravel() + Jb @ vbv
    np.testing.assert_allclose(got.ravel(), want, rtol=1e-9, atol=1e-12)


def test_scan_with_random_stream():
    """A step drawing random numbers (its generator state is a state of the scan, as in Theano's test_rop2):
    the tangent scan draws the same numbers."""
    srng = T.shared_randomstreams.RandomStreams(7)
    xs, W, V = T.dmatrix("xs"), T.dmatrix("W"), T.dmatrix("V")
    hs, _ = theano.scan(lambda x, h, W: T.tanh(T.dot(h, W) + x + srng.normal(size=(3,)) * 0.5),
                        sequences=xs, outputs_info=T.zeros((3,)), non_sequences=W)
    f = theano.function([xs, W, V], [T.Rop(hs, W, V), hs], no_default_updates=True)
    x, w, v = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(3, 3))
    got = f(x, w, v)[0]
    want = (f(x, w + EPS * v, v)[1] - f(x, w - EPS * v, v)[1]) / (2 * EPS)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_scan_until():
    x0 = np.float64(0.3)
    a = np.float64(1.3)

    def build(x0, a):
        def step(x, a):
            nxt = x * a + T.sin(x)
            return nxt, theano.scan_module.until(nxt > 5.0)
        xs, _ = theano.scan(step, outputs_info=x0, non_sequences=a, n_steps=50)
        return [xs, xs[-1]]
    rops = check_rop(build, [x0, a], [0, 1])
    assert all(o.until for r in rops for o in scans_of(r))


def test_scan_go_backwards_and_reduce():
    seq = RNG.normal(size=(6, 2))
    c = RNG.normal(size=2)

    def build(seq, c):
        back, _ = theano.scan(lambda x, h, c: h * T.tanh(x) + c, sequences=seq, outputs_info=c,
                              non_sequences=c, go_backwards=True)
        red, _ = theano.reduce(lambda x, acc: acc * 0.5 + x ** 2, sequences=seq, outputs_info=c)
        fr, _ = theano.foldr(lambda x, acc: T.sin(acc) + x, sequences=seq, outputs_info=c)
        mapped, _ = theano.map(lambda x, c: T.exp(x * c), sequences=seq, non_sequences=c)
        return [back, red, fr, mapped]
    rops = check_rop(build, [seq, c], [0, 1])
    assert any(o.go_backwards for o in scans_of(rops[0]))


def test_nested_scan():
    xs = RNG.normal(size=(3, 4))
    w = np.float64(0.7)

    def build(xs, w):
        def outer(row, acc, w):
            inner, _ = theano.scan(lambda e, a, w: T.tanh(a * w + e), sequences=row, outputs_info=acc,
                                   non_sequences=w)
            return inner[-1]
        out, _ = theano.scan(outer, sequences=xs, outputs_info=T.constant(0.1, dtype="float64"), non_sequences=w)
        return [out]
    check_rop(build, [xs, w], [0, 1])


def test_rop_of_scan_gradient_is_hessian_vector_product():
    """Forward over reverse: the Rop of a gradient scan (MITMOT states) is ``H v``, against ``hessian``."""
    x, v = T.dvector("x"), T.dvector("v")
    W = T.dmatrix("W")
    hs, _ = theano.scan(lambda h, W: T.tanh(T.dot(W, h)), outputs_info=x, non_sequences=W, n_steps=4)
    cost = (hs[-1] ** 2).sum() + (hs ** 3).sum()
    g = T.grad(cost, x)
    assert any(o.n_mitmot for o in scans_of(g))
    hv = T.Rop(g, x, v)
    f = theano.function([x, W, v], [hv, theano.gradient.hessian(cost, x)])
    xv, Wv, vv = RNG.normal(size=3), RNG.normal(size=(3, 3)), RNG.normal(size=3)
    got, H = f(xv, Wv, vv)
    np.testing.assert_allclose(got, H @ vv, rtol=1e-9, atol=1e-12)


def test_rop_of_rop():
    """Second-order forward mode: the Rop of a Rop (a tangent scan of a tangent scan)."""
    x0, a = np.float64(0.4), np.float64(0.9)

    def build(x0, a):
        xs, _ = theano.scan(lambda x, a: T.sin(x * a), outputs_info=x0, non_sequences=a, n_steps=5)
        return [T.Rop(xs, a, T.constant(1.0))]
    check_rop(build, [x0, a], [0, 1], rtol=1e-4)


# -- Gauss-Newton ----------------------------------------------------------------------------------


def _rnn_numpy(x, W, U, V, h0):
    h, ys = h0, []
    for x_t in x:
        h = np.tanh(x_t @ U + h @ W)
        ys.append(h @ V)
    return np.array(ys)


def test_gauss_newton_rnn():
    """``G v = J^T H J v`` (squared error: ``H = I``) of a small RNN: ``Lop(y, p, Rop(y, p, v))``.

    Checked against ``J^T J v`` with ``J`` the finite-difference Jacobian of a NumPy RNN, and
    against PyTensor's Rop/Lop of the same model.
    """
    n_in, n_h, n_out, steps = 2, 3, 2, 5
    x = RNG.normal(size=(steps, n_in))
    Wv, Uv, Vv = RNG.normal(size=(n_h, n_h)) * 0.5, RNG.normal(size=(n_in, n_h)), RNG.normal(size=(n_h, n_out))
    h0 = np.zeros(n_h)
    dirs = [RNG.normal(size=p.shape) for p in (Wv, Uv, Vv)]

    W, U, V = (theano.shared(p.copy(), name=n) for p, n in zip((Wv, Uv, Vv), "WUV"))
    xs = T.dmatrix("xs")
    hs, _ = theano.scan(lambda x_t, h: T.tanh(T.dot(x_t, U) + T.dot(h, W)), sequences=xs,
                        outputs_info=T.zeros((n_h,)))
    y = T.dot(hs, V)
    params = [W, U, V]
    vs = [T.dmatrix(f"v{n}") for n in "WUV"]
    Jv = T.Rop(y, params, vs)
    Gv = T.Lop(y, params, Jv)
    f = theano.function([xs] + vs, Gv)
    got = f(x, *dirs)

    flat = np.concatenate([p.ravel() for p in (Wv, Uv, Vv)])
    sizes = np.cumsum([0] + [p.size for p in (Wv, Uv, Vv)])

    def y_of(theta):
        W_, U_, V_ = (theta[sizes[i]:sizes[i + 1]].reshape(p.shape) for i, p in enumerate((Wv, Uv, Vv)))
        return _rnn_numpy(x, W_, U_, V_, h0).ravel()
    J = np.stack([(y_of(flat + EPS * e) - y_of(flat - EPS * e)) / (2 * EPS) for e in np.eye(flat.size)], axis=1)
    want = J.T @ (J @ np.concatenate([d.ravel() for d in dirs]))
    np.testing.assert_allclose(np.concatenate([g.ravel() for g in got]), want, rtol=1e-6, atol=1e-8)

    # PyTensor's R-operator and L-operator on the same model.
    import pytensor
    import pytensor.tensor as pt
    from pytensor.gradient import Lop as pLop, Rop as pRop
    pW, pU, pV = (pytensor.shared(p.copy()) for p in (Wv, Uv, Vv))
    pxs = pt.dmatrix("xs")
    phs = pytensor.scan(lambda x_t, h: pt.tanh(pt.dot(x_t, pU) + pt.dot(h, pW)), sequences=pxs,
                        outputs_info=pt.zeros((n_h,)), return_updates=False)
    py = pt.dot(phs, pV)
    pvs = [pt.dmatrix() for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pGv = pLop(py, [pW, pU, pV], pRop(py, [pW, pU, pV], pvs))
    ref = pytensor.function([pxs] + pvs, pGv)(x, *dirs)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)


def test_grad_of_a_tangent_scan():
    """Reverse over forward: the gradient of a cost of the Rop (through the tangent scan), against
    central differences of the compiled cost."""
    xs, W, V = T.dmatrix("xs"), T.dmatrix("W"), T.dmatrix("V")
    hs, _ = theano.scan(lambda x, h, W: T.tanh(T.dot(h, W) + x), sequences=xs, outputs_info=T.zeros((3,)),
                        non_sequences=W)
    cost = (T.Rop(hs, W, V) ** 2).sum()
    f = theano.function([xs, W, V], [cost] + T.grad(cost, [W, V]))
    x, w, v = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(3, 3))
    _, gw, gv = f(x, w, v)
    d = RNG.normal(size=(3, 3))
    fd_w = (f(x, w + EPS * d, v)[0] - f(x, w - EPS * d, v)[0]) / (2 * EPS)
    fd_v = (f(x, w, v + EPS * d)[0] - f(x, w, v - EPS * d)[0]) / (2 * EPS)
    np.testing.assert_allclose((gw * d).sum(), fd_w, rtol=1e-6)
    np.testing.assert_allclose((gv * d).sum(), fd_v, rtol=1e-6)


def test_docstring_examples():
    """The module's Gauss-Newton example and the examples of Rop and Lop (checked against NumPy there)."""
    import doctest
    import mlir_scan.builder.rop as rop
    result = doctest.testmod(rop, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10 and result.failed == 0


def test_scan_states_without_given_tangents_and_integer_states():
    """Only a non-sequence has a tangent: MITSOT/SITSOT/NITSOT get theirs from the step (zeros
    before the first step); integer states and outputs carry none."""
    seq = RNG.normal(size=(6, 2))
    m0 = RNG.normal(size=(3, 2)) * 0.5
    w = np.float64(0.8)

    def build(seq, m0, w):
        def step(u, m_m3, m_m1, k, w):
            m = T.tanh(m_m1 * w + m_m3 * 0.3 + u)
            return m, k + 1, m.sum() * T.cast(k, "float64"), k * 2
        (ms, ks, ys, k2), _ = theano.scan(step, sequences=seq,
                                          outputs_info=[dict(initial=m0, taps=[-3, -1]),
                                                        T.constant(np.int64(0)), None, None],
                                          non_sequences=w)
        return [ms, ys]
    rops = check_rop(build, [seq, m0, w], [2])
    ops = [o for r in rops for o in scans_of(r) if o.n_mitsot == 2]
    assert ops and all(o.n_sitsot == 1 for o in ops)  # the integer counter has no tangent state


def test_docs_example_runs():
    """The Gauss-Newton example of docs/rop.md runs as written."""
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "rop.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code.replace("print(", "(lambda *a: a)("), "docs/rop.md", "exec"), {})


def test_theano_rop_cases():
    """Theano's test_multiple_outputs (outputs that are wrt variables, broadcasting) and
    test_Rop_dot_bug_18Oct2013_Jeremiah (a gradient that does not depend on wrt: zeros)."""
    m, v, m_, v_ = T.dmatrix("m"), T.dvector("v"), T.dmatrix("m_"), T.dvector("v_")
    r1 = T.Rop([m, v, m + v], [m, v], [m_, v_])
    r2 = T.Rop((m, v, m + v), [m, v], [m_, v_])
    assert isinstance(r1, list) and isinstance(r2, tuple) and len(r1) == len(r2) == 3
    f = theano.function([m, v, m_, v_], list(r1) + list(r2), on_unused_input="ignore")
    mv, vv, m_v, v_v = (RNG.uniform(size=s) for s in ((3, 7), (7,), (3, 7), (7,)))
    out = f(mv, vv, m_v, v_v)
    for got, want in zip(out, [m_v, v_v, m_v + v_v] * 2):
        np.testing.assert_array_equal(got, want)

    x = T.arange(20.0).reshape([1, 20])
    s = theano.shared(np.ones([20]))
    d = T.dot(x, s).sum()
    r = T.Rop(T.grad(d, s), s, s)
    np.testing.assert_array_equal(theano.function([], r)(), np.zeros(20))
