"""mlir-scan: Theano's ``scan`` as an MLIR dialect.

``import mlir_scan`` registers the Scan dialect into every ``mlir.ir.Context``
created afterwards and makes the scan passes known to ``PassManager.parse``::

    import mlir_scan
    from mlir import ir, passmanager

    with ir.Context():
        module = ir.Module.parse(SOURCE)          # scan IR parses
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(
            module.operation)
"""

from __future__ import annotations

from ._registration import _register_everything, register_dialects, register_passes

_register_everything()

from . import dialect  # noqa: E402  (needs the dialect registered first)
from .runtime import Program, compile  # noqa: E402,A004

__all__ = ["Program", "compile", "dialect", "register_dialects", "register_passes"]
__version__ = "0.1.0"

# Theano's API (the graph builder): ``import mlir_scan as theano`` and
# ``from mlir_scan import tensor as T`` run the scan guide's code.
from . import config, scan_module, tensor  # noqa: E402
from .function import Function, function  # noqa: E402
from .graph import MissingInputError, UnusedInputError  # noqa: E402
from .scan_module import foldl, foldr, map, reduce, scan, scan_checkpoints, until  # noqa: E402,A004
from .sharedvar import SharedVariable, shared  # noqa: E402
from .tensor import dot  # noqa: E402

__all__ += [
    "config", "tensor", "scan_module", "scan", "map", "reduce", "foldl", "foldr", "until",
    "scan_checkpoints", "function", "Function", "shared", "SharedVariable", "dot",
    "MissingInputError", "UnusedInputError",
]
