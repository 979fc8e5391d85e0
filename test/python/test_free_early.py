"""scan-free-buffers-early: a buffer is freed after its last use, not when its
function returns. Moving a deallocation must never change a result (compiled
with and without the pass, the results are bitwise equal), and on the gradient
of an RNN the forward loop's temporaries are freed before the backward loop
starts (their memory is what the backward loop's stacked deltas reuse).
"""

from __future__ import annotations

import functools
import sys
from collections import OrderedDict

import numpy as np
import pytest
from mlir import ir

import mlir_scan
import mlir_scan as theano
from mlir_scan import runtime
from mlir_scan import tensor as T
import mlir_scan.builder.function  # noqa: F401  (the module, not the function it exports)
builder_function = sys.modules["mlir_scan.builder.function"]


def _without_the_pass(monkeypatch) -> None:
    """Programs compiled from now on free their buffers at the end of their
    blocks (and are not taken from the builder's cache of compiled modules)."""
    monkeypatch.setattr(builder_function, "compile_mlir", functools.partial(mlir_scan.compile, free_early=False))
    monkeypatch.setattr(builder_function, "_CACHE", OrderedDict())


def _rnn_grad():
    xs, h0 = T.dmatrix("xs"), T.dvector("h0")
    W, U, b = T.dmatrix("W"), T.dmatrix("U"), T.dvector("b")
    hs, _ = theano.scan(lambda x, h, W, U, b: T.tanh(T.dot(h, W) + T.dot(x, U) + b),
                        sequences=xs, outputs_info=h0, non_sequences=[W, U, b])
    fn = theano.function([xs, h0, W, U, b], [hs, T.grad(hs.sum(), W), T.grad(hs[-1].sum(), U)])
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((23, 5)), rng.standard_normal(7), rng.standard_normal((7, 7)) / 3,
            rng.standard_normal((5, 7)) / 3, rng.standard_normal(7) / 3)
    return fn, args


def _until():
    # An `until` scan (its output buffer grows, owned dynamically) reading a
    # temporary, with work after it.
    xs, limit = T.dvector("xs"), T.dscalar("limit")
    values, updates = theano.scan(lambda x, p, m: (p * 2 + x, theano.scan_module.until(p * 2 > m)),
                                  sequences=T.exp(xs), outputs_info=T.constant(np.float64(1)),
                                  non_sequences=limit)
    fn = theano.function([xs, limit], values * 3 + values.sum(), updates=updates)
    return fn, (np.linspace(0.0, 1.0, 300), np.float64(1e9))


def _nested_and_taps():
    # A nested scan in the step and a MITSOT with two taps.
    seq = T.dmatrix("seq")
    fib0 = T.dvector("fib0")

    def step(row, a, b):
        inner, _ = theano.scan(lambda x, acc: acc + x * x, sequences=row, outputs_info=T.constant(0.0))
        return a + b + inner[-1]

    out, _ = theano.scan(step, sequences=seq, outputs_info=dict(initial=fib0, taps=[-2, -1]))
    cost = out.sum()
    fn = theano.function([seq, fib0], [out, T.grad(cost, seq)])
    rng = np.random.default_rng(5)
    return fn, (rng.standard_normal((9, 4)), rng.standard_normal(2))


PROGRAMS = {"rnn_grad": _rnn_grad, "until": _until, "nested_and_taps": _nested_and_taps}


@pytest.mark.parametrize("build", list(PROGRAMS.values()), ids=list(PROGRAMS))
def test_results_are_the_same_without_the_pass(build, monkeypatch):
    fn, args = build()
    assert "scan-free-buffers-early" not in runtime._BUFFERIZE  # the default: on
    with_pass = fn(*args)
    _without_the_pass(monkeypatch)
    fn_without, _ = build()
    assert fn_without.program is not fn.program
    assert fn_without.program.ir("bufferized") != fn.program.ir("bufferized")
    without = fn_without(*args)
    for a, b in zip(with_pass if isinstance(with_pass, list) else [with_pass],
                    without if isinstance(without, list) else [without]):
        np.testing.assert_array_equal(a, b)


def _top_level(text: str) -> list[str]:
    """The names of the ops of function @f's body, in order."""
    with ir.Context():
        module = ir.Module.parse(text)
        for op in module.body.operations:
            if op.operation.name == "func.func" and op.attributes["sym_name"].value == "f":
                return [inner.operation.name for inner in op.regions[0].blocks[0].operations]
    raise AssertionError("no @f")


def test_the_forward_temporaries_are_freed_before_the_backward_loop(monkeypatch):
    fn, _ = _rnn_grad()
    ops = _top_level(fn.program.ir("bufferized"))
    loops = [i for i, name in enumerate(ops) if name == "scf.for"]
    assert len(loops) >= 2  # the forward and the backward loop
    freed_between = [name for name in ops[loops[0] + 1:loops[-1]] if name == "memref.dealloc"]
    assert freed_between, "nothing is freed between the forward and the backward loop"

    # Without the pass, every dealloc waits for the end of the function.
    _without_the_pass(monkeypatch)
    fn_without, _ = _rnn_grad()
    ops = _top_level(fn_without.program.ir("bufferized"))
    loops = [i for i, name in enumerate(ops) if name == "scf.for"]
    assert "memref.dealloc" not in ops[:loops[-1]]
