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
