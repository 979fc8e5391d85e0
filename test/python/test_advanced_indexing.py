"""Integer-array and boolean-mask indexing (Theano's AdvancedSubtensor family) against NumPy.

Every case runs the same indexing expression on NumPy arrays and on symbolic
variables; the compiled result must equal NumPy's, and a selection of cases
also runs three ways (compiled, compiled plain, reference interpreter).
Gradients are checked against central differences of the compiled cost.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mlir_scan as theano
from mlir_scan import tensor as T
from mlir_scan.builder.ops.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor

from gradcheck import check_grad
from threeway import check_three_ways

RNG = np.random.default_rng(7)
X3 = RNG.standard_normal((4, 5, 6))
X2 = RNG.standard_normal((5, 4))


def _sym(value: np.ndarray, name: str):
    # Dimensions of size 1 are broadcastable, as Theano's placeholders declare them.
    return T.tensor(value.dtype.name, tuple(1 if d == 1 else None for d in value.shape), name)


def _run(expr, values, mode=None, three_ways=False):
    syms = [_sym(v, f"a{i}") for i, v in enumerate(values)]
    f = theano.function(syms, expr(*syms), mode=mode)
    got = f(*values)
    if three_ways:
        check_three_ways(f, values)
    return got


READS = {
    # name: (expression on (x, *index arrays), x, index arrays)
    "rows": (lambda x, i: x[i], X2, [np.array([3, 0, -1, 3])]),
    "rows of 3-d": (lambda x, i: x[i], X3, [np.array([1, 1, -4])]),
    "matrix of rows (embedding)": (lambda x, i: x[i], X2, [np.array([[0, 4, 2], [1, 1, -2]])]),
    "column": (lambda x, i: x[:, i], X2, [np.array([3, 0, 0, -1, 2])]),
    "slice then array": (lambda x, i: x[1:4, i], X3, [np.array([0, 4, 2])]),
    "array then reversed slice": (lambda x, i: x[i, ::-2], X3, [np.array([2, 0])]),
    "array and scalar": (lambda x, i: x[i, 2], X3, [np.array([3, 1])]),
    "pairs (nll idiom)": (lambda x, i, j: x[i, j], X2, [np.arange(5), np.array([3, 0, 1, 1, 2])]),
    "broadcast vector and column": (lambda x, i, j: x[i, j], X3,
                                    [np.array([[0], [3], [1]]), np.array([4, 0, -1, 2])]),
    "non-adjacent arrays": (lambda x, i, j: x[i, :, j], X3, [np.array([0, 3, 1]), np.array([5, 0, 2])]),
    "scalar, slice, array (non-adjacent)": (lambda x, i: x[1, :, i], X3, [np.array([4, 0])]),
    "adjacent after slice": (lambda x, i, j: x[:, i, j], X3, [np.array([0, 4]), np.array([1, 5])]),
    "empty index": (lambda x, i: x[i], X2, [np.zeros(0, dtype=np.int64)]),
    "int32 index": (lambda x, i: x[i], X2, [np.array([4, 1], dtype=np.int32)]),
    "new axis before": (lambda x, i: x[None, i], X2, [np.array([1, 2])]),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_read_matches_numpy(name):
    expr, x, idx = READS[name]
    got = _run(expr, [x, *idx], three_ways=name in ("rows", "broadcast vector and column", "non-adjacent arrays"))
    want = expr(x, *idx)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_read_fast_compile():
    expr, x, idx = READS["broadcast vector and column"]
    np.testing.assert_array_equal(_run(expr, [x, *idx], mode="FAST_COMPILE"), expr(x, *idx))


def test_python_lists_and_numpy_indices():
    x = T.matrix("x")
    f = theano.function([x], [x[[0, 2, -1]], x[np.array([1, 1])], x[:, [True, False, True, False]],
                              x[[]]])
    got = f(X2)
    np.testing.assert_array_equal(got[0], X2[[0, 2, -1]])
    np.testing.assert_array_equal(got[1], X2[[1, 1]])
    np.testing.assert_array_equal(got[2], X2[:, [True, False, True, False]])
    assert got[3].shape == (0, 4)


def test_op_types():
    W, idx = T.matrix("W"), T.lvector("idx")
    assert isinstance(W[idx].owner.op, AdvancedSubtensor)
    assert W[idx].type.shape == (None, None)
    assert T.matrix("W", shape=(5, 3))[T.lmatrix("m", shape=(2, 7))].type.shape == (2, 7, 3)
    assert isinstance(T.inc_subtensor(W[idx], 1.0).owner.op, AdvancedIncSubtensor)


@pytest.mark.parametrize("mask_of", ["x > 0", "2-d mask", "mask on axis 1", "constant mask"])
def test_boolean_masks(mask_of):
    x = T.matrix("x")
    if mask_of == "x > 0":
        expr, want = x[x > 0], X2[X2 > 0]
    elif mask_of == "2-d mask":
        expr, want = x[(x > 0) & (x < 1)], X2[(X2 > 0) & (X2 < 1)]
    elif mask_of == "mask on axis 1":
        expr, want = x[1:, x[0] > 0], X2[1:, X2[0] > 0]
    else:
        m = np.array([True, False, False, True, True])
        expr, want = x[m], X2[m]
    got = theano.function([x], expr)(X2)
    np.testing.assert_array_equal(got, want)


def test_mask_write_and_count_zero():
    x = T.vector("x")
    f = theano.function([x], [T.set_subtensor(x[x < 0], 0.0), x[x > 100]])
    v = np.array([1.0, -2.0, 3.0, -4.0])
    clipped, none = f(v)
    check_three_ways(f, [v])
    np.testing.assert_array_equal(clipped, np.maximum(v, 0))
    assert none.shape == (0,)


@pytest.mark.parametrize("bad", [np.array([5]), np.array([0, -6]), np.array([[1], [7]])])
def test_out_of_bounds_raises_at_call(bad):
    x, i = T.matrix("x"), T.lmatrix("i") if bad.ndim == 2 else T.lvector("i")
    f = theano.function([x, i], x[i])
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
        f(X2, bad)
    g = theano.function([x, i], T.inc_subtensor(x[i], 1.0))
    with pytest.raises(IndexError, match="out of bounds"):
        g(X2, bad)


def test_scalar_beside_array_out_of_bounds():
    x, i, k = T.matrix("x"), T.lvector("i"), T.lscalar("k")
    f = theano.function([x, i, k], x[i, k])
    np.testing.assert_array_equal(f(X2, np.array([0, 1]), -4), X2[[0, 1], -4])
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        f(X2, np.array([0, 1]), 4)


def test_errors_at_build_time():
    x = T.matrix("x", shape=(5, 4))
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 5"):
        x[[0, 9]]
    with pytest.raises(IndexError, match="integer type"):
        x[T.vector("f")]
    with pytest.raises(IndexError, match="could not be broadcast"):
        x[np.array([0, 1]), np.array([0, 1, 2])]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.array([True, False])]
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], [0], [0]]


def test_run_time_shape_errors():
    x, i, j, m = T.matrix("x"), T.lvector("i"), T.lvector("j"), T.bvector("m")
    f = theano.function([x, i, j], x[i, j])
    with pytest.raises(IndexError, match="could not be broadcast"):
        f(X2, np.array([0, 1]), np.array([0, 1, 2]))
    g = theano.function([x, m], x[m.astype("bool")])
    with pytest.raises(IndexError, match="boolean index did not match"):
        g(X2, np.array([1, 0], dtype=np.int8))


WRITES = {
    "repeated rows": (lambda x, i: x[i], X2, [np.array([0, 2, 0, -5, 4])], (5, 4)),
    "scalar value": (lambda x, i: x[i], X2, [np.array([1, 3, 1])], ()),
    "row value broadcast": (lambda x, i: x[i], X2, [np.array([1, 3, 1])], (4,)),
    "pairs": (lambda x, i, j: x[i, j], X2, [np.array([0, 0, 4]), np.array([1, 1, -1])], (3,)),
    "column with slice": (lambda x, i: x[1:, i], X3, [np.array([4, 4, 0])], (3, 3, 6)),
    "non-adjacent": (lambda x, i, j: x[i, :, j], X3, [np.array([0, 3, 0]), np.array([5, 0, 5])], (3, 5)),
}


def _numpy_write(expr, x, idx, y, set_):
    out = x.copy()
    # The index tuple the expression applies, found by indexing an array of positions.
    pos = np.arange(x.size).reshape(x.shape)
    flat = expr(pos, *idx)
    y_b = np.broadcast_to(y, flat.shape)
    view = out.reshape(-1)
    if set_:
        for p, v in zip(flat.reshape(-1), y_b.reshape(-1)):
            view[p] = v
    else:
        np.add.at(view, flat.reshape(-1), y_b.reshape(-1))
    return out


@pytest.mark.parametrize("set_", [False, True], ids=["inc", "set"])
@pytest.mark.parametrize("name", sorted(WRITES))
def test_write_matches_numpy(name, set_):
    expr, x, idx, yshape = WRITES[name]
    y = RNG.standard_normal(yshape)
    fn = T.set_subtensor if set_ else T.inc_subtensor
    got = _run(lambda xs, ys, *iv: fn(expr(xs, *iv), ys), [x, y, *idx], three_ways=name == "repeated rows")
    np.testing.assert_allclose(got, _numpy_write(expr, x, idx, y, set_), rtol=1e-14, atol=1e-15)


def test_write_value_shape_checked():
    x, i, y = T.matrix("x"), T.lvector("i"), T.matrix("y")
    f = theano.function([x, i, y], T.inc_subtensor(x[i], y))
    with pytest.raises(ValueError, match="has size 2 along dimension 0 but the subtensor has 3"):
        f(X2, np.array([0, 1, 2]), np.ones((2, 4)))


def test_write_dtype_upcast_refused():
    with pytest.raises(TypeError, match="downcast"):
        T.inc_subtensor(T.lvector("x")[T.lvector("i")], T.dscalar("y"))


# -- gradients -------------------------------------------------------------------------------


def test_grad_of_gather_is_scatter_add():
    idx = np.array([[0, 3], [3, 3], [-1, 1]])
    f = check_grad(lambda W: T.sum(T.tanh(W[T.constant(idx)]) * np.arange(6.0).reshape(3, 2, 1)),
                   [X2], reference=lambda W: np.sum(np.tanh(W[idx]) * np.arange(6.0).reshape(3, 2, 1)))
    # The gradient is a scatter into zeros, not a one-hot matrix product.
    kinds = {type(n.op).__name__ for n in theano.graph.toposort(f.outputs[1:])}
    assert "AdvancedIncSubtensor" in kinds and "Dot" not in kinds


def test_grad_nll_idiom():
    y = np.array([1, 3, 0, 3])
    check_grad(lambda p: -T.mean(T.log(T.nnet.sigmoid(p)[T.arange(4), T.constant(y)])),
               [RNG.standard_normal((4, 5))])


@pytest.mark.parametrize("set_", [False, True], ids=["inc", "set"])
def test_grad_of_writes(set_):
    idx = T.constant(np.array([2, 0, 2]))
    fn = T.set_subtensor if set_ else T.inc_subtensor
    if set_:
        idx = T.constant(np.array([2, 0, 4]))  # repeated sets have an order-dependent gradient
    check_grad(lambda x, y: T.sum(T.sin(fn(x[idx], y)) * np.arange(20.0).reshape(5, 4)),
               [X2, RNG.standard_normal((3, 4))])
    check_grad(lambda x, y: T.sum(fn(x[idx, 1:3], y) ** 2), [X2, RNG.standard_normal((2,))])


def test_grad_through_mask():
    check_grad(lambda x: T.sum(x[x > 0.1] ** 3), [X2])


# -- in scans ----------------------------------------------------------------------------------


def test_lookup_per_step_in_scan_and_its_gradient():
    emb = RNG.standard_normal((7, 3))
    words = np.array([[0, 6], [2, 2], [5, 1], [6, 0]])  # time x batch
    W = RNG.standard_normal((3, 3)) * 0.5

    def cost(E, Wr):
        h, _ = theano.scan(lambda w_t, h: T.tanh(E[w_t] + T.dot(h, Wr)), sequences=T.constant(words),
                           outputs_info=T.zeros((2, 3)))
        return T.sum(h[-1] ** 2) + T.sum(h[:, 0])

    def ref(E, Wr):
        h, total = np.zeros((2, 3)), 0.0
        for w_t in words:
            h = np.tanh(E[w_t] + h @ Wr)
            total += h[0].sum()
        return np.sum(h ** 2) + total

    for mode in (None, "FAST_COMPILE"):
        check_grad(cost, [emb, W], reference=ref, mode=mode)


def test_scan_outputs_indexed_by_array():
    x = T.vector("x")
    h, _ = theano.scan(lambda x_t, h: h * 0.5 + x_t, sequences=x, outputs_info=T.constant(0.0))
    pick = T.lvector("pick")
    f = theano.function([x, pick], [h[pick], T.grad(h[pick].sum(), x)])
    xv = np.arange(1.0, 7.0)
    hs, ref = [], 0.0
    for v in xv:
        ref = ref * 0.5 + v
        hs.append(ref)
    got, g = f(xv, np.array([5, 0, 5]))
    np.testing.assert_allclose(got, np.array(hs)[[5, 0, 5]])
    want = np.zeros(6)
    for p in (5, 0, 5):
        want[: p + 1] += 0.5 ** (p - np.arange(p + 1))
    np.testing.assert_allclose(g, want)


def test_embedding_model_trains_like_numpy():
    # An embedding + softmax classifier as the tutorials build it, one SGD step.
    V, D, C = 9, 4, 3
    Wemb = theano.shared(RNG.standard_normal((V, D)), name="Wemb")
    U = theano.shared(RNG.standard_normal((D, C)), name="U")
    x, y = T.lmatrix("x"), T.lvector("y")
    emb = Wemb[x.flatten()].reshape([x.shape[0], x.shape[1], D])
    p = T.nnet.softmax(emb.mean(axis=0).dot(U))
    cost = -T.log(p[T.arange(y.shape[0]), y] + 1e-8).mean()
    gW, gU = T.grad(cost, [Wemb, U])
    E0, U0 = Wemb.get_value(), U.get_value()
    f = theano.function([x, y], cost, updates=[(Wemb, Wemb - 0.1 * gW), (U, U - 0.1 * gU)])
    xv, yv = np.array([[1, 8, 1], [2, 2, 0]]), np.array([2, 0, 1])

    def np_cost(E, Uv):
        m = E[xv.reshape(-1)].reshape(2, 3, D).mean(axis=0) @ Uv
        q = np.exp(m - m.max(axis=1, keepdims=True))
        q /= q.sum(axis=1, keepdims=True)
        return -np.log(q[np.arange(3), yv] + 1e-8).mean()

    got = f(xv, yv)
    np.testing.assert_allclose(got, np_cost(E0, U0), rtol=1e-12)
    # finite differences of the NumPy cost give the step the update took
    eps = 1e-6
    gE = np.zeros_like(E0)
    for k in np.ndindex(*E0.shape):
        d = np.zeros_like(E0)
        d[k] = eps
        gE[k] = (np_cost(E0 + d, U0) - np_cost(E0 - d, U0)) / (2 * eps)
    np.testing.assert_allclose(Wemb.get_value(), E0 - 0.1 * gE, rtol=1e-7, atol=1e-9)
    assert np.all(Wemb.get_value()[[3, 4, 5, 6, 7]] == E0[[3, 4, 5, 6, 7]])  # rows never looked up


# -- random index expressions -----------------------------------------------------------------


@st.composite
def _index_programs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    key, arrays = [], []
    b_shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    for d, n in enumerate(shape):
        kind = draw(st.sampled_from(["array", "slice", "scalar", "rest"]))
        if kind == "rest":
            break
        if kind == "array":
            sub = b_shape[len(b_shape) - draw(st.integers(0, len(b_shape))):]
            sub = tuple(1 if draw(st.booleans()) and s else s for s in sub)
            arrays.append(np.asarray(draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(sub)),
                                                   max_size=int(np.prod(sub))))).reshape(sub).astype(np.int64))
            key.append(("array", len(arrays) - 1))
        elif kind == "scalar":
            key.append(("scalar", draw(st.integers(-n, n - 1))))
        else:
            key.append(("slice", slice(draw(st.one_of(st.none(), st.integers(-n - 1, n + 1))),
                                       draw(st.one_of(st.none(), st.integers(-n - 1, n + 1))),
                                       draw(st.sampled_from([None, 1, 2, -1, -2])))))
    if not arrays:
        arrays.append(np.array([0, -1, 0]))
        key.insert(0, ("array", 0))
    return shape, key, arrays


def _apply(key, x, arrays):
    return x[tuple(arrays[v] if k == "array" else v for k, v in key)]


@settings(max_examples=30, deadline=None)
@given(_index_programs(), st.booleans())
def test_random_index_expressions(program, write):
    shape, key, arrays = program
    x = RNG.standard_normal(shape)
    try:
        want = _apply(key, x, arrays)
    except IndexError:
        return  # NumPy refuses it (arrays that do not broadcast, too many indices)
    if write:
        y = RNG.standard_normal(want.shape)
        got = _run(lambda xs, ys, *iv: T.inc_subtensor(_apply(key, xs, iv), ys), [x, y, *arrays])
        np.testing.assert_allclose(got, _numpy_write(lambda a, *iv: _apply(key, a, iv), x, arrays, y, False),
                                   rtol=1e-14, atol=1e-14)
    else:
        got = _run(lambda xs, *iv: _apply(key, xs, iv), [x, *arrays])
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_nonzero_family():
    m = T.matrix("m")
    f = theano.function([m], [*T.nonzero(m), T.nonzero(m, return_matrix=True), T.flatnonzero(m),
                              T.nonzero_values(m), m.nonzero_values()])
    v = np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 3.0]])
    r, c, mat, flat, vals, vals2 = f(v)
    np.testing.assert_array_equal(r, np.nonzero(v)[0])
    np.testing.assert_array_equal(c, np.nonzero(v)[1])
    np.testing.assert_array_equal(mat, np.array(np.nonzero(v)))
    np.testing.assert_array_equal(flat, np.flatnonzero(v))
    np.testing.assert_array_equal(vals, v[v != 0])
    np.testing.assert_array_equal(vals2, v[v != 0])
    assert [a.shape for a in f(np.zeros((2, 3)))[:2]] == [(0,), (0,)]


def test_steps_over_unit_dimensions():
    # A step over a slice of one element (x[i, 0, ::2] of an (n, 1, 1) tensor): the builder's
    # stride 2 on that unit dimension, with the rank reduction, made upstream's
    # expand-strided-metadata assert (process abort); found by test_random_index_expressions.
    x = np.arange(4.0).reshape(4, 1, 1)
    got = _run(lambda xs, i: xs[i, 0, ::2], [x, np.array(2)])
    np.testing.assert_array_equal(got, x[2, 0, ::2])
    for key, expr in [((2, 0, slice(None, None, 2)), lambda xs: xs[2, 0, ::2]),
                      ((slice(1, 2, 3), 0, 0), lambda xs: xs[1:2:3, 0, 0]),
                      ((slice(None, None, 2), slice(None, None, 3)), lambda xs: xs[::2, ::3]),
                      # A dropped index beside kept unit dimensions and a stride over a dynamic one:
                      # which unit dimension the rank reduction dropped was ambiguous to the
                      # bufferized subview (SubViewOp::getDroppedDims asserted); such slices are
                      # now taken at full rank and collapsed.
                      ((slice(1, 2, 3), 0, slice(None, None, 5)), lambda xs: xs[1:2:3, 0, ::5]),
                      ((slice(1, 4, 2), 0, slice(None)), lambda xs: xs[1:4:2, 0, :]),
                      ((slice(1, 4, 2), slice(None), 0), lambda xs: xs[1:4:2, :, 0]),
                      ((slice(1, 2, 3), 0, slice(None, None, -1)), lambda xs: xs[1:2:3, 0, ::-1])]:
        np.testing.assert_array_equal(_run(expr, [x]), x[key])
        y = np.arange(1.0, 1.0 + x[key].size).reshape(x[key].shape)
        want = x.copy()
        want[key] += y
        np.testing.assert_array_equal(_run(lambda xs, ys: T.inc_subtensor(expr(xs), ys), [x, y]), want)
