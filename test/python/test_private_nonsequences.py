"""Large non-sequences are read from a private copy (convert-scan-to-scf):
1 MiB to 64 MiB, decided at compile time for static sizes and at run time for
dynamic ones (the Theano API's inputs). The copy must never change a result,
never write into the caller's array, and be skipped outside that range.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T


def _rnn():
    xs, h0 = T.dmatrix("xs"), T.dvector("h0")
    W, b = T.dmatrix("W"), T.dvector("b")
    hs, _ = theano.scan(lambda x, h, W, b: T.tanh(T.dot(h, W) + x + b),
                        sequences=xs, outputs_info=h0, non_sequences=[W, b])
    return theano.function([xs, h0, W, b], hs)


def _numpy(xs, h0, W, b):
    out, h = [], h0
    for x in xs:
        h = np.tanh(h @ W + x + b)
        out.append(h)
    return np.array(out)


@pytest.mark.parametrize("hidden", [64, 362, 363, 1024])  # 32 KiB; just below 1 MiB; just above; 8 MiB
def test_results_do_not_depend_on_the_copy(hidden):
    fn = _rnn()
    rng = np.random.default_rng(hidden)
    args = (rng.standard_normal((5, hidden)), rng.standard_normal(hidden),
            rng.standard_normal((hidden, hidden)) / np.sqrt(hidden), rng.standard_normal(hidden))
    W_before = args[2].copy()
    np.testing.assert_allclose(fn(*args), _numpy(*args), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(args[2], W_before)


def test_the_copy_is_taken_by_size_at_run_time():
    ir = _rnn().program.ir("scf")
    # For W, the one non-sequence left in the loop (scan-optimize computes
    # `x + b` for all steps before it): a buffer of all its rows or none,
    # filled when the sizes are in range, and the loop reads the one picked.
    assert ir.count("bufferization.to_buffer") == 1
    assert re.search(r"arith\.select %\w+, %alloc\w*, %\w+ : memref<\?x\?xf64>", ir), ir
    assert "1048576" in ir and "67108864" in ir


_STATIC_RNN = """
func.func @rnn(%xs: tensor<STEPSx512xf64>, %h0: tensor<512xf64>, %w: tensor<512x512xf64>)
    -> tensor<STEPSx512xf64> {
  %hs = scan.scan steps(%n) sequences(%xs : tensor<STEPSx512xf64>) sitsot(%h0 : tensor<512xf64>)
      nonsequences(%w : tensor<512x512xf64>) {
  ^bb0(%x: tensor<512xf64>, %h: tensor<512xf64>, %ww: tensor<512x512xf64>):
    %z = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<512xf64>
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<512xf64>) -> tensor<512xf64>
    %a = linalg.vecmat ins(%h, %ww : tensor<512xf64>, tensor<512x512xf64>) outs(%f : tensor<512xf64>) -> tensor<512xf64>
    %s = arith.addf %a, %x : tensor<512xf64>
    %t = math.tanh %s : tensor<512xf64>
    scan.yield %t : tensor<512xf64>
  } -> (tensor<STEPSx512xf64>)
  return %hs : tensor<STEPSx512xf64>
}
"""


@pytest.mark.parametrize("steps, copied", [(1000, True), (256, True), (255, False), (2, False)])
def test_no_copy_larger_than_twice_the_outputs(steps, copied):
    # W is 2 MiB; the states are steps x 4 KiB: a copy is made when it is
    # at most twice their size (decided at compile time for static sizes).
    source = _STATIC_RNN.replace("STEPS", str(steps)).replace(
        "%hs = scan.scan", f"%n = arith.constant {steps} : index\n  %hs = scan.scan")
    program = theano.compile(source)
    assert ("alloc_tensor() copy(%arg2)" in program.ir("scf")) is copied
    rng = np.random.default_rng(steps)
    xs, h0 = rng.standard_normal((steps, 512)), rng.standard_normal(512)
    w = rng.standard_normal((512, 512)) / np.sqrt(512)
    want, h = [], h0
    for x in xs:
        h = np.tanh(h @ w + x)
        want.append(h)
    np.testing.assert_allclose(program.rnn(xs, h0, w), np.array(want), rtol=1e-12, atol=1e-12)
