"""PyTensor graphs to builder graphs: the translator and its table of ops.

A :class:`Translator` walks a PyTensor graph in topological order and maps
every PyTensor variable to a variable of mlir-scan's builder
(:mod:`mlir_scan.builder`), node by node, through :data:`TRANSLATORS`: a
dict from PyTensor op class to a function ``(translator, node, inputs) ->
outputs`` that calls the builder's DSL (``T.dot``, ``T.tanh``,
``T.set_subtensor``, ``mlir_scan.scan``...). The builder's emitter stays the
only code that writes MLIR. An op with no entry (or an entry that refuses
the node) raises :class:`Unsupported`, naming the op.

After each node, the builder's output is made to carry the PyTensor
output's exact type (:meth:`Translator.conform`): a dtype cast where the
builder's promotion rules differ, a ``specify_shape`` where PyTensor knows a
static size the builder does not.

Example::

    >>> import pytensor.tensor as pt
    >>> from pytensor.graph.fg import FunctionGraph
    >>> x = pt.vector("x")
    >>> fg = FunctionGraph([x], [pt.tanh(x) * 2], clone=False)
    >>> tr = Translator()
    >>> [bx] = tr.inputs(fg.inputs)
    >>> [out] = tr.outputs(fg.outputs)
    >>> out.type
    TensorType(float64, (None,))
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from pytensor.graph.basic import Constant as PtConstant
from pytensor.graph.basic import Variable as PtVariable
from pytensor.graph.traversal import io_toposort
from pytensor.scalar.basic import ScalarType
from pytensor.tensor.type_other import MakeSlice, NoneTypeT, SliceType
from pytensor.tensor.type import TensorType as PtTensorType

from ..builder import tensor as T
from ..builder.graph import DTYPES, TensorType, Variable

__all__ = ["Translator", "Unsupported", "TRANSLATORS", "register", "builder_type", "lookup"]


class Unsupported(Exception):
    """A PyTensor op (or a type) mlir-scan cannot translate.

    `op` is the PyTensor op (or None for a type), `reason` says why.
    """

    def __init__(self, op: Any, reason: str = ""):
        self.op = op
        self.reason = reason
        name = f"{op}" if op is not None else "a value"
        super().__init__(f"{name} ({type(op).__name__}) is not supported by mlir-scan"
                         + (f": {reason}" if reason else "") if op is not None else reason)


#: PyTensor op class -> translator ``(translator, node, inputs) -> list of builder variables``.
TRANSLATORS: dict[type, Callable[["Translator", Any, list], list]] = {}


def register(*op_classes: type) -> Callable:
    """Decorator: the function translates nodes of `op_classes` (and their subclasses)."""

    def deco(fn: Callable) -> Callable:
        for cls in op_classes:
            TRANSLATORS[cls] = fn
        return fn

    return deco


def lookup(op: Any) -> Callable | None:
    """The translator of `op`: that of its class or of its nearest registered base class."""
    for cls in type(op).__mro__:
        fn = TRANSLATORS.get(cls)
        if fn is not None:
            return fn
    return None


def builder_type(pt_type: Any) -> TensorType:
    """The builder's type of a PyTensor tensor or scalar type (or :class:`Unsupported`).

    >>> import pytensor.tensor as pt
    >>> builder_type(pt.matrix(dtype="float32", shape=(None, 3)).type)
    TensorType(float32, (None, 3))
    """
    if isinstance(pt_type, PtTensorType):
        dtype, shape = pt_type.dtype, pt_type.shape
    elif isinstance(pt_type, ScalarType):
        dtype, shape = pt_type.dtype, ()
    else:
        raise Unsupported(None, f"values of type {pt_type} are not supported by mlir-scan")
    if dtype not in DTYPES:
        raise Unsupported(None, f"dtype {dtype} is not supported by mlir-scan (supported: {', '.join(DTYPES)})")
    return TensorType(dtype, shape)


class Translator:
    """Maps PyTensor variables to builder variables (see the module docstring)."""

    def __init__(self) -> None:
        self.values: dict[PtVariable, Variable] = {}
        #: Per translated scan output buffer: hints used by Subtensor (see scan.py).
        self.buffers: dict[PtVariable, Any] = {}
        #: The FunctionGraph being translated (clients of outer variables), if any.
        self.fgraph: Any = None
        #: Inputs of a type mlir-scan does not take -> why (raised where they are read).
        self.rejected: dict[PtVariable, Unsupported] = {}

    # -- inputs and outputs ------------------------------------------------------------
    def inputs(self, pt_vars: list) -> list[Variable]:
        """Fresh builder placeholders for `pt_vars` (bound to them)."""
        out = []
        for v in pt_vars:
            try:
                bv = Variable(builder_type(v.type), name=v.name)
            except Unsupported as exc:
                # Raised by the first node that reads `v` (see value()), so that the
                # error names the first op in the graph's order mlir-scan cannot take.
                self.rejected[v] = Unsupported(None, f"input {v}: {exc.reason}")
                out.append(None)
                continue
            self.values[v] = bv
            out.append(bv)
        return out

    def check_inputs(self, b_inputs: list) -> list[Variable]:
        """`b_inputs` (from :meth:`inputs`), or the reason one of them has no builder type."""
        if any(b is None for b in b_inputs):
            raise next(iter(self.rejected.values()))
        return b_inputs

    @staticmethod
    def _named(exc: Unsupported, node: Any) -> Unsupported:
        """`exc` naming `node`'s op when it names none (a rejected type names no op).

        Strict mode reports the first op it cannot translate: for a value of an
        unsupported type (a random generator, a ``uint8`` tensor), the op that
        reads or makes it.
        """
        if exc.op is not None or node is None:
            return exc
        return Unsupported(node.op, exc.reason)

    def bind(self, pt_var: PtVariable, value: Variable) -> None:
        self.values[pt_var] = value

    def has(self, pt_var: PtVariable) -> bool:
        """Whether `pt_var` has (or, as a constant, can have) a builder value."""
        return pt_var in self.values or isinstance(pt_var, PtConstant)

    def value(self, pt_var: PtVariable) -> Variable:
        """The builder variable of `pt_var` (constants are made on demand)."""
        got = self.values.get(pt_var)
        if got is not None:
            return got
        if pt_var in self.rejected:
            raise self.rejected[pt_var]
        if isinstance(pt_var, PtConstant):
            btype = builder_type(pt_var.type)
            data = np.asarray(pt_var.data, dtype=btype.dtype)
            got = T.constant(data, dtype=btype.dtype)
            self.values[pt_var] = got
            return got
        raise KeyError(f"mlir-scan: no value for {pt_var} (not an input of the translated graph)")

    def outputs(self, pt_outputs: list, pt_inputs: list | None = None) -> list[Variable]:
        """Translates every node computing `pt_outputs`; their builder variables."""
        inputs = pt_inputs if pt_inputs is not None else [v for v in self.values]
        for node in io_toposort(list(inputs), list(pt_outputs)):
            self.node(node)
        return [self.value(o) for o in pt_outputs]

    def node(self, node: Any) -> None:
        """Translates one node (its inputs must be translated)."""
        fn = lookup(node.op)
        if fn is None:
            raise Unsupported(node.op, "no translation for this op")
        try:
            ins = [self._input(i) for i in node.inputs]
            outs = fn(self, node, ins)
            if len(outs) != len(node.outputs):
                raise Unsupported(node.op, f"translated to {len(outs)} outputs, expected {len(node.outputs)}")
            for pv, bv in zip(node.outputs, outs):
                if bv is None:  # no value of its own (see scan.BufferHint)
                    continue
                if pv not in self.values:
                    self.values[pv] = self.conform(bv, pv, node.op)
        except Unsupported as exc:
            raise self._named(exc, node) from None

    def _input(self, pt_var: PtVariable) -> Variable | None:
        """The builder value of a node's input, or None when it has none of its own.

        A scan buffer read only through its hint (see scan.BufferHint) has no value,
        nor has ``NoneConst`` (an argument not given, as SpecifyShape's unknown
        sizes), nor a slice (``MakeSlice``, PyTensor 2.38's advanced-index
        entries): their translators read ``node.inputs`` instead.
        """
        if pt_var in self.buffers and pt_var not in self.values:
            return None
        if isinstance(pt_var, PtConstant) and isinstance(pt_var.type, NoneTypeT):
            return None
        if isinstance(pt_var.type, SliceType):
            return None  # (PyTensor 2.38's advanced-index slices: read from node.inputs)
        return self.value(pt_var)

    # -- types -----------------------------------------------------------------------------
    def conform(self, bv: Any, pv: PtVariable, op: Any = None) -> Variable:
        """`bv` with the exact dtype and the static sizes of PyTensor's `pv`."""
        want = builder_type(pv.type)
        bv = T.as_tensor_variable(bv)
        if bv.ndim != want.ndim:
            raise Unsupported(op, f"translation has rank {bv.ndim}, PyTensor's output rank {want.ndim}")
        if bv.dtype != want.dtype:
            bv = T.cast(bv, want.dtype)
        for d, (have, need) in enumerate(zip(bv.type.shape, want.shape)):
            if have is not None and need is not None and have != need:
                raise Unsupported(op, f"static size {have} != PyTensor's {need} along dimension {d}")
        if any(h is None and n is not None for h, n in zip(bv.type.shape, want.shape)):
            shape = tuple(n if n is not None else h for h, n in zip(bv.type.shape, want.shape))
            bv = T.specify_shape(bv, shape)
        return bv

    def static_int(self, pt_var: Any) -> int | None:
        """The value of an integer constant (or None when symbolic or not an integer)."""
        if isinstance(pt_var, PtConstant):
            data = np.asarray(pt_var.data)
            if data.ndim == 0 and data.dtype.kind in "iu":
                return int(data)
        return None

    def int_or_value(self, pt_var: Any) -> int | Variable:
        """An integer constant as a Python int (a static size or index for the
        builder), anything else as its builder value."""
        k = self.static_int(pt_var)
        return k if k is not None else self.value(pt_var)


@register(MakeSlice)
def _make_slice(tr: Translator, node: Any, ins: list) -> list:
    # No value of its own: the AdvancedSubtensor reading it rebuilds the slice.
    return [None]
