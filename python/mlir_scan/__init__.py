"""mlir-scan: Theano's ``scan`` as an MLIR dialect.

``import mlir_scan`` registers the Scan dialect into every ``mlir.ir.Context``
created afterwards and makes the scan passes known to ``PassManager.parse``::

    import mlir_scan
    from mlir import ir, passmanager

    with ir.Context():
        module = ir.Module.parse(SOURCE)          # scan IR parses
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(
            module.operation)

The package has three layers: the MLIR core (``_registration``, ``dialect``,
``runtime``), the NumPy reference interpreter (``reference``) and the
Theano-style graph builder (``mlir_scan.builder``), which imports the core and
is never imported by it.
"""

from __future__ import annotations

import sys

from ._registration import _register_everything, register_dialects, register_passes

_register_everything()

from . import dialect  # noqa: E402  (needs the dialect registered first)
from .compiler import compile  # noqa: E402,A004
from .runtime import Program, release_cached_memory  # noqa: E402

__all__ = ["Program", "compile", "dialect", "register_dialects", "register_passes", "release_cached_memory"]
__version__ = "0.1.0"

# Theano's API (the graph builder): ``import mlir_scan as theano`` and
# ``from mlir_scan import tensor as T`` run the scan guide's code.
from . import builder  # noqa: E402

# The builder's modules under their paths from before ``mlir_scan.builder``
# existed: ``mlir_scan.tensor`` *is* ``mlir_scan.builder.tensor`` (the same
# module object, its submodules too), so ``mlir_scan.config.floatX = ...``
# configures the builder and ``isinstance`` sees one class.
_MOVED = {
    "config": "builder.config",
    "emitter": "builder.emitter",
    "function": "builder.function",
    "gradient": "builder.gradient",
    "graph": "builder.graph",
    "ops_basic": "builder.ops.basic",
    "ops_elemwise": "builder.ops.elemwise",
    "ops_shape": "builder.ops.shape",
    "ops_subtensor": "builder.ops.subtensor",
    "printing": "builder.printing",
    "random": "builder.tensor.shared_randomstreams",
    "sandbox": "builder.sandbox",
    "scalar": "builder.scalar",
    "scan_module": "builder.scan_module",
    "scan_op": "builder.ops.scan",
    "sharedvar": "builder.sharedvar",
    "tensor": "builder.tensor",
}


def _alias_moved_modules() -> None:
    for old, new in _MOVED.items():
        module = sys.modules[f"{__name__}.{new}"]
        prefix = module.__name__
        for name, sub in list(sys.modules.items()):
            if name == prefix or name.startswith(prefix + "."):
                sys.modules[f"{__name__}.{old}{name[len(prefix):]}"] = sub
        globals()[old] = module


_alias_moved_modules()

from .builder import (  # noqa: E402,A004
    Function, In, MissingInputError, Mode, Out, SharedVariable, UnusedInputError, change_flags, clone, clone_replace,
    config,
    disconnected_grad, dot, foldl, foldr, function, grad, gradient, hessian, jacobian, map, reduce, scan,
    scan_checkpoints, scan_module, shared, tensor, until,
)

__all__ += [
    "config", "tensor", "scan_module", "scan", "map", "reduce", "foldl", "foldr", "until",
    "scan_checkpoints", "function", "Function", "Mode", "shared", "SharedVariable", "dot",
    "MissingInputError", "UnusedInputError", "In", "Out", "clone", "clone_replace", "sandbox", "gradient",
    "grad", "jacobian", "hessian", "disconnected_grad", "change_flags", "printing", "scalar",
]


# Module paths of Theano's and PyTensor's graph utilities: ``theano.gof.graph``
# and ``pytensor.graph.basic`` are :mod:`mlir_scan.graph`.
import types as _types  # noqa: E402

graph.basic = graph  # type: ignore[name-defined]  # noqa: F821
sys.modules[f"{__name__}.graph.basic"] = graph  # type: ignore[name-defined]  # noqa: F821
gof = _types.ModuleType(f"{__name__}.gof", "Theano's theano.gof: the graph utilities (gof.graph).")
gof.graph = graph  # type: ignore[name-defined]  # noqa: F821
gof.MissingInputError = MissingInputError  # Theano's theano.gof.MissingInputError
sys.modules[gof.__name__] = gof
sys.modules[f"{__name__}.gof.graph"] = graph  # type: ignore[name-defined]  # noqa: F821

# Theano's ``theano.compile`` namespace, read as attributes (``theano.compile.mode.get_mode``,
# ``theano.compile.function``, ``theano.compile.io.In``...), on :func:`compile`, which is
# mlir-scan's compile function: ``mlir_scan.compile(ir)`` compiles MLIR text as before.
compile.mode = builder.mode  # type: ignore[attr-defined]
compile.get_mode = builder.mode.get_mode  # type: ignore[attr-defined]
compile.get_default_mode = builder.mode.get_default_mode  # type: ignore[attr-defined]
compile.Mode = Mode  # type: ignore[attr-defined]
compile.function = function  # type: ignore[attr-defined]
compile.In, compile.Out = In, Out  # type: ignore[attr-defined]
compile.io = _types.SimpleNamespace(In=In, Out=Out)  # type: ignore[attr-defined]
compile.shared, compile.SharedVariable = shared, SharedVariable  # type: ignore[attr-defined]
compile.sharedvalue = _types.SimpleNamespace(shared=shared, SharedVariable=SharedVariable)  # type: ignore[attr-defined]
