"""Behaviours of Theano 1.0's own scan test suite (theano/scan_module/tests/test_scan.py) and of
theano.gradient, rewritten for this API: ``clone`` and its input sharing, MITSOT initial values with
more rows than their taps need, the broadcast-pattern check between a state and its step output, and
the connection/disconnection rules of ``grad``. Numbers come from NumPy, hand computation or PyTensor
(installed as the oracle), never from the code under test.
"""

import warnings

import numpy as np
import pytest

import mlir_scan as theano
import mlir_scan.tensor as T
from mlir_scan.gof.graph import inputs as graph_inputs


def _pytensor():
    pytensor = pytest.importorskip("pytensor")
    return pytensor, pytensor.tensor


def _pt_scan(pytensor, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pytensor.scan(*args, return_updates=False, **kwargs)


# -- 2. MITSOT initial values with more rows than the taps need -------------------------------------


@pytest.mark.parametrize("taps,rows", [([-3, -1], 5), ([-2], 3), ([-2, -1], 4), ([-4, -2], 6)])
def test_mitsot_longer_init_uses_its_first_rows_as_pytensor(taps, rows):
    # Theano's scan.py: expand_empty(init_out['initial'][:mintap], n_steps): the first -min(taps) rows.
    pytensor, pt = _pytensor()
    v = np.arange(1.0, rows + 1) * np.array([1.0, -0.5, 2.0, 0.25, 3.0, -1.0])[:rows]

    def step(*prev):
        return sum((k + 2) * p for k, p in enumerate(prev)) * 0.5 + 1.0

    x0 = T.dvector("x0")
    out, _ = theano.scan(step, outputs_info=[dict(initial=x0, taps=taps)], n_steps=4)
    cost = (out ** 2).sum()
    got = theano.function([x0], [out, T.grad(cost, x0)])(v)

    px0 = pt.dvector("x0")
    pout = _pt_scan(pytensor, step, outputs_info=[dict(initial=px0, taps=taps)], n_steps=4)
    pcost = (pout ** 2).sum()
    want = pytensor.function([px0], [pout, pytensor.grad(pcost, px0)])(v)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    k = -min(taps)
    assert np.all(got[1][k:] == 0.0)  # the rows scan does not read get no gradient


def test_mitsot_longer_init_by_hand_static_and_dynamic():
    # x[t] = x[t-3] + 10 x[t-1] from init[:3] = (1, 2, 3): 1 + 30, 2 + 310, 3 + 3120.
    want = [31.0, 312.0, 3123.0]
    x0 = T.dvector("x0")
    out, _ = theano.scan(lambda a, b: a + 10 * b, outputs_info=[dict(initial=x0, taps=[-3, -1])], n_steps=3)
    f = theano.function([x0], out)
    np.testing.assert_array_equal(f(np.array([1.0, 2, 3, 4, 5])), want)
    np.testing.assert_array_equal(f(np.array([1.0, 2, 3])), want)
    with pytest.raises(ValueError, match="init has 2 rows but its taps need 3"):
        f(np.array([1.0, 2.0]))
    c = T.constant(np.array([1.0, 2, 3, 4, 5]))
    out, _ = theano.scan(lambda a, b: a + 10 * b, outputs_info=[dict(initial=c, taps=[-3, -1])], n_steps=3)
    np.testing.assert_array_equal(theano.function([], out)(), want)
    short = T.constant(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="3 rows"):
        theano.scan(lambda a, b: a + 10 * b, outputs_info=[dict(initial=short, taps=[-3, -1])], n_steps=3)


def test_seq_tap_bug_jeremiah_shared_init_with_taps():
    # test_scan.py::test_seq_tap_bug_jeremiah: a shared (4, 1) zero init with taps [-4].
    inp = np.arange(10).reshape(-1, 1).astype("float64")
    exp_out = np.zeros((10, 1))
    exp_out[4:] = inp[:-4]
    seq = T.dmatrix()
    init = theano.shared(np.zeros((4, 1)))
    results, _ = theano.scan(lambda x, x_tm4: (x, x_tm4), sequences=seq,
                             outputs_info=[dict(initial=init, taps=[-4]), None])
    np.testing.assert_array_equal(theano.function([seq], results[1])(inp), exp_out)


def test_tuple_taps_minus_one_is_a_state_with_taps_as_pytensor():
    # Theano tests `taps == [-1]`: the tuple (-1,) is a MITSOT whose init[0] is output[-1].
    pytensor, pt = _pytensor()
    v = np.array([1.5, 2.0])
    x0 = T.dvector("x0")
    out, _ = theano.scan(lambda a: a * 2, outputs_info=[dict(initial=x0, taps=(-1,))], n_steps=3)
    px0 = pt.dvector("x0")
    pout = _pt_scan(pytensor, lambda a: a * 2, outputs_info=[dict(initial=px0, taps=(-1,))], n_steps=3)
    want = pytensor.function([px0], pout)(v)
    np.testing.assert_array_equal(want, [3.0, 6.0, 12.0])
    np.testing.assert_array_equal(theano.function([x0], out)(v), want)


# -- 3. inconsistent broadcast pattern between a state and its step output ----------------------


def test_inconsistent_broadcast_raises_type_error_when_used():
    # test_scan.py::TestInconsistentBroadcast::test_raise_error (and PyTensor's
    # test_inconsistent_broadcast_error): the scan builds; its gradient raises TypeError, and so
    # does compiling it (PyTensor's inner-graph type check).
    x = T.tensor3()
    initial_x = T.constant(np.zeros((1, 10)))
    y, _ = theano.scan(fn=lambda x, prev_x: x + prev_x, sequences=x, outputs_info=[dict(initial=initial_x)])
    with pytest.raises(TypeError, match="broadcast pattern"):
        T.grad(y.sum(), x)
    with pytest.raises(TypeError, match="broadcast pattern"):
        theano.function([x], y)
    # Consistent once the initial state is unbroadcast: the scan builds and differentiates.
    initial_x = T.unbroadcast(initial_x, 0, 1)
    y, _ = theano.scan(fn=lambda x, prev_x: x + prev_x, sequences=x, outputs_info=[dict(initial=initial_x)])
    g = T.grad(y.sum(), x)
    xv = np.arange(30.0).reshape(3, 1, 10) * 0.1
    out, gx = theano.function([x], [y, g])(xv)
    np.testing.assert_allclose(out, np.cumsum(xv, axis=0))
    # d sum_t sum_{s<=t} x[s] / d x[s] = number of t >= s
    np.testing.assert_allclose(gx, np.broadcast_to(np.array([3.0, 2.0, 1.0])[:, None, None], xv.shape))


def test_inconsistent_broadcast_mitsot_and_consistent_cases():
    m = T.dmatrix("m")
    init = T.alloc(0.0, 2, 1)  # rows of shape (1,): broadcastable
    r, _ = theano.scan(lambda v, a, b: a + b + v, sequences=[m], outputs_info=[dict(initial=init, taps=[-2, -1])])
    with pytest.raises(TypeError, match="broadcast pattern"):
        theano.function([m], r)
    # The output is (1,) too when the step keeps it so: no error, and the numbers of a Fibonacci.
    r, _ = theano.scan(lambda a, b: a + b, outputs_info=[dict(initial=T.ones((2, 1)), taps=[-2, -1])], n_steps=5)
    np.testing.assert_array_equal(theano.function([], r)()[:, 0], [2.0, 3.0, 5.0, 8.0, 13.0])
    # test_scan.py::test_default_value_broadcasted: a (1, 4) state, a (1, 4) step output.
    X = T.dmatrix("X")
    W = theano.shared(np.linspace(-1, 1, 8).reshape(2, 4), "W_x")
    value, _ = theano.scan(lambda x, h: T.dot(T.reshape(x, (1, 2)), W), sequences=X,
                           outputs_info=[T.alloc(0.0, 1, 4)])
    cost = T.mean(value)
    gW = T.grad(cost, W)
    xv = np.arange(20.0).reshape(10, 2) / 10
    c, g = theano.function([X], [cost, gW])(xv)
    np.testing.assert_allclose(c, np.mean(xv @ W.get_value()))
    np.testing.assert_allclose(g, np.outer(xv.sum(axis=0), np.ones(4)) / 40)


def test_broadcast_rule_matches_pytensor_type_check():
    # PyTensor raises TypeError when a state's type (1, 10) cannot hold the output's (?, 10) (as Theano,
    # when the gradient is built; PyTensor also when the function is compiled). Here too.
    pytensor, pt = _pytensor()
    px = pt.tensor3()
    pinit = pt.as_tensor_variable(np.zeros((1, 10)))
    py = _pt_scan(pytensor, lambda x, p: x + p, sequences=px, outputs_info=[pinit])
    with pytest.raises(TypeError):
        pytensor.grad(py.sum(), px)
    with pytest.raises(TypeError):
        pytensor.function([px], py)
    x = T.tensor3()
    y, _ = theano.scan(lambda x, p: x + p, sequences=x, outputs_info=[T.constant(np.zeros((1, 10)))])
    with pytest.raises(TypeError):
        T.grad(y.sum(), x)
    with pytest.raises(TypeError):
        theano.function([x], y)


# -- 1. clone: share_inputs / copy_inputs -------------------------------------------------------------


def _cloning_graph(y_dtype="float64"):
    x = T.vector("x", dtype="float64")
    y = T.vector("y", dtype=y_dtype)
    z = theano.shared(np.float64(0.25))
    return x, y, z, z * (x + y) ** 2 + 5


@pytest.mark.parametrize("replace,strict,share,y_dtype,y2_dtype", [
    (False, True, True, "float64", "float64"),   # test_cloning_no_replace_strict_copy_inputs
    (False, True, False, "float64", "float64"),  # test_cloning_no_replace_strict_not_copy_inputs
    (True, True, True, "float64", "float64"),    # test_cloning_replace_strict_copy_inputs
    (True, False, True, "float32", "float64"),   # test_cloning_replace_not_strict_copy_inputs
    (True, True, False, "float64", "float64"),   # test_cloning_replace_strict_not_copy_inputs
    (True, False, False, "float32", "float64"),  # test_cloning_replace_not_strict_not_copy_inputs
])
def test_cloning_as_test_scan(replace, strict, share, y_dtype, y2_dtype):
    # Theano's six test_cloning_* tests (which inputs the clone has), plus the values it computes.
    x, y, z, f1 = _cloning_graph(y_dtype)
    y2 = T.vector("y2", dtype=y2_dtype)
    f2 = theano.clone(f1, replace=[(y, y2)] if replace else None, strict=strict, share_inputs=share)
    roots = graph_inputs([f2])
    assert (z in roots) == share
    assert (x in roots) == share
    if replace:
        assert (y2 in roots) == share and y not in roots
    else:
        assert (y in roots) == share
    # Whatever the copies, the cloned graph computes z (x + y)^2 + 5 with z's current value.
    named = {v.name: v for v in roots if v.name in ("x", "y", "y2")}
    order = [named["x"], named["y2" if replace else "y"]]
    xv, yv = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    want = 0.25 * (xv + yv) ** 2 + 5
    np.testing.assert_allclose(theano.function(order, f2)(xv, yv.astype(order[1].dtype)), want)


def test_clone_copy_inputs_is_the_deprecated_share_inputs():
    # scan_utils.clone: copy_inputs warns and is used as share_inputs.
    x, y, z, f1 = _cloning_graph()
    with pytest.warns(UserWarning, match="copy_inputs"):
        kept = theano.clone(f1, copy_inputs=True)
    with pytest.warns(UserWarning, match="copy_inputs"):
        copied = theano.clone(f1, copy_inputs=False)
    assert {x, y, z} <= set(graph_inputs([kept]))
    assert not {x, y, z} & set(graph_inputs([copied]))


def test_cloned_shared_variables_keep_the_same_storage():
    # "cloned shared variables still use the same underlying storage, so they will always have the same value"
    x, y, z, f1 = _cloning_graph()
    f2 = theano.clone(f1, share_inputs=False)
    roots = graph_inputs([f2])
    (zc,) = [v for v in roots if isinstance(v, type(z))]
    xc, yc = [v for v in roots if v.name == "x"][0], [v for v in roots if v.name == "y"][0]
    assert zc is not z and float(zc.get_value()) == 0.25
    z.set_value(np.float64(2.0))
    assert float(zc.get_value()) == 2.0
    f = theano.function([xc, yc], f2, updates=[(zc, zc * 3)])
    np.testing.assert_allclose(f(np.ones(2), np.ones(2)), [13.0, 13.0])
    assert float(z.get_value()) == 6.0  # the update of the copy is the update of the original
    np.testing.assert_allclose(theano.function([x, y], f1)(np.ones(2), np.ones(2)), [29.0, 29.0])


def test_clone_inputs_as_pytensor_rebuild():
    # PyTensor's clone_replace(copy_inputs_over=False) copies every input, shared variables included.
    pytensor, pt = _pytensor()
    from pytensor.graph.traversal import graph_inputs as pt_inputs
    from pytensor.graph.replace import clone_replace

    px, py = pt.dvector("x"), pt.dvector("y")
    pz = pytensor.shared(np.float64(0.25))
    pf = pz * (px + py) ** 2 + 5
    p_roots = set(pt_inputs([clone_replace(pf, copy_inputs_over=False)]))
    p_kept = set(pt_inputs([clone_replace(pf, copy_inputs_over=True)]))
    x, y, z, f1 = _cloning_graph()
    roots = set(graph_inputs([theano.clone(f1, share_inputs=False)]))
    kept = set(graph_inputs([theano.clone(f1, share_inputs=True)]))
    assert [v in p_roots for v in (px, py, pz)] == [v in roots for v in (x, y, z)] == [False] * 3
    assert [v in p_kept for v in (px, py, pz)] == [v in kept for v in (x, y, z)] == [True] * 3


# -- 4. grad: connection, disconnection, integers, undefined gradients --------------------------------

from mlir_scan.gradient import DisconnectedInputError, NullTypeGradError  # noqa: E402


def _grad_cases(lib, T_, grad, rng):
    """(name, builder) pairs: builder(x, k, kv) -> the gradient expression, in either library."""
    cast = T_.cast
    return [
        ("int cost wrt its float input", lambda x, k, kv: grad(cast(x, "int64").sum(), x)),
        ("int cost wrt int input", lambda x, k, kv: grad((kv * 2).sum(), kv)),
        ("int cost, disconnected wrt", lambda x, k, kv: grad((kv * 2).sum(), x)),
        ("int sum wrt itself", lambda x, k, kv: grad(kv.sum(), kv)),
        ("float cost through an int cast", lambda x, k, kv: grad(cast(cast(x, "int32") % 3, "float64").sum(), x)),
        ("through a comparison", lambda x, k, kv: grad(cast(x > 0, "float64").sum(), x)),
        ("through argmax", lambda x, k, kv: grad(cast(T_.argmax(x), "float64"), x)),
        ("floor", lambda x, k, kv: grad(T_.floor(x).sum(), x)),
        ("round", lambda x, k, kv: grad(T_.round(x).sum(), x)),
        ("scalar int broadcast", lambda x, k, kv: grad((x * k).sum(), k)),
        ("shape and value", lambda x, k, kv: grad((x ** 2).sum() + x.shape[0], x)),
        ("only the shape", lambda x, k, kv: grad(x.shape[0] * 1.0, x)),
        ("arange stop", lambda x, k, kv: grad(T_.arange(k).sum() * 1.0, k)),
        ("index", lambda x, k, kv: grad(x[k], k)),
        ("alloc size", lambda x, k, kv: grad(T_.alloc(1.0, k).sum(), k)),
        ("stack", lambda x, k, kv: grad(T_.stack([x[0], x[1]]).sum(), x)),
        ("zero_grad", lambda x, k, kv: grad(lib.gradient.zero_grad(x ** 2).sum(), x)),
        ("disconnected_grad", lambda x, k, kv: grad(lib.gradient.disconnected_grad(x ** 2).sum(), x)),
        ("ignore: int zeros", lambda x, k, kv: grad(x.sum(), kv, disconnected_inputs="ignore")),
        ("random draw, int sample", lambda x, k, kv: grad(cast(rng(x), "float64").sum(), x)),
        ("random draw, int cost", lambda x, k, kv: grad(rng(x).sum(), x)),
    ]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_grad_connection_rules_as_pytensor():
    pytensor, pt = _pytensor()
    from pytensor.tensor.random.utils import RandomStream

    p_rs = RandomStream(1)
    m_rs = T.shared_randomstreams.RandomStreams(1)
    p_cases = _grad_cases(pytensor, pt, pytensor.grad, lambda x: p_rs.binomial(1, p=pt.sigmoid(x)))
    m_cases = _grad_cases(theano, T, T.grad, lambda x: m_rs.binomial((3,), p=T.nnet.sigmoid(x)))
    args = (np.array([1.5, -2.0, 0.25]), 1, np.array([1, 2, 3], dtype="int32"))
    checked = set()
    for (name, p_build), (_, m_build) in zip(p_cases, m_cases):
        px, pk, pkv = pt.dvector("x"), pt.iscalar("k"), pt.ivector("kv")
        x, k, kv = T.dvector("x"), T.iscalar("k"), T.ivector("kv")
        try:
            pg = p_build(px, pk, pkv)
        except Exception as exc:  # PyTensor's own DisconnectedInputError / NullTypeGradError
            kind = type(exc).__name__
            assert kind in ("DisconnectedInputError", "NullTypeGradError"), (name, kind)
            want_error = {"DisconnectedInputError": DisconnectedInputError,
                          "NullTypeGradError": NullTypeGradError}[kind]
            with pytest.raises(want_error):
                m_build(x, k, kv)
            checked.add(kind)
            continue
        want = pytensor.function([px, pk, pkv], pg, on_unused_input="ignore")(*args)
        g = m_build(x, k, kv)
        assert g.dtype == str(want.dtype) == "float64", name
        got = theano.function([x, k, kv], g, on_unused_input="ignore")(*args)
        np.testing.assert_allclose(got, want, err_msg=name)
        checked.add("value")
    assert checked == {"DisconnectedInputError", "NullTypeGradError", "value"}


def test_disconnected_inputs_raise_warn_ignore_through_scan():
    # test_scan.py::test_grad_multiple_outs (y0 is "not used in the computation of the cost": Theano's scan
    # connection pattern makes it disconnected), checked against PyTensor.
    pytensor, pt = _pytensor()
    rng = np.random.RandomState(3)
    vW_in2 = rng.uniform(-0.2, 0.2, size=(2,))
    vW, vWout = rng.uniform(-0.2, 0.2, size=(2, 2)), rng.uniform(-0.2, 0.2, size=(2,))
    vals = [rng.uniform(-0.2, 0.2, size=(3, 2)), rng.uniform(-0.2, 0.2, size=(3,)),
            rng.uniform(-0.2, 0.2, size=(2,)), 0.3, rng.uniform(-0.2, 0.2, size=(2, 2))]
    factors = [rng.uniform(0.1, 0.9, size=(3, 2)), rng.uniform(0.1, 0.9, size=(3,))]

    def build(lib, tt, scan):
        u1, u2, x0, y0, W_in1 = tt.dmatrix("u1"), tt.dvector("u2"), tt.dvector("x0"), tt.dscalar("y0"), \
            tt.dmatrix("win")

        def f_rnn_cmpl(u1_t, u2_t, x_tm1, y_tm1, W_in1):
            return [tt.dot(u1_t, W_in1) + u2_t * vW_in2 + tt.dot(x_tm1, vW), tt.dot(x_tm1, vWout)]

        outs = scan(f_rnn_cmpl, [u1, u2], [x0, y0], W_in1)
        cost = sum((o * f).sum() for o, f in zip(outs, factors))
        return cost, [u1, u2, x0, y0, W_in1]

    pcost, pparams = build(pytensor, pt, lambda *a: _pt_scan(pytensor, *a))
    cost, params = build(theano, T, lambda *a: theano.scan(*a)[0])
    with pytest.raises(pytensor.gradient.DisconnectedInputError):
        pytensor.grad(pcost, pparams)
    with pytest.raises(DisconnectedInputError, match="y0"):
        T.grad(cost, params)
    with pytest.warns(UserWarning, match="y0"):
        T.grad(cost, params, disconnected_inputs="warn")
    assert T.grad(cost, params, disconnected_inputs="ignore", return_disconnected="None")[3] is None
    want = pytensor.function(pparams, pytensor.grad(pcost, pparams, disconnected_inputs="ignore"))(*vals)
    got = theano.function(params, T.grad(cost, params, disconnected_inputs="ignore"),
                          on_unused_input="ignore")(*vals)  # y0's zero gradient is a constant here
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-14)
    assert float(got[3]) == 0.0


def test_grad_with_an_integer_sequence_and_noise_in_the_step():
    # test_scan.py::test_grad_multiple_outs_some_uncomputable: an int32 sequence among the variables to
    # differentiate (no error; its gradient is floatX), and a random draw in the step that no
    # differentiated variable reaches (no NullTypeGradError). The draw is additive: the gradients of the
    # float variables are PyTensor's for the same scan without it.
    pytensor, pt = _pytensor()
    rng = np.random.RandomState(5)
    vW_in = rng.uniform(-3, 3, size=(2, 2))
    v_u = rng.uniform(-3, 3, size=(5, 2))
    v_u2 = np.array([1, 3, 4, 6, 8], dtype="int32")
    v_x0 = rng.uniform(-3, 3, size=(2,))
    f0, f1 = rng.uniform(0.1, 0.9, size=(5, 2)), rng.uniform(0.1, 0.9, size=(5,))
    srng = T.shared_randomstreams.RandomStreams(123)

    def build(tt, scan, noise):
        W_in, u, u2, x0 = tt.dmatrix("win"), tt.dmatrix("u1"), tt.ivector("u2"), tt.dvector("x0")

        def f_rnn_cmpl(u_t, u2_t, x_tm1, W_in):
            x_t = tt.cast(u2_t, "float64") + tt.dot(u_t, W_in) + x_tm1 + noise()
            return x_t, 2 * u2_t

        (o0, o1) = scan(f_rnn_cmpl, [u, u2], [x0, None], W_in)
        return (o0 * f0).sum() + (o1 * f1).sum(), [u, u2, x0, W_in]

    pcost, pparams = build(pt, lambda *a: _pt_scan(pytensor, *a), lambda: 0.0)
    cost, params = build(T, lambda *a: theano.scan(*a)[0], lambda: srng.uniform(low=-1.1, high=1.1))
    grads = T.grad(cost, params)
    assert [g.dtype for g in grads] == ["float64"] * 4
    got = theano.function(params, grads)(v_u, v_u2, v_x0, vW_in)
    want = pytensor.function(pparams, pytensor.grad(pcost, pparams))(v_u, v_u2, v_x0, vW_in)
    for i in (0, 2, 3):
        np.testing.assert_allclose(got[i], want[i], rtol=1e-10)
    assert got[1].shape == v_u2.shape and got[1].dtype == np.float64


def test_crash_nonseq_grad_is_a_null_type_grad_error():
    # test_scan.py::test_crash_nonseq_grad: the gradient relies on random draws inside nested scans.
    rand_stream = T.shared_randomstreams.RandomStreams()
    inp = T.matrix()
    norm_inp = inp / T.sum(inp, axis=0)

    def unit_dropout(out_idx):
        def stochastic_pooling(in_idx):
            sample = rand_stream.multinomial(n=1, pvals=norm_inp.T)
            return inp + sample

        pooled, updates_inner = theano.scan(fn=stochastic_pooling, sequences=T.arange(inp.shape[0]))
        rand_nums = rand_stream.binomial(size=pooled.shape)
        return pooled + rand_nums, updates_inner

    out, _ = theano.scan(unit_dropout, sequences=[T.arange(inp.shape[0])])
    with pytest.raises(NullTypeGradError):
        T.grad(out.sum(), inp)
    assert issubclass(theano.gradient.NullTypeGradError, TypeError)
    assert issubclass(theano.gradient.DisconnectedInputError, ValueError)


def test_grad_duplicate_outputs_hand_values():
    # test_scan.py::test_grad_duplicate_outputs: one variable returned twice (a nitsot and a taps-[-3] mitsot).
    seq, out_init, non_seq = T.dmatrix(), T.dmatrix(), T.dvector()
    outs, _ = theano.scan(lambda a, b, c: (a + b + c, a + b + c), sequences=seq,
                          outputs_info=[None, dict(initial=out_init, taps=[-3])], non_sequences=non_seq)
    g0 = T.grad(outs[0].sum(), [seq, out_init, non_seq])
    g1 = T.grad(outs[1].sum(), [seq, out_init, non_seq])
    rng = np.random.RandomState(0)
    got = theano.function([seq, out_init, non_seq], g0 + g1)(rng.rand(10, 3), rng.rand(3, 3), rng.rand(3))
    expected_g_seq = np.repeat(np.array([4, 3, 3, 3, 2, 2, 2, 1, 1, 1.0])[:, None], 3, axis=1)
    for g, want in zip(got, [expected_g_seq, expected_g_seq[:3], np.full(3, 22.0)] * 2):
        np.testing.assert_allclose(g, want)


def test_grad_duplicate_outputs_connection_pattern():
    # test_scan.py::test_grad_duplicate_outputs_connection_pattern: every output depends on every state's
    # initial value, none on n_steps or on a size. Inputs: n_steps, 2 mitsot, 2 sitsot, sizes.
    from mlir_scan.builder.ops.autodiff import connection_pattern

    out_init = [T.dvector(), T.dvector(), T.dmatrix(), T.dmatrix()]
    outputs_info = [None, None, out_init[0], out_init[1], dict(initial=out_init[2], taps=[-2, -1]),
                    dict(initial=out_init[3], taps=[-2, -1])]
    outs, _ = theano.scan(lambda *a: [sum(a)] * 6, outputs_info=outputs_info, n_steps=10)
    g = T.grad(outs[0].sum(), out_init[1])
    node = outs[0].owner
    pattern = connection_pattern(node)
    assert len(pattern[0]) == 6
    state_inputs = {1, 2, 3, 4}
    assert pattern == [[j in state_inputs] * 6 for j in range(len(node.inputs))]
    # d sum(outs[0]) / d out_init[1] by hand: the states double-ish each step; compare with NumPy.
    vals = [np.ones(2) * 0.5, np.ones(2) * 0.25, np.ones((2, 2)) * 0.1, np.ones((2, 2)) * 0.2]

    def forward(v1):
        a0, a1, m2, m3 = [v.copy() for v in (vals[0], v1, vals[2], vals[3])]
        hist2, hist3, total = list(m2), list(m3), 0.0
        for _ in range(10):
            s = a0 + a1 + hist2[-2] + hist2[-1] + hist3[-2] + hist3[-1]
            total += s.sum()
            a0, a1 = s, s
            hist2.append(s)
            hist3.append(s)
        return total

    eps = 1e-6
    fd = [(forward(vals[1] + eps * e) - forward(vals[1] - eps * e)) / (2 * eps) for e in np.eye(2)]
    got = theano.function(out_init, g)(*vals)
    np.testing.assert_allclose(got, fd, rtol=1e-6)


def test_scans_of_the_same_step_are_equal_ops():
    # Theano's/PyTensor's test_hash: scan(f, x) and scan(f, y) apply equal (and equally hashed)
    # ops to other inputs; another step, other taps or another direction give another op; both
    # compile and run in one function.
    x, y = T.vector("x"), T.vector("y")
    s1, _ = theano.scan(lambda v: v + 1, x)
    s2, _ = theano.scan(lambda v: v + 1, y)
    assert s1.owner.op == s2.owner.op and hash(s1.owner.op) == hash(s2.owner.op)
    assert s1.owner.op != theano.scan(lambda v: v + 2, x)[0].owner.op
    assert s1.owner.op != theano.scan(lambda v: v * 1, x)[0].owner.op
    assert s1.owner.op != theano.scan(lambda v: v + 1, x, go_backwards=True)[0].owner.op
    f = theano.function([x, y], [s1, s2])
    a, b = f(np.arange(3.0), np.arange(2.0))
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(b, [1.0, 2.0])
