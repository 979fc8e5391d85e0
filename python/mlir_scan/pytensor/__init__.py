"""A PyTensor compilation mode backed by mlir-scan (``pip install 'mlir-scan[pytensor]'``).

Importing this package registers the mode ``"MLIR_SCAN"``; a PyTensor user
changes one argument::

    >>> import numpy as np, pytensor, pytensor.tensor as pt
    >>> import mlir_scan.pytensor
    >>> A, k = pt.vector("A"), pt.iscalar("k")
    >>> res = pytensor.scan(lambda p, A: p * A, outputs_info=pt.ones_like(A),
    ...                     non_sequences=A, n_steps=k, return_updates=False)
    >>> power = pytensor.function([A, k], res[-1], mode="MLIR_SCAN")
    >>> power(np.arange(5.0), 3)
    array([ 0.,  1.,  8., 27., 64.])

``mode`` is that mode as an object, :func:`get_mode` makes variants
(``get_mode(strict=True)`` raises :class:`UnsupportedOpError` naming the first
op mlir-scan does not translate instead of falling back to PyTensor for it,
and :class:`CompileError` for a translated graph that fails to compile).
What the mode does is in :mod:`.linker`; the translation of PyTensor ops in
:mod:`.translate` (the table), :mod:`.elemwise`, :mod:`.tensor_ops`,
:mod:`.scan` and :mod:`.mitmot`.
"""

from __future__ import annotations

from typing import Any

try:
    import pytensor  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mlir_scan.pytensor needs PyTensor: pip install 'mlir-scan[pytensor]'") from exc

from pytensor.compile.mode import Mode, predefined_modes, register_mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

from . import elemwise, scan, tensor_ops  # noqa: F401  (register their translations)
from . import linalg_ops  # noqa: F401  (linear algebra translations)
from . import ifelse, op_from_graph  # noqa: F401  (IfElse; OpFromGraph: its inner graph, inlined)
from .last_rows import TAG as _LAST_ROWS_TAG
from .linker import EXCLUDED_REWRITES, CompileError, FallbackWarning, MlirScanLinker, UnsupportedOpError
from .translate import TRANSLATORS, Unsupported

__all__ = ["mode", "get_mode", "MlirScanLinker", "UnsupportedOpError", "CompileError", "Unsupported",
           "FallbackWarning", "TRANSLATORS", "EXCLUDED_REWRITES", "supported_ops", "left_to_pytensor"]


def get_mode(strict: bool = False) -> Mode:
    """A PyTensor ``Mode`` compiling through mlir-scan.

    Its rewrites are PyTensor's ``fast_run`` without
    :data:`EXCLUDED_REWRITES` (see :mod:`.rewrites`), plus
    :func:`.last_rows.local_scan_last_row_index` (a scan's last rows read at a
    symbolic index, as PyTensor's rewrites give ``scan(...)[-1]``). ``strict=True`` raises
    :class:`UnsupportedOpError` for a graph with an unsupported op (and
    :class:`CompileError` for one that fails to compile) instead of falling
    back to PyTensor.

    >>> get_mode(strict=True).linker.strict
    True
    """
    return Mode(MlirScanLinker(strict=strict), RewriteDatabaseQuery(include=["fast_run", _LAST_ROWS_TAG]))


def supported_ops() -> list[str]:
    """The names of the PyTensor op classes with a translation (the table's keys).

    >>> "Scan" in supported_ops() and "Elemwise" in supported_ops()
    True
    """
    return sorted(cls.__name__ for cls in TRANSLATORS)


def left_to_pytensor(f: Any) -> list[tuple[str, str]]:
    """What a function compiled in this mode left to PyTensor: ``(op type, why)`` pairs.

    Empty when the whole graph is one mlir-scan module. The first entry is why
    the whole graph is not (the op type is ``""`` when no single op is to
    blame); the others are the Scans PyTensor runs itself.

    >>> import pytensor, pytensor.tensor as pt
    >>> x = pt.dvector("x")
    >>> left_to_pytensor(pytensor.function([x], pt.exp(x), mode=mode))
    []
    """
    linker = getattr(getattr(f, "maker", None), "linker", None)
    if not isinstance(linker, MlirScanLinker):
        raise TypeError(f"left_to_pytensor: {f!r} is not a function compiled in the MLIR_SCAN mode")
    return [("" if op is None else type(op).__name__, why) for op, why in linker.left_to_pytensor]


#: The mode object (``pytensor.function(..., mode=mlir_scan.pytensor.mode)``).
mode = get_mode()

if "MLIR_SCAN" not in predefined_modes:
    register_mode("MLIR_SCAN", mode)
