"""Reverse-mode differentiation of the graph: the traversal and its helpers.

:func:`backprop` walks the graph from the variables whose gradients are
known (the cost, with gradient 1) back to the variables to differentiate,
asking each node's op for the gradients of its inputs (:meth:`Op.L_op
<mlir_scan.builder.graph.Op.L_op>`) and summing the contributions of every
use of a variable. :func:`conform` brings a gradient to the shape and dtype
of its variable (summing over broadcast dimensions). The public API
(``grad``, ``jacobian``, ``hessian``) is :mod:`mlir_scan.builder.gradient`;
this module sits with the op classes so that ops whose gradient needs the
gradient of an inner graph (the scan) can use it.

Conventions: a gradient is a variable or ``None`` (zero: the cost does not
depend on the variable). Integer and boolean variables get no gradient.

Example::

    >>> from mlir_scan import tensor as T
    >>> x = T.dvector("x")
    >>> cost = (x * x).sum()
    >>> [gx] = backprop([(cost, one_like(cost))], [x])
    >>> gx.type
    TensorType(float64, (None,))
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..emitter import Block
from ..graph import Apply, Constant, Op, TensorType, Variable, is_float, toposort
from .basic import Alloc, DimShuffle, Reduce
from .disconnected import DisconnectedGrad
from .elemwise import SCALAR_OPS, Elemwise, broadcast_shapes, cast
from .shape import symbolic_shape

__all__ = [
    "backprop", "conform", "zeros_like", "one_like", "add_all", "SpecifyShape", "DisconnectedGrad",
    "elem", "const", "retype", "alloc_to",
]


def const(value, dtype: str) -> Constant:
    """A scalar constant of `dtype`."""
    return Constant(np.asarray(value, dtype=dtype))


def elem(name: str, *xs: Variable) -> Variable:
    """The element-wise scalar op `name` applied to variables."""
    return Elemwise(SCALAR_OPS[name])(*xs)


def one_like(x: Variable) -> Variable:
    """A scalar 1 of `x`'s dtype (the seed gradient of a scalar cost)."""
    return const(1, x.dtype)


def alloc_to(value: Variable, dims: Sequence, dtype: str) -> Variable:
    """`value` broadcast to `dims` (ints and int64 scalar variables)."""
    static = tuple(d if isinstance(d, int) else None for d in dims)
    sym = [cast(d, "int64") for d in dims if not isinstance(d, int)]
    return Alloc(dtype, static)(value, *sym)


def zeros_like(x: Variable, dtype: str | None = None) -> Variable:
    """Zeros of `x`'s shape (and dtype)."""
    dtype = dtype or x.dtype
    if x.ndim == 0:
        return const(0, dtype)
    return alloc_to(const(0, dtype), symbolic_shape(x), dtype)


def add_all(terms: Sequence[Variable]) -> Variable:
    total = terms[0]
    for t in terms[1:]:
        total = elem("add", total, t)
    return total


class SpecifyShape(Op):
    """`x` given the static type `shape` (``None``: dynamic); its run-time shape must fit.

    Gradients can lose static sizes (a slice of symbolic length); this gives
    them back their variable's type, so a dimension of static size 1 stays
    broadcastable, and makes the outer values of a generated scan match its
    inner placeholders exactly. Emits ``tensor.cast``.
    """

    __props__ = ("shape",)

    def __init__(self, shape: tuple):
        self.shape = tuple(shape)

    def make_node(self, x: Variable) -> Apply:
        if x.ndim != len(self.shape):
            raise TypeError(f"SpecifyShape: rank {x.ndim} != {len(self.shape)}")
        for s, d in zip(self.shape, x.type.shape):
            if s is not None and d is not None and s != d:
                raise ValueError(f"SpecifyShape: {x.type.shape} is not {self.shape}")
        return Apply(self, [x], [TensorType(x.dtype, self.shape)])

    def infer_shape(self, node, input_shapes):
        return [tuple(s if s is not None else d for s, d in zip(self.shape, input_shapes[0]))]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        return [b.tensor_cast(inputs[0], node.inputs[0].type, node.outputs[0].type)]

    def L_op(self, node, output_grads):
        (g,) = output_grads
        return [g]


def retype(x: Variable, shape: tuple) -> Variable:
    """`x` with the static shape `shape` (a no-op when it already has it)."""
    if x.type.shape == tuple(shape):
        return x
    return SpecifyShape(tuple(shape))(x)


def conform(g: Variable, var: Variable) -> Variable:
    """The gradient `g` brought to `var`'s type: summed over broadcast dimensions, cast, static sizes."""
    if not isinstance(g, Variable):
        raise TypeError(f"internal error: gradient of {var} is not a variable: {g!r}")
    t = var.type
    if g.ndim > t.ndim:
        g = Reduce("sum", tuple(range(g.ndim - t.ndim)))(g)
    if g.ndim < t.ndim:
        g = alloc_to(g, symbolic_shape(var), g.dtype)
    axes = tuple(d for d in range(t.ndim) if t.shape[d] == 1 and g.type.shape[d] != 1)
    if axes:
        g = Reduce("sum", axes)(g)
        pattern = []
        k = 0
        for d in range(t.ndim):
            if d in axes:
                pattern.append("x")
            else:
                pattern.append(k)
                k += 1
        g = DimShuffle(g.ndim, tuple(pattern))(g)
    if g.dtype != t.dtype:
        g = cast(g, t.dtype)
    if g.type.shape != t.shape:
        broadcast_shapes([g.type.shape, t.shape], f"gradient of {var}: ")
        if any(s is not None and d is None for s, d in zip(t.shape, g.type.shape)):
            g = SpecifyShape(tuple(s if s is not None else d for s, d in zip(t.shape, g.type.shape)))(g)
    return g


def backprop(
    seeds: Iterable[tuple[Variable, Variable]],
    wrt: Sequence[Variable],
    stop: set[int] | None = None,
) -> list[Variable | None]:
    """The gradients of the seeded variables' total with respect to `wrt`.

    `seeds` pairs variables with their (known) gradients; `stop` holds ids
    of variables treated as constants (no gradient flows through them).
    The result has one entry per `wrt` variable: its gradient, or ``None``
    when the seeds do not depend on it (through float variables).
    """
    seeds = list(seeds)
    stop = set(stop or ())
    outputs = [v for v, _ in seeds]
    wrt_ids = {w.id for w in wrt if w.id not in stop}
    nodes = toposort(outputs, stop=stop)
    dependent = set(wrt_ids)
    for node in nodes:
        if any(i.id in dependent for i in node.inputs):
            dependent.update(o.id for o in node.outputs if o.id not in stop)

    acc: dict[int, list[Variable]] = {}

    def add(v: Variable, g: Variable | None) -> None:
        if g is None or v.id not in dependent or not is_float(v.dtype):
            return
        acc.setdefault(v.id, []).append(conform(g, v))

    def total(v: Variable) -> Variable | None:
        terms = acc.get(v.id)
        if not terms:
            return None
        if len(terms) > 1:
            acc[v.id] = [add_all(terms)]
        return acc[v.id][0]

    for v, g in seeds:
        add(v, g)
    for node in reversed(nodes):
        if not any(o.id in acc for o in node.outputs):
            continue
        needed = [i.id in dependent and is_float(i.dtype) for i in node.inputs]
        if not any(needed):
            continue
        ograds = [total(o) for o in node.outputs]
        if all(g is None for g in ograds):
            continue
        if getattr(node.op, "L_op_wants_needed", False):
            igrads = node.op.L_op(node, ograds, needed=needed)
        else:
            igrads = node.op.L_op(node, ograds)
        if len(igrads) != len(node.inputs):
            raise RuntimeError(f"internal error: {node.op}.L_op gave {len(igrads)} gradients "
                               f"for {len(node.inputs)} inputs")
        for inp, g, need in zip(node.inputs, igrads, needed):
            if need:
                add(inp, g)
    return [total(w) for w in wrt]
