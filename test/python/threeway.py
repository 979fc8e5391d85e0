"""The three-way check of a compiled function: the same emitted IR run three ways.

``check_three_ways(f, values)`` takes a ``theano.function`` and its arguments
and runs the module ``f.ir`` that the function emitted

1. compiled as the function compiled it (every optional lowering feature on:
   blocks of steps, private copies of non-sequences, early frees,
   vectorization, parallel chunks),
2. compiled with every optional lowering feature off (``PLAIN``), and with
   small blocks of steps (``SMALL_BLOCKS``: the block edges at a few steps),
3. by the NumPy reference interpreter (:mod:`mlir_scan.reference`), which
   shares no code with the lowering,

and asserts that all of them agree. Any two disagreeing is a bug in one of
them; the message names which. The finite-difference check of gradients
(``gradcheck.py``) is the fourth, independent of the IR.

Setting ``MLIR_SCAN_THREEWAY=1`` in the environment makes every call of a
``theano.function`` in the test suite run this check too (see conftest.py):
how the existing suite's programs were swept once.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import mlir_scan
from mlir_scan import reference

#: ``mlir_scan.compile`` options with every optional lowering feature off.
PLAIN = dict(vectorize=False, parallel=False, block_steps=0, private_nonsequences=False, free_early=False, blas=False,
             tiered=False)
#: Blocks of 3 steps: the blocks' first, middle and last rows at small sizes.
SMALL_BLOCKS = dict(block_steps=3)


def ir_arguments(f, values: Sequence[Any]) -> list:
    """The arguments of ``f.ir``'s ``@f`` for the call ``f(*values)``: the
    inputs converted to their types, then the shared variables' values."""
    args = []
    for v, a in zip(f.inputs, values):
        array = np.asarray(a, dtype=np.dtype(v.dtype))
        args.append(array[()] if array.ndim == 0 else array)
    for s in f.shared:
        value = s.get_value(borrow=True)
        args.append(value[()] if np.ndim(value) == 0 else value)
    return args


def _as_list(result: Any, n: int) -> list[np.ndarray]:
    if n == 0:
        return []
    if n == 1:
        return [np.asarray(result)]
    return [np.asarray(r) for r in result]


def _n_results(f) -> int:
    return len(f.outputs) + len(f.updates) + len(f._in_updates)


def _agree(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    scale = max(1.0, float(np.max(np.abs(b[np.isfinite(b)])))) if np.isfinite(b).any() else 1.0
    return bool(np.allclose(a, b, rtol=rtol, atol=atol * scale, equal_nan=True))


class ThreeWay:
    """The programs of one function's IR, compiled once: ``check(values)``
    runs all of them and the reference interpreter on one call's arguments."""

    def __init__(self, f, variants: dict[str, dict] | None = None):
        self.f = f
        optimize = f._compile_options[0]  # (FAST_COMPILE, or the optimizer flag set to fast_compile)
        variants = variants if variants is not None else {"plain": PLAIN, "small-blocks": SMALL_BLOCKS}
        self.programs = {"compiled": f.program}
        self.programs.update({name: mlir_scan.compile(f.ir, optimize=optimize, **options)
                              for name, options in variants.items()})

    def run(self, values: Sequence[Any]) -> dict[str, list[np.ndarray]]:
        """The results of every way on `values` (``"reference"`` last)."""
        n = _n_results(self.f)
        args = ir_arguments(self.f, values)
        runs = {name: _as_list(program.f(*[np.copy(a) for a in args]), n)
                for name, program in self.programs.items()}
        runs["reference"] = _as_list(reference.run(self.f.ir, "f", *[np.copy(a) for a in args]), n)
        return runs

    def check(self, values: Sequence[Any], rtol: float = 1e-9, atol: float = 1e-11,
              what: str = "") -> dict[str, list[np.ndarray]]:
        """Asserts that every way agrees with the reference interpreter
        (float32 programs: pass a looser `rtol`)."""
        runs = self.run(values)
        want = runs["reference"]
        for name, got in runs.items():
            for i, (g, w) in enumerate(zip(got, want)):
                if not _agree(g, w, rtol, atol):
                    worst = "" if g.shape != w.shape else f"; largest difference {np.nanmax(np.abs(g - w))}"
                    raise AssertionError(f"{what}: result #{i} of the {name} program disagrees with the "
                                         f"reference interpreter (shapes {g.shape} and {w.shape}{worst})\n"
                                         f"{name}: {g!r}\nreference: {w!r}")
        return runs


def check_three_ways(f, values: Sequence[Any], rtol: float = 1e-9, atol: float = 1e-11,
                     variants: dict[str, dict] | None = None, what: str = "") -> dict[str, list[np.ndarray]]:
    """``ThreeWay(f, variants).check(values, ...)``: one call, every way."""
    return ThreeWay(f, variants).check(values, rtol=rtol, atol=atol, what=what)
