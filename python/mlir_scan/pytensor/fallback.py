"""Compiled scans inside PyTensor's own linker, for graphs mlir-scan cannot take whole.

:func:`compile_scans` replaces every ``Scan`` node of a FunctionGraph whose
inner graph mlir-scan supports by a :class:`MlirScanOp` node: a PyTensor op
whose ``perform`` calls the mlir-scan function compiled from that one node.
The rest of the graph stays PyTensor's and runs in its default linker.

Example::

    >>> import pytensor, pytensor.tensor as pt
    >>> from pytensor.graph.fg import FunctionGraph
    >>> x = pt.vector("x")
    >>> ys = pytensor.scan(lambda v, acc: acc + v, sequences=x, outputs_info=pt.zeros(()),
    ...                    return_updates=False)
    >>> fg = FunctionGraph([x], [ys], clone=True)
    >>> [type(n.op).__name__ for n in compile_scans(fg)[0]]
    ['MlirScanOp']
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pytensor.graph.basic import Apply
from pytensor.graph.basic import Constant as PtConstant
from pytensor.graph.op import Op
from pytensor.scan.op import Scan

from ..builder.function import function as builder_function
from .translate import Translator, Unsupported

__all__ = ["MlirScanOp", "compile_node", "compile_scans", "describe_failure"]


class MlirScanOp(Op):
    """One PyTensor node computed by a compiled mlir-scan function.

    `function` is the compiled :class:`mlir_scan.Function`, `source` the
    PyTensor node it replaces (`original` its op, for printing), `out_types`
    the PyTensor output types. A pickled op keeps `source`, not the compiled
    code: it compiles again on its first call after unpickling.
    """

    __props__ = ()

    def __init__(self, function: Any, source: Apply, out_types: list):
        self.function = function
        self.source = source
        self.original = source.op
        self.out_types = list(out_types)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "function": None}

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __str__(self) -> str:
        return f"MlirScan{{{self.original}}}"

    @property
    def ir(self) -> str:
        """The MLIR module of this node."""
        return self.function.ir

    def make_node(self, *inputs: Any) -> Apply:
        return Apply(self, list(inputs), [t() for t in self.out_types])

    def perform(self, node: Apply, inputs: list, output_storage: list) -> None:
        if self.function is None:
            self.function = _compile_function(self.source)[0]
        outs = self.function(*inputs)
        for store, value, t in zip(output_storage, outs, self.out_types):
            store[0] = np.asarray(value, dtype=t.dtype)


def _compile_function(node: Any) -> tuple[Any, list]:
    """The mlir-scan function computing `node`'s outputs from its non-constant
    inputs, and those inputs (or :class:`Unsupported`)."""
    tr = Translator()
    pt_inputs = [v for v in dict.fromkeys(node.inputs) if not isinstance(v, PtConstant)]
    b_inputs = tr.inputs(pt_inputs)
    tr.node(node)
    outs = [tr.value(o) for o in node.outputs]
    return builder_function(tr.check_inputs(b_inputs), outs, on_unused_input="ignore"), pt_inputs


def compile_node(node: Any) -> Apply:
    """A :class:`MlirScanOp` node computing `node`'s outputs (or :class:`Unsupported`)."""
    fn, pt_inputs = _compile_function(node)
    op = MlirScanOp(fn, node, [o.type for o in node.outputs])
    return op.make_node(*pt_inputs)


def describe_failure(exc: BaseException) -> str:
    """A short description of a compile failure (an MLIRError's message holds the whole IR)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = " ".join(lines[:3]) + (" ..." if len(lines) > 3 else "")
    return f"{type(exc).__name__}: {text}"


def compile_scans(fgraph: Any) -> tuple[list[Apply], list[tuple[Any, str]], dict]:
    """Replaces the supported Scan nodes of `fgraph` in place.

    Returns the new nodes, per Scan left to PyTensor ``(op, reason)``, and
    the replaced variables (old -> new).
    """
    new_nodes, left, replaced = [], [], {}
    for node in list(fgraph.toposort()):
        if not isinstance(node.op, Scan):
            continue
        try:
            new = compile_node(node)
        except Unsupported as exc:
            left.append((node.op, str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a scan that fails to compile stays PyTensor's
            left.append((node.op, f"failed to compile: {describe_failure(exc)}"))
            continue
        fgraph.replace_all(list(zip(node.outputs, new.outputs)), reason="mlir_scan.pytensor")
        replaced.update(zip(node.outputs, new.outputs))
        new_nodes.append(new)
    return new_nodes, left, replaced
