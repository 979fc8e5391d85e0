"""Which of PyTensor's rewrites the MLIR_SCAN mode runs.

The mode's optimizer is PyTensor's ``fast_run`` without
:data:`EXCLUDED_REWRITES`; a scan's inner graph gets
:func:`inner_graph_rewrites` before it is translated (see
:func:`.scan.rewritten_inner_graph`).

Example::

    >>> "inplace" in EXCLUDED_REWRITES
    True
    >>> type(inner_graph_rewrites()).__name__
    'SequentialGraphRewriter'
"""

from __future__ import annotations

import functools
from typing import Any

from pytensor.compile import optdb
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

__all__ = ["EXCLUDED_REWRITES", "INNER_EXCLUDED_REWRITES", "inner_graph_rewrites"]

#: PyTensor rewrites the mode leaves out, and why:
#: ``inplace`` (destroy maps mean nothing to a value-semantics translation, and
#: mlir-scan bufferizes in place itself), ``scan_save_mem`` (PyTensor's
#: circular buffers; mlir-scan's own ``scan-save-mem`` pass and the translation's
#: ``keep`` do that job), ``local_careduce_fusion`` (reductions of fused
#: ``Composite`` scalar ops), ``scan_save_mem_no_prealloc`` (the numba/JAX variant),
#: ``local_subtensor_merge`` (PyTensor 2.38's: it merges ``scan(...)[-1]`` and
#: ``scan(...)[k - 1]``, i.e. ``buffer[1:][i]``, into ``buffer[<symbolic index>]``, which
#: hides that only the last rows are read; unmerged, the translation reads the scan's
#: rows at ``-1``/``k - 1`` and mlir-scan's ``scan-save-mem`` keeps one; MLIR folds chains
#: of slices itself. PyTensor 3's ``local_subtensor_merge_integer`` is kept: it gives
#: ``scan(...)[-1]`` its PyTensor 3 value at zero steps, the initial one).
EXCLUDED_REWRITES = ("inplace", "scan_save_mem", "scan_save_mem_no_prealloc", "local_careduce_fusion",
                     "local_subtensor_merge")


#: Left out of a scan's inner graph too: ``local_elemwise_alloc`` (an elementwise op reads an
#: ``Alloc``'d operand broadcast: the builder does that itself). In pymc-extras' VARMAX with the
#: Cholesky filter it never stops on the step's ``eq(alloc(0, 2, 2), 0)``: each new ``Alloc``
#: takes its sizes from the shape of the ``eq`` it replaces, which keeps that ``eq`` in the graph
#: to be rewritten again, and PyTensor's equilibrium only checks its limit between passes.
INNER_EXCLUDED_REWRITES = ("local_elemwise_alloc",)


@functools.cache
def inner_graph_rewrites() -> Any:
    """PyTensor's ``canonicalize``, ``stabilize`` and ``specialize`` rewrites,
    less :data:`EXCLUDED_REWRITES` and :data:`INNER_EXCLUDED_REWRITES`: those that
    decide a scan step's values."""
    return optdb.query(RewriteDatabaseQuery(include=["canonicalize", "stabilize", "specialize"],
                                            exclude=[*EXCLUDED_REWRITES, *INNER_EXCLUDED_REWRITES]))
