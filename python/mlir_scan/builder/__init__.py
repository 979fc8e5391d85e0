"""The Theano-style graph builder: ``scan``, ``function``, ``shared`` and the tensor DSL.

It records a light symbolic graph and emits MLIR text for it; it imports the
MLIR core of the package (:mod:`mlir_scan.runtime` compiles what
:mod:`.function` emits) and the core never imports it. From the bottom up:

* :mod:`.config` (Theano's flags: ``floatX``, ``mode``...; ``change_flags``), :mod:`.graph` (``Variable``, ``Apply``,
  ``Op``, ``TensorType``, graph walks), :mod:`.emitter` (MLIR text: SSA
  names, scopes, common idioms);
* :mod:`.ops` (the op classes), :mod:`.sharedvar` (shared variables);
* :mod:`.tensor` (the DSL, ``mlir_scan.tensor``, with ``T.nnet`` and
  ``T.shared_randomstreams``);
* :mod:`.scan_module` (``scan``, ``map``, ``reduce``, ``foldl``, ``foldr``,
  ``until``, ``scan_checkpoints``) and :mod:`.function` (``function``,
  ``In``, ``Out``);
* :mod:`.gradient` (``grad``, ``jacobian``, ``hessian``, ``disconnected_grad``;
  also ``T.grad``, ``T.jacobian``, ``T.hessian``);
* :mod:`.sandbox` (``sandbox.rng_mrg.MRG_RandomStreams``);
* :mod:`.ifelse` (``ifelse``, lazy; also ``mlir_scan.ifelse``, Theano's ``theano.ifelse``);
* :mod:`.scalar` (Theano's ``theano.scalar``: scalar types, ``upcast``) and
  :mod:`.printing` (``debugprint``, ``pprint``, ``Print``).

:mod:`mlir_scan` re-exports the public names; the modules keep their
pre-``builder`` paths too (``mlir_scan.tensor``, ``mlir_scan.scan_module``...).
"""

from __future__ import annotations

import sys as _sys

from . import config, gradient, gradient_check, graph, mode, ifelse, printing, rop, sandbox, scalar, scan_module, tensor
from .config import change_flags
from .function import Function, In, Out, function
from .mode import Mode
from .gradient import disconnected_grad, grad, hessian, jacobian
from .graph import MissingInputError, UnusedInputError
from .scan_module import clone, foldl, foldr, map, reduce, scan, scan_checkpoints, until  # noqa: A004
from .scan_module import clone_replace_public as clone_replace
from .sharedvar import SharedVariable, shared
from .tensor import dot

__all__ = [
    "config", "tensor", "scan_module", "scan", "map", "reduce", "foldl", "foldr", "until",
    "scan_checkpoints", "function", "Function", "Mode", "shared", "SharedVariable", "dot",
    "MissingInputError", "UnusedInputError", "In", "Out", "clone", "clone_replace", "sandbox",
    "gradient", "grad", "jacobian", "hessian", "disconnected_grad", "ifelse", "change_flags",
    "printing", "scalar",
]

# ``theano.ifelse`` / ``pytensor.ifelse``: ``mlir_scan.ifelse`` is :mod:`.ifelse`
# (``import mlir_scan as theano; theano.ifelse.ifelse(...)``,
# ``from mlir_scan.ifelse import ifelse``).
_top = _sys.modules[__name__.rpartition(".")[0]]
_top.ifelse = ifelse  # type: ignore[attr-defined]
_sys.modules[f"{_top.__name__}.ifelse"] = ifelse

# Theano's comparison operators (``a < b`` ...): the truth value of their result
# raises (``graph.Variable.__bool__``); every other variable is truthy.
for _name in ("__lt__", "__le__", "__gt__", "__ge__"):
    if not hasattr(getattr(graph.Variable, _name), "__wrapped__"):
        setattr(graph.Variable, _name, graph.comparison_operator(getattr(graph.Variable, _name)))

# ``T.grad`` / ``T.jacobian`` / ``T.hessian`` (the tensor DSL sits below the gradient module).
for _name in ("grad", "jacobian", "hessian"):
    setattr(tensor, _name, getattr(gradient, _name))
    setattr(tensor.basic, _name, getattr(gradient, _name))
    if _name not in tensor.__all__:
        tensor.__all__.append(_name)

# Theano's gradient check (``gradient_check`` sits above ``function``): ``T.verify_grad`` /
# ``theano.gradient.verify_grad``.
for _module in (tensor, gradient):
    _module.verify_grad = gradient_check.verify_grad
    if "verify_grad" not in _module.__all__:
        _module.__all__.append("verify_grad")

# Forward mode (``rop`` sits above ``gradient``): ``T.Rop`` / ``theano.gradient.Rop`` and ``Lop``.
for _name in ("Rop", "Lop"):
    for _module in (tensor, gradient):
        setattr(_module, _name, getattr(rop, _name))
        if _name not in _module.__all__:
            _module.__all__.append(_name)
