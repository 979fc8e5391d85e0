"""Issue 14: Theano and PyTensor code that must run unchanged.

Each test is written from the documented behaviour of Theano / PyTensor (the
expected numbers come from NumPy or plain Python), and the scan tests run with
and without the scan rewrites (``mode="FAST_COMPILE"`` and the default
``FAST_RUN``).
"""

from __future__ import annotations

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T

MODES = ["FAST_COMPILE", "FAST_RUN"]


def F(inputs, outputs, mode=None, **kwargs):
    return theano.function(inputs, outputs, mode=mode, **kwargs)


# -- 1. shapes of scans keep the scan's checks ----------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_shape_of_a_fixed_n_steps_scan_keeps_its_checks(mode):
    x = T.vector("x")
    o, _ = theano.scan(lambda v: v + 1, sequences=x, n_steps=20)
    f = F([x], [o.shape[0], o.shape, (o * 2).shape[0]], mode=mode)
    rows, shape, doubled = f(np.ones(30))
    assert int(rows) == 20 and shape.tolist() == [20] and int(doubled) == 20
    # The scan itself fails on a 10-row sequence: so does the query.
    with pytest.raises(ValueError, match="sequence #0 has 10 rows but the steps and taps need 20"):
        f(np.ones(10))
    with pytest.raises(ValueError, match="sequence #0 has 10 rows"):
        F([x], o, mode=mode)(np.ones(10))
    if mode == "FAST_RUN":  # a pure body is not run for its shape: the scan is deleted
        assert "scan.scan" in f.ir and "scan.scan" not in f.program.ir("optimized")


@pytest.mark.parametrize("mode", MODES)
def test_shapes_of_states_and_symbolic_steps(mode):
    x0, a, n = T.dvector("x0"), T.dvector("a"), T.lscalar("n")
    # The state's output must keep the state's shape: checked before the loop.
    out, _ = theano.scan(lambda p, a: p * 0 + a, outputs_info=x0, non_sequences=a, n_steps=3)
    sym, _ = theano.scan(lambda p: p * 2, outputs_info=x0, n_steps=n)
    f = F([x0, a, n], [out.shape, sym.shape[0], T.shape(sym)], mode=mode)
    s1, s2, s3 = f([1.0, 2.0], [3.0, 4.0], 5)
    assert s1.tolist() == [3, 2] and int(s2) == 5 and s3.tolist() == [5, 2]
    # The step's own check (p * 0 + a: sizes 2 and 3) fails the query as it fails the values.
    with pytest.raises(ValueError, match="shapes do not match"):
        f([1.0, 2.0], [3.0, 4.0, 5.0], 5)
    with pytest.raises(ValueError, match="n_steps is -1, must be >= 0"):
        f([1.0, 2.0], [3.0, 4.0], -1)


@pytest.mark.parametrize("mode", MODES)
def test_shape_queries_keep_the_checks_of_reshape_alloc_and_concatenate(mode):
    x, n = T.dvector("x"), T.lscalar("n")
    f = F([x, n], x.reshape((n, -1)).shape[1], mode=mode)
    assert int(f(np.ones(6), 2)) == 3 and int(f(np.ones(6), 3)) == 2
    for bad in (-1, 0, 4, 2**62):  # the value raises for each: so does its shape
        with pytest.raises(ValueError, match="reshape"):
            f(np.ones(6), bad)
    g = F([n], T.zeros((n,)).shape[0], mode=mode)
    assert int(g(3)) == 3
    with pytest.raises(ValueError, match="negative"):
        g(-1)
    h = F([n], T.concatenate([T.zeros((n,)), T.zeros((n,))]).shape[0], mode=mode)
    assert int(h(2)) == 4
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        h(2**62)


@pytest.mark.parametrize("mode", MODES)
def test_shape_of_an_until_scan_is_the_steps_taken(mode):
    x0 = T.dscalar("x0")
    out, _ = theano.scan(lambda x: (x * 2, theano.until(x * 2 > 40)), outputs_info=x0, n_steps=100)
    f = F([x0], [out.shape[0], out], mode=mode)
    rows, values = f(1.0)
    assert int(rows) == len(values) == 6  # 2, 4, 8, 16, 32, 64


# -- 2. every return form of fn ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_fn_return_forms(mode):
    x0 = T.dscalar("x0")
    c = theano.shared(0.0, name="c")
    step = lambda x: x + 1  # noqa: E731
    stop = lambda x: theano.until(x > 2)  # noqa: E731
    forms = [
        lambda x: ([step(x)], (), stop(x)),                # Theano's (outputs, updates, until), no updates
        lambda x: ([step(x)], [], stop(x)),
        lambda x: (step(x), {}, stop(x)),
        lambda x: ((step(x),), stop(x)),                    # (outputs, until)
        lambda x: [step(x), stop(x)],
    ]
    outs = [theano.scan(fn, outputs_info=[x0], n_steps=10)[0] for fn in forms]
    with_updates, upd = theano.scan(lambda x: ([step(x)], {c: c + 1}, stop(x)), outputs_info=[x0], n_steps=10)
    only_updates, upd2 = theano.scan(lambda: ({c: c + 10}, theano.until(c > 100)), n_steps=5)
    assert only_updates is None and c in upd2
    pairs, upd3 = theano.scan(lambda x: (x + 1, [(c, c * 2)]), outputs_info=x0, n_steps=3)
    f = F([x0], outs + [with_updates], updates=upd, mode=mode)
    # x runs 0, 1, 2, 3; the step whose input is 3 asks to stop and is kept.
    for got in f(0.0):
        np.testing.assert_array_equal(got, [1, 2, 3, 4])
    assert float(c.get_value()) == 4.0
    F([], [], updates=upd2, mode=mode)()
    assert float(c.get_value()) == 54.0  # 4 + 10 * 5 (c never exceeds 100 before the last step)
    np.testing.assert_array_equal(F([x0], pairs, updates=upd3, mode=mode)(0.0), [1, 2, 3])
    assert float(c.get_value()) == 54.0 * 8
    with pytest.raises(ValueError, match="3 items|two sets"):
        theano.scan(lambda x: ({c: c}, [x + 1], {c: c}), outputs_info=x0, n_steps=2)


# -- 3. reshape with a symbolic shape vector ---------------------------------------------------------


def test_reshape_with_a_symbolic_shape_vector_and_ndim():
    x, shp = T.dvector("x"), T.lvector("shp")
    m = T.reshape(x, shp, ndim=2)
    assert m.ndim == 2
    y = T.dmatrix("y")
    flat = y.reshape((-1,))
    f = F([x, shp], [m, m.shape])
    a = np.arange(6.0)
    got, shape = f(a, [2, 3])
    np.testing.assert_array_equal(got, a.reshape(2, 3))
    assert shape.tolist() == [2, 3]
    got, shape = f(a, [-1, 2])  # -1 is the size the others leave (NumPy, Theano)
    np.testing.assert_array_equal(got, a.reshape(-1, 2))
    assert shape.tolist() == [3, 2]
    with pytest.raises(ValueError, match="shape vector"):
        f(a, [6])
    with pytest.raises(ValueError, match="one unknown dimension"):
        f(a, [-1, -1])
    with pytest.raises(ValueError, match="cannot reshape"):
        f(a, [4, 2])
    np.testing.assert_array_equal(F([y], flat)(np.ones((2, 2))), np.ones(4))
    with pytest.raises(ValueError, match="ndim=3 but the shape vector has 2"):
        T.reshape(x, T.lvector(shape=(2,)), ndim=3)


# -- 4. scan_checkpoints -------------------------------------------------------------------------------


def test_scan_checkpoints_errors_and_outputs_without_state():
    xs, x0 = T.dvector("xs"), T.dscalar("x0")
    with pytest.raises(RuntimeError, match="doesn't work with taps"):
        theano.scan_checkpoints(lambda a, b, acc: acc + a, sequences=[dict(input=xs, taps=[-1, 0])],
                                outputs_info=[x0])
    with pytest.raises(RuntimeError, match="doesn't work with taps"):
        theano.scan_checkpoints(lambda a, b, acc: acc + a, sequences=[xs],
                                outputs_info=[dict(initial=T.dvector(), taps=[-2, -1])])
    # Outputs with no initial state (None) keep the row of each chunk's last step.
    (acc, sq), _ = theano.scan_checkpoints(lambda x, a: [a + x, x * x], sequences=[xs], outputs_info=[x0, None],
                                           save_every_N=2)
    got = F([xs, x0], [acc, sq])(np.arange(1.0, 6.0), 0.0)
    np.testing.assert_allclose(got[0], [3, 10, 15])
    np.testing.assert_allclose(got[1], [4, 16, 25])


# -- 5. one-step scans ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_one_step_scan_with_a_python_int_initial_state(mode):
    seq = T.dvector("seq")
    out, _ = theano.scan(lambda s, a: a + s, sequences={"input": seq, "taps": [2]}, outputs_info=0, n_steps=1)
    assert out.dtype == "float64"
    # Its only step reads seq[2] (tap 2 of step 0) and the initial state 0.
    x0 = T.ivector("x0")
    mit, _ = theano.scan(lambda a, b: a + b * 0.5, outputs_info=dict(initial=x0, taps=[-2, -1]), n_steps=1)
    vec, _ = theano.scan(lambda p: T.stack([p, p + 1.5]), outputs_info=T.constant(1), n_steps=1)
    f = F([seq, x0], [out, mit, vec], mode=mode)
    got = f([5.0, 6.0, 7.0, 8.0], [10, 20])
    np.testing.assert_array_equal(got[0], [7.0])
    np.testing.assert_array_equal(got[1], [10 + 20 * 0.5])
    np.testing.assert_array_equal(got[2], [[1.0, 2.5]])
    with pytest.raises(TypeError, match="implicit downcast"):  # more than one step: a real state
        theano.scan(lambda s, a: a + s, sequences=seq, outputs_info=0, n_steps=2)


# -- 6. floatX and Python floats ----------------------------------------------------------------------------


def test_python_floats_are_narrowed_to_floatX():
    saved = theano.config.floatX
    try:
        theano.config.floatX = "float32"
        x = T.scalar("x")
        f = F([x], x + 1)
        got = f(np.e)
        assert got.dtype == np.float32 and got == np.float32(np.e) + np.float32(1)
        s = theano.shared(np.float32(0.0))
        s.set_value(0.1)
        assert s.get_value() == np.float32(0.1)
        with pytest.raises(TypeError, match="without loss"):
            F([x], x + 1, allow_input_downcast=False)(np.e)
        with pytest.raises(TypeError, match="without loss"):  # NumPy float64 values are not narrowed
            f(np.float64(np.e))
        v = T.vector("v")
        with pytest.raises(TypeError, match="without loss"):  # only Python floats, not lists
            F([v], v + 1)([np.e])
    finally:
        theano.config.floatX = saved


# -- 7. nitsot rows whose size only a step knows ---------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_map_rows_sized_by_the_first_step(mode):
    k, m, n = T.lvector("k"), T.dmatrix("m"), T.lscalar("n")
    filled, _ = theano.map(lambda i: T.zeros((i,)) + i, sequences=k)

    def row_cumsum(row, n):
        s, _ = theano.scan(lambda v, acc: acc + v, sequences=row, outputs_info=T.constant(0.0), n_steps=n)
        return s

    nested, _ = theano.map(row_cumsum, sequences=m, non_sequences=n)
    f = F([k, m, n], [filled, filled.shape, nested], mode=mode)
    a = np.arange(6.0).reshape(2, 3)
    got = f([3, 3], a, 2)
    np.testing.assert_array_equal(got[0], np.full((2, 3), 3.0))
    assert got[1].tolist() == [2, 3]
    np.testing.assert_array_equal(got[2], np.cumsum(a[:, :2], axis=1))
    empty = f(np.zeros(0, np.int64), a, 2)
    assert empty[0].shape == (0, 0) and empty[1].tolist() == [0, 0]
    # With until: the step that stops is kept (i = 0, 2, 4: three rows of arange(2)).
    short, _ = theano.scan(lambda i: (T.arange(i % 2 + 2), theano.until(T.ge(i, 3))), sequences=k)
    np.testing.assert_array_equal(F([k], short, mode=mode)([0, 2, 4, 1]), [[0, 1]] * 3)
    with pytest.raises(ValueError, match="a step's row has size 2 where the first step's rows have 3"):
        f([3, 2], a, 2)


# -- 8. missing inputs inside scan updates ---------------------------------------------------------------


def test_variable_used_only_by_updates_is_a_missing_input():
    y = T.dscalar("y")
    s = theano.shared(0.0, name="s")
    with pytest.raises(theano.MissingInputError, match="update of s uses"):
        theano.scan(lambda: {s: s + y}, n_steps=3)
    with pytest.raises(theano.MissingInputError):
        theano.scan(lambda x: (x * 2, {s: s + y}), sequences=T.dvector())
    # Given to scan (as a non-sequence, or used by an output), it is an input.
    _, upd = theano.scan(lambda y_: {s: s + y_}, non_sequences=y, n_steps=3)
    _, upd2 = theano.scan(lambda y_: {s: s + y}, non_sequences=[y], n_steps=2)
    out, upd3 = theano.scan(lambda: (y * 1, {s: s + y}), n_steps=2)
    F([y], [], updates=upd)(2.0)
    assert float(s.get_value()) == 6.0
    F([y], [], updates=upd2)(1.0)
    F([y], out, updates=upd3)(1.0)
    assert float(s.get_value()) == 10.0


# -- graph utilities, In, cutting the graph ---------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_sizes_follow_the_variable_they_are_read_from(mode):
    # Theano builds h.mean() as sum(h) / h.shape[0]: replacing h (clone,
    # givens, an intermediate input, eval) replaces its sizes too.
    x, z, y = T.dvector("x"), T.dvector("z"), T.dvector("y")
    h = T.exp(x)
    cloned = theano.clone(h.mean(), replace={h: z})
    assert float(F([x, z], cloned, mode=mode, on_unused_input="ignore")(np.zeros(2), np.full(4, 3.0))) == 3.0
    s = T.nnet.sigmoid(x)
    value = np.array([0.5, 1.0, 2.0])
    for expr, want in [(s.mean(), value.mean()), (T.ones_like(s), np.ones(3)), (s.reshape((-1,)), value),
                       (s.flatten(), value), (T.grad(s.sum(), s), np.ones(3)), (s.shape[0], 3),
                       (s.var(), value.var())]:
        np.testing.assert_allclose(F([s], expr, mode=mode)(value), want)
    hs, _ = theano.scan(lambda v: v * 2, sequences=x)
    assert int(F([hs], hs.shape[0], mode=mode)(np.ones(3))) == 3
    assert float(F([z], s.mean(), givens={s: z}, mode=mode)(np.full(3, 3.0))) == 3.0
    assert int(s.shape[0].eval({s: np.ones(5)})) == 5
    o, _ = theano.scan(lambda v: v * 2, sequences=s)
    np.testing.assert_allclose(F([y], theano.clone(o, replace={s: y}), mode=mode)(np.ones(2)), [2.0, 2.0])


def test_clone_and_graph_inputs():
    from mlir_scan.gof.graph import inputs
    from mlir_scan.graph.basic import graph_inputs

    x, y, z = T.dscalar("x"), T.dscalar("y"), T.dscalar("z")
    h = x * 2
    out = h + y
    swapped = theano.clone(out, replace={h: z})
    both = theano.clone([out, h], replace=[(y, x)])
    assert {v.name for v in inputs([swapped])} == {"z", "y"}
    assert {v.name for v in graph_inputs([out]) if v.name} == {"x", "y"}
    f = F([x, y, z], [swapped, both[0], both[1]])
    assert [float(v) for v in f(1.0, 10.0, 100.0)] == [110.0, 3.0, 2.0]
    fresh = theano.clone(out, share_inputs=False)
    assert not {v.id for v in inputs([fresh])} & {x.id, y.id}
    i = T.iscalar("i")
    retyped = theano.clone(out, replace={y: i}, strict=False)
    assert retyped.dtype == "float64" and float(F([x, i], retyped)(1.0, 3)) == 5.0
    with pytest.raises(TypeError):
        theano.clone(out, replace={y: i})
    assert theano.clone_replace([h], {x: y})[0].owner.inputs[0] is y


def test_In_values_names_updates_and_strict():
    x, step = T.dscalar("x"), T.dscalar("step")
    f = F([x, theano.In(step, value=1.0)], x + step)
    assert float(f(1.0)) == 2.0 and float(f(1.0, 5.0)) == 6.0 and float(f(1.0, step=3.0)) == 4.0
    # A named input with a state: the update becomes the next default.
    acc = T.dscalar("acc")
    g = F([x, theano.In(acc, value=0.0, update=acc + x, name="total")], acc + x)
    assert [float(g(v)) for v in (1.0, 2.0, 3.0)] == [1.0, 3.0, 6.0]
    assert float(g(1.0, total=100.0)) == 101.0
    v = T.fvector("v")
    h = F([theano.In(v, strict=True, mutable=True, borrow=True)], v * 2)
    np.testing.assert_array_equal(h(np.ones(2, np.float32)), [2, 2])
    with pytest.raises(TypeError, match="strict"):
        h([1.0, 2.0])
    with pytest.raises(TypeError, match="missing"):
        F([x, step], x + step)(x=1.0)
    out = theano.Out(x * 3, borrow=True)
    assert float(F([x], out)(2.0)) == 6.0


@pytest.mark.parametrize("mode", MODES)
def test_intermediate_variables_as_inputs_cut_the_graph(mode):
    x = T.dvector("x")
    h = T.exp(x)
    out = h * 2 + 1
    f = F([h], out, mode=mode)
    np.testing.assert_array_equal(f([1.0, 2.0]), [3.0, 5.0])  # h given: exp is never computed
    hs, _ = theano.scan(lambda v, acc: acc + v, sequences=x, outputs_info=T.constant(0.0))
    last = hs[-1] * 10
    g = F([hs], last, mode=mode)
    assert float(g([1.0, 2.0, 7.0])) == 70.0
    with pytest.raises(theano.UnusedInputError):
        F([x, h], out, mode=mode)  # x is upstream of the cut


# -- the rest of the tensor API ---------------------------------------------------------------------------


def test_tensor_methods_and_checks():
    m, v = T.dmatrix("m"), T.dvector("v")
    a = np.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])
    outs = [m.ravel(), m.var(), m.std(axis=0), T.var(m, axis=1, ddof=1), T.std(m, keepdims=True),
            T.diag(m), T.diag(v), theano.gradient.disconnected_grad(m * 2),
            T.nnet.softmax(m)]
    got = F([m, v], outs)(a, [1.0, 2.0])
    expect = [a.ravel(), a.var(), a.std(axis=0), a.var(axis=1, ddof=1), a.std(keepdims=True),
              np.diag(a), np.diag([1.0, 2.0]), a * 2,
              np.exp(a) / np.exp(a).sum(axis=1, keepdims=True)]
    for g, e in zip(got, expect):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    assert float((v.sum() * 2).eval({v: [1.0, 2.0]})) == 6.0
    assert (v + 1).eval({"v": [1.0]}).tolist() == [2.0]
    assert T.constant(3.0).eval() == 3.0


def test_assert_specify_shape_and_broadcast_patterns():
    x, n = T.dvector("x"), T.lscalar("n")
    checked = T.opt.assert_op(x, T.gt(x.sum(), 0), T.lt(x.size, 4))
    sized = T.specify_shape(x, (3,))
    sym = T.specify_shape(x, (n,))
    assert sized.type.shape == (3,)
    f = F([x, n], [checked, sized * 2, sym.shape[0]])
    got = f([1.0, 2.0, 3.0], 3)
    np.testing.assert_array_equal(got[0], [1, 2, 3])
    assert int(got[2]) == 3
    with pytest.raises(AssertionError, match="Theano Assert failed"):
        f([-1.0, -2.0, -3.0], 3)
    with pytest.raises(AssertionError):
        f([1.0, 2.0, 3.0, 4.0], 4)
    with pytest.raises(AssertionError, match="SpecifyShape"):
        F([x], sized)([1.0, 2.0])
    with pytest.raises(AssertionError, match="message"):
        F([x], T.opt.Assert("my message")(x, T.all(x > 0)))([-1.0])
    r = T.row("r")
    assert T.unbroadcast(r, 0).broadcastable == (False, False)
    c = T.addbroadcast(T.dmatrix(), 1)
    assert c.broadcastable == (False, True)
    assert T.patternbroadcast(r, (False, True)).type.shape == (None, 1)
    col = T.dmatrix("col")
    g = F([col], T.addbroadcast(col, 1) + np.zeros((1, 3)))
    np.testing.assert_array_equal(g(np.ones((2, 1))), np.ones((2, 3)))
    with pytest.raises(AssertionError):
        g(np.ones((2, 2)))


def test_categorical_crossentropy():
    p, y, k = T.dmatrix("p"), T.dmatrix("y"), T.ivector("k")
    probs = np.array([[0.2, 0.7, 0.1], [0.5, 0.25, 0.25]])
    true = np.array([[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]])
    f = F([p, y, k], [T.nnet.categorical_crossentropy(p, y), T.nnet.categorical_crossentropy(p, k)])
    by_dist, by_index = f(probs, true, [1, 0])
    np.testing.assert_allclose(by_dist, -(true * np.log(probs)).sum(axis=1))
    np.testing.assert_allclose(by_index, -np.log([0.7, 0.5]))
    # Class indices never take the log of the other probabilities (zeros are fine).
    zero = np.array([[0.0, 1.0, 0.0]])
    np.testing.assert_allclose(f(zero, zero, [1])[1], [0.0])
    # A class index out of [0, k) fails the call (Theano: "y_i value out of bounds").
    for bad in ([3, 0], [-1, 0]):
        with pytest.raises(ValueError, match="out of bounds"):
            f(probs, true, bad)


def test_gradients_of_checks_retypes_and_diagonals():
    x, m, r = T.dvector("x"), T.dmatrix("m"), T.row("r")
    v = np.array([1.0, 2.0, 3.0])
    for expr in (T.opt.assert_op(x, T.all(x > 0)), T.specify_shape(x, (3,)), T.specify_shape(x, (None,))):
        np.testing.assert_allclose(F([x], T.grad((expr ** 2).sum(), x))(v), 2 * v)
    np.testing.assert_allclose(F([r], T.grad((T.unbroadcast(r, 0) ** 2).sum(), r))(np.ones((1, 3))), 2 * np.ones((1, 3)))
    M = np.arange(12.0).reshape(3, 4)
    for k in (0, 1, -1, 3, -2, 5):
        d, gm, d2 = F([m], [T.diag(m, k), T.grad((T.diag(m, k) ** 2).sum(), m), m.diagonal(k)])(M)
        np.testing.assert_array_equal(d, np.diag(M, k))
        np.testing.assert_array_equal(d2, np.diagonal(M, k))
        want = np.zeros_like(M)
        rows, cols = np.nonzero(np.eye(3, 4, k))
        want[rows, cols] = 2 * M[rows, cols]
        np.testing.assert_array_equal(gm, want)
        W = np.arange(1.0, (3 + abs(k)) ** 2 + 1).reshape(3 + abs(k), -1)
        a, gv = F([x], [T.diag(x, k), T.grad((T.diag(x, k) * W).sum(), x)])(v)
        np.testing.assert_array_equal(a, np.diag(v, k))
        np.testing.assert_array_equal(gv, np.diag(W, k))
    assert F([x], T.diag(x, 2))(np.zeros(0)).shape == (2, 2)


def test_softmax_axis():
    m = T.dmatrix("m")
    value = np.random.default_rng(0).normal(size=(3, 4))
    for axis in (-1, 0, 1, None):
        e = np.exp(value - value.max(axis=axis, keepdims=True))
        np.testing.assert_allclose(F([m], T.nnet.softmax(m, axis=axis))(value), e / e.sum(axis=axis, keepdims=True))
    with pytest.raises(ValueError, match="axis"):
        T.nnet.softmax(m, axis=2)


def test_multinomial_and_mrg_streams():
    srng = T.shared_randomstreams.RandomStreams(seed=7)
    pvals = np.array([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    draws = srng.multinomial(n=20, pvals=pvals)
    sized = srng.multinomial(size=(4000,), n=1, pvals=[0.25, 0.75])
    f = F([], [draws, sized])
    a, b = f()
    assert a.shape == (2, 3) and a.dtype == np.int64
    assert a.sum(axis=1).tolist() == [20, 20] and a[0].tolist() == [0, 20, 0]
    assert b.shape == (4000, 2) and (b.sum(axis=1) == 1).all()
    assert abs(b[:, 1].mean() - 0.75) < 0.03
    mrg = theano.sandbox.rng_mrg.MRG_RandomStreams(seed=234)
    u, z = mrg.uniform((3000,)), mrg.normal((3000,), avg=2.0, std=0.5)
    bern, multi = mrg.binomial(size=(3000,), p=0.3), mrg.multinomial(pvals=pvals, n=5)
    g = F([], [u, z, bern, multi])
    u1, z1, b1, m1 = g()
    u2 = g()[0]
    assert (u1 != u2).any() and ((0 <= u1) & (u1 < 1)).all()
    assert abs(z1.mean() - 2.0) < 0.05 and abs(z1.std() - 0.5) < 0.05
    assert set(np.unique(b1)) <= {0, 1} and abs(b1.mean() - 0.3) < 0.05
    assert m1.sum(axis=1).tolist() == [5, 5]
    mrg.seed(234)
    np.testing.assert_array_equal(g()[0], u1)


# -- PyTensor spellings --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_pytensor_return_updates_false(mode):
    xs = T.dvector("xs")
    out = theano.scan(lambda x, acc: acc + x, sequences=xs, outputs_info=T.constant(0.0), return_updates=False)
    mapped = theano.map(lambda x: x * 2, sequences=xs, return_updates=False)
    total = theano.reduce(lambda x, acc: acc + x, sequences=xs, outputs_info=T.constant(0.0),
                          return_updates=False)
    got = F([xs], [out, mapped, total], mode=mode)([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(got[0], [1, 3, 6])
    np.testing.assert_array_equal(got[1], [2, 4, 6])
    assert float(got[2]) == 6.0
    s = theano.shared(0.0)
    with pytest.raises(ValueError, match="return_updates=False but Scan produced updates"):
        theano.scan(lambda: {s: s + 1}, n_steps=2, return_updates=False)


def test_pytensor_spellings():
    x = T.tensor("x", dtype="float64", shape=(None, 3))
    assert x.name == "x" and x.type.shape == (None, 3)
    assert T.tensor("float32", (2,), "y").dtype == "float32"  # Theano's order still works
    assert T.tensor(dtype="int32", shape=(4,)).type.shape == (4,)
    full = T.full((2, 3), 7.0)
    like = T.full_like(x, 2, dtype="int32")
    f = F([x], [full, like])
    a, b = f(np.zeros((2, 3)))
    np.testing.assert_array_equal(a, np.full((2, 3), 7.0))
    assert b.dtype == np.int32 and (b == 2).all() and b.shape == (2, 3)
    from mlir_scan.tensor.random.utils import RandomStream

    srng = RandomStream(seed=3)
    n = srng.normal(5.0, 0.0, size=(4,))
    u = srng.uniform(2.0, 2.0, size=(2, 2))
    b = srng.binomial(3, 1.0, size=(3,))
    got = F([], [n, u, b])()
    np.testing.assert_array_equal(got[0], [5.0] * 4)
    np.testing.assert_array_equal(got[1], np.full((2, 2), 2.0))
    np.testing.assert_array_equal(got[2], [3, 3, 3])
    assert T.random.RandomStream is RandomStream
