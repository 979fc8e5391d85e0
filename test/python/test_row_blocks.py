"""Steps in blocks (convert-scan-to-scf, ``block-steps``): a sequence's row-wise
producer computed a block of rows at a time inside the loop, and the row sums of
a nitsot (the pushed-out ``dW`` of an RNN's gradient) accumulated block by block.
Both must leave every result unchanged: each program here is compiled with the
default lowering and with ``block-steps=0`` (one loop, the producer and the
sums around it) and the two are compared, for step counts around the block
size (64). The memory they save is measured by ``bench/run.py --memory``.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mlir_scan
import mlir_scan as theano
from mlir_scan import runtime
from mlir_scan import tensor as T

_ONE_LOOP = "convert-scan-to-scf{block-steps=0},canonicalize,cse"
_STEPS = [0, 1, 2, 63, 64, 65, 130, 200]


@pytest.fixture
def build(monkeypatch):
    """`build(make, blocks)` calls `make()` (which compiles) with the lowering
    in blocks (the default) or in one loop."""
    function_cache = importlib.import_module("mlir_scan.builder.function")._CACHE

    def _build(make, blocks: bool):
        monkeypatch.setattr(runtime, "_TO_SCF", runtime._TO_SCF if blocks else _ONE_LOOP)
        function_cache.clear()
        try:
            return make()
        finally:
            monkeypatch.undo()
            function_cache.clear()

    return _build


def _rnn_grad(dtype: str):
    xs, h0 = T.matrix("xs", dtype=dtype), T.vector("h0", dtype=dtype)
    W, U, b = T.matrix("W", dtype=dtype), T.matrix("U", dtype=dtype), T.vector("b", dtype=dtype)
    hs, _ = theano.scan(lambda x, h, W, U, b: T.tanh(T.dot(h, W) + T.dot(x, U) + b),
                        sequences=xs, outputs_info=h0, non_sequences=[W, U, b])
    cost = (hs ** 2).sum()
    return theano.function([xs, h0, W, U, b], [hs, *T.grad(cost, [W, U, b, h0])])


def _inputs(steps: int, hidden: int, inputs: int, dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((steps, inputs)).astype(dtype),
            rng.standard_normal(hidden).astype(dtype),
            (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(dtype),
            (rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)).astype(dtype),
            rng.standard_normal(hidden).astype(dtype))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rnn_and_its_gradient_are_unchanged(build, dtype):
    blocks, one_loop = build(lambda: _rnn_grad(dtype), True), build(lambda: _rnn_grad(dtype), False)
    # The forward's `x U + b` and the gradient's stacked deltas are what the
    # blocks are for: both loops must run in blocks.
    assert len(re.findall(r"scf\.for .* step %c64", blocks.program.ir("scf"))) == 2
    assert "step %c64" not in one_loop.program.ir("scf")
    tol = 1e-12 if dtype == "float64" else 2e-5
    for steps in _STEPS:
        args = _inputs(steps, 24, 5, dtype, seed=steps)
        for got, want in zip(blocks(*args), one_loop(*args)):
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{steps} steps")


def test_sequence_taps_read_the_right_rows_of_each_block(build):
    # Past and future taps: a block needs the rows of its steps plus the
    # taps' window, from a product the scan alone reads.
    def make():
        X, U = T.dmatrix("X"), T.dmatrix("U")
        seq = T.tanh(T.dot(X, U))
        out, _ = theano.scan(lambda a, b, c: a - 2 * b + c * c,
                             sequences=dict(input=seq, taps=[-3, 0, 2]))
        return theano.function([X, U], out)

    blocks, one_loop = build(make, True), build(make, False)
    assert "step %c64" in blocks.program.ir("scf")
    rng = np.random.default_rng(1)
    for rows in [5, 6, 66, 67, 68, 69, 133, 200]:
        X, U = rng.standard_normal((rows, 4)), rng.standard_normal((4, 7))
        s = np.tanh(X @ U)
        want = s[:-5] - 2 * s[3:-2] + s[5:] ** 2
        np.testing.assert_allclose(blocks(X, U), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(one_loop(X, U), want, rtol=1e-12, atol=1e-12)


_ROW_SUMS = (Path(__file__).resolve().parents[1] / "Conversion" / "convert-scan-to-scf-blocks.mlir").read_text()


def _row_sums_module() -> str:
    """The lit test's @row_sums (two chained contractions over the rows of a
    nitsot, as an RNN's gradient builds dW), alone, in float64."""
    chunk = next(c for c in _ROW_SUMS.split("// -----") if "@row_sums" in c)
    return "\n".join(line for line in chunk.splitlines() if not line.startswith("//")).replace("f32", "f64")


def test_row_sums_of_hand_written_ir(build):
    blocks = build(lambda: mlir_scan.compile(_row_sums_module()), True).row_sums
    one_loop = build(lambda: mlir_scan.compile(_row_sums_module()), False).row_sums
    rng = np.random.default_rng(2)
    for n in [1, 2, 63, 64, 65, 129, 200]:
        hs, w, h0 = rng.standard_normal((n + 3, 6)), rng.standard_normal((6, 5)), rng.standard_normal((1, 6))
        d = hs[::-1][:n] @ w  # go_backwards: from the last row of the sequence
        want = hs[:n - 1].T @ d[1:] + h0.T @ d[:1]
        np.testing.assert_allclose(blocks(hs, w, h0, n), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(one_loop(hs, w, h0, n), want, rtol=1e-12, atol=1e-12)


def test_mismatched_sizes_are_errors_with_blocks_too(build):
    # h0 with 7 columns where the rows have 6: the contraction's own check
    # fails after the loop; the blocks in the loop must not read or write
    # out of bounds before it (they skip a block whose sizes disagree).
    blocks = build(lambda: mlir_scan.compile(_row_sums_module()), True).row_sums
    one_loop = build(lambda: mlir_scan.compile(_row_sums_module()), False).row_sums
    rng = np.random.default_rng(3)
    hs, w, h0 = rng.standard_normal((100, 6)), rng.standard_normal((6, 5)), rng.standard_normal((1, 7))
    errors = []
    for f in (blocks, one_loop):
        with pytest.raises(Exception) as info:
            f(hs, w, h0, 90)
        errors.append(type(info.value))
    assert errors[0] is errors[1]


# Hostile programs (a review of the lowering found each of these: wrong results,
# out-of-bounds reads, aborts). Each runs with and without blocks.

_SQUARES = """
  %d = scan.scan steps(%n) sequences(%xs : tensor<?x5xf64>) {
  ^bb0(%x: tensor<5xf64>):
    %y = arith.mulf %x, %x : tensor<5xf64>
    scan.yield %y : tensor<5xf64>
  } -> (tensor<?x5xf64>)
"""

_MAPS = """
#tn_a = affine_map<(d0, d1, d2) -> (d2, d0)>
#tn_p = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#all2 = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_map<(d0, d1) -> (d0)>
#second = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(i) -> (i)>
"""

_CONTRACT = """{indexing_maps = [MAP_A, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]}"""
_MULADD = """ {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %mul = arith.mulf %a, %b : f64
    %s = arith.addf %o, %mul : f64
    linalg.yield %s : f64
  }"""


#: `dW = partner^T d` over the n rows of `%d` (6 x 5), ending a function; the
#: partner's name replaces PARTNER.
_SUM_PARTNER_T_D = """  %da = tensor.extract_slice %d[0, 0] [%n, 5] [1, 1] : tensor<?x5xf64> to tensor<?x5xf64>
  %e = tensor.empty() : tensor<6x5xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<6x5xf64>) -> tensor<6x5xf64>
  %dw = linalg.generic CONTRACT ins(%PARTNER, %da : tensor<?x6xf64>, tensor<?x5xf64>) outs(%f : tensor<6x5xf64>) MULADD -> tensor<6x5xf64>
  return %dw : tensor<6x5xf64>
}
"""

def _both(build, source: str):
    return [build(lambda: mlir_scan.compile(_MAPS + source), blocks).f for blocks in (True, False)]


def test_sum_into_a_value_the_loop_also_reads(build):
    # dW = W + xs^T d with d[t] = xs[t] W: the sum's accumulator starts as W,
    # which every step reads (computed in the function, dynamic shapes).
    source = """
func.func @f(%xs: tensor<?x?xf64>, %w_in: tensor<?x?xf64>, %n: index) -> tensor<?x?xf64> {
  %c1 = arith.constant 1 : index
  %w = arith.mulf %w_in, %w_in : tensor<?x?xf64>
  %d = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) nonsequences(%w : tensor<?x?xf64>) {
  ^bb0(%x: tensor<?xf64>, %ww: tensor<?x?xf64>):
    %z = arith.constant 0.0 : f64
    %k1 = arith.constant 1 : index
    %k = tensor.dim %ww, %k1 : tensor<?x?xf64>
    %e = tensor.empty(%k) : tensor<?xf64>
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
    %v = linalg.vecmat ins(%x, %ww : tensor<?xf64>, tensor<?x?xf64>) outs(%f : tensor<?xf64>) -> tensor<?xf64>
    scan.yield %v : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  %cols = tensor.dim %d, %c1 : tensor<?x?xf64>
  %xcols = tensor.dim %xs, %c1 : tensor<?x?xf64>
  %xa = tensor.extract_slice %xs[0, 0] [%n, %xcols] [1, 1] : tensor<?x?xf64> to tensor<?x?xf64>
  %da = tensor.extract_slice %d[0, 0] [%n, %cols] [1, 1] : tensor<?x?xf64> to tensor<?x?xf64>
  %dw = linalg.generic CONTRACT ins(%xa, %da : tensor<?x?xf64>, tensor<?x?xf64>) outs(%w : tensor<?x?xf64>) MULADD -> tensor<?x?xf64>
  return %dw : tensor<?x?xf64>
}
""".replace("CONTRACT", _CONTRACT.replace("MAP_A", "#tn_a")).replace("MULADD", _MULADD)
    rng = np.random.default_rng(4)
    for f in _both(build, source):
        for n, rows, cols in [(65, 4, 4), (130, 6, 5), (100, 600, 512)]:
            xs, w = rng.standard_normal((n, rows)) * 0.1, rng.standard_normal((rows, cols))
            w2 = w * w
            np.testing.assert_allclose(f(xs, w, n), w2 + xs.T @ (xs @ w2), rtol=1e-10, atol=1e-10)


def test_out_of_bounds_slices_are_errors_before_any_read(build):
    # A column offset of the stacked rows, and a row offset of the other
    # operand, of the caller's choice: the slices' checks fail (ValueError),
    # the blocks read nothing out of bounds first (a huge offset crashed).
    columns = """
func.func @f(%xs: tensor<?x5xf64>, %p: tensor<6x?xf64>, %n: index, %off: index) -> tensor<6x3xf64> {
  %zero = arith.constant 0.0 : f64
SQUARES
  %dm = tensor.extract_slice %d[0, %off] [%n, 3] [1, 1] : tensor<?x5xf64> to tensor<?x3xf64>
  %e = tensor.empty() : tensor<6x3xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<6x3xf64>) -> tensor<6x3xf64>
  %dw = linalg.generic CONTRACT ins(%p, %dm : tensor<6x?xf64>, tensor<?x3xf64>) outs(%f : tensor<6x3xf64>) MULADD -> tensor<6x3xf64>
  return %dw : tensor<6x3xf64>
}
""".replace("CONTRACT", _CONTRACT.replace("MAP_A", "#tn_p"))
    rows = """
func.func @f(%xs: tensor<?x5xf64>, %p: tensor<?x6xf64>, %n: index, %off: index) -> tensor<6x5xf64> {
  %zero = arith.constant 0.0 : f64
SQUARES
  %pa = tensor.extract_slice %p[%off, 0] [%n, 6] [1, 1] : tensor<?x6xf64> to tensor<?x6xf64>
ROWSUM_PA
""".replace("ROWSUM_PA\n", _SUM_PARTNER_T_D.replace("PARTNER", "pa")).replace("CONTRACT", _CONTRACT.replace("MAP_A", "#tn_a"))
    rng = np.random.default_rng(5)
    n = 100
    xs = rng.standard_normal((n, 5))
    for f in _both(build, columns.replace("SQUARES", _SQUARES).replace("MULADD", _MULADD)):
        p = rng.standard_normal((6, n))
        np.testing.assert_allclose(f(xs, p, n, 2), p @ (xs ** 2)[:, 2:5], rtol=1e-12, atol=1e-12)
        for off in (3, 10 ** 11):
            with pytest.raises(ValueError, match="out of bounds"):
                f(xs, p, n, off)
    for f in _both(build, rows.replace("SQUARES", _SQUARES).replace("MULADD", _MULADD)):
        p = rng.standard_normal((n, 6))
        np.testing.assert_allclose(f(xs, p, n, 0), p.T @ xs ** 2, rtol=1e-12, atol=1e-12)
        for off in (1, 10 ** 13):
            with pytest.raises(ValueError, match="out of bounds"):
                f(xs, p, n, off)


def test_a_reduction_loop_that_indexes_the_output_is_not_a_row_sum(build):
    # out[r] = sum_c d[r, c] with both loops marked "reduction": the row loop
    # indexes the output, so the rows cannot be summed block by block.
    source = """
func.func @f(%xs: tensor<?x5xf64>, %n: index) -> tensor<?xf64> {
  %zero = arith.constant 0.0 : f64
SQUARES
  %dm = tensor.extract_slice %d[0, 0] [%n, 5] [1, 1] : tensor<?x5xf64> to tensor<?x5xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %s = linalg.generic {indexing_maps = [#all2, #first], iterator_types = ["reduction", "reduction"]} ins(%dm : tensor<?x5xf64>) outs(%f : tensor<?xf64>) {
  ^bb0(%a: f64, %o: f64):
    %q = arith.addf %o, %a : f64
    linalg.yield %q : f64
  } -> tensor<?xf64>
  return %s : tensor<?xf64>
}
""".replace("SQUARES", _SQUARES)
    rng = np.random.default_rng(6)
    for f in _both(build, source):
        for n in (3, 65, 130):
            xs = rng.standard_normal((n, 5))
            np.testing.assert_allclose(f(xs, n), (xs ** 2).sum(axis=1), rtol=1e-12, atol=1e-12)


def test_out_of_range_dim_index_of_the_rows_compiles(build):
    # `tensor.dim %d, 7` of a rank-2 value (the verifier accepts a constant
    # index out of range): the analysis aborted on it.
    source = """
func.func @f(%xs: tensor<?x5xf64>, %n: index) -> (tensor<5xf64>, index) {
  %zero = arith.constant 0.0 : f64
  %c7 = arith.constant 7 : index
SQUARES
  %bad = tensor.dim %d, %c7 : tensor<?x5xf64>
  %da = tensor.extract_slice %d[0, 0] [%n, 5] [1, 1] : tensor<?x5xf64> to tensor<?x5xf64>
  %e = tensor.empty() : tensor<5xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<5xf64>) -> tensor<5xf64>
  %s = linalg.generic {indexing_maps = [#all2, #second], iterator_types = ["reduction", "parallel"]} ins(%da : tensor<?x5xf64>) outs(%f : tensor<5xf64>) {
  ^bb0(%a: f64, %o: f64):
    %q = arith.addf %o, %a : f64
    linalg.yield %q : f64
  } -> tensor<5xf64>
  return %s, %bad : tensor<5xf64>, index
}
""".replace("SQUARES", _SQUARES)
    for blocks in (True, False):
        assert build(lambda: mlir_scan.compile(_MAPS + source), blocks).f is not None


@pytest.mark.parametrize("keep", [1, 2])
@pytest.mark.parametrize("size", [5, 100_000])
def test_a_state_row_of_the_wrong_size_is_an_error_before_it_is_written(build, keep, size):
    # The step yields x + x (x a non-sequence of `size` elements) for a state
    # of 3: the row would be computed into the 3-element output row.
    source = f"""
func.func @f(%acc0: tensor<?xf64>, %x: tensor<?xf64>, %n: index) -> tensor<{keep}x?xf64> {{
  %r = scan.scan steps(%n) sitsot(%acc0 : tensor<?xf64>) nonsequences(%x : tensor<?xf64>) keep [{keep}] {{
  ^bb0(%acc: tensor<?xf64>, %xx: tensor<?xf64>):
    %c0 = arith.constant 0 : index
    %k = tensor.dim %xx, %c0 : tensor<?xf64>
    %e = tensor.empty(%k) : tensor<?xf64>
    %s = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel"]}}
        ins(%xx : tensor<?xf64>) outs(%e : tensor<?xf64>) {{
    ^bb0(%a: f64, %c: f64):
      %t = arith.addf %a, %a : f64
      linalg.yield %t : f64
    }} -> tensor<?xf64>
    scan.yield %s : tensor<?xf64>
  }} -> (tensor<{keep}x?xf64>)
  return %r : tensor<{keep}x?xf64>
}}
"""
    for f in _both(build, source):
        with pytest.raises(ValueError, match="yielded a row of size"):
            f(np.zeros(3), np.arange(1.0, size + 1), 2)
        np.testing.assert_array_equal(f(np.zeros(3), np.arange(1.0, 4.0), 2)[-1], [2.0, 4.0, 6.0])


def test_an_operand_computed_after_the_scan_runs_only_on_agreeing_sizes(build):
    # dW = (P[0:n] + Q)^T d: the sum P + Q moves before the loop, ahead of
    # the check of its operands' sizes; with Q of 1 row it must not run
    # (it read 2e6 rows past Q), and the check after the loop raises.
    source = """
#id2 = affine_map<(i, j) -> (i, j)>
func.func @f(%xs: tensor<?x5xf64>, %p: tensor<?x6xf64>, %q: tensor<?x6xf64>, %n: index) -> tensor<6x5xf64> {
  %zero = arith.constant 0.0 : f64
SQUARES
  %pa = tensor.extract_slice %p[0, 0] [%n, 6] [1, 1] : tensor<?x6xf64> to tensor<?x6xf64>
  %e2 = tensor.empty(%n) : tensor<?x6xf64>
  %pq = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%pa, %q : tensor<?x6xf64>, tensor<?x6xf64>) outs(%e2 : tensor<?x6xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %s = arith.addf %a, %b : f64
    linalg.yield %s : f64
  } -> tensor<?x6xf64>
ROWSUM_PQ
""".replace("ROWSUM_PQ\n", _SUM_PARTNER_T_D.replace("PARTNER", "pq")).replace("SQUARES", _SQUARES).replace("CONTRACT", _CONTRACT.replace("MAP_A", "#tn_a")).replace("MULADD", _MULADD)
    rng = np.random.default_rng(7)
    for f in _both(build, source):
        for n in (100, 2_000_000):
            xs, p = rng.standard_normal((n, 5)), rng.standard_normal((n, 6))
            q = rng.standard_normal((n, 6))
            np.testing.assert_allclose(f(xs, p, q, n), (p + q).T @ xs ** 2, rtol=1e-9, atol=1e-9)
            with pytest.raises(ValueError, match="incompatible"):
                f(xs, p, q[:1], n)


def test_one_defect_raises_the_error_of_the_original_order(build):
    # The step reads W[k] (its check: IndexError) and the row sum reads
    # P[k:k+n]: with k too large, the step's check comes first, as without
    # blocks; the checks after the scan stay after it.
    source = """
func.func @f(%xs: tensor<?x5xf64>, %w: tensor<?xf64>, %p: tensor<?x6xf64>, %n: index, %k: index) -> tensor<6x5xf64> {
  %zero = arith.constant 0.0 : f64
  %d = scan.scan steps(%n) sequences(%xs : tensor<?x5xf64>) nonsequences(%w, %k : tensor<?xf64>, index) {
  ^bb0(%x: tensor<5xf64>, %ww: tensor<?xf64>, %kk: index):
    %c0 = arith.constant 0 : index
    %len = tensor.dim %ww, %c0 : tensor<?xf64>
    %bad = arith.cmpi uge, %kk, %len : index
    scan.check %bad code 101 id 0 (%kk, %len : index, index)
    %s = tensor.extract %ww[%kk] : tensor<?xf64>
    %e = tensor.empty() : tensor<5xf64>
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<5xf64>) outs(%e : tensor<5xf64>) {
    ^bb0(%a: f64, %o: f64):
      %m = arith.mulf %a, %s : f64
      linalg.yield %m : f64
    } -> tensor<5xf64>
    scan.yield %y : tensor<5xf64>
  } -> (tensor<?x5xf64>)
  %pa = tensor.extract_slice %p[%k, 0] [%n, 6] [1, 1] : tensor<?x6xf64> to tensor<?x6xf64>
ROWSUM_PA
""".replace("ROWSUM_PA\n", _SUM_PARTNER_T_D.replace("PARTNER", "pa")).replace("CONTRACT", _CONTRACT.replace("MAP_A", "#tn_a")).replace("MULADD", _MULADD)
    rng = np.random.default_rng(8)
    n = 100
    xs, w, p = rng.standard_normal((n, 5)), rng.standard_normal(3), rng.standard_normal((n + 2, 6))
    for f in _both(build, source):
        np.testing.assert_allclose(f(xs, w, p, n, 1), p[1:n + 1].T @ (xs * w[1]), rtol=1e-12, atol=1e-12)
        with pytest.raises(IndexError):
            f(xs, w, p, n, 5)


def _static_rnn(hidden: int, inputs: int, dtype: str, last_only: bool) -> str:
    """W5's hand-written IR (`bench/workloads.py`) at static sizes: with them
    scan-push-out-seq leaves `x U + b` one `tensor.empty` of all T rows for its
    fill and its bias (the Theano API's dynamic sizes give two)."""
    t, H, I = {"float64": "f64", "float32": "f32"}[dtype], hidden, inputs
    result = f"tensor<{H}x{t}>" if last_only else f"tensor<?x{H}x{t}>"
    tail = (f"""%last = arith.subi %n, %c1 : index
      %row = tensor.extract_slice %r[%last, 0] [1, {H}] [1, 1] : tensor<?x{H}x{t}> to tensor<{H}x{t}>
      return %row : tensor<{H}x{t}>""" if last_only else f"return %r : tensor<?x{H}x{t}>")
    return f"""
    func.func @rnn(%xs: tensor<?x{I}x{t}>, %h0: tensor<{H}x{t}>, %W: tensor<{H}x{H}x{t}>,
                   %U: tensor<{I}x{H}x{t}>, %b: tensor<{H}x{t}>) -> {result} {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = tensor.dim %xs, %c0 : tensor<?x{I}x{t}>
      %r = scan.scan steps(%n) sequences(%xs : tensor<?x{I}x{t}>) sitsot(%h0 : tensor<{H}x{t}>)
          nonsequences(%W, %U, %b : tensor<{H}x{H}x{t}>, tensor<{I}x{H}x{t}>, tensor<{H}x{t}>) {{
      ^bb0(%x: tensor<{I}x{t}>, %h: tensor<{H}x{t}>, %w: tensor<{H}x{H}x{t}>,
           %u: tensor<{I}x{H}x{t}>, %bb: tensor<{H}x{t}>):
        %e = tensor.empty() : tensor<{H}x{t}>
        %z = arith.constant 0.0 : {t}
        %f = linalg.fill ins(%z : {t}) outs(%e : tensor<{H}x{t}>) -> tensor<{H}x{t}>
        %wh = linalg.vecmat ins(%h, %w : tensor<{H}x{t}>, tensor<{H}x{H}x{t}>) outs(%f : tensor<{H}x{t}>) -> tensor<{H}x{t}>
        %ux = linalg.vecmat ins(%x, %u : tensor<{I}x{t}>, tensor<{I}x{H}x{t}>) outs(%f : tensor<{H}x{t}>) -> tensor<{H}x{t}>
        %s = arith.addf %wh, %ux : tensor<{H}x{t}>
        %sb = arith.addf %s, %bb : tensor<{H}x{t}>
        %next = math.tanh %sb : tensor<{H}x{t}>
        scan.yield %next : tensor<{H}x{t}>
      }} -> (tensor<?x{H}x{t}>)
      {tail}
    }}"""


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("last_only", [False, True])
def test_static_rnn_blocks_are_unchanged(build, dtype, last_only):
    source = _static_rnn(24, 5, dtype, last_only)
    blocks = build(lambda: mlir_scan.compile(source), True).rnn
    one_loop = build(lambda: mlir_scan.compile(source), False).rnn
    tol = 1e-12 if dtype == "float64" else 2e-5
    for steps in _STEPS:
        xs, h0, W, U, b = _inputs(steps, 24, 5, dtype, seed=steps)
        h, rows = h0.astype(np.float64), []
        for x in xs:
            h = np.tanh(h @ W + x @ U + b)
            rows.append(h)
        want = np.array(rows).reshape(steps, 24)
        if last_only:
            if steps == 0:  # row -1 of no rows (scan-save-mem keeps the bounds check)
                for f in (blocks, one_loop):
                    with pytest.raises(ValueError, match="slice out of bounds along dimension 0"):
                        f(xs, h0, W, U, b)
                continue
            want = want[-1]
        got = blocks(xs, h0, W, U, b)
        np.testing.assert_allclose(got, one_loop(xs, h0, W, U, b), rtol=tol, atol=tol, err_msg=f"{steps} steps")
        np.testing.assert_allclose(got, want, rtol=10 * tol, atol=10 * tol, err_msg=f"{steps} steps")


def test_a_block_of_the_producer_takes_a_block_of_memory():
    """The pushed-out `x U + b` of an RNN (W5's hand-written IR, whose last
    state alone is kept) is computed 64 rows at a time into a buffer of 64
    rows. With static sizes its fill and its bias share one `tensor.empty` of
    all T rows, and each block's tile had been a slice of it: an allocation
    of T x H (here 100 MB) that the blocks filled, row by row. Measured as the
    call's peak resident memory, as `bench/run.py --memory` does, in a fresh
    process."""
    code = textwrap.dedent('''
        import numpy as np, mlir_scan
        f = mlir_scan.compile(SOURCE)
        rng = np.random.default_rng(0)
        steps = 200_000
        args = [rng.standard_normal((steps, 4)), np.zeros(64), rng.standard_normal((64, 64)) / 8,
                rng.standard_normal((4, 64)) / 2, rng.standard_normal(64)]
        f.rnn(args[0][:100], *args[1:])
        f.wait()
        def status(field):
            with open("/proc/self/status") as s:
                return next(int(l.split()[1]) for l in s if l.startswith(field + ":"))
        with open("/proc/self/clear_refs", "w") as c:
            c.write("5")
        before = status("VmRSS")
        last = f.rnn(*args)
        print("GREW", status("VmHWM") - before, float(np.abs(last).max()))
        print("BLOCKS", "step %c64" in f.ir("scf"))
    ''').replace("SOURCE", repr(_static_rnn(64, 4, "float64", last_only=True)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["BLOCKS"] == "True"
    grew_kib, last = lines["GREW"].split()
    assert 0 < float(last) <= 1.0
    # T x H f64 is 100,000 KiB; a block of rows is 32 KiB
    assert int(grew_kib) < 16 * 1024, f"the call grew the process by {grew_kib} KiB"
