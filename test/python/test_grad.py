"""``grad``: every op of the tensor DSL against central finite differences, and the error paths.

Each case is a cost built from float64 placeholders; ``gradcheck.check_grad``
compiles the cost and its symbolic gradients and compares them with central
differences of the compiled cost (relative tolerance 1e-6). Inputs are drawn
away from kinks (no ties for max/min/abs, positive values for log/sqrt/pow).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T
from mlir_scan.gradient import DisconnectedInputError, NullTypeGradError

from gradcheck import check_grad, placeholder

RNG = np.random.default_rng(7)


def _u(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, size=shape)


# name -> (cost builder, input values)
ELEMWISE = {
    "add_broadcast": (lambda a, b: ((a + b) ** 2).sum(), [_u(3, 4), _u(4)]),
    "sub_row": (lambda a, b: ((a - b) ** 2).sum(), [_u(3, 4), _u(1, 4)]),
    "mul": (lambda a, b: (a * b * a).sum(), [_u(5), _u(5)]),
    "true_div": (lambda a, b: (a / b).sum(), [_u(5), _pos(5)]),
    "pow": (lambda a, b: (a ** b).sum(), [_pos(4), _u(4)]),
    "pow_const": (lambda a: (a ** 3).sum() + (2.0 ** a).sum(), [_u(4)]),
    "neg_abs": (lambda a: (-abs(a) * a).sum(), [np.array([-0.7, -0.2, 0.3, 0.9])]),
    "maximum": (lambda a, b: (T.maximum(a, b) ** 2).sum(), [_u(6), _u(6)]),
    "minimum": (lambda a, b: (T.minimum(a, b) ** 2).sum(), [_u(6), _u(6)]),
    "switch": (lambda a, b: T.switch(a > 0, a * b, b ** 2).sum(), [np.array([-0.5, 0.25, 0.75, -0.9]), _u(4)]),
    "clip": (lambda a: (T.clip(a, -0.5, 0.5) ** 2).sum() + a.sum(), [np.array([-0.9, -0.3, 0.1, 0.45, 0.8])]),
    "exp_log": (lambda a: (T.exp(a) + T.log(a) + T.log1p(a)).sum(), [_pos(5)]),
    "sqrt_sqr": (lambda a: (T.sqrt(a) + T.sqr(a)).sum(), [_pos(5)]),
    "tanh_sin_cos": (lambda a: (T.tanh(a) * T.sin(a) + T.cos(a)).sum(), [_u(5)]),
    "sigmoid_softplus": (lambda a: (T.nnet.sigmoid(a) * T.softplus(a)).sum(), [_u(5, lo=-3, hi=3)]),
    "mod": (lambda a, b: (a % b * a).sum(), [np.array([0.3, 1.7, 2.6]), np.array([0.8, 0.9, 1.1])]),
    "floor_div_zero": (lambda a: (a // 0.5 + a).sum(), [np.array([0.3, 1.7, 2.6])]),
    "floor_ceil": (lambda a: (T.floor(a) * a + T.ceil(a)).sum(), [np.array([0.3, 1.7, 2.6])]),
    "scalar": (lambda a, b: a * b + T.tanh(a) * b ** 2, [np.asarray(0.3), np.asarray(-1.2)]),
    "relu_softmax": (lambda a: (T.nnet.softmax(a) * T.nnet.relu(a + 0.1)).sum(), [_u(3, 4)]),
}

STRUCTURE = {
    "dot_vv": (lambda a, b: T.dot(a, b) ** 2, [_u(4), _u(4)]),
    "dot_mv": (lambda a, b: (T.dot(a, b) ** 2).sum(), [_u(3, 4), _u(4)]),
    "dot_vm": (lambda a, b: (T.dot(a, b) ** 2).sum(), [_u(3), _u(3, 4)]),
    "dot_mm": (lambda a, b: (T.dot(a, b) ** 2).sum(), [_u(2, 3), _u(3, 4)]),
    "dot_3d_1d": (lambda a, b: (T.dot(a, b) ** 2).sum(), [_u(2, 3, 4), _u(4)]),
    "dot_3d_2d": (lambda a, b: (T.dot(a, b) ** 2).sum(), [_u(2, 3, 4), _u(4, 2)]),
    "dot_2d_3d": (lambda a, b: (T.dot(a, b) ** 2).sum(), [_u(2, 3), _u(2, 3, 4)]),
    "outer": (lambda a, b: (T.outer(a, b) ** 2).sum(), [_u(3), _u(4)]),
    "sum_axis": (lambda a: (a.sum(axis=0) ** 2).sum() + (a.sum(axis=1, keepdims=True) * a).sum(), [_u(3, 4)]),
    "prod": (lambda a: a.prod() + (a.prod(axis=1) ** 2).sum(), [_pos(2, 3)]),
    "prod_zeros": (lambda a: a.prod(axis=1).sum(),
                   [np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.2, 0.5, 2.0]])]),
    "max_min": (lambda a: a.max(axis=1).sum() * 2 + a.min() + T.max(a), [_u(3, 4)]),
    "mean": (lambda a: (a.mean(axis=0) ** 2).sum() + a.mean(), [_u(3, 4)]),
    "index_int": (lambda a: a[1] ** 2 + a[-1] * a[0], [_u(5)]),
    "index_row": (lambda a: (a[1, :3] * a[2, 1:]).sum(), [_u(3, 4)]),
    "slices": (lambda a: (a[1:4] ** 2).sum() + (a[::-2] * 3).sum() + (a[::2] ** 3).sum(), [_u(6)]),
    "newaxis": (lambda a: (a[None, :] * a[:, None]).sum(), [_u(3)]),
    "set_subtensor": (lambda a, b: (T.set_subtensor(a[1:3], b) ** 2).sum(), [_u(5), _u(2)]),
    "set_subtensor_scalar": (lambda a, b: (T.set_subtensor(a[1:4, 0], b) * a).sum(), [_u(5, 2), np.asarray(0.4)]),
    "inc_subtensor": (lambda a, b: (T.inc_subtensor(a[::2], b) ** 2).sum(), [_u(5), _u(3)]),
    "inc_subtensor_broadcast": (lambda a, b: (T.inc_subtensor(a[1], b) ** 2).sum(), [_u(3, 4), _u(1)]),
    "concatenate": (lambda a, b: (T.concatenate([a, b, a]) ** 2 * T.arange(11)).sum(), [_u(4), _u(3)]),
    "concatenate_axis1": (lambda a, b: (T.concatenate([a, b], axis=1) ** 3).sum(), [_u(2, 3), _u(2, 2)]),
    "stack": (lambda a, b: (T.stack([a, b, a * b]) ** 2).sum(), [_u(3), _u(3)]),
    "reshape": (lambda a: (a.reshape((2, 3)) ** 2 * np.arange(6.0).reshape(2, 3)).sum(), [_u(6)]),
    "reshape_neg1": (lambda a: (a.reshape((-1, 2)).sum(axis=1) ** 2).sum(), [_u(3, 4)]),
    "flatten": (lambda a: (T.flatten(a) ** 2 * T.arange(12)).sum(), [_u(3, 4)]),
    "dimshuffle": (lambda a: (a.dimshuffle(1, "x", 0) * T.arange(3)).sum() ** 2, [_u(3, 4)]),
    "transpose": (lambda a, b: (T.dot(a.T, b) ** 2).sum(), [_u(3, 2), _u(3, 4)]),
    "alloc": (lambda a, b: (T.alloc(a, 3, 2) * b).sum() ** 2, [np.asarray(0.7), _u(3, 2)]),
    "alloc_row": (lambda a: (T.alloc(a, 3, 4) * T.arange(4)).sum() ** 2, [_u(4)]),
    "fill": (lambda a, b: (T.fill(b, a) * b).sum() ** 2, [np.asarray(0.3), _u(2, 3)]),
    "zeros_ones_like": (lambda a: ((T.ones_like(a) + a) ** 2).sum() + T.zeros_like(a).sum(), [_u(3)]),
    "copy_and_identity": (lambda a: (a.copy() ** 2).sum(), [_u(3)]),
}


@pytest.mark.parametrize("name", sorted(ELEMWISE))
def test_elementwise_gradient(name):
    fn, values = ELEMWISE[name]
    check_grad(fn, values)


@pytest.mark.parametrize("name", sorted(STRUCTURE))
def test_structure_gradient(name):
    fn, values = STRUCTURE[name]
    check_grad(fn, values)


def test_symbolic_index_and_slice_bounds():
    x, i, j = T.dvector("x"), T.iscalar("i"), T.iscalar("j")
    cost = (x[i:j] ** 2).sum() + x[i] * x[j]
    g = T.grad(cost, x)
    f = theano.function([x, i, j], g)
    xv = _u(6)
    want = np.zeros(6)
    want[1:4] += 2 * xv[1:4]
    want[1] += xv[4]
    want[4] += xv[1]
    np.testing.assert_allclose(f(xv, 1, 4), want, rtol=1e-12)


def test_cast_and_float32():
    # The gradient of a float32 variable is float32; through a cast to float64 too.
    x = T.fvector("x")
    cost = (T.cast(x, "float64") ** 2).sum() + (x * 3).sum()
    g = T.grad(cost, x)
    assert g.dtype == "float32"
    xv = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    np.testing.assert_allclose(theano.function([x], g)(xv), 2 * xv + 3, rtol=1e-6)
    y = T.dvector("y")
    cost = (T.cast(y, "float32") ** 2).sum()
    gy = T.grad(cost, y)
    assert gy.dtype == "float64"


def test_integer_inputs_get_no_gradient_through_mixed_ops():
    x, n = T.dvector("x"), T.iscalar("n")
    cost = (x * n).sum() + x.shape[0] * x.sum()
    g = theano.function([x, n], T.grad(cost, x))
    np.testing.assert_allclose(g(np.ones(3), 4), np.full(3, 4 + 3.0))


def test_list_and_single_wrt_and_shared():
    w = theano.shared(np.array([1.0, 2.0]), name="w")
    x = T.dvector("x")
    cost = (w * x).sum() ** 2
    gw = T.grad(cost, w)
    gw2, gx = T.grad(cost, [w, x])
    assert isinstance(T.grad(cost, [w]), list)
    f = theano.function([x], [gw, gw2, gx])
    xv = np.array([0.5, -1.0])
    s = (np.array([1.0, 2.0]) * xv).sum()
    a, b, c = f(xv)
    np.testing.assert_allclose(a, 2 * s * xv)
    np.testing.assert_allclose(b, 2 * s * xv)
    np.testing.assert_allclose(c, 2 * s * np.array([1.0, 2.0]))


def test_grad_api_names():
    assert theano.grad is T.grad is theano.gradient.grad
    assert T.jacobian is theano.gradient.jacobian and T.hessian is theano.gradient.hessian


def test_consider_constant_known_grads_disconnected_grad():
    x = T.dvector("x")
    y = x ** 2
    xv = np.array([1.0, 2.0, 3.0])
    g1 = T.grad((y * x).sum(), x, consider_constant=[y])  # y treated as a constant: dy/dx ignored
    g2 = T.grad((theano.gradient.disconnected_grad(y) * x).sum(), x)
    g3 = T.grad(None, x, known_grads={y: T.ones_like(y) * 2.0})
    f = theano.function([x], [g1, g2, g3])
    a, b, c = f(xv)
    np.testing.assert_allclose(a, xv ** 2)
    np.testing.assert_allclose(b, xv ** 2)
    np.testing.assert_allclose(c, 4 * xv)
    assert np.allclose(theano.function([x], theano.gradient.disconnected_grad(y))(xv), xv ** 2)


# -- bad input ----------------------------------------------------------------------------------


def test_cost_must_be_a_float_scalar():
    x = T.dvector("x")
    with pytest.raises(TypeError, match="scalar"):
        T.grad(x * 2, x)
    n = T.iscalar("n")
    with pytest.raises(DisconnectedInputError):  # (Theano's and PyTensor's error: x is not in the cost)
        T.grad(n * 2, x)


def test_disconnected_wrt_is_named():
    x, z = T.dvector("x"), T.dvector("zed")
    cost = (x ** 2).sum()
    with pytest.raises(DisconnectedInputError, match="zed"):
        T.grad(cost, [x, z])
    with pytest.raises(DisconnectedInputError, match="zed"):
        T.grad(cost + z.shape[0], z)  # only through the (integer) shape
    gx, gz = T.grad(cost, [x, z], disconnected_inputs="ignore")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        T.grad(cost, [x, z], disconnected_inputs="warn")
    assert any("zed" in str(w.message) for w in caught)
    assert T.grad(cost, [x, z], disconnected_inputs="ignore", return_disconnected="None")[1] is None
    f = theano.function([x, z], [gx, gz])
    a, b = f(np.array([1.0, 2.0]), np.array([5.0, 6.0, 7.0]))
    np.testing.assert_allclose(b, np.zeros(3))


def test_integer_wrt_is_named():
    x, k = T.dvector("x"), T.iscalar("k")
    # Theano's _float_zeros_like: an integer input gets zeros of floatX (PyTensor: 0.0).
    g = T.grad((x * k).sum(), k)
    assert g.dtype == "float64"
    assert float(theano.function([x, k], g, on_unused_input="ignore")(np.ones(3), 2)) == 0.0
    with pytest.raises(TypeError, match="symbolic"):
        T.grad((x ** 2).sum(), np.ones(3))


def test_gradient_through_a_random_draw_is_an_error():
    rng = T.shared_randomstreams.RandomStreams(seed=1)
    mu = T.dvector("mu")
    sample = rng.normal((3,), avg=mu, std=1.0)
    with pytest.raises(NullTypeGradError, match="RandomDraw"):
        T.grad((sample ** 2).sum(), mu)
    # A draw that does not depend on the variable is just a constant.
    noise = rng.uniform((3,))
    g = T.grad((noise * mu).sum(), mu)
    assert theano.function([mu], g, on_unused_input="ignore")(np.zeros(3)).shape == (3,)


def test_bad_options():
    x = T.dvector("x")
    with pytest.raises(ValueError, match="disconnected_inputs"):
        T.grad(x.sum(), x, disconnected_inputs="maybe")
    with pytest.raises(ValueError, match="return_disconnected"):
        T.grad(x.sum(), x, return_disconnected="nope")


def test_gradient_through_integer_ops_names_them():
    x = T.dvector("x")
    cost = T.cast(T.cast(x, "int32") % 3, "float64").sum() + T.gt(x, 0).sum() * 1.0
    # Connected only through integer values: zeros, as in Theano and PyTensor.
    g = T.grad(cost, x)
    np.testing.assert_allclose(theano.function([x], g)(np.array([1.5, -2.0])), [0.0, 0.0])


@pytest.mark.parametrize("zero_when_true", [True, False])
def test_gradient_through_the_untaken_branch_of_a_switch_is_zero(zero_when_true):
    """The gradient a switch sends its untaken branch is 0, and stays 0 through
    a branch whose derivative is NaN or infinite there (sqrt, log of a negative
    number): products with it are computed inside the switch, as Theano's and
    PyTensor's rewrites (local_mul_switch_sink) do. Also inside a scan step."""
    x = T.dvector("x")
    safe = T.switch(T.lt(x, 0), 0.0, T.sqrt(x) + T.log(x)) if zero_when_true else \
        T.switch(T.ge(x, 0), T.sqrt(x) + T.log(x), 0.0)
    v = np.array([4.0, -1.0, 0.25, -3.0])
    got = theano.function([x], T.grad(safe.sum(), x))(v)
    want = np.where(v < 0, 0.0, 0.5 / np.sqrt(np.abs(v)) + 1 / np.abs(v))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    o, _ = theano.scan(lambda a, h: T.switch(T.lt(a, 0), h, h + T.sqrt(a)), sequences=x,
                       outputs_info=T.constant(0.0))
    got = theano.function([x], T.grad(o[-1], x))(v)
    np.testing.assert_allclose(got, np.where(v < 0, 0.0, 0.5 / np.sqrt(np.abs(v))), rtol=1e-12)
    # shape and dtype of the gradient unchanged (a float32 input, a broadcast zero)
    m = T.fmatrix("m")
    gm = T.grad(T.switch(T.lt(m, 0), np.zeros((1, 3), "float32"), T.sqrt(m)).sum(), m)
    r = theano.function([m], gm)(np.array([[1.0, -1.0, 4.0]] * 2, dtype="float32"))
    assert r.dtype == np.float32 and r.shape == (2, 3)
    np.testing.assert_allclose(r, [[0.5, 0.0, 0.25]] * 2)


def test_ties_of_maximum_minimum_clip_give_the_gradient_once():
    """At a tie the first input takes the gradient (Theano, PyTensor): d/dx
    maximum(x, x) is 1, not 2; clip(x, lo, hi) at x == lo gives it to x."""
    x, y, lo = T.dvector("x"), T.dvector("y"), T.dscalar("lo")
    np.testing.assert_array_equal(theano.function([x], T.grad(T.maximum(x, x).sum(), x))(np.array([1.0, -2.0])),
                                  [1.0, 1.0])
    gx, gy = theano.function([x, y], T.grad(T.minimum(x, y).sum(), [x, y]))(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    np.testing.assert_array_equal(gx, [1.0, 0.0])
    np.testing.assert_array_equal(gy, [0.0, 1.0])
    gx, glo = theano.function([x, lo], T.grad(T.clip(x, lo, 1.0).sum(), [x, lo]))(np.array([-1.0, 0.0, -3.0]), -1.0)
    np.testing.assert_array_equal(gx, [1.0, 1.0, 0.0])
    assert float(glo) == 1.0  # (only x = -3 is clipped to lo)


def test_gradient_of_pow_with_respect_to_the_exponent_at_a_zero_base():
    """d/dy x**y at x = 0 is 0 (PyTensor's rule), not 0 * log(0) = NaN."""
    x, y = T.dvector("x"), T.dvector("y")
    got = theano.function([x, y], T.grad((x ** y).sum(), y))(np.array([0.0, 0.0, 2.0]), np.array([2.0, 3.0, 1.5]))
    np.testing.assert_allclose(got, [0.0, 0.0, 2.0 ** 1.5 * np.log(2.0)], rtol=1e-14)


def test_log_of_sigmoid_and_softmax_are_stable():
    """Theano's stabilizing rewrites, applied where the graph is built:
    log(sigmoid(x)) = -softplus(-x), log(1 - sigmoid(x)) = -softplus(x),
    log(softmax(x)) = logsoftmax(x), log1p(exp(x)) = softplus(x): finite values
    and gradients where the naive forms give -inf / inf and NaN."""
    x, m = T.dvector("x"), T.dmatrix("m")
    c1 = T.log(T.nnet.sigmoid(x)).sum()
    v, g = theano.function([x], [c1, T.grad(c1, x)])(np.array([-800.0]))
    assert float(v) == -800.0 and g.tolist() == [1.0]
    c2 = T.log(1 - T.nnet.sigmoid(x)).sum()
    v, g = theano.function([x], [c2, T.grad(c2, x)])(np.array([800.0]))
    assert float(v) == -800.0 and g.tolist() == [-1.0]
    c3 = T.log(T.nnet.softmax(m))[0, 0]
    v, g = theano.function([m], [c3, T.grad(c3, m)])(np.array([[0.0, 1000.0]]))
    assert float(v) == -1000.0 and g.tolist() == [[1.0, -1.0]]
    np.testing.assert_array_equal(theano.function([x], T.log1p(T.exp(x)))(np.array([800.0])), [800.0])
    # ordinary values unchanged
    v = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_allclose(theano.function([x], T.log(T.nnet.sigmoid(x)))(v), np.log(1 / (1 + np.exp(-v))),
                               rtol=1e-14)


def test_an_input_used_only_through_its_shape_is_used():
    """d/db sum(W x + b) is ones of W's rows: the compiled graph never reads b,
    but the graph as given does, so b is a used input (Theano and PyTensor
    compile it without on_unused_input)."""
    W, b, x = T.dmatrix("W"), T.dvector("b"), T.dvector("x")
    f = theano.function([W, b, x], T.grad((T.dot(W, x) + b).sum(), [W, b]))
    gw, gb = f(np.ones((2, 3)), np.zeros(2), np.arange(3.0))
    np.testing.assert_array_equal(gw, [[0, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(gb, [1, 1])


# dot(N-D, matrix), as dot(state_below, W) in the LSTM tutorial: the gradient
# is two matrix products, never the broadcast products of shape (a..., k, m).


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 2, 5), (1, 1, 5), (0, 4, 5)])
def test_gradient_of_a_batched_dot_against_finite_differences(shape):
    rng = np.random.default_rng(11)
    x, w = rng.normal(size=shape), rng.normal(size=(5, 3))
    if 0 in shape:
        xs, ws = T.tensor3("x"), T.dmatrix("w")
        f = theano.function([xs, ws], T.grad((T.dot(xs, ws) ** 2).sum(), [xs, ws]))
        gx, gw = f(x, w)
        assert gx.shape == shape and np.array_equal(gw, np.zeros((5, 3)))
        return
    check_grad(lambda a, b: (T.tanh(T.dot(a, b)) ** 2).sum(), [x, w],
               reference=lambda a, b: (np.tanh(a @ b) ** 2).sum())


def test_gradient_of_a_batched_dot_is_two_matrix_products():
    x, w = T.tensor3("x"), T.dmatrix("w")
    f = theano.function([x, w], T.grad((T.dot(x, w) ** 2).sum(), [x, w]))
    # No rank-4 tensor (the broadcast products of the old gradient).
    assert "tensor<?x?x?x?xf64>" not in f.ir
    assert "tensor.collapse_shape" in f.ir
    xv, wv = np.ones((6, 4, 5)), np.arange(15.).reshape(5, 3) / 10
    dy = 2 * (xv @ wv)
    gx, gw = f(xv, wv)
    np.testing.assert_allclose(gw, xv.reshape(-1, 5).T @ dy.reshape(-1, 3), rtol=1e-12)
    np.testing.assert_allclose(gx, dy @ wv.T, rtol=1e-12)


def test_gradient_of_a_batched_dot_in_a_scan_step():
    # Each step reads a matrix of a tensor3 sequence through dot(x_t, W), x_t
    # itself a slice of a tensor4: the step's gradient has a batched dot.
    rng = np.random.default_rng(12)
    xs, w, h0 = rng.normal(size=(4, 2, 3, 5)), rng.normal(size=(5, 3)) * 0.5, rng.normal(size=(3, 3)) * 0.1

    def cost(a, b, c):
        hs, _ = theano.scan(lambda x_t, h, W: T.tanh(T.dot(x_t, W).sum(axis=0) + h), sequences=a,
                            outputs_info=c, non_sequences=b)
        return (hs ** 2).sum()

    def reference(a, b, c):
        h, total = c, 0.0
        for x_t in a:
            h = np.tanh((x_t @ b).sum(axis=0) + h)
            total += (h ** 2).sum()
        return total

    check_grad(cost, [xs, w, h0], reference=reference)
