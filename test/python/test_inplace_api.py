"""The in-place contract on the user's path (issue 12): programs built with the
Theano-compatible API -- dynamic shapes, ``theano.scan``, ``T.dot`` -- have, after
bufferization, no ``memref.alloc`` and no ``memref.copy`` inside their loops, like
the hand-written IR of ``bench/run.py``.

The programs are the benchmark's own API builds (``bench/workloads.py``,
``mlir-scan-api``): W1 (``A**k``, a SITSOT with save-mem), W4 (Fibonacci, a MITSOT),
W5 (the Elman RNN) and W6 (the gradient of W5: a backward MITMOT scan).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import mlir_scan  # noqa: F401  (registers the dialect)

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))  # (appended: bench/pymc.py is not PyMC)
import workloads  # noqa: E402

#: Ops that allocate or copy a buffer.
_BUFFER_OPS = ("memref.alloc", "memref.alloca", "memref.realloc", "memref.copy")
_LOOPS = ("scf.for", "scf.while", "scf.parallel")


def buffer_ops_in_loops(text: str) -> list[str]:
    """Every allocation or copy nested in a loop of the module `text`, as
    ``"<op> at <location>"``."""
    found: list[str] = []
    with ir.Context():
        module = ir.Module.parse(text)

        def walk(op: ir.Operation, in_loop: bool) -> None:
            name = op.name
            if in_loop and name in _BUFFER_OPS:
                found.append(f"{name} at {op.location}")
            in_loop = in_loop or name in _LOOPS
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        walk(inner.operation, in_loop)

        for op in module.body.operations:
            walk(op.operation, False)
    return found


def test_the_detector_sees_a_copy_in_a_loop():
    text = """
    func.func @f(%a: memref<4xf64>, %b: memref<4xf64>, %n: index, %t: i1) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      memref.copy %a, %b : memref<4xf64> to memref<4xf64>
      scf.for %i = %c0 to %n step %c1 {
        scf.if %t {
          memref.copy %a, %b : memref<4xf64> to memref<4xf64>
        }
      }
      return
    }"""
    assert len(buffer_ops_in_loops(text)) == 1


def _api_program(make):
    w = make(np.float64, True)
    return w.builders["mlir-scan-api"]()


PROGRAMS = {
    "W1": lambda: _api_program(workloads.w1_power),
    "W4": lambda: _api_program(workloads.w4_fibonacci),
    "W5": lambda: _api_program(workloads.w5_rnn),
    # The backward step reads the partial gradient h'[t+1] (in tap 1) and
    # writes it back (out tap 1): the add that computes the new row reads the
    # row element by element and writes it in place (convert-scan-to-scf).
    "W6": lambda: workloads.w6_mlir_function(np.float64),
}


@pytest.mark.parametrize("build", list(PROGRAMS.values()), ids=list(PROGRAMS))
def test_api_loops_allocate_and_copy_nothing(build):
    function = build()
    bufferized = function.program.ir("bufferized")
    assert "scf.for" in bufferized or "scf.while" in bufferized
    assert buffer_ops_in_loops(bufferized) == []


_ACCUMULATE_CAST = """
func.func @keep_one(%n: index, %ps: tensor<?x2xf64>, %acc0: tensor<?xf64>) -> tensor<1x?xf64> {
  %r = scan.scan steps(%n) sequences(%ps : tensor<?x2xf64>) sitsot(%acc0 : tensor<?xf64>) keep [1] {
  ^bb0(%p: tensor<2xf64>, %acc: tensor<?xf64>):
    %two = arith.constant dense<2.0> : tensor<2xf64>
    %q = arith.mulf %p, %two : tensor<2xf64>
    %cast = tensor.cast %q : tensor<2xf64> to tensor<?xf64>
    %s = arith.addf %acc, %cast : tensor<?xf64>
    scan.yield %s : tensor<?xf64>
  } -> (tensor<1x?xf64>)
  return %r : tensor<1x?xf64>
}
func.func @last_row(%n: index, %ps: tensor<?x2xf64>, %acc0: tensor<?xf64>) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sequences(%ps : tensor<?x2xf64>) sitsot(%acc0 : tensor<?xf64>) {
  ^bb0(%p: tensor<2xf64>, %acc: tensor<?xf64>):
    %two = arith.constant dense<2.0> : tensor<2xf64>
    %q = arith.mulf %p, %two : tensor<2xf64>
    %cast = tensor.cast %q : tensor<2xf64> to tensor<?xf64>
    %s = arith.addf %acc, %cast : tensor<?xf64>
    scan.yield %s : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  %c1 = arith.constant 1 : index
  %w = tensor.dim %r, %c1 : tensor<?x?xf64>
  %i = arith.subi %n, %c1 : index
  %v = tensor.extract_slice %r[%i, 0] [1, %w] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
  return %v : tensor<?xf64>
}
"""


@pytest.mark.parametrize("optimize", [False, True, "scan-save-mem,canonicalize"])
def test_a_state_row_updated_in_place_is_read_before_it_is_written(optimize):
    """`acc + cast(2 p)` with `keep [1]` (written, or made by scan-save-mem
    from `result[n-1]`): the state is one row the step updates in place. The
    cast hid the row from scan-fresh-elementwise-inits, which made the add
    write into `2 p`'s temporary, and eliminate-empty-tensors then had the
    multiply write the row before the add read it: 2 p, not acc + 2 p."""
    from mlir_scan import reference

    program = mlir_scan.compile(_ACCUMULATE_CAST, optimize=optimize)
    rng = np.random.default_rng(3)
    for n in (1, 2, 5):
        ps, acc0 = rng.standard_normal((n, 2)), rng.standard_normal(2)
        want = acc0 + 2 * ps.sum(axis=0)
        np.testing.assert_allclose(program.keep_one(n, ps, acc0), [want], rtol=1e-12)
        np.testing.assert_allclose(program.last_row(n, ps, acc0), want, rtol=1e-12)
        np.testing.assert_allclose(reference.run(_ACCUMULATE_CAST, "last_row", n, ps, acc0), want, rtol=1e-12)
