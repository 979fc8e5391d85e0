"""``mlir_scan.compile``: MLIR text to a callable program, for the CPU or for CUDA GPUs.

The entry point above both back ends: :class:`~mlir_scan.runtime.Program`
(native CPU code, :mod:`mlir_scan.runtime`) and
:class:`~mlir_scan.cuda.CudaProgram` (NVVM/PTX, :mod:`mlir_scan.cuda`, which
builds on the CPU runtime).

Example::

    >>> import numpy as np, mlir_scan
    >>> prog = mlir_scan.compile('''
    ...   func.func @double(%x: tensor<?xf64>) -> tensor<?xf64> {
    ...     %y = arith.addf %x, %x : tensor<?xf64>
    ...     return %y : tensor<?xf64>
    ...   }''')
    >>> prog.double(np.arange(3.0))
    array([0., 2., 4.])
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from .cuda import CudaProgram
from .runtime import Program

__all__ = ["compile"]


def compile(source: str | ir.Module, optimize: bool | str = True, opt_level: int = 3,  # noqa: A001
            vectorize: bool = True, checks: bool = True, parallel: bool = True, target: str = "cpu",
            block_steps: int = 64, private_nonsequences: bool = True, free_early: bool = True,
            blas: bool = True, tiered: bool = True, vector_math: bool = True,
            split_reductions: bool = True, **cuda_options: Any) -> Program:
    """Compiles MLIR text or an ``mlir.ir.Module`` into a :class:`Program`.

    ``optimize=True`` runs ``scan-optimize`` (Theano's ``FAST_RUN``),
    ``optimize=False`` skips the scan rewrites (``FAST_COMPILE``), and a string
    runs that pass pipeline instead (e.g. ``"scan-push-out-seq,scan-remove-unused"``),
    which is how the tests compare a program with and without one rewrite.
    ``opt_level`` is LLVM's optimization level (0-3). ``vectorize=False`` leaves
    the inner loops of linalg ops to LLVM's loop vectorizer instead of
    ``scan-vectorize-linalg-loops`` (for comparing results and speed).
    ``checks=False`` leaves out the run-time verification of the program's
    own ops (``scan-runtime-verification``: mismatched dynamic sizes,
    out-of-bounds indices), for IR known to be correct; the scans' own checks
    and the allocation checks always stay. ``parallel=False`` keeps every op
    on the calling thread; by default the iterations of large linalg ops
    (``scan-parallelize-linalg``: a step's ``h W`` with a large ``W``) run on
    every core (``MLIR_SCAN_NUM_THREADS`` sets how many threads; 1 is off).
    ``split_reductions=False`` splits a step's ``h W`` (large, ``W`` read
    along its rows) across the cores by columns of ``W`` instead of by
    blocks of rows (each core then reads a part of every row; by rows, each
    core's partial sums are added at the end, in a fixed order: the results
    are the same on any number of cores, and differ from the unsplit
    product's in rounding only).
    ``block_steps`` is how many steps ``convert-scan-to-scf`` runs per block
    when it computes a sequence's producer or a sum over a nitsot's rows a
    block at a time (0: never in blocks); ``private_nonsequences=False`` never
    copies a large non-sequence for the loop; ``free_early=False`` frees
    buffers where MLIR's deallocation pipeline puts the frees (the end of
    their block) instead of after their last use. ``blas=False`` keeps large
    f32/f64 matrix products in generated loops instead of calling OpenBLAS
    (``scan-call-blas``; from the ``scipy-openblas32`` package, split across
    the cores by the run-time library). ``vector_math=False`` computes
    vector ``pow``, ``exp``, ``log``, ``sin``... one element at a time with
    libm instead of on whole AVX2 registers with glibc's libmvec
    (``scan-call-vector-math``; libmvec is documented within 4 ulp, and the
    tests hold its results within 5 ulp of libm's; used where
    the machine has AVX2 and libmvec, not with ``MLIR_SCAN_VECTOR_MATH=0``).
    Turning these optional
    features off gives the same results (the tests compare them).
    LLVM compiles a large program in parts on as many threads. With
    ``tiered=True`` (the default) a large program is first compiled at -O0,
    which takes a sixth of the time, so that its first call starts soon, then
    at the requested level; LLVM does both on a background thread (this
    returns once the MLIR passes are done, and the first call waits for the
    -O0 code), and calls switch to the optimized code when it is ready (a
    call running then restarts in it: compiled functions do not write their
    arguments). ``Program.tier`` says which code
    runs, ``Program.wait()`` waits for the optimized code;
    ``MLIR_SCAN_TIERED=0`` in the environment turns tiers off for every
    compile (as ``tiered=False``). Compiled code
    is kept on disk and reused by later compiles of the same program, in any
    process (``MLIR_SCAN_CACHE_DIR``, default ``~/.cache/mlir-scan``;
    ``MLIR_SCAN_CACHE=0`` turns it off).

    ``target="cuda"`` compiles for NVIDIA GPUs instead (:mod:`mlir_scan.cuda`;
    options ``chip``, ``mode``, ``format``, ``emulate``).
    """
    if target == "cuda":
        return CudaProgram(source, optimize=optimize, opt_level=opt_level, **cuda_options)
    if target != "cpu":
        raise ValueError(f"compile: target must be 'cpu' or 'cuda', not {target!r}")
    if cuda_options:
        raise TypeError(f"compile: the option{'s' if len(cuda_options) > 1 else ''} "
                        f"{', '.join(sorted(cuda_options))} only appl{'y' if len(cuda_options) > 1 else 'ies'} "
                        "to target='cuda'")
    return Program(source, optimize=optimize, opt_level=opt_level, vectorize=vectorize, checks=checks,
                   parallel=parallel, block_steps=block_steps, private_nonsequences=private_nonsequences,
                   free_early=free_early, blas=blas, tiered=tiered, vector_math=vector_math,
                   split_reductions=split_reductions)
