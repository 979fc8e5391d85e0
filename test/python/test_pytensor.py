"""The PyTensor mode backed by mlir-scan (``mode="MLIR_SCAN"``), against PyTensor's default mode.

Every program is written once in PyTensor and compiled twice: in PyTensor's
default mode (the reference) and in mlir-scan's; the results must agree to
a tight tolerance. The programs are the scan guide's (as PyTensor spells
them) and an RNN forward and backward.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt  # noqa: E402

import mlir_scan.pytensor as mp  # noqa: E402

warnings.filterwarnings("ignore", message=".*BLAS.*")

RTOL = 1e-12
#: PyTensor 3.x (the mode is also tested on 2.38, the version PyMC 5 requires).
PYTENSOR_3 = int(pytensor.__version__.split(".")[0]) >= 3


def compile_both(inputs, outputs, **kwargs):
    """(mlir-scan's function, PyTensor's default-mode function)."""
    ours = pytensor.function(inputs, outputs, mode="MLIR_SCAN", **kwargs)
    ref = pytensor.function(inputs, outputs, **kwargs)
    return ours, ref


def assert_same(ours, ref, *args, rtol=RTOL):
    got, want = ours(*args), ref(*args)
    if not isinstance(want, list):
        got, want = [got], [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)
    return got


def whole(f) -> bool:
    return f.maker.linker.whole_graph


# -- the mode itself -----------------------------------------------------------------------------


def test_mode_is_registered():
    from pytensor.compile.mode import get_mode

    assert get_mode("MLIR_SCAN") is mp.mode
    assert isinstance(mp.mode.linker, mp.MlirScanLinker)


# -- the scan guide's programs, in PyTensor ------------------------------------------------------


def test_guide_power_last_value():
    A, k = pt.vector("A"), pt.iscalar("k")
    res = pytensor.scan(lambda prior, A: prior * A, outputs_info=pt.ones_like(A), non_sequences=A,
                        n_steps=k, return_updates=False)
    ours, ref = compile_both([A, k], res[-1])
    assert whole(ours)
    assert_same(ours, ref, np.arange(10.0), 2)
    if PYTENSOR_3:
        assert_same(ours, ref, np.arange(10.0), 0)  # zero steps: the initial value
    else:
        # PyTensor 2.38 returns the value of a step that never ran (A * 1); with
        # Theano's semantics zero steps leave nothing to index.
        with pytest.raises(IndexError):
            ours(np.arange(10.0), 0)
    assert "scan.scan" in ours.maker.linker.ir


def test_guide_power_all_values():
    A, k = pt.vector("A"), pt.iscalar("k")
    res = pytensor.scan(lambda prior, A: prior * A, outputs_info=pt.ones_like(A), non_sequences=A,
                        n_steps=k, return_updates=False)
    ours, ref = compile_both([A, k], res)
    assert whole(ours)
    assert_same(ours, ref, np.linspace(0, 2, 7), 5)


def test_guide_polynomial():
    coefficients, x = pt.vector("coefficients"), pt.scalar("x")
    components = pytensor.scan(lambda c, power, free: c * (free ** power), outputs_info=None,
                               sequences=[coefficients, pt.arange(10000)], non_sequences=x,
                               return_updates=False)
    ours, ref = compile_both([coefficients, x], components.sum())
    assert whole(ours)
    got = assert_same(ours, ref, np.asarray([1, 0, 2], dtype=pytensor.config.floatX), 3.0)
    assert float(got[0]) == 19.0


def test_guide_triangular_int():
    up_to = pt.iscalar("up_to")
    seq = pt.arange(up_to)
    res = pytensor.scan(lambda v, acc: acc + v, outputs_info=pt.as_tensor_variable(np.asarray(0, seq.dtype)),
                        sequences=seq, return_updates=False)
    ours, ref = compile_both([up_to], res)
    assert whole(ours)
    got = assert_same(ours, ref, 15)
    assert got[0].tolist() == [n * (n + 1) // 2 for n in range(15)]


def test_guide_set_value_at_position():
    location, values, model = pt.imatrix("location"), pt.vector("values"), pt.matrix("model")

    def step(loc, value, model):
        zeros = pt.zeros_like(model)
        return pt.set_subtensor(zeros[loc[0], loc[1]], value)

    res = pytensor.scan(step, sequences=[location, values], non_sequences=model, return_updates=False)
    ours, ref = compile_both([location, values, model], res)
    assert whole(ours)
    fx = pytensor.config.floatX
    assert_same(ours, ref, np.asarray([[1, 1], [2, 3]], dtype="int32"), np.asarray([42, 50], dtype=fx),
                np.zeros((5, 5), dtype=fx))


def test_guide_rnn_with_taps():
    """The guide's RNN: sequence taps [-4, 0], a mitsot with taps [-3, -1], a sitsot."""
    W, W_in_1, W_in_2, W_feedback, W_out = (pt.matrix(n) for n in ("W", "Win1", "Win2", "Wfb", "Wout"))
    u, x0, y0 = pt.matrix("u"), pt.matrix("x0"), pt.vector("y0")

    def one_step(u_tm4, u_t, x_tm3, x_tm1, y_tm1, W, W_in_1, W_in_2, W_feedback, W_out):
        x_t = pt.tanh(pt.dot(x_tm1, W) + pt.dot(u_t, W_in_1) + pt.dot(u_tm4, W_in_2) + pt.dot(y_tm1, W_feedback))
        y_t = pt.dot(x_tm3, W_out)
        return [x_t, y_t]

    (x_vals, y_vals) = pytensor.scan(one_step, sequences=dict(input=u, taps=[-4, 0]),
                                     outputs_info=[dict(initial=x0, taps=[-3, -1]), y0],
                                     non_sequences=[W, W_in_1, W_in_2, W_feedback, W_out], strict=True,
                                     return_updates=False)
    ins = [u, x0, y0, W, W_in_1, W_in_2, W_feedback, W_out]
    ours, ref = compile_both(ins, [x_vals, y_vals])
    assert whole(ours)
    rng = np.random.RandomState(0)
    n_in, n_x, n_y, length = 3, 5, 2, 9
    args = [rng.normal(size=(length, n_in)), rng.normal(size=(3, n_x)), rng.normal(size=n_y),
            0.5 * rng.normal(size=(n_x, n_x)), rng.normal(size=(n_in, n_x)), rng.normal(size=(n_in, n_x)),
            rng.normal(size=(n_y, n_x)), rng.normal(size=(n_x, n_y))]
    assert_same(ours, ref, *args)
    # The whole mitsot buffer too (PyTensor's own output convention: init rows first).
    node = x_vals.owner.inputs[0]
    ours_b, ref_b = compile_both(ins, node)
    assert_same(ours_b, ref_b, *args)


def test_guide_until():
    max_value = pt.scalar("max_value")

    from pytensor.scan.utils import until

    def power_of_2(previous_power, max_value):
        return previous_power * 2, until(previous_power * 2 > max_value)

    values = pytensor.scan(power_of_2, outputs_info=pt.constant(1.0), non_sequences=max_value, n_steps=1024,
                           return_updates=False)
    ours, ref = compile_both([max_value], values)
    assert whole(ours)
    got = assert_same(ours, ref, 45.0)
    assert got[0].tolist() == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    assert_same(ours, ref, 0.5)


def test_guide_shared_updates():
    """A shared variable updated by the scan (PyTensor: an untraced sit_sot)."""
    a = pytensor.shared(np.asarray(1, dtype="int64"), name="a")
    b_ours = pytensor.shared(np.asarray(1, dtype="int64"), name="b")
    _, updates = pytensor.scan(lambda: {a: a + 1}, n_steps=10)
    _, updates_b = pytensor.scan(lambda: {b_ours: b_ours + 1}, n_steps=10)
    ref = pytensor.function([], [a + 1, updates[a] + 1], updates=updates)
    ours = pytensor.function([], [b_ours + 1, updates_b[b_ours] + 1], updates=updates_b, mode="MLIR_SCAN")
    assert whole(ours)
    for _ in range(2):
        got, want = ours(), ref()
        assert [int(g) for g in got] == [int(w) for w in want]
        assert int(b_ours.get_value()) == int(a.get_value())


def test_nested_scans():
    """A scan whose step runs a scan (the shape scan_checkpoints builds)."""
    X = pt.matrix("X")

    def row_step(row, acc):
        inner = pytensor.scan(lambda v, a: a * 0.5 + v, sequences=row, outputs_info=pt.zeros(()),
                              return_updates=False)
        return acc + inner[-1]

    res = pytensor.scan(row_step, sequences=X, outputs_info=pt.zeros(()), return_updates=False)
    ours, ref = compile_both([X], res)
    assert whole(ours)
    assert ours.maker.linker.ir.count("scan.scan") == 2
    assert_same(ours, ref, np.random.default_rng(2).normal(size=(5, 4)))


def test_map_and_last_value_of_matrix_rows():
    X = pt.matrix("X")
    rows = pytensor.map(lambda r: pt.exp(r) / pt.exp(r).sum(), sequences=X, return_updates=False)
    total = pytensor.scan(lambda r, acc: acc + r.max(), sequences=X, outputs_info=pt.zeros(()),
                          return_updates=False)[-1]
    ours, ref = compile_both([X], [rows, total])
    assert whole(ours)
    assert_same(ours, ref, np.random.default_rng(3).normal(size=(6, 4)))


def test_float32_program():
    x = pt.vector("x", dtype="float32")
    ys = pytensor.scan(lambda v, acc: pt.tanh(acc * np.float32(0.5) + v), sequences=x,
                       outputs_info=pt.zeros((), dtype="float32"), return_updates=False)
    ours, ref = compile_both([x], ys)
    assert whole(ours)
    assert_same(ours, ref, np.linspace(-1, 1, 50).astype("float32"), rtol=1e-6)


# -- RNN forward and backward ----------------------------------------------------------------------


def _rnn():
    x, h0 = pt.matrix("x"), pt.vector("h0")
    W, U, b = pt.matrix("W"), pt.matrix("U"), pt.vector("b")
    hs = pytensor.scan(lambda x_t, h, W, U, b: pt.tanh(pt.dot(h, W) + pt.dot(x_t, U) + b), sequences=x,
                       outputs_info=h0, non_sequences=[W, U, b], return_updates=False)
    rng = np.random.default_rng(0)
    T_, n_in, n_h = 12, 3, 5
    args = [rng.normal(size=(T_, n_in)), rng.normal(size=n_h), 0.5 * rng.normal(size=(n_h, n_h)),
            rng.normal(size=(n_in, n_h)), rng.normal(size=n_h)]
    return [x, h0, W, U, b], hs, args


def test_rnn_forward():
    ins, hs, args = _rnn()
    ours, ref = compile_both(ins, hs)
    assert whole(ours)
    assert_same(ours, ref, *args)


def test_rnn_backward_values():
    ins, hs, args = _rnn()
    x, h0, W, U, b = ins
    cost = (hs ** 2).sum()
    grads = pytensor.grad(cost, [W, U, b, h0, x])
    ours, ref = compile_both(ins, [cost] + grads)
    assert whole(ours), ours.maker.linker.left_to_pytensor
    assert_same(ours, ref, *args, rtol=1e-10)


def test_rnn_backward_is_one_module_with_mitmot():
    ins, hs, args = _rnn()
    x, h0, W, U, b = ins
    grads = pytensor.grad((hs ** 2).sum(), [W, U, b, h0])
    ours = pytensor.function(ins, grads, mode="MLIR_SCAN")
    assert whole(ours), ours.maker.linker.left_to_pytensor
    assert "mitmot(" in ours.maker.linker.ir


def test_guide_rnn_gradient_multi_tap_mitmot():
    """The gradient of the guide's RNN: mit_mot groups with taps (0, 3, 1) -> (3, 1) and (0, 1) -> (1,)."""
    W, W_in_1, W_in_2, W_feedback, W_out = (pt.matrix(n) for n in ("W", "Win1", "Win2", "Wfb", "Wout"))
    u, x0, y0 = pt.matrix("u"), pt.matrix("x0"), pt.vector("y0")

    def one_step(u_tm4, u_t, x_tm3, x_tm1, y_tm1, W, W_in_1, W_in_2, W_feedback, W_out):
        x_t = pt.tanh(pt.dot(x_tm1, W) + pt.dot(u_t, W_in_1) + pt.dot(u_tm4, W_in_2) + pt.dot(y_tm1, W_feedback))
        return [x_t, pt.dot(x_tm3, W_out)]

    (x_vals, y_vals) = pytensor.scan(one_step, sequences=dict(input=u, taps=[-4, 0]),
                                     outputs_info=[dict(initial=x0, taps=[-3, -1]), y0],
                                     non_sequences=[W, W_in_1, W_in_2, W_feedback, W_out], return_updates=False)
    ins = [u, x0, y0, W, W_in_1, W_in_2, W_feedback, W_out]
    grads = pytensor.grad((x_vals ** 2).sum() + y_vals.sum(), [W, W_in_1, x0, y0, u])
    ours, ref = compile_both(ins, grads)
    assert whole(ours), ours.maker.linker.left_to_pytensor
    assert "mitmot(" in ours.maker.linker.ir
    rng = np.random.RandomState(0)
    n_in, n_x, n_y, length = 3, 5, 2, 9
    args = [rng.normal(size=(length, n_in)), rng.normal(size=(3, n_x)), rng.normal(size=n_y),
            0.5 * rng.normal(size=(n_x, n_x)), rng.normal(size=(n_in, n_x)), rng.normal(size=(n_in, n_x)),
            rng.normal(size=(n_y, n_x)), rng.normal(size=(n_x, n_y))]
    assert_same(ours, ref, *args, rtol=1e-10)


def test_truncated_gradient():
    x, h0, W = pt.matrix("x"), pt.vector("h0"), pt.matrix("W")
    hs = pytensor.scan(lambda x_t, h, W: pt.tanh(pt.dot(h, W) + x_t), sequences=x, outputs_info=h0,
                       non_sequences=[W], truncate_gradient=3, return_updates=False)
    grads = pytensor.grad(hs.sum(), [W, h0])
    ours, ref = compile_both([x, h0, W], grads)
    assert whole(ours)
    rng = np.random.default_rng(4)
    assert_same(ours, ref, rng.normal(size=(8, 4)), rng.normal(size=4), 0.5 * rng.normal(size=(4, 4)), rtol=1e-10)


def test_gradient_of_an_rnn_written_with_dot_W_h():
    """D1: ``dot(W, h)`` makes PyTensor's gradient transpose a (n, m, 1) tensor into a matrix
    (a DimShuffle that also drops an axis) feeding a Dot: it must compile, as one module."""
    W, x = pt.matrix("W"), pt.vector("x")
    hs = pytensor.scan(lambda h, W: pt.tanh(pt.dot(W, h)), outputs_info=x, non_sequences=W, n_steps=4,
                       return_updates=False)
    ours, ref = compile_both([W, x], [pytensor.grad(hs.sum(), W), pytensor.grad((hs ** 2).sum(), x)])
    assert whole(ours), ours.maker.linker.left_to_pytensor
    rng = np.random.default_rng(1)
    assert_same(ours, ref, 0.5 * rng.normal(size=(3, 3)), rng.normal(size=3), rtol=1e-10)


def test_dot_of_a_dimshuffle_dropping_a_broadcastable_axis():
    x, y = pt.tensor3("x", shape=(None, None, 1)), pt.matrix("y")
    ours, ref = compile_both([x, y], [pt.dot(x.dimshuffle(1, 0), y), pt.dot(y, x.dimshuffle(0, 1))])
    assert whole(ours)
    rng = np.random.default_rng(2)
    assert_same(ours, ref, rng.normal(size=(3, 2, 1)), rng.normal(size=(3, 3)))


@pytest.mark.parametrize("k", [1, 3, 7, 8, 20])
@pytest.mark.parametrize("taps", [False, True])
def test_truncated_gradient_wrt_the_sequence(k, taps):
    """D2: the backward scan of ``truncate_gradient=k`` runs min(n, k) steps into an n-row
    nit_sot output; PyTensor's rows that no step wrote are zeros."""
    x, h0, W = pt.matrix("x"), pt.vector("h0"), pt.matrix("W")
    if taps:
        hs = pytensor.scan(lambda x_m1, x_t, h, W: pt.tanh(pt.dot(h, W) + x_t * x_m1),
                           sequences=dict(input=x, taps=[-1, 0]), outputs_info=h0, non_sequences=[W],
                           truncate_gradient=k, return_updates=False)
    else:
        hs = pytensor.scan(lambda x_t, h, W: pt.tanh(pt.dot(h, W) + x_t), sequences=x, outputs_info=h0,
                           non_sequences=[W], truncate_gradient=k, return_updates=False)
    ours, ref = compile_both([x, h0, W], pytensor.grad((hs ** 2).sum(), [x, W, h0]))
    assert whole(ours), ours.maker.linker.left_to_pytensor
    rng = np.random.default_rng(k)
    gx = assert_same(ours, ref, rng.normal(size=(8, 3)), rng.normal(size=3), 0.5 * rng.normal(size=(3, 3)),
                     rtol=1e-10)[0]
    n_rows = 8 - 1 if taps else 8
    if k < n_rows:
        assert not gx[:n_rows - k - 1].any()  # (with taps, row n-k-1 is also read at tap -1)
    f = pytensor.function([x, h0, W], pytensor.grad(hs.sum(), x), mode="MLIR_SCAN")
    assert_same(f, pytensor.function([x, h0, W], pytensor.grad(hs.sum(), x)), np.ones((8, 3)), np.ones(3),
                np.eye(3))


def test_truncated_gradient_of_the_builder_wrt_the_sequence():
    """D2, the builder's own truncate_gradient: the same values as PyTensor's."""
    import mlir_scan as theano
    from mlir_scan import tensor as T

    rng = np.random.default_rng(5)
    args = [rng.normal(size=(8, 3)), rng.normal(size=3), 0.5 * rng.normal(size=(3, 3))]
    for k in (1, 3):
        bx, bh0, bW = T.dmatrix("x"), T.dvector("h0"), T.dmatrix("W")
        bhs, _ = theano.scan(lambda x_t, h, W: T.tanh(T.dot(h, W) + x_t), sequences=bx, outputs_info=bh0,
                             non_sequences=[bW], truncate_gradient=k)
        got = theano.function([bx, bh0, bW], theano.grad(bhs.sum(), [bx, bW]))(*args)
        x, h0, W = pt.matrix("x"), pt.vector("h0"), pt.matrix("W")
        hs = pytensor.scan(lambda x_t, h, W: pt.tanh(pt.dot(h, W) + x_t), sequences=x, outputs_info=h0,
                           non_sequences=[W], truncate_gradient=k, return_updates=False)
        want = pytensor.function([x, h0, W], pytensor.grad(hs.sum(), [x, W]))(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_zero_constant_steps():
    """D3: ``n_steps=0`` (PyTensor's graph slices ``[1:]`` a one-row buffer)."""
    x0, m0, s0 = pt.vector("x0"), pt.matrix("m0"), pt.scalar("s0")
    outs = [pytensor.scan(lambda s: s + 1, outputs_info=x0, n_steps=0, return_updates=False),
            pytensor.scan(lambda s: s * 2, outputs_info=m0, n_steps=0, return_updates=False),
            pytensor.scan(lambda s: s * 2, outputs_info=s0, n_steps=0, return_updates=False),
            pytensor.scan(lambda a, b: a + b, outputs_info=dict(initial=m0, taps=[-2, -1]), n_steps=0,
                          return_updates=False)]
    for out in outs:
        ours, ref = compile_both([x0, m0, s0], out, on_unused_input="ignore")
        assert whole(ours)
        got = assert_same(ours, ref, np.ones(3), np.ones((2, 3)), 1.5)
    assert got[0].shape == (0, 3)


def test_specify_shape_with_unknown_sizes():
    """D4: SpecifyShape's None sizes (NoneConst inputs) translate; PyTensor puts one in RNN gradients."""
    x = pt.matrix("x")
    ours, ref = compile_both([x], pt.specify_shape(x, (None, 3)) * 2)
    assert whole(ours), ours.maker.linker.left_to_pytensor
    assert_same(ours, ref, np.arange(6.0).reshape(2, 3))
    with pytest.raises(AssertionError):
        ours(np.ones((2, 4)))
    W = pt.matrix("W")
    hs = pytensor.scan(lambda h, W: pt.tanh(pt.dot(h, W)), outputs_info=pt.zeros(3), non_sequences=W, n_steps=4,
                       return_updates=False)
    ours, ref = compile_both([W], pytensor.grad(hs[-1].sum(), W))
    assert whole(ours), ours.maker.linker.left_to_pytensor
    assert_same(ours, ref, 0.5 * np.random.default_rng(6).normal(size=(3, 3)), rtol=1e-10)


def test_symbolic_index_of_a_scan_output():
    """D5: ``out[i]`` reads the buffer at ``switch(i < 0, i, ScalarFromTensor(i) + 1)``: scalar ops
    on ScalarType values, outside any Elemwise."""
    x, i, j = pt.matrix("x"), pt.iscalar("i"), pt.lscalar("j")
    out = pytensor.scan(lambda r, acc: acc + r, sequences=x, outputs_info=pt.zeros_like(x[0]),
                        return_updates=False)
    ours, ref = compile_both([x, i, j], [out[i], out[i:j], out[j - 1], out[::j], out[i // 2] * j])
    assert whole(ours), ours.maker.linker.left_to_pytensor
    xv = np.arange(12.0).reshape(4, 3)
    for iv, jv in [(0, 1), (2, 3), (3, 4), (-1, 2), (-4, 1)]:
        assert_same(ours, ref, xv, iv, jv)
    with pytest.raises(IndexError):
        ours(xv, 9, 1)


_MATH_OPS = {
    "log2": (pt.log2, "any"), "log10": (pt.log10, "any"), "expm1": (pt.expm1, "any"),
    "exp2": (pt.exp2, "any"), "sinh": (pt.sinh, "any"), "cosh": (pt.cosh, "any"),
    "tan": (pt.tan, "any"), "arcsin": (pt.arcsin, "unit"), "arccos": (pt.arccos, "unit"),
    "arctan": (pt.arctan, "any"), "arcsinh": (pt.arcsinh, "any"), "arccosh": (pt.arccosh, "above1"),
    "arctanh": (pt.arctanh, "unit"), "erf": (pt.erf, "any"), "erfc": (pt.erfc, "any"),
    "deg2rad": (pt.deg2rad, "any"), "rad2deg": (pt.rad2deg, "any"), "sign": (pt.sign, "any"),
    "isnan": (pt.isnan, "any"), "isinf": (pt.isinf, "any"), "round": (pt.round, "halves"),
    "round_away": (lambda v: pt.round(v, "half_away_from_zero"), "halves"),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(_MATH_OPS))
def test_elementwise_math_ops(name, dtype):
    """Every scalar op the DSL has is translated (strict mode: no fallback), in a
    scan step too, and equals PyTensor's result, special values included."""
    fn, domain = _MATH_OPS[name]
    rng = np.random.default_rng(7)
    data = {"any": rng.uniform(-4, 4, 40), "unit": rng.uniform(-0.99, 0.99, 40),
            "above1": rng.uniform(1, 9, 40), "halves": np.arange(-20, 20) / 2.0}[domain]
    if domain == "any":
        data[:4] = [np.nan, np.inf, -np.inf, 1e-9]
    data = data.astype(dtype)
    x = pt.vector("x", dtype=dtype)
    ys = pytensor.scan(lambda v: fn(v), sequences=x, return_updates=False)
    for out in (fn(x), ys):
        ours = pytensor.function([x], out, mode=mp.get_mode(strict=True))
        ref = pytensor.function([x], out, mode="FAST_COMPILE")
        with np.errstate(all="ignore"):
            got, want = ours(data), ref(data)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == "float64" else 1e-6, atol=0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_special_functions(dtype):
    """GammaLn, Psi, TriGamma and PolyGamma (the Student-t and gamma log-densities and
    their gradients in PyMC models), alone and fused in a Composite (PyTensor's
    fast_run fuses the chain), in a scan step too: strict mode, PyTensor's values."""
    x = pt.vector("x", dtype=dtype)
    data = np.array([-2.5, -0.5, 0.25, 1.0, 1.5, 3.0, 7.5, 20.0, 150.0], dtype)
    alone = [pt.gammaln(x), pt.psi(x), pt.tri_gamma(x), pt.polygamma(2, x)]
    fused = pt.gammaln((x + 1) / 2) - pt.gammaln(x / 2) + 0.5 * pt.psi(x) * pt.tri_gamma(x)
    for out in (*alone, fused):
        ours = pytensor.function([x], out, mode=mp.get_mode(strict=True))
        ref = pytensor.function([x], out, mode="FAST_COMPILE")
        with np.errstate(all="ignore"):
            got, want = ours(data), ref(data)
        assert got.dtype == want.dtype
        # (float32: gammaln(75.5) - gammaln(75) cancels two 250s rounded to 2e-5 each)
        np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == "float64" else 2e-6,
                                   atol=0 if dtype == "float64" else 1e-4)
    # In a scan step (PyTensor compiles its inner graph with its C `psi`, accurate to about
    # 1e-10: SciPy's values are the reference here).
    special = pytest.importorskip("scipy.special")
    ys = pytensor.scan(lambda v: pt.gammaln(v) + pt.psi(v), sequences=x, return_updates=False)
    ours = pytensor.function([x], ys, mode=mp.get_mode(strict=True))
    want = special.gammaln(data.astype(np.float64)) + special.psi(data.astype(np.float64))
    np.testing.assert_allclose(ours(data), want.astype(dtype), rtol=1e-12 if dtype == "float64" else 2e-6)
    grad = pytensor.grad(fused.sum(), x)
    ours = pytensor.function([x], grad, mode=mp.get_mode(strict=True))
    ref = pytensor.function([x], grad, mode="FAST_COMPILE")
    np.testing.assert_allclose(ours(data), ref(data), rtol=1e-11 if dtype == "float64" else 2e-5)


@pytest.mark.parametrize("name", ["argmax0", "argmax1", "argmax_all", "argmax_both", "argmin1", "cumsum0",
                                  "cumsum_all", "cumprod1", "softmax1", "softmax0", "softmax_all",
                                  "log_softmax1", "log_softmax_all"])
def test_tensor_ops_beyond_elementwise(name):
    """Argmax (several axes, NaN as NumPy), CumOp, Softmax, LogSoftmax: translated
    (strict mode), alone and in a scan step, equal to PyTensor's results."""
    fn = {
        "argmax0": lambda m: pt.argmax(m, axis=0), "argmax1": lambda m: pt.argmax(m, axis=1),
        "argmax_all": lambda m: pt.argmax(m), "argmax_both": lambda m: pt.argmax(m, axis=(0, 1)),
        "argmin1": lambda m: pt.argmin(m, axis=1), "cumsum0": lambda m: pt.cumsum(m, axis=0),
        "cumsum_all": lambda m: pt.cumsum(m), "cumprod1": lambda m: pt.cumprod(m, axis=1),
        "softmax1": lambda m: pt.special.softmax(m, axis=1), "softmax0": lambda m: pt.special.softmax(m, axis=0),
        "softmax_all": lambda m: pt.special.softmax(m, axis=None),
        "log_softmax1": lambda m: pt.special.log_softmax(m, axis=1),
        "log_softmax_all": lambda m: pt.special.log_softmax(m, axis=None),
    }[name]
    rng = np.random.default_rng(3)
    data = rng.normal(size=(3, 4, 5))
    data[0, 1, 2] = np.nan
    data[1, 2] = data[1, 2, 0]  # ties
    x3 = pt.tensor3("x3")
    m = pt.matrix("m")
    ys = pytensor.scan(lambda mi: fn(mi), sequences=x3, return_updates=False)
    for inp, out, value in ((m, fn(m), data[1]), (m, fn(m), data[0]), (x3, ys, data)):
        ours = pytensor.function([inp], out, mode=mp.get_mode(strict=True))
        ref = pytensor.function([inp], out, mode="FAST_COMPILE")
        got, want = ours(value), ref(value)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("graph", ["whole", "fallback"])
def test_pickling(graph):
    """A function compiled in the mode pickles as PyTensor's do (its maker and
    linker, not the compiled code, which is compiled again after unpickling),
    whole graphs and graphs where scans run as MlirScanOp nodes alike."""
    state, n = pt.scalar("state"), pt.iscalar("n")
    out = pytensor.scan(lambda x: 2 * x, outputs_info=state, n_steps=n, return_updates=False)
    if graph == "fallback":
        out = pt.gamma(out + 2)
    f = pytensor.function([state, n], out, mode="MLIR_SCAN")
    assert whole(f) == (graph == "whole")
    g = pickle.loads(pickle.dumps(f, protocol=-1))
    want = f(1.0, 4)
    np.testing.assert_allclose(g(1.0, 4), want, rtol=1e-6)
    np.testing.assert_allclose(g(0.5, 3), f(0.5, 3), rtol=1e-6)
    assert whole(g) == (graph == "whole")


def test_default_mode_by_config():
    """pytensor.config.mode = mlir_scan.pytensor.mode makes every function use it."""
    old = pytensor.config.mode
    try:
        pytensor.config.mode = mp.mode
        x = pt.vector("x")
        f = pytensor.function([x], pytensor.scan(lambda v, acc: acc + v, sequences=x, outputs_info=pt.zeros(()),
                                                 return_updates=False))
        assert type(f.maker.linker).__name__ == "MlirScanLinker" and whole(f)
        np.testing.assert_allclose(f(np.arange(4.0)), [0, 1, 3, 6])
    finally:
        pytensor.config.mode = old


def test_eye_extract_diag_repeat():
    """Eye (constant and symbolic sizes, an offset), ExtractDiag (offsets),
    Repeat (an int, constant counts): translated in strict mode, equal to
    PyTensor; a symbolic vector of counts is named as unsupported."""
    x, v, n = pt.matrix("x"), pt.vector("v"), pt.iscalar("n")
    m = np.arange(12.0).reshape(3, 4)
    cases = [([n], pt.eye(n), (3,)), ([n], pt.eye(n, n + 1, 1), (3,)), ([], pt.eye(3, 4, -1), ()),
             ([x], pt.diagonal(x, 1), (m,)), ([x], pt.diagonal(x, -1), (m,)),
             ([v], pt.repeat(v, 3), (np.arange(3.0),)), ([x], pt.repeat(x, 2, axis=1), (m,)),
             ([v], pt.repeat(v, np.array([1, 0, 2], "int32")), (np.arange(3.0),))]
    for ins, out, args in cases:
        ours = pytensor.function(ins, out, mode=mp.get_mode(strict=True))
        ref = pytensor.function(ins, out, mode="FAST_COMPILE")
        got, want = ours(*args), ref(*args)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    r = pt.ivector("r")
    with pytest.raises(mp.UnsupportedOpError, match="symbolic vector"):
        pytensor.function([v, r], pt.repeat(v, r), mode=mp.get_mode(strict=True))


def test_arctan2_translated():
    y, x = pt.vectors("y", "x")
    ours = pytensor.function([y, x], pt.arctan2(y, x), mode=mp.get_mode(strict=True))
    ref = pytensor.function([y, x], pt.arctan2(y, x), mode="FAST_COMPILE")
    a, b = np.array([1.0, -1.0, 0.0, -0.0, 2.0]), np.array([-1.0, -1.0, -1.0, -1.0, 0.0])
    np.testing.assert_array_equal(ours(a, b), ref(a, b))


def test_scalar_ops_on_scalar_values():
    """D5: ScalarType values from ScalarFromTensor, through the scalar ops of the Elemwise table."""
    import pytensor.scalar as ps
    from pytensor.tensor.basic import scalar_from_tensor, tensor_from_scalar

    a, b = pt.dscalar("a"), pt.lscalar("b")
    sa, sb = scalar_from_tensor(a), scalar_from_tensor(b)
    exprs = [sa * 2 + sb, ps.exp(sa) - ps.sqrt(ps.abs(sa)), ps.switch(ps.lt(sa, 0), sb, sb * 3), sb // 2,
             sb % 3, ps.maximum(sa, sb), ps.cast(sa, "int32"), ps.tanh(sa) ** 2]
    ours, ref = compile_both([a, b], [tensor_from_scalar(e) for e in exprs])
    assert whole(ours), ours.maker.linker.left_to_pytensor
    for av, bv in [(1.5, 7), (-0.25, -3)]:
        assert_same(ours, ref, av, bv)


# -- fallback and strict mode ----------------------------------------------------------------------


def test_inner_graph_gets_the_modes_rewrites():
    """PyTensor compiles a scan's step with its mode's rewrites, and one of them
    decides a value: the gradient through the untaken branch of a switch is
    0 * (0.5 / sqrt(-1)) = NaN until local_mul_switch_sink moves the product
    into the switch. Every PyTensor mode gives 0; so does ours."""
    u = pt.dvector("u")
    o = pytensor.scan(lambda a, h: pt.switch(pt.lt(a, 0), h, h + pt.sqrt(a)), sequences=u,
                      outputs_info=pt.constant(0.0, dtype="float64"), return_updates=False)
    g = pytensor.grad(o[-1], u)
    ours = pytensor.function([u], g, mode=mp.get_mode(strict=True))
    ref = pytensor.function([u], g, mode="FAST_COMPILE")
    v = np.array([1.0, -1.0, 4.0])
    np.testing.assert_array_equal(ref(v), [0.5, 0.0, 0.25])
    np.testing.assert_array_equal(ours(v), ref(v))


def _with_unsupported_op():
    """A scan whose step uses gamma (no counterpart in mlir-scan's DSL) beside a supported scan."""
    x = pt.vector("x")
    ys = pytensor.scan(lambda v, acc: acc + v, sequences=x, outputs_info=pt.zeros(()), return_updates=False)
    # (over x[1:]: PyTensor's scan_merge would fuse two scans of the same length)
    zs = pytensor.scan(lambda v, acc: pt.gamma(acc + 2) + v, sequences=x[1:], outputs_info=pt.zeros(()),
                       return_updates=False)
    return x, ys * 2, zs


def test_fallback_runs_supported_scans_compiled():
    x, ys, zs = _with_unsupported_op()
    with pytest.warns(mp.FallbackWarning, match="runs in PyTensor.*Scan.*left_to_pytensor") as caught:
        ours, ref = compile_both([x], [ys, zs])
    assert len([w for w in caught if issubclass(w.category, mp.FallbackWarning)]) == 1  # once per function
    listed = mp.left_to_pytensor(ours)
    assert any(name == "Scan" and "Gamma" in why for name, why in listed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", mp.FallbackWarning)
        whole_f = pytensor.function([x], ys, mode="MLIR_SCAN")  # a whole graph warns nothing
    assert mp.left_to_pytensor(whole_f) == []
    with pytest.raises(TypeError, match="MLIR_SCAN"):
        mp.left_to_pytensor(ref)
    linker = ours.maker.linker
    assert not linker.whole_graph
    assert any("Gamma" in reason for _, reason in linker.left_to_pytensor)
    assert linker.ir is not None and "scan.scan" in linker.ir  # the supported scan is compiled
    kinds = {type(n.op).__name__ for n in ours.maker.fgraph.toposort()}
    assert "MlirScanOp" in kinds and "Scan" in kinds
    assert_same(ours, ref, np.linspace(-1, 1, 9))


def test_fallback_outside_scan():
    x = pt.vector("x")
    ys = pytensor.scan(lambda v, acc: acc * 0.5 + v, sequences=x, outputs_info=pt.zeros(()), return_updates=False)
    out = pt.gamma(ys + 2)
    ours, ref = compile_both([x], out)
    assert not whole(ours)
    assert_same(ours, ref, np.linspace(-1, 1, 9))


def test_strict_names_the_unsupported_op():
    x, ys, zs = _with_unsupported_op()
    with pytest.raises(mp.UnsupportedOpError, match=r"gamma \(Gamma\)"):
        pytensor.function([x], [ys, zs], mode=mp.get_mode(strict=True))
    # A supported graph compiles in strict mode.
    f = pytensor.function([x], ys, mode=mp.get_mode(strict=True))
    np.testing.assert_allclose(f(np.ones(3)), 2 * np.arange(1, 4.0))


def test_strict_names_the_op_of_a_rejected_type():
    """D6: a value of an unsupported type (a random generator, uint8) names the op reading it."""
    x = pt.vector("x")
    rng = pytensor.shared(np.random.default_rng(0))
    y = x + pt.random.normal(size=x.shape, rng=rng)
    with pytest.raises(mp.UnsupportedOpError, match="normal_rv") as info:
        pytensor.function([x], y, mode=mp.get_mode(strict=True))
    assert info.value.__cause__.op is not None
    ours = pytensor.function([x], y, mode="MLIR_SCAN")
    [(op, reason)] = ours.maker.linker.left_to_pytensor
    assert "normal_rv" in str(op) and "normal_rv" in reason
    u = pt.vector("u", dtype="uint8")
    with pytest.raises(mp.UnsupportedOpError, match="Mul.*uint8"):
        pytensor.function([u], u * 2, mode=mp.get_mode(strict=True))


def _rnn_grad():
    W, x = pt.matrix("W"), pt.vector("x")
    hs = pytensor.scan(lambda h, W: pt.tanh(pt.dot(h, W)), outputs_info=x, non_sequences=W, n_steps=4,
                       return_updates=False)
    rng = np.random.default_rng(7)
    return [W, x], [hs[-1].sum(), pytensor.grad(hs.sum(), W)], [0.5 * rng.normal(size=(3, 3)), rng.normal(size=3)]


def test_compile_failure_falls_back(monkeypatch):
    """D7: a translated graph that fails to compile runs in PyTensor (never an MLIRError to the
    user), its scans compiled one by one where they compile; strict mode raises CompileError."""
    from mlir.ir import MLIRError

    from mlir_scan.pytensor import fallback, linker

    ins, outs, args = _rnn_grad()
    ref = pytensor.function(ins, outs)

    def fails(*a, **k):
        raise MLIRError("Unable to parse module assembly:\nerror: something the lowering rejects", [])

    monkeypatch.setattr(linker, "builder_function", fails)
    ours = pytensor.function(ins, outs, mode="MLIR_SCAN")
    assert not whole(ours)
    reason = ours.maker.linker.left_to_pytensor[0]
    assert reason[0] is None and "failed to compile: MLIRError" in reason[1]
    assert "MlirScanOp" in {type(n.op).__name__ for n in ours.maker.fgraph.toposort()}
    assert_same(ours, ref, *args, rtol=1e-10)
    with pytest.raises(mp.CompileError, match="MLIRError.*lowering rejects"):
        pytensor.function(ins, outs, mode=mp.get_mode(strict=True))

    # The scans fail too: all of it is PyTensor's.
    monkeypatch.setattr(fallback, "builder_function", fails)
    ours = pytensor.function(ins, outs, mode="MLIR_SCAN")
    assert not whole(ours) and ours.maker.linker.ir is None
    assert all("Mlir" not in type(n.op).__name__ for n in ours.maker.fgraph.toposort())
    assert any("failed to compile" in r for _, r in ours.maker.linker.left_to_pytensor[1:])
    assert_same(ours, ref, *args, rtol=1e-10)


def test_builder_error_at_graph_build_time_falls_back(monkeypatch):
    """D7: the builder rejecting a translated graph (a ValueError of its make_node) falls back too."""
    from pytensor.tensor.elemwise import Elemwise

    from mlir_scan.pytensor import translate

    def rejects(tr, node, ins):
        raise ValueError("elemwise: shapes cannot be broadcast (a builder error)")

    monkeypatch.setitem(translate.TRANSLATORS, Elemwise, rejects)
    A, v = pt.matrix("A"), pt.vector("v")
    ours, ref = compile_both([A, v], pt.tanh(pt.dot(A, v)))
    assert not whole(ours)
    assert "ValueError: elemwise: shapes cannot" in ours.maker.linker.left_to_pytensor[0][1]
    assert_same(ours, ref, np.ones((2, 3)), np.arange(3.0))
    with pytest.raises(mp.CompileError, match="ValueError"):
        pytensor.function([A, v], pt.tanh(pt.dot(A, v)), mode=mp.get_mode(strict=True))


# -- bad input: the same exceptions as PyTensor ----------------------------------------------------


def _exception_of(f, *args):
    try:
        f(*args)
    except Exception as exc:  # noqa: BLE001 - the kind is what is compared
        return type(exc)
    return None


def test_bad_input_same_exceptions_as_pytensor():
    ins, hs, args = _rnn()
    ours, ref = compile_both(ins, hs)
    bad_shape = list(args)
    bad_shape[2] = np.ones((4, 4))  # W does not fit h (5)
    bad_dtype = list(args)
    bad_dtype[0] = args[0].astype("complex128")
    bad_rank = list(args)
    bad_rank[1] = np.ones((5, 1))
    for bad in (bad_shape, bad_dtype, bad_rank):
        want = _exception_of(ref, *bad)
        got = _exception_of(ours, *bad)
        assert want is not None
        assert got is not None and issubclass(got, (want, ValueError if want is ValueError else want)), (got, want)
    assert_same(ours, ref, *args)  # still works after the errors


def test_bad_steps_are_python_errors():
    """n_steps beyond the sequence: PyTensor's Python/C scan raises ValueError (its NUMBA
    scan reads out of bounds), so does mlir-scan. Negative n_steps: PyTensor raises
    IndexError, mlir-scan ValueError (the builder's check; SPEC section 7)."""
    A = pt.vector("A")
    n = pt.iscalar("n")
    res = pytensor.scan(lambda a, acc: acc + a, sequences=A, outputs_info=pt.zeros(()), n_steps=n,
                        return_updates=False)
    ours = pytensor.function([A, n], res, mode="MLIR_SCAN")
    ref = pytensor.function([A, n], res, mode="FAST_COMPILE")
    want, got = _exception_of(ref, np.ones(3), 5), _exception_of(ours, np.ones(3), 5)
    assert want is ValueError and got is ValueError, (got, want)
    want, got = _exception_of(ref, np.ones(3), -1), _exception_of(ours, np.ones(3), -1)
    assert want is IndexError and got is ValueError, (got, want)
    assert_same(ours, ref, np.ones(3), 2)


# -- the runnable examples of the package's docstrings -----------------------------------------


@pytest.mark.parametrize("name", ["", ".translate", ".elemwise", ".tensor_ops", ".scan", ".linker", ".fallback", ".rewrites"])
def test_docstring_examples(name):
    import doctest
    import importlib

    module = importlib.import_module(f"mlir_scan.pytensor{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0


# -- integer-array indexing ----------------------------------------------------------------------


def test_advanced_indexing_ops_translated():
    """AdvancedSubtensor1/AdvancedSubtensor and their Inc/Set forms compile whole and give PyTensor's values."""
    x, idx, j = pt.dmatrix("x"), pt.lvector("idx"), pt.lvector("j")
    outs = [x[idx], x[idx, j], x[1:, idx[:2]], x[x > 0], pt.inc_subtensor(x[idx], 1.5),
            pt.set_subtensor(x[idx, j], -1.0), pt.inc_subtensor(x[idx], 2.0, ignore_duplicates=True),
            pt.set_subtensor(x[x < 0], 0.0), pt.grad(pt.sum(pt.exp(x[idx, j])), x)]
    ours, ref = compile_both([x, idx, j], outs)
    kinds = {type(n.op).__name__ for n in ours.maker.fgraph.apply_nodes}
    assert {"AdvancedSubtensor1", "AdvancedSubtensor", "AdvancedIncSubtensor1", "AdvancedIncSubtensor"} <= kinds
    assert whole(ours)
    xv = np.random.default_rng(3).standard_normal((5, 4))
    assert_same(ours, ref, xv, np.array([0, 3, 0, -1]), np.array([1, 1, 2, 0]))
    with pytest.raises(IndexError):
        ours(xv, np.array([0, 5, 0, 1]), np.array([1, 1, 2, 0]))


def test_advanced_indexing_in_a_scan_and_its_gradient():
    emb, W = pt.dmatrix("emb"), pt.dmatrix("W")
    words = pt.lmatrix("words")
    h, _ = pytensor.scan(lambda w_t, h: pt.tanh(emb[w_t] + h @ W), sequences=words,
                         outputs_info=pt.zeros((2, 3)))
    cost = (h[-1] ** 2).sum()
    ours, ref = compile_both([emb, W, words], [cost, *pt.grad(cost, [emb, W])])
    assert whole(ours)
    rng = np.random.default_rng(4)
    assert_same(ours, ref, rng.standard_normal((6, 3)), rng.standard_normal((3, 3)) * 0.5,
                np.array([[0, 5], [2, 2], [4, 1]]), rtol=1e-10)


class ParameterError(ValueError):
    """A module-level exception class (PyTensor 2.38 pickles the op that raises it)."""


def test_check_and_raise_translated_with_pytensors_exception():
    from pytensor.raise_op import Assert, CheckAndRaise

    x = pt.dvector("x")
    checked = CheckAndRaise(ParameterError, "sigma must be positive")(x, pt.all(x > 0), pt.all(x > -1))
    h, _ = pytensor.scan(lambda v, acc: Assert("inside the step")(acc + v, pt.lt(acc, 100)), sequences=checked,
                         outputs_info=pt.constant(0.0, dtype="float64"))
    ours, ref = compile_both([x], [checked * 2, h])
    assert whole(ours)
    assert_same(ours, ref, np.array([1.0, 2.0]))
    for bad, exc, msg in [(np.array([1.0, -2.0]), ParameterError, "sigma must be positive"),
                          (np.array([60.0, 60.0, 1.0]), AssertionError, "inside the step")]:
        with pytest.raises(exc, match=msg):
            ref(bad)
        with pytest.raises(exc, match=msg):
            ours(bad)


def test_split_translated_with_pytensors_errors():
    x, sz = pt.dmatrix("x"), pt.lvector("sz")
    a, b = pt.split(x, sz, n_splits=2, axis=1)
    c, d = pt.split(x, [1, 1], n_splits=2, axis=0)
    cost = (a ** 2).sum() + 3 * b.sum() + (c * d).sum()
    ours, ref = compile_both([x, sz], [a, b, c, d, pt.grad(cost, x)])
    assert whole(ours)
    xv = np.arange(8.0).reshape(2, 4)
    assert_same(ours, ref, xv, np.array([1, 3]))
    for bad in (np.array([1, 2]), np.array([-1, 5])):
        with pytest.raises(ValueError):
            ref(xv, bad)
        with pytest.raises(ValueError):
            ours(xv, bad)


def test_squeeze_of_an_axis_of_unknown_length():
    x = pt.dmatrix("x")
    k = pt.lscalar("k")
    y = x[k:k + 1].squeeze(0)
    h, _ = pytensor.scan(lambda r: r[1:2].squeeze(0) * 2, sequences=x)
    ours, ref = compile_both([x, k], [y, h])
    assert whole(ours)
    xv = np.arange(6.0).reshape(3, 2)
    assert_same(ours, ref, xv, 1)
    with pytest.raises(ValueError, match="squeeze"):
        ref(xv, 3)
    with pytest.raises(ValueError, match="squeeze"):
        ours(xv, 3)


@pytest.mark.parametrize("form", ["-1", "-2", "-3", "k - 1", "shape - 1", "k - 2 + 1"])
def test_last_rows_of_a_trace_are_recognised(form):
    """``scan(...)[-1]``, ``[-2]``, ``[n_steps - 1]``, ``[res.shape[0] - 1]`` read the scan's last
    rows, in the forms PyTensor 2.38 and 3.x give them (PyTensor 3 merges ``buffer[1:][k - 1]``
    into ``buffer[switch(k - 1 < 0, k - 1, k)]``; the mode's ``local_scan_last_row_index``
    proves such an index constant from the end): the builder scan reads its rows at a constant
    negative index, which mlir-scan's scan-save-mem turns into a scan that keeps that many rows."""
    from mlir_scan.builder.graph import toposort
    from mlir_scan.builder.ops.scan import ScanOp

    A, k = pt.dvector("A"), pt.iscalar("k")
    res = pytensor.scan(lambda prior, A: prior * A, outputs_info=pt.ones_like(A), non_sequences=A,
                        n_steps=k, return_updates=False)
    out = {"-1": res[-1], "-2": res[-2], "-3": res[-3], "k - 1": res[k - 1], "shape - 1": res[res.shape[0] - 1],
           "k - 2 + 1": res[k - 2 + 1]}[form]
    ours, ref = compile_both([A, k], out)
    assert whole(ours)
    for steps in (3, 5):
        assert_same(ours, ref, np.linspace(0.5, 1.5, 4), steps)
    if form == "-3":  # past the initial row: too few steps is an IndexError
        if PYTENSOR_3:  # (PyTensor 2.38 returns a value there)
            with pytest.raises(IndexError):
                ref(np.ones(4), 1)
        with pytest.raises(IndexError):
            ours(np.ones(4), 1)
    nodes = toposort(ours.maker.linker._function.outputs)
    (scan,) = [n for n in nodes if isinstance(n.op, ScanOp)]
    readers = [n for n in nodes if any(v in scan.outputs for v in n.inputs)]
    # Either the translation kept only the last rows, or every read is at a constant
    # negative index (what scan-save-mem needs to keep them).
    assert any(scan.op.keep) or all(
        getattr(n.op, "idx_list", ((),))[0] in (("i", -1), ("i", -2), ("i", -3)) for n in readers), \
        [str(n.op) for n in readers]


@pytest.mark.parametrize("form", ["k - 2", "k - 3", "k - 2 and -1", "k // 2", "max(k - 1, 0)"])
def test_symbolic_reads_of_a_trace_that_are_not_one_row_from_the_end(form):
    """``res[k - 2]`` is the last row at k = 1 and the one before it from k = 2 on (an IndexError
    at k = 0): no constant ``-j`` equals it, but it always reads one of the last 2 rows, so the
    scan keeps 2 rows and the read's position among them is computed (and checked) at run time.
    ``k // 2`` is not within a bounded number of rows from the end: the trace is kept. The values
    are PyTensor's at every k where res has the row (the others: below)."""
    from mlir_scan.builder.graph import toposort
    from mlir_scan.builder.ops.scan import ScanOp

    A, k = pt.dvector("A"), pt.iscalar("k")
    res = pytensor.scan(lambda prior, A: prior * A, outputs_info=pt.ones_like(A), non_sequences=A,
                        n_steps=k, return_updates=False)
    out = {"k - 2": res[k - 2], "k - 3": res[k - 3], "k - 2 and -1": res[k - 2] * res[-1],
           "k // 2": res[k // 2], "max(k - 1, 0)": res[pt.maximum(k - 1, 0)]}[form]
    ours, ref = compile_both([A, k], out)
    assert whole(ours)
    a = np.linspace(0.5, 1.5, 4)
    index = {"k - 2": lambda k: k - 2, "k - 3": lambda k: k - 3, "k - 2 and -1": lambda k: k - 2,
             "k // 2": lambda k: k // 2, "max(k - 1, 0)": lambda k: max(k - 1, 0)}[form]
    for steps in (0, 1, 2, 3, 4, 6, 70):
        if -steps <= index(steps) < steps:
            assert_same(ours, ref, a, steps)
            continue
        # A row res does not have. PyTensor's merged index reads the buffer's init row where the
        # buffer has one (PyTensor 3's ``res[k - 3]`` at k = 1; 2.38 returns a value even at
        # k = 0): the mode gives that value, or IndexError (as NumPy would), never another row.
        try:
            want = ref(a, steps)
        except IndexError:
            with pytest.raises(IndexError):
                ours(a, steps)
            continue
        try:
            got = ours(a, steps)
        except IndexError:
            continue
        np.testing.assert_allclose(got, want, rtol=RTOL)
    (scan,) = [n for n in toposort(ours.maker.linker._function.outputs) if isinstance(n.op, ScanOp)]
    want = {"k - 2": [2], "k - 3": [3], "k - 2 and -1": [2]}.get(form, [0])
    assert list(scan.op.keep) == want


def test_last_rows_bound_is_the_rows_a_moving_index_can_read():
    """The proof behind the reads above: the most rows from the end a symbolic index reads
    (where the row exists), when that is bounded and not always the same row."""
    from mlir_scan.pytensor.last_rows import MAX_LAST_ROWS, last_rows_bound

    k = pt.iscalar("k")
    res = pytensor.scan(lambda h: 2 * h, outputs_info=pt.ones(()), n_steps=k, return_updates=False)
    buf = res.owner.inputs[0]  # k + 1 rows; res = buf[1:]
    assert last_rows_bound(pt.switch(pt.lt(k - 2, 0), k - 2, k - 1), buf) == 2  # PyTensor 3's res[k - 2]
    assert last_rows_bound(k - 1, buf) == 2  # buf[-1] at k = 0, buf[-2] after
    assert last_rows_bound(buf.shape[0] - 2, buf) == 2
    assert last_rows_bound(pt.maximum(k - 5, 0), buf) == 6  # row max(k - 5, 0) of k + 1
    assert last_rows_bound(pt.maximum(k - MAX_LAST_ROWS - 5, 0), buf) is None  # too many rows
    for refused in (k, pt.constant(-2, dtype="int64"),  # always one row: rows_from_end's
                    k // 2, 2 * k, pt.constant(0, dtype="int64")):  # unbounded
        assert last_rows_bound(refused, buf) is None
    assert last_rows_bound(k - 1, pt.dvector("v")) is None  # not a scan's buffer


def test_a_read_among_the_last_rows_keeps_only_those_rows():
    """200,000 steps of 1,000 floats read at ``res[k - 2]``: two rows kept, not 1.6 GB."""
    import resource

    A, k = pt.dvector("A"), pt.iscalar("k")
    res = pytensor.scan(lambda prior, A: prior * A, outputs_info=pt.ones_like(A), non_sequences=A,
                        n_steps=k, return_updates=False)
    ours = pytensor.function([A, k], res[k - 2], mode="MLIR_SCAN")
    a = np.full(1000, 1.0 + 1e-6)
    ours(a, 3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    got = ours(a, 200_000)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    np.testing.assert_allclose(got, a ** 199_999, rtol=1e-9)
    assert grown_mb < 200, grown_mb


def test_rows_from_end_proves_only_constant_rows():
    """The proof behind local_scan_last_row_index, on the index forms PyTensor's rewrites make."""
    from mlir_scan.pytensor.last_rows import rows_from_end

    k = pt.iscalar("k")
    res = pytensor.scan(lambda h: 2 * h, outputs_info=pt.ones(()), n_steps=k, return_updates=False)
    buf = res.owner.inputs[0]  # k + 1 rows; res = buf[1:]
    two = pytensor.scan(lambda a, b: a + b, outputs_info=[{"initial": pt.ones(2), "taps": [-2, -1]}],
                        n_steps=k, return_updates=False).owner.inputs[0]  # k + 2 rows
    assert rows_from_end(k, buf) == 1
    assert rows_from_end(pt.switch(pt.lt(k - 1, 0), k - 1, k), buf) == 1  # PyTensor 3's res[k - 1]
    assert rows_from_end(buf.shape[0] - 1, buf) == 1 and rows_from_end(two.shape[0] - 2, two) == 2
    assert rows_from_end(k - 1, res) == 1 and rows_from_end(res.shape[0] - 1, res) == 1
    assert rows_from_end(pt.maximum(k + 1, 0), two) == 1
    assert rows_from_end(k, two) == 2
    assert rows_from_end(pt.constant(-2, dtype="int64"), buf) == 2
    # (buf.shape[0] - 2 is buf[-1] at k = 0, when buf has one row, and buf[-2] after)
    for not_constant in (buf.shape[0] - 2, k - 1, k // 2, 2 * k, pt.maximum(k - 1, -1), pt.switch(pt.lt(k - 2, 0), k - 2, k - 1)):
        assert rows_from_end(not_constant, buf) is None
    assert rows_from_end(k, pt.dvector("v")) is None  # not a scan's buffer


def test_extract_diag_of_a_stack_of_matrices():
    """A batched ExtractDiag (PyMC's MvNormal with an LKJ Cholesky prior reads the diagonals of a stack)."""
    x = pt.tensor3("x")
    outs = [pt.diagonal(x, 0, 1, 2), pt.diagonal(x, 1, 2, 1), pt.grad(pt.diagonal(x, 0, 1, 2).sum() ** 2, x)]
    ours, ref = compile_both([x], outs)
    assert whole(ours)
    assert_same(ours, ref, np.arange(24.0).reshape(2, 3, 4))


def test_ifelse_translates():
    """PyTensor's IfElse (several outputs; in a scan step and its gradient) as the builder's
    lazy ifelse. (Whether a check in the branch not taken fires is not compared: PyTensor's
    rewrites may lift it out of the branch.)"""
    from pytensor.ifelse import ifelse

    a, x = pt.dscalar("a"), pt.dvector("x")
    lo, hi = ifelse(pt.lt(a, 0), [x.sum(), x * 2], [x.max(), pt.exp(x)])
    ours, ref = compile_both([a, x], [lo, hi])
    assert whole(ours)
    for av, xv in ((-1.0, np.array([-1.0, 2.0])), (1.0, np.array([1.0, 3.0]))):
        assert_same(ours, ref, av, xv)

    h = pytensor.scan(lambda x_t, h, a: ifelse(pt.gt(x_t, 0), h * a + x_t, h - a), sequences=x,
                      outputs_info=pt.zeros(()), non_sequences=a, return_updates=False)
    outs = [h, *pytensor.grad(h.sum(), [a, x])]
    ours, ref = compile_both([a, x], outs)
    assert whole(ours)
    assert_same(ours, ref, 0.7, np.array([1.0, -2.0, 3.0, 0.5, -0.1]))


def test_op_from_graph_is_inlined():
    """A user's OpFromGraph (also inside a scan step), and its gradient (PyTensor's OpFromGraph
    L_op: another OpFromGraph), translate by inlining their inner graphs."""
    from pytensor.compile.builders import OpFromGraph

    u, v = pt.dvectors("u", "v")
    softplus_axpy = OpFromGraph([u, v], [pt.log1p(pt.exp(2 * u)) + v])
    x, y = pt.dvectors("x", "y")
    h = pytensor.scan(lambda x_t, h: softplus_axpy(x_t * h, h), sequences=x.reshape((-1, 1)),
                      outputs_info=y[:1], return_updates=False)
    outs = [softplus_axpy(x, y), h, *pytensor.grad(h.sum() + softplus_axpy(x, y).sum(), [x, y])]
    ours, ref = compile_both([x, y], outs)
    assert whole(ours)
    assert_same(ours, ref, np.array([0.1, -0.4, 0.3]), np.array([0.5, 1.0, -1.0]))



def test_inner_graph_rewrites_stop_on_an_alloc_compared_to_zero():
    """pymc-extras' VARMAX with the Cholesky filter: the step compares ``alloc(0, n, 2)`` (n from
    the shape of an ``AllocDiag``) to zero. PyTensor 2.38's ``local_elemwise_alloc`` rewrote that
    forever in the step's rewrites (the compile never ended); the mode leaves it out of inner
    graphs, where the builder reads the Alloc'd operand broadcast itself."""
    import signal

    from pytensor.ifelse import ifelse

    def hung(*_):
        raise TimeoutError("the inner graph's rewrites did not stop")

    x = pt.dvector("x")

    def step(h):
        d = pt.diag(h)
        z = pt.zeros((d.shape[0], 2))
        return h + ifelse(pt.all(pt.eq(z, 0)), z, d).sum(0)

    res = pytensor.scan(step, outputs_info=pt.specify_shape(x, (2,)), n_steps=3, return_updates=False)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        ours = pytensor.function([x], res[-1], mode="MLIR_SCAN")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert whole(ours)
    np.testing.assert_array_equal(ours(np.array([1.0, -2.0])), [1.0, -2.0])  # z is all zeros: h + 0


def test_a_state_init_of_too_few_rows_is_an_error():
    # outputs_info={"initial": x0, "taps": [-2, -1]} with x0 of fewer than 2 rows: PyTensor's
    # buffer then holds fewer init rows than the taps read (its result has another length and
    # reads unset rows); the mode raises ValueError instead of computing on zero-padded rows.
    x0 = pt.dmatrix("x0")
    out, _ = pytensor.scan(lambda a, b, c: a + b * c, outputs_info={"initial": x0, "taps": [-3, -1, -2]},
                           n_steps=3)
    ours = pytensor.function([x0], [out, out[-1]], mode=mp.get_mode(strict=True))
    theirs = pytensor.function([x0], [out, out[-1]])
    for rows in (3, 4):
        v = np.arange(rows * 2.0).reshape(rows, 2) / 8
        for a, b in zip(ours(v), theirs(v)):
            np.testing.assert_allclose(a, b, rtol=1e-14)
    for rows in (0, 1, 2):
        with pytest.raises(ValueError, match="reach 3 steps back has fewer than 3 rows"):
            ours(np.ones((rows, 2)))
