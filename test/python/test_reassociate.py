"""scan-reassociate-adds keeps results (within rounding) and lets the bias of an
Elman RNN be computed before the loop."""

from __future__ import annotations

import numpy as np
import pytest

import mlir_scan

RNN = """
func.func @rnn(%xs: tensor<?x8xf64>, %h0: tensor<16xf64>, %W: tensor<16x16xf64>,
               %U: tensor<8x16xf64>, %b: tensor<16xf64>) -> tensor<?x16xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x8xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x8xf64>) sitsot(%h0 : tensor<16xf64>)
      nonsequences(%W, %U, %b : tensor<16x16xf64>, tensor<8x16xf64>, tensor<16xf64>) {
  ^bb0(%x: tensor<8xf64>, %h: tensor<16xf64>, %w: tensor<16x16xf64>, %u: tensor<8x16xf64>, %bb: tensor<16xf64>):
    %e = tensor.empty() : tensor<16xf64>
    %z = arith.constant 0.0 : f64
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<16xf64>) -> tensor<16xf64>
    %wh = linalg.vecmat ins(%h, %w : tensor<16xf64>, tensor<16x16xf64>) outs(%f : tensor<16xf64>) -> tensor<16xf64>
    %ux = linalg.vecmat ins(%x, %u : tensor<8xf64>, tensor<8x16xf64>) outs(%f : tensor<16xf64>) -> tensor<16xf64>
    %s = arith.addf %wh, %ux : tensor<16xf64>
    %sb = arith.addf %s, %bb : tensor<16xf64>
    %next = math.tanh %sb : tensor<16xf64>
    scan.yield %next : tensor<16xf64>
  } -> (tensor<?x16xf64>)
  return %r : tensor<?x16xf64>
}
"""

SUMS = """
func.func @sums(%xs: tensor<?xi64>, %a0: i64, %c: i64) -> tensor<?xi64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xi64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xi64>) sitsot(%a0 : i64) nonsequences(%c : i64) {
  ^bb0(%x: i64, %acc: i64, %cc: i64):
    %s = arith.addi %x, %acc : i64
    %t = arith.addi %cc, %s : i64
    scan.yield %t : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}
"""


def numpy_rnn(xs, h0, W, U, b):
    h, out = h0, []
    for x in xs:
        h = np.tanh(h @ W + x @ U + b)
        out.append(h)
    return np.array(out).reshape(len(xs), len(h0))


@pytest.mark.parametrize("optimize", [False, "scan-reassociate-adds,canonicalize", True])
@pytest.mark.parametrize("steps", [0, 1, 17])
def test_rnn_results_unchanged(optimize, steps):
    rng = np.random.default_rng(steps)
    args = (rng.standard_normal((steps, 8)), rng.standard_normal(16),
            rng.standard_normal((16, 16)) / 4, rng.standard_normal((8, 16)) / 3,
            rng.standard_normal(16))
    got = mlir_scan.compile(RNN, optimize=optimize).rnn(*args)
    np.testing.assert_allclose(got, numpy_rnn(*args), rtol=1e-12, atol=1e-13)


def test_integer_sums_are_exact_and_wrap():
    xs = np.array([2**62, 2**62, -5, 7], dtype=np.int64)
    expected, acc = [], np.int64(3)
    with np.errstate(over="ignore"):
        for x in xs:
            acc = np.int64(11) + (x + acc)
            expected.append(acc)
    for optimize in (False, "scan-reassociate-adds", True):
        got = mlir_scan.compile(SUMS, optimize=optimize).sums(xs, 3, 11)
        np.testing.assert_array_equal(got, expected)


def test_bias_leaves_the_loop():
    ir = mlir_scan.compile(RNN).ir("optimized")
    body = ir[ir.index("scan.scan"):ir.index("} -> (tensor<?x16xf64>)")]
    # Only W·h, the (pushed-out) sequence row and tanh remain in the body.
    assert body.count("arith.addf") == 1 and "linalg.vecmat" in body
    assert "nonsequences(%arg2 : tensor<16x16xf64>)" in body
