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
