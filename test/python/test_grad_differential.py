"""Differential testing of gradients through scans: random programs, four ways.

Each random program is a recurrence written with the Theano API as real
models write them (an RNN's ``tanh(dot(x_t, W) + dot(h_tm1, U) + b)``, an
RNN-RBM's ``dot(u_tm1, Wuv)`` NITSOT): its sequence is *computed* (``dot``,
``reshape``, a transpose, slices with steps, concatenations, of inputs), its
states start from inputs, constants or expressions, its NITSOTs read the
previous state, its weights are used through ``dot`` on both sides, and it
runs from 0 to a few hundred steps, the edges of the lowering's blocks of 64
steps included. Its cost and the gradient with respect to every input are
compiled into one function, and

* the gradient is compared with central finite differences of the compiled
  cost (every entry of small inputs, random directions of large ones);
* the emitted IR (cost and gradients) is run by the reference interpreter and
  compiled with every optional lowering feature off, and both must agree
  with the function's own program (``threeway.py``); the step counts include
  the edges of the blocks of steps (a test below also runs every block edge
  with blocks of 3 steps).

The two wrong-gradient families of issue 23 (a sequence computed by ``dot`` or
``reshape``; a NITSOT reading a state that starts from a constant) were both
``memref.load`` of a reversed view miscompiled by LLVM 22.1's lowering (``nuw``
address arithmetic with a negative stride); both are among these programs.
``GRAD_DIFF_EXAMPLES`` sets how many random programs run (default 20).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlir_scan as theano
from mlir_scan import reference
from mlir_scan import tensor as T

from gradcheck import COUNT, assert_close, numeric_grad
from threeway import PLAIN, SMALL_BLOCKS, ThreeWay, check_three_ways, ir_arguments

SETTINGS = settings(max_examples=int(os.environ.get("GRAD_DIFF_EXAMPLES", "20")), deadline=None,
                    derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Step counts where the lowering's blocks of 64 steps start and end.
EDGE_STEPS = [0, 1, 2, 3, 63, 64, 65, 127, 128, 129, 191, 192, 193, 300]
#: How each program's sequence is produced from its inputs.
PRODUCERS = ["input", "dot", "dot_eye", "reshape", "transpose", "slice", "reversed", "strided", "concat_rows",
             "concat_cols", "scaled", "dot_of_transpose"]
#: How a state starts.
STARTS = ["input", "zeros", "constant", "expression"]


@st.composite
def programs(draw, go_backwards: bool | None = None):
    """The description of one random recurrence (everything `build` needs);
    `go_backwards` fixes the direction of its scan."""
    return dict(
        steps=draw(st.one_of(st.sampled_from(EDGE_STEPS), st.integers(0, 300))),
        width=draw(st.integers(2, 4)),           # of the sequence's rows
        state=draw(st.integers(2, 4)),           # of the state
        producer=draw(st.sampled_from(PRODUCERS)),
        start=draw(st.sampled_from(STARTS)),
        # A NITSOT computed from the previous state, by a weight on its right
        # (dot(h_tm1, U2)) or on its left (dot(V, h_tm1)), or none.
        nitsot=draw(st.sampled_from(["none", "right", "left"])),
        left_weight=draw(st.booleans()),        # the state update also reads dot(V, h_tm1)
        mitsot=draw(st.booleans()),              # a second state with taps [-2, -1]
        explicit_nonseqs=draw(st.booleans()),    # weights as non_sequences, or read from the closure
        go_backwards=draw(st.booleans()) if go_backwards is None else go_backwards,
        last_only=draw(st.booleans()),           # the cost reads h[-1] only (scan-save-mem)
        mode=draw(st.sampled_from([None, None, "FAST_COMPILE"])),
        seed=draw(st.integers(0, 2 ** 16)),
    )


def _sequence(spec, rng):
    """(symbolic inputs, their values, the computed sequence of `steps` rows)."""
    n, d = spec["steps"], spec["width"]
    kind = spec["producer"]
    if kind == "input":
        x = T.dmatrix("x")
        return [x], [rng.normal(size=(n, d))], x
    if kind in ("dot", "dot_of_transpose"):
        x, m = T.dmatrix("x"), T.dmatrix("m")
        if kind == "dot":
            return [x, m], [rng.normal(size=(n, 3)), rng.normal(size=(3, d)) * 0.5], T.dot(x, m)
        return [x, m], [rng.normal(size=(3, n)), rng.normal(size=(3, d)) * 0.5], T.dot(x.T, m)
    if kind == "dot_eye":
        x = T.dmatrix("x")
        return [x], [rng.normal(size=(n, d))], T.dot(x, T.eye(d))
    if kind == "reshape":
        v = T.dvector("v")  # an embedding lookup's flat rows, reshaped
        return [v], [rng.normal(size=n * d)], v.reshape((-1, d))
    if kind == "transpose":
        x = T.dmatrix("x")
        return [x], [rng.normal(size=(d, n))], x.T
    if kind == "slice":
        x = T.dmatrix("x")
        return [x], [rng.normal(size=(n + 3, d))], x[2:-1]
    if kind == "reversed":
        x = T.dmatrix("x")
        return [x], [rng.normal(size=(n, d))], x[::-1]
    if kind == "strided":
        x = T.dmatrix("x")
        return [x], [rng.normal(size=(2 * n, d))], x[1::2]
    if kind == "concat_rows":
        a, b = T.dmatrix("a"), T.dmatrix("b")
        k = n // 3
        return [a, b], [rng.normal(size=(k, d)), rng.normal(size=(n - k, d))], T.concatenate([a, b], axis=0)
    if kind == "concat_cols":
        a, b = T.dmatrix("a"), T.dmatrix("b")
        return [a, b], [rng.normal(size=(n, 1)), rng.normal(size=(n, d - 1))], T.concatenate([a, b], axis=1)
    assert kind == "scaled"
    x = T.dmatrix("x")
    return [x], [rng.normal(size=(n, d))], x * 0.5 + 0.1


def _start(spec, rng, shape, name):
    """(inputs, values, the initial state) of a state of `shape`."""
    kind = spec["start"]
    if kind == "input":
        v = T.dvector(name) if len(shape) == 1 else T.dmatrix(name)
        return [v], [rng.normal(size=shape) * 0.5], v
    if kind == "zeros":
        return [], [], T.zeros(shape)
    if kind == "constant":
        return [], [], T.constant(rng.normal(size=shape) * 0.5)
    c = T.dvector(name)  # an expression of an input, as h0 = tanh(dot(c, P))
    p = T.dmatrix(name + "_p")
    start = T.tanh(T.dot(c, p))
    if len(shape) == 2:
        start = T.stack([start, -start])
    return [c, p], [rng.normal(size=3), rng.normal(size=(3, shape[-1])) * 0.5], start


def build(spec):
    """The Theano graph of `spec`: (inputs, values, cost)."""
    rng = np.random.RandomState(spec["seed"])
    d, h = spec["width"], spec["state"]
    inputs, values, seq = _sequence(spec, rng)
    weights = {name: (T.dmatrix(name), rng.normal(size=shape) * 0.4)
               for name, shape in (("W", (d, h)), ("U", (h, h)), ("V", (h, h)), ("U2", (h, 2)),
                                   ("V2", (2, h)), ("Q", (h, h)))}
    b = T.dvector("b")
    s_in, s_val, h0 = _start(spec, rng, (h,), "h0")
    inputs += s_in
    values += s_val
    outputs_info = [h0]
    if spec["mitsot"]:
        m_in, m_val, m0 = _start(spec, rng, (2, h), "m0")
        inputs += m_in
        values += m_val
        outputs_info.append(dict(initial=m0, taps=[-2, -1]))
    if spec["nitsot"] != "none":
        outputs_info.append(None)
    W, U, V, U2, V2, Q = (weights[k][0] for k in ("W", "U", "V", "U2", "V2", "Q"))

    def step(x_t, h_tm1, *rest):
        rest = list(rest)
        pre = T.dot(x_t, W) + T.dot(h_tm1, U) + b
        if spec["left_weight"]:
            pre = pre + T.dot(V, h_tm1)
        outs = []
        if spec["mitsot"]:
            m_tm2, m_tm1 = rest[0], rest[1]
            pre = pre + 0.5 * m_tm2
            h_t = T.tanh(pre)
            outs = [h_t, T.tanh(T.dot(m_tm1, Q) + 0.3 * h_t)]
        else:
            h_t = T.tanh(pre)
            outs = [h_t]
        if spec["nitsot"] == "right":
            outs.append(T.dot(h_tm1, U2))          # reads the previous state
        elif spec["nitsot"] == "left":
            outs.append(T.tanh(T.dot(V2, h_tm1)) + x_t[0])
        return outs

    used = {"W", "U", "b"} | ({"V"} if spec["left_weight"] else set()) | ({"Q"} if spec["mitsot"] else set())
    used |= {"right": {"U2"}, "left": {"V2"}, "none": set()}[spec["nitsot"]]
    names = [k for k in ("W", "U", "V", "U2", "V2", "Q") if k in used]
    nonseqs = [weights[k][0] for k in names] + [b] if spec["explicit_nonseqs"] else []
    outs, _ = theano.scan(step, sequences=seq, outputs_info=outputs_info, non_sequences=nonseqs,
                          go_backwards=spec["go_backwards"], return_list=True)
    hs = outs[0]
    cost = hs[-1].sum() * 0.7 if spec["last_only"] and spec["steps"] > 0 else (hs ** 2).sum() * 0.5 + hs.sum()
    for i, o in enumerate(outs[1:]):
        cost = cost + (o * (0.3 + i)).sum() + 0.1 * (o ** 2).sum()
    for name in names:
        inputs.append(weights[name][0])
        values.append(weights[name][1])
    inputs.append(b)
    values.append(rng.normal(size=h) * 0.1)
    return inputs, values, cost


def _check_gradient(f, values, i, got, name, rng, spec):
    """`got`, the gradient with respect to input `i`, against central
    differences of the compiled cost."""
    def cost(*vals):
        return f(*vals)[0]

    x = values[i]
    if x.size <= 24:
        want = numeric_grad(cost, values, i)
        assert_close(got, want, rtol=1e-5, atol=1e-7, what=f"d cost / d {name} ({spec})")
        return
    # Large inputs: the derivative along random directions.
    for _ in range(3):
        u = rng.normal(size=x.shape)
        eps = 1e-6
        plus = cost(*values[:i], x + eps * u, *values[i + 1:])
        minus = cost(*values[:i], x - eps * u, *values[i + 1:])
        want = (plus - minus) / (2 * eps)
        have = float(np.sum(got * u))
        assert abs(have - want) <= 1e-5 * max(1.0, abs(want)), (
            f"d cost / d {name} along a random direction: {have} != {want} ({spec})")


# Two halves of one space of programs (forward and backward scans), so that
# pytest-xdist runs them on two cores; each runs half of GRAD_DIFF_EXAMPLES.
HALF = settings(SETTINGS, max_examples=max(1, SETTINGS.max_examples // 2))


@HALF
@given(programs(go_backwards=False))
def test_random_forward_scan_gradients_four_ways(spec):
    _four_ways(spec)


@HALF
@given(programs(go_backwards=True))
def test_random_backward_scan_gradients_four_ways(spec):
    _four_ways(spec)


def _four_ways(spec):
    inputs, values, cost = build(spec)
    grads = T.grad(cost, inputs)
    f = theano.function(inputs, [cost] + list(grads), mode=spec["mode"])
    gradients = check_three_ways(f, values, variants={"plain": PLAIN}, what=str(spec))["compiled"][1:]
    rng = np.random.RandomState(spec["seed"] + 1)
    for i, (v, got) in enumerate(zip(inputs, gradients)):
        _check_gradient(f, values, i, got, v.name, rng, spec)
        COUNT["checks"] += 1


# The two reproducers of issue 23, as their reporter wrote them, at every step
# count of 0..300 (against finite differences and the closed form).


def _dot_sequence_gradient():
    m = T.matrix("m")
    W = theano.shared(np.ones((4, 2)))
    h0 = theano.shared(np.zeros(2))
    seq = T.dot(m, T.eye(4))
    h, _ = theano.scan(lambda x_t, h: T.tanh(T.dot(x_t, W) + h), sequences=seq, outputs_info=h0)
    return theano.function([m], [h.sum(), T.grad(h.sum(), W)]), W


def test_a_sequence_computed_by_dot_has_the_right_gradient_at_every_step_count():
    f, W = _dot_sequence_gradient()
    got = f(np.arange(16.).reshape(4, 4) / 10)[1][:, 0]
    np.testing.assert_allclose(got, [0.00688992, 0.08092454, 0.15495916, 0.22899378], rtol=1e-6)
    rng = np.random.default_rng(0)
    for n in list(range(0, 70)) + [127, 128, 129, 200, 255, 256, 257, 300]:
        m = rng.normal(size=(n, 4)) * 0.3
        dw = f(m)[1]

        def cost(w):
            W.set_value(w)
            return f(m)[0]

        w0 = np.ones((4, 2))
        want = numeric_grad(cost, [w0], 0)
        W.set_value(w0)
        assert_close(dw, want, rtol=1e-5, what=f"{n} steps")


def test_a_nitsot_reading_a_state_from_a_constant_has_the_right_gradient_at_every_step_count():
    x = T.matrix("x")
    U = theano.shared(np.ones((3, 2)))
    (u, b), _ = theano.scan(lambda x_t, u_tm1: [x_t + u_tm1, T.dot(u_tm1, U)],
                            sequences=x, outputs_info=[T.zeros((3,)), None])
    for mode in (None, "FAST_COMPILE"):
        f = theano.function([x], T.grad(b.sum(), U), mode=mode)
        for n in range(0, 301):
            # u_t = (t + 1) * ones: d sum(b) / dU = sum_t u_{t-1} = n (n - 1) / 2 everywhere.
            np.testing.assert_array_equal(f(np.ones((n, 3))), np.full((3, 2), n * (n - 1) / 2), err_msg=f"{n} steps")


def test_the_reproducers_ir_runs_in_the_reference_interpreter():
    # It rejected the reversed view (a stride of -1) that feeds the gradient.
    f, W = _dot_sequence_gradient()
    m = np.arange(16.).reshape(4, 4) / 10
    got = reference.run(f.ir, "f", *ir_arguments(f, [m]))
    np.testing.assert_allclose(got[1], f(m)[1], rtol=1e-12)


@pytest.mark.parametrize("key", [np.s_[::-1], np.s_[3:0:-1], np.s_[::-2], np.s_[-2::-3], np.s_[5:5:-1]])
def test_the_reference_interpreter_reads_reversed_slices(key):
    x = T.dmatrix("x")
    f = theano.function([x], x[key] * 2)
    value = np.arange(24.).reshape(8, 3)
    np.testing.assert_array_equal(reference.run(f.ir, "f", value), value[key] * 2)
    np.testing.assert_array_equal(f(value), value[key] * 2)


def test_block_edges_with_small_blocks():
    # An RNN over a computed sequence whose gradient's sums run in blocks:
    # with blocks of 3 steps, every step count below is a block edge or next to one.
    spec = dict(steps=0, width=3, state=3, producer="dot", start="zeros", nitsot="right", left_weight=True,
                mitsot=False, explicit_nonseqs=True, go_backwards=False, last_only=False, mode=None, seed=7)
    inputs, values, cost = build(spec)
    f = theano.function(inputs, [cost] + list(T.grad(cost, inputs)))
    ways = ThreeWay(f, {"small-blocks": SMALL_BLOCKS, "plain": PLAIN})
    rng = np.random.RandomState(3)
    for n in range(0, 11):
        vals = [rng.normal(size=(n, 3)) if i == 0 else v for i, v in enumerate(values)]
        ways.check(vals, what=f"{n} steps")
