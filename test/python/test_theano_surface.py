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


# -- theano.config ----------------------------------------------------------------------------


def test_config_flags_real_code_sets_and_reads():
    c = theano.config
    assert c is theano.builder.config
    # Theano 1.0's defaults
    assert (c.floatX, c.mode, c.optimizer, c.device, c.compute_test_value, c.exception_verbosity,
            c.on_unused_input, c.allow_gc, c.linker) == (
        "float64", "Mode", "fast_run", "cpu", "off", "low", "raise", True, "cvm")
    assert c.warn.subtensor_merge_bug is False and c.warn.inc_subtensor1_opt is True
    assert c.dnn.conv.algo_fwd == "small" and c.scan.allow_gc is False and c.NanGuardMode.action == "raise"
    with theano.config.change_flags({"warn.subtensor_merge_bug": True, "scan.allow_gc": True},
                                    compute_test_value="warn", exception_verbosity="high", device="cuda0"):
        c.warn.round = True
        c.dnn.conv.algo_bwd_filter = "deterministic"
        c.gpuarray.preallocate = 0.9
        assert c.warn.subtensor_merge_bug is True and c.device == "cuda0" and c.scan.allow_gc is True
        c.warn.round = False
        c.dnn.conv.algo_bwd_filter = "none"
        c.gpuarray.preallocate = 0.0
    assert c.warn.subtensor_merge_bug is False and c.compute_test_value == "off" and c.device == "cpu"
    # real code: theano.config.warn.subtensor_merge_bug = False
    theano.config.warn.subtensor_merge_bug = False
    assert "warn.round = False" in str(c)


def test_config_rejects_unknown_flags_and_bad_values():
    c = theano.config
    for section, name in [(c, "floatx"), (c, "no_such_flag"), (c.warn, "no_such_bug"), (c.dnn.conv, "algo")]:
        with pytest.raises(AttributeError, match="no flag"):
            setattr(section, name, "x")
    with pytest.raises(AttributeError):
        c.no_such_flag  # noqa: B018
    for name, value in [("floatX", "int32"), ("mode", "FAST"), ("on_unused_input", "maybe"),
                        ("compute_test_value", "on"), ("allow_gc", "perhaps")]:
        with pytest.raises(ValueError, match=name):
            setattr(c, name, value)
    with pytest.raises(AttributeError):
        theano.config.change_flags(no_such_flag=1)
    assert c.floatX == "float64" and c.mode == "Mode"


def test_config_floatX_has_its_effect():
    with theano.config.change_flags(floatX="float32"):
        assert T.vector().dtype == T.matrix().dtype == "float32"
        assert theano.shared(0.5).dtype == "float32"
        assert (T.dvector() * 0.5).dtype == "float64"
    assert T.vector().dtype == "float64"
    saved = theano.config.floatX
    try:
        theano.config.floatX = "float32"  # the plain assignment of real code
        x = T.matrix("x")
        assert theano.function([x], x * 2)(np.ones((1, 2), np.float32)).dtype == np.float32
    finally:
        theano.config.floatX = saved


def test_config_change_flags_is_a_decorator_and_restores_on_error():
    @theano.config.change_flags(floatX="float32")
    def build():
        return T.vector().dtype

    assert build() == "float32" and theano.config.floatX == "float64"
    with pytest.raises(RuntimeError):
        with theano.change_flags(floatX="float32"):
            raise RuntimeError
    assert theano.config.floatX == "float64"


def test_config_mode_optimizer_and_on_unused_input_have_their_effect():
    x, y = T.dvector("x"), T.dvector("y")
    with pytest.raises(theano.UnusedInputError):
        theano.function([x, y], x * 2)
    with theano.config.change_flags(on_unused_input="ignore"):
        f = theano.function([x, y], x * 2)
    np.testing.assert_allclose(f([1.0, 2.0], [0.0, 0.0]), [2.0, 4.0])
    with theano.config.change_flags(on_unused_input="warn"):
        with pytest.warns(UserWarning, match="not used"):
            theano.function([x, y], x * 2)
    # the scan rewrites run unless FAST_COMPILE (by mode, or by optimizer with the default mode)
    r, _ = theano.scan(lambda a, h: h + a, sequences=x, outputs_info=T.constant(0.0))
    fast = theano.function([x], r[-1], mode="FAST_COMPILE")
    with theano.config.change_flags(mode="FAST_COMPILE"):
        by_mode = theano.function([x], r[-1])
    with theano.config.change_flags(optimizer="fast_compile"):
        by_optimizer = theano.function([x], r[-1])
    default = theano.function([x], r[-1])
    assert by_mode.mode == "FAST_COMPILE"
    assert by_mode.program.ir("input") == fast.program.ir("input") == by_optimizer.program.ir("input")
    assert fast._compile_options[0] is False and by_optimizer._compile_options[0] is False
    assert default._compile_options[0] is True
    for f in (fast, by_mode, by_optimizer, default):
        np.testing.assert_allclose(f([1.0, 2.0, 3.5]), 6.5)


def test_theano_flags_environment_variable(tmp_path):
    import subprocess
    import sys

    code = ("import mlir_scan as theano, mlir_scan.tensor as T\n"
            "print(theano.config.floatX, theano.config.warn.round, theano.config.device, T.vector().dtype)\n")
    import os
    env = dict(os.environ, THEANO_FLAGS="floatX=float32, warn.round=True,device=cuda,no_such_flag=1")
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["float32", "True", "cuda", "float32"]
    assert "no_such_flag" in out.stderr


# -- theano.scalar -----------------------------------------------------------------------------


def test_scalar_module():
    import mlir_scan.scalar.basic as basic
    from mlir_scan.scalar import upcast

    assert basic is theano.scalar and basic.upcast is upcast
    # NumPy's promotion (Theano's cast_policy 'custom')
    for dts in [("int32", "float32"), ("int8", "int16"), ("bool", "bool"), ("int64", "float64"), ("uint8", "int8"),
                ("float32", "float32"), ("int8", "uint8", "float16")]:
        assert upcast(*dts) == np.result_type(*[np.zeros((), d) for d in dts]).name
    # Theano's numpy+floatX: float32 kept unless a float64 is named
    with theano.config.change_flags(cast_policy="numpy+floatX", floatX="float32"):
        assert upcast("int64", "float32") == "float32" and upcast("int32", "int64") == "int64"
        assert upcast("float32", "float64") == "float64"
    s = theano.scalar
    assert [t.dtype for t in (s.bool, s.int8, s.int32, s.int64, s.uint8, s.float32, s.float64)] == [
        "bool", "int8", "int32", "int64", "uint8", "float32", "float64"]
    assert s.float32 in s.float_types and s.int64 in s.discrete_types and s.uint8 in s.uint_types
    assert s.Scalar("float32") == s.float32 and s.ScalarType is s.Scalar and s.get_scalar_type("int32") == s.int32
    assert s.float64 != s.float32 and hash(s.Scalar("int8")) == hash(s.int8)
    x = s.float64("x")
    assert x.type == T.dscalar().type and x.name == "x"
    assert s.upgrade_to_float(s.int16) == (s.float32,) and s.upgrade_to_float(s.int64, s.float32) == (s.float64,)
    assert s.upcast_out(s.int8, s.float32) == (s.float32,)
    with pytest.raises(TypeError):
        s.uint8("u")  # the compiler has no unsigned dtypes
    c = s.constant(2.5)
    assert c.ndim == 0 and float(c.data) == 2.5
    with pytest.raises(TypeError):
        s.as_scalar(T.dvector())
    k = s.int32("k")
    assert theano.function([k], k * 2)(np.int32(21)) == 42
    assert pickle.loads(pickle.dumps(s.float32)) == s.float32


# -- theano.printing ---------------------------------------------------------------------------


def test_debugprint_and_pprint():
    import io

    x, y = T.dvector("x"), T.dscalar("y")
    e = T.exp(x) * y + x
    text = theano.printing.debugprint(e, file="str")
    # Theano's layout, a node printed once and then referred to by its id
    assert text.splitlines() == [
        "Elemwise(add) [id A] ''",
        " |Elemwise(mul) [id B] ''",
        " | |Elemwise(exp) [id C] ''",
        " | | |x [id D]",
        " | |y [id E]",
        " |x [id D]",
    ]
    assert theano.printing.debugprint(e, file="str", depth=2).splitlines() == [
        "Elemwise(add) [id A] ''", " |Elemwise(mul) [id B] ''", " |x [id C]"]
    buf = io.StringIO()
    assert theano.printing.debugprint([e, y], file=buf, ids="int") is buf
    assert buf.getvalue().splitlines()[0] == "Elemwise(add) [id 0] ''" and buf.getvalue().splitlines()[-1] == "y [id 4]"
    assert theano.printing.pprint(e) == "((exp(x) * y) + x)" and theano.printing.pp is theano.printing.pprint
    assert theano.printing.pprint(~(x < y)) == "~(x < y)" and theano.printing.pprint(-x) == "-x"
    # a compiled function and a scan with its inner graph
    W = theano.shared(np.eye(2), name="W")
    r, _ = theano.scan(lambda a, h: T.tanh(T.dot(W, h) + a), sequences=T.dmatrix("s"), outputs_info=T.zeros((2,)))
    text = theano.printing.debugprint(r, file="str")
    assert "Inner graphs of the scan ops:" in text and "Elemwise(tanh)" in text and " |W [id" in text
    f = theano.function([x], x * 2)
    assert theano.printing.debugprint(f, file="str").splitlines()[1:] == [" |x [id B]", " |Constant{2} [id C]"]


def test_print_op_passes_values_and_gradients():
    x = T.dvector("x")
    with pytest.warns(UserWarning, match="do not print"):
        theano.printing.Print._warned = False
        p = theano.printing.Print("x is")(x)
    f = theano.function([x], [p * 3, T.grad((p ** 2).sum(), x)])
    v, g = f([1.0, -2.0])
    np.testing.assert_allclose(v, [3.0, -6.0])
    np.testing.assert_allclose(g, [2.0, -4.0])


# -- compiled functions deep-copy and pickle ----------------------------------------------------


class _Elman:
    """rnnslu.py's model, as the tutorial builds it (one-hot rows instead of an embedding lookup)."""

    def __init__(self, nh, nc, ne, seed=0):
        rng = np.random.RandomState(seed)
        self.wx = theano.shared(0.2 * rng.uniform(-1.0, 1.0, (ne, nh)), name="wx")
        self.wh = theano.shared(0.2 * rng.uniform(-1.0, 1.0, (nh, nh)), name="wh")
        self.w = theano.shared(0.2 * rng.uniform(-1.0, 1.0, (nh, nc)), name="w")
        self.bh = theano.shared(np.zeros(nh), name="bh")
        self.b = theano.shared(np.zeros(nc), name="b")
        self.h0 = theano.shared(np.zeros(nh), name="h0")
        self.params = [self.wx, self.wh, self.w, self.bh, self.b, self.h0]
        x = T.dmatrix("x")
        y = T.lscalar("y")

        def recurrence(x_t, h_tm1):
            h_t = T.nnet.sigmoid(T.dot(x_t, self.wx) + T.dot(h_tm1, self.wh) + self.bh)
            s_t = T.nnet.softmax(T.dot(h_t, self.w) + self.b)  # a 1 x nc row (Theano 1.0)
            return [h_t, s_t]

        [h, s], _ = theano.scan(fn=recurrence, sequences=x, outputs_info=[self.h0, None], n_steps=x.shape[0])
        p_y_given_x_sentence = s[:, 0, :]
        y_pred = T.argmax(p_y_given_x_sentence, axis=1)
        lr = T.dscalar("lr")
        nll = -T.log(p_y_given_x_sentence[-1, y])
        gradients = T.grad(nll, self.params)
        updates = [(p, p - lr * g) for p, g in zip(self.params, gradients)]
        self.classify = theano.function(inputs=[x], outputs=y_pred)
        self.probabilities = theano.function(inputs=[x], outputs=p_y_given_x_sentence)
        self.train = theano.function(inputs=[x, y, lr], outputs=nll, updates=updates)


def _elman_numpy(params, xv):
    wx, wh, w, bh, b, h0 = params
    h, out = h0, []
    for row in xv:
        h = 1 / (1 + np.exp(-(row @ wx + h @ wh + bh)))
        z = h @ w + b
        e = np.exp(z - z.max())
        out.append(e / e.sum())
    return np.array(out)


def test_deepcopy_of_a_model_keeps_its_values_at_copy_time():
    model = _Elman(nh=4, nc=3, ne=5)
    xv = np.eye(5)[[0, 3, 1, 4]]
    model.train(xv, 2, 0.5)
    at_copy = [p.get_value() for p in model.params]
    best_model = copy.deepcopy(model)  # rnnslu.py
    for _ in range(3):
        model.train(xv, 1, 0.5)
    # the copy computes with the values at copy time, the original with its trained ones
    np.testing.assert_allclose(best_model.probabilities(xv), _elman_numpy(at_copy, xv), rtol=1e-10)
    np.testing.assert_allclose(model.probabilities(xv), _elman_numpy([p.get_value() for p in model.params], xv),
                               rtol=1e-10)
    np.testing.assert_array_equal(best_model.classify(xv), _elman_numpy(at_copy, xv).argmax(axis=1))
    # the copy's functions use the copy's shared variables, and its updates change those only
    assert all(a is not b for a, b in zip(best_model.params, model.params))
    assert set(map(id, best_model.train.shared)) <= set(map(id, best_model.params))
    trained = [p.get_value() for p in model.params]
    best_model.train(xv, 0, 0.5)
    for p, v in zip(model.params, trained):
        np.testing.assert_array_equal(p.get_value(), v)
    assert any(not np.array_equal(p.get_value(), v) for p, v in zip(best_model.params, at_copy))
    # a copied variable is a new variable (graph walks tell them apart by id)
    assert len({p.id for p in model.params + best_model.params}) == 12


def test_pickled_functions_compile_again_when_loaded():
    model = _Elman(nh=3, nc=2, ne=4, seed=1)
    xv = np.eye(4)[[2, 0, 3]]
    loss_before = model.train(xv, 1, 0.1)
    data = pickle.dumps(model)
    loaded = pickle.loads(data)
    values = [p.get_value() for p in model.params]
    for p, v in zip(loaded.params, values):
        np.testing.assert_array_equal(p.get_value(), v)
    np.testing.assert_allclose(loaded.probabilities(xv), _elman_numpy(values, xv), rtol=1e-10)
    # training the loaded model and the original gives the same numbers, independently
    l1, l2 = loaded.train(xv, 0, 0.1), model.train(xv, 0, 0.1)
    np.testing.assert_allclose(l1, l2, rtol=1e-12)
    assert np.isfinite(loss_before)
    # a function alone, with keyword arguments, defaults and a single output
    x, k = T.dvector("x"), T.lscalar("k")
    f = theano.function([x, theano.In(k, value=3)], x * k)
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_allclose(g([1.0, 2.0]), [3.0, 6.0])
    np.testing.assert_allclose(g(x=[1.0, 2.0], k=2), [2.0, 4.0])
    assert g.ir == f.ir and copy.copy(g)([1.0], 1) == 1.0
    # a shared variable with a default update (a random stream's state) keeps it
    rs = T.shared_randomstreams.RandomStreams(seed=7)
    u = theano.function([], rs.uniform((3,)))
    first = u()
    u2 = pickle.loads(pickle.dumps(u))
    np.testing.assert_array_equal(u2(), u())
    assert not np.array_equal(first, u2())
    c = copy.deepcopy(u)
    np.testing.assert_array_equal(c(), u())


def test_pickle_of_a_default_update_that_cannot_be_pickled_warns():
    s = theano.shared(np.zeros(2), name="s")
    s.default_update = T.tanh(s + 1)
    f = theano.function([], s * 2)
    with pytest.warns(UserWarning, match="default_update is not saved"):
        g = pickle.loads(pickle.dumps(f))
    # the loaded function still applies the update it was compiled with
    g()
    np.testing.assert_allclose(g(), 2 * np.tanh(np.ones(2)))
    np.testing.assert_allclose(f(), [0.0, 0.0])


def test_deepcopy_of_graphs():
    x = T.dvector("x")
    w = theano.shared(np.array([0.5, -1.0, 2.0]), name="w")
    y = x * w
    for _ in range(40):
        y = T.tanh(y) + 1
    yc, xc, wc = copy.deepcopy([y, x, w])  # one memo: the copied graph reads the copied x and w
    assert {v.id for v in theano.graph.graph_inputs([yc]) if v.name} == {xc.id, wc.id}
    xv = np.array([1.0, 2.0, -3.0])
    expect = xv * w.get_value()
    for _ in range(40):
        expect = np.tanh(expect) + 1
    np.testing.assert_allclose(theano.function([xc], yc)(xv), expect, rtol=1e-12)
    w.set_value(np.zeros(3))  # the copy keeps the value at copy time
    np.testing.assert_allclose(theano.function([xc], yc)(xv), expect, rtol=1e-12)
    # a deep graph is copied without Python's recursion limit (node by node)
    z = x
    for _ in range(3000):
        z = z + 1.0
    zc = copy.deepcopy(z)
    assert zc is not z and zc.owner.op == z.owner.op and zc.id != z.id
    depth, v = 0, zc
    while v.owner is not None:
        v = v.owner.inputs[0]
        depth += 1
    assert depth == 3000 and v is not x and v.name == "x"
    assert bool(copy.deepcopy(x < 1)._is_nonzero) is False


def test_tag_attributes_and_test_values_are_accepted():
    with theano.config.change_flags(compute_test_value="raise"):
        x = T.dmatrix("x")
        x.tag.test_value = np.ones((2, 3))  # real code under compute_test_value
        y = (x * 2).sum()
    assert x.tag.test_value.shape == (2, 3) and x.tag["test_value"] is x.tag.test_value
    assert getattr(y.tag, "test_value", None) is None  # test values are kept, not computed
    with pytest.raises(AttributeError):
        y.tag.no_such_thing  # noqa: B018
    assert theano.function([x], y)(np.full((2, 3), 0.5)) == 6.0
    c = copy.deepcopy(x)
    np.testing.assert_array_equal(c.tag.test_value, np.ones((2, 3)))


def test_ultra_fast_sigmoid_is_theanos_approximation():
    def reference(v):  # Theano's UltraFastScalarSigmoid.st_impl
        h = 0.5 * v
        a = abs(h)
        z = 1.5 * a / (1 + a) if a < 1.7 else (0.935409070603099 + 0.0458812946797165 * (a - 1.7) if a < 3
                                                else 0.99505475368673)
        return 0.5 * ((z if h >= 0 else -z) + 1.0)

    xv = np.array([-9.0, -5.0, -3.4, -2.0, -0.3, 0.0, 0.3, 2.0, 3.39, 3.41, 5.9, 6.1, 9.0])
    x = T.dvector("x")
    got = T.nnet.ultra_fast_sigmoid(x).eval({x: xv})
    np.testing.assert_allclose(got, [reference(v) for v in xv], rtol=1e-12)
    assert np.max(np.abs(got - 1 / (1 + np.exp(-xv)))) < 0.03
    f = T.fvector("f")
    assert T.nnet.ultra_fast_sigmoid(f).dtype == "float32"


# -- verify_grad: Theano's gradient check -----------------------------------------------------------


def test_verify_grad_accepts_correct_gradients_including_a_scan():
    rng = np.random.RandomState(0)
    T.verify_grad(lambda x, W: T.dot(x, W).sum(axis=0), [rng.rand(3, 4), rng.rand(4, 2)], rng=rng)

    def rnn(x0, W):
        out, _ = theano.scan(lambda h, W: T.tanh(T.dot(h, W)), outputs_info=x0, non_sequences=W, n_steps=4)
        return out

    theano.gradient.verify_grad(rnn, [rng.rand(3), rng.rand(3, 3)], rng=rng)
    T.verify_grad(lambda x: T.exp(x).sum(), [rng.rand(5).astype("float32")], rng=rng)  # float32 tolerances


def test_verify_grad_raises_on_a_wrong_gradient():
    # grad_scale doubles the gradient of an op whose value is unchanged: finite differences see it.
    rng = np.random.RandomState(1)
    with pytest.raises(T.verify_grad.E_grad) as info:
        T.verify_grad(lambda x: theano.gradient.grad_scale(x, 2.0) ** 2, [np.array([1.0, 2.0])], rng=rng)
    error = info.value
    assert error.arg == 0 and error.shape == (2,)
    assert error.val1 == pytest.approx(2 * error.val2, rel=1e-3)  # analytic = twice the numeric gradient
    assert "argument 0" in str(error)


def test_verify_grad_rejects_what_theano_rejects():
    rng = np.random.RandomState(2)
    with pytest.raises(TypeError, match="rng"):
        T.verify_grad(lambda x: x.sum(), [np.ones(2)])
    with pytest.raises(ValueError, match="one variable"):
        T.verify_grad(lambda x: [x.sum(), x.sum()], [np.ones(2)], rng=rng)
    with pytest.raises(TypeError, match="floats"):
        T.verify_grad(lambda x: x.sum(), [np.ones(2, dtype="int64")], rng=rng)


def test_python_float_is_floatx_when_it_meets_float64_as_in_theano():
    # Theano's autocast: with floatX=float32 a Python float becomes a float32 constant, then is
    # upcast (dvector * 1.1 multiplies by 1.1f); PyTensor does the same.
    x = T.dvector("x")
    with theano.change_flags(floatX="float32"):
        f = theano.function([x], x * 1.1)
    np.testing.assert_array_equal(f([3.0, 7.0]), np.array([3.0, 7.0]) * np.float64(np.float32(1.1)))
    g = theano.function([x], x * 1.1)  # floatX=float64: the float as it is
    np.testing.assert_array_equal(g([3.0, 7.0]), np.array([3.0, 7.0]) * 1.1)
    with theano.change_flags(floatX="float32"):  # not representable in float32: stays float64
        h = theano.function([x], x * 1e300)
    np.testing.assert_array_equal(h([2.0]), [2e300])


def test_opt_assert_is_theanos_other_name_for_assert_op():
    x = T.dscalar("x")
    f = theano.function([x], T.opt.assert_(x, T.gt(x, 0)))
    assert float(f(2.0)) == 2.0
    with pytest.raises(AssertionError):
        f(-1.0)


def test_mode_objects_choose_whether_the_scan_rewrites_run():
    # theano.Mode(optimizer=None) compiles as FAST_COMPILE (no scan rewrites); another optimizer as
    # FAST_RUN. The step's W * 2 does not depend on the state: FAST_RUN pushes it out of the scan.
    W = T.dvector("W")
    h0 = T.dvector("h0")
    out, _ = theano.scan(lambda h, W: h + W * 2.0, outputs_info=h0, non_sequences=W, n_steps=3)

    def optimized_ir(mode):
        f = theano.function([W, h0], out, mode=mode)
        np.testing.assert_allclose(f([1.0, 2.0], [0.0, 0.0]), [[2.0, 4.0], [4.0, 8.0], [6.0, 12.0]])
        return f.program.ir("optimized")

    unoptimized = optimized_ir("FAST_COMPILE")
    assert optimized_ir(theano.Mode(linker="py", optimizer=None)) == unoptimized
    fast_run = optimized_ir("FAST_RUN")
    assert fast_run != unoptimized
    assert optimized_ir(theano.Mode(optimizer="fast_run").excluding("scanOp_pushout_nonseqs_ops")) == fast_run
    mode = theano.Mode().including("a").excluding("b").requiring("c")
    assert (mode.included, mode.excluded, mode.required) == (("a",), ("b",), ("c",))


def test_every_mode_name_config_accepts_is_a_mode():
    # get_mode/get_default_mode know every name config.mode accepts (NanGuardMode, the backends...),
    # and theano.function compiles in each as get_mode says: only FAST_COMPILE skips the rewrites.
    from mlir_scan.builder import mode as mode_module

    x = T.dvector("x")
    for name in ("Mode", "FAST_RUN", "FAST_COMPILE", "DebugMode", "NanGuardMode", "ProfileMode", "NUMBA"):
        with theano.change_flags(mode=name):
            assert mode_module.get_default_mode().optimizes == (name != "FAST_COMPILE")
            np.testing.assert_array_equal(theano.function([x], 2 * x)([1.0, 2.0]), [2.0, 4.0])
    with pytest.raises(ValueError, match="unknown mode 'bogus'"):
        mode_module.get_mode("bogus")
    with theano.change_flags(optimizer="None"):
        assert not mode_module.get_default_mode().optimizes


def test_clone_replace_takes_what_theano_and_pytensor_take():
    # clone_replace(output, replace, **rebuild_kwds): a variable or a list, a dict or a list of
    # pairs, PyTensor's copy_inputs_over; grad's consider_constant may be a single variable.
    x, y = T.dvector("x"), T.dvector("y")
    e = (x * 2).sum()
    for out in (theano.clone_replace(e, {x: y}), theano.clone_replace(e, [(x, y)]),
                theano.clone_replace([e], {x: y})[0], theano.clone_replace(e, {x: y}, copy_inputs_over=True)):
        assert float(theano.function([y], out)([1.0, 2.0])) == 6.0
    copied = theano.clone_replace(e * x.sum(), {x: y}, copy_inputs_over=False)
    assert y not in theano.graph.inputs([copied])
    with pytest.raises(TypeError, match="list of \\(variable, replacement\\) pairs"):
        theano.clone_replace(e, (x, y))
    with pytest.raises(TypeError, match="unexpected keyword"):
        theano.clone_replace(e, {x: y}, bogus=1)
    g1 = T.grad((x * T.exp(x)).sum(), x, consider_constant=x)
    g2 = T.grad((x * T.exp(x)).sum(), x, consider_constant=[x])
    v = np.array([0.5, 1.0])
    np.testing.assert_array_equal(theano.function([x], g1)(v), theano.function([x], g2)(v))


def test_verify_grad_of_a_cost_disconnected_from_its_input():
    # Theano's verify_grad takes the gradient with disconnected_inputs="ignore": the second
    # gradient of a linear scan (Theano's test_verify_second_grad_sitsot) is zero, not an error.
    def sum_of_grad(inp):
        out, _ = theano.scan(lambda x: x * 2, outputs_info=[inp], n_steps=5)
        return theano.grad(out.sum(), inp).sum()

    theano.gradient.verify_grad(sum_of_grad, [np.random.RandomState(0).random_sample(3)],
                                rng=np.random.RandomState(1))


def test_theano_compile_namespace_as_attributes():
    # theano.compile.mode.get_mode(...), theano.compile.function, theano.compile.io.In: Theano's
    # namespace on mlir_scan.compile, which still compiles MLIR text.
    x = T.dvector("x")
    mode = theano.compile.mode.get_mode("FAST_RUN")
    assert mode.optimizes and not theano.compile.get_mode("FAST_COMPILE").optimizes
    assert isinstance(theano.compile.get_default_mode(), theano.compile.Mode)
    f = theano.compile.function([theano.compile.io.In(x, name="x")], 2 * x, mode=mode)
    np.testing.assert_array_equal(f(x=[1.0, 2.0]), [2.0, 4.0])
    s = theano.compile.sharedvalue.shared(np.zeros(2))
    assert isinstance(s, theano.compile.SharedVariable)
    assert theano.compile("func.func @f(%a: f64) -> f64 { return %a : f64 }").f(2.5) == 2.5


def test_function_maker_and_shared_container_as_theano_reads_them():
    # f.maker.fgraph (the graph as built: inputs, outputs with the updates, toposort) and
    # f.maker.expanded_inputs (one In per input, then per shared variable read), and a shared
    # variable's container.storage[0] (its value, not a copy), as Theano's own scan tests read them.
    x = T.dvector("x")
    w = theano.shared(np.ones(2), "w")
    out, _ = theano.scan(lambda a: a * w, sequences=x)
    f = theano.function([x], out, updates={w: w * 2})
    maker = f.maker
    nodes = maker.fgraph.toposort()
    assert sum(type(n.op).__name__ == "ScanOp" for n in nodes) == 1 and set(nodes) == maker.fgraph.apply_nodes
    assert maker.fgraph.inputs == [x, w] and maker.fgraph.outputs[0] is out
    assert [i.variable for i in maker.expanded_inputs] == [x, w] and all(i.value is None for i in maker.inputs)
    np.testing.assert_array_equal(f([1.0, 2.0]), [[1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_array_equal(w.container.storage[0], [2.0, 2.0])
    assert w.container.storage[0] is w.get_value(borrow=True)
