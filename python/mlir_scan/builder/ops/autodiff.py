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
depend on the variable). Integer and boolean variables get no gradient: as
in Theano, what reaches the cost only through integer values has a zero
gradient. Which inputs of a node its outputs are connected to (Theano's
``connection_pattern``: sizes, indices and shapes are not) is
:func:`connection_pattern`; an op on a connected path whose gradient is
undefined (a random draw) makes :func:`backprop` raise
:class:`~mlir_scan.builder.graph.NullTypeGradError`, even when the path
goes through integer values, as Theano does.

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
from ..graph import Apply, Constant, NullTypeGradError, Op, TensorType, Variable, is_float, toposort
from .basic import Alloc, DimShuffle, Reduce
from .disconnected import DisconnectedGrad
from .elemwise import SCALAR_OPS, Elemwise, broadcast_shapes, cast
from .shape import symbolic_shape

__all__ = [
    "backprop", "conform", "zeros_like", "one_like", "add_all", "SpecifyShape", "DisconnectedGrad",
    "elem", "const", "retype", "alloc_to", "connection_pattern", "gradient_undefined", "connected",
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


def _op_classes(op: Op) -> set[str]:
    return {c.__name__ for c in type(op).__mro__}


def connection_pattern(node: Apply) -> list[list[bool]]:
    """Theano's ``connection_pattern``: ``[i][j]`` is whether output ``j`` depends differentiably on input ``i``.

    An op may define ``connection_pattern(node)``; otherwise every input is
    connected to every output except, as in Theano: the inputs of the shape
    ops (``Shape``, ``Shape_i``) and of ``disconnected_grad``; the sizes of
    ``Alloc`` and ``Reshape``; the stop of ``arange``; the indices of the
    (advanced) subtensor ops and of their ``set``/``inc`` forms; the
    ``n_steps`` of a scan.

    >>> from mlir_scan import tensor as T
    >>> x = T.dvector("x")
    >>> connection_pattern(x.shape[0].owner)
    [[False]]
    """
    op = node.op
    custom = getattr(op, "connection_pattern", None)
    if callable(custom):
        return [list(row) for row in custom(node)]
    n_in, n_out = len(node.inputs), len(node.outputs)
    names = _op_classes(op)
    inputs = [True] * n_in
    if names & {"Shape", "Shape_i", "ScanShape", "DisconnectedGrad"}:
        inputs = [False] * n_in
    elif names & {"Alloc", "Reshape"}:
        inputs = [True] + [False] * (n_in - 1)
    elif "Arange" in names and n_in == 3:
        inputs = [True, False, True]
    elif names & {"_IndexOp", "_AdvancedOp"}:
        values = 2 if any("Inc" in n or "Set" in n for n in names) else 1
        inputs = [i < values for i in range(n_in)]
    elif "ScanOp" in names and n_in:
        inputs[0] = False
    return [[c] * n_out for c in inputs]


def gradient_undefined(op: Op) -> bool:
    """Whether `op` has no gradient (Theano's ``grad_undefined``): it keeps ``Op.L_op``'s, or is a random draw."""
    return type(op).L_op is Op.L_op or "RandomDraw" in _op_classes(op) or bool(getattr(op, "grad_undefined", False))


def _reaching(outputs: Sequence[Variable], stop: set[int]) -> tuple[list[Apply], set[int]]:
    """The nodes of `outputs`' graph and the ids of the variables connected to them (backwards)."""
    nodes = toposort(list(outputs), stop=stop)
    reach = {v.id for v in outputs}
    for node in reversed(nodes):
        outs = [o.id in reach and o.id not in stop for o in node.outputs]
        if not any(outs):
            continue
        for inp, row in zip(node.inputs, connection_pattern(node)):
            if any(r and o for r, o in zip(row, outs)):
                reach.add(inp.id)
    return nodes, reach


def connected(outputs: Sequence[Variable], wrt: Sequence[Variable], stop: set[int] | None = None) -> list[bool]:
    """For each `wrt`, whether `outputs` depend on it through connected inputs (any dtype), not through `stop`.

    This is Theano's notion of a disconnected input: not on the graph at
    all, or only through sizes, indices, shapes or ``disconnected_grad``.
    A variable reaching the outputs only through integer values is
    connected (its gradient is zero).
    """
    _, reach = _reaching(outputs, set(stop or ()))
    return [w.id in reach for w in wrt]


def _check_defined(outputs: Sequence[Variable], sources: Sequence[Variable], stop: set[int]) -> None:
    """Raises NullTypeGradError if a connected path from `sources` to `outputs` crosses an op without gradient."""
    nodes, reach = _reaching(outputs, stop)
    live = {v.id for v in sources if v.id not in stop}
    if not live:
        return
    for node in nodes:
        pattern = None
        for i, inp in enumerate(node.inputs):
            if inp.id not in live:
                continue
            pattern = pattern or connection_pattern(node)
            for j, out in enumerate(node.outputs):
                if pattern[i][j] and out.id not in stop:
                    live.add(out.id)
                    if out.id in reach and gradient_undefined(node.op):
                        kind = "integer-valued " if not is_float(out.dtype) else ""
                        raise NullTypeGradError(
                            f"grad: the gradient is undefined: the cost depends on {inp} through the "
                            f"{kind}output of {node.op} (node {node}), which has no gradient")


def backprop(
    seeds: Iterable[tuple[Variable, Variable]],
    wrt: Sequence[Variable],
    stop: set[int] | None = None,
    check_from: Sequence[Variable] | None = None,
) -> list[Variable | None]:
    """The gradients of the seeded variables' total with respect to `wrt`.

    `seeds` pairs variables with their (known) gradients; `stop` holds ids
    of variables treated as constants (no gradient flows through them).
    The result has one entry per `wrt` variable: its gradient, or ``None``
    when the seeds do not depend on it (through float variables).
    A connected path from `check_from` (default: the float `wrt`) to the
    seeds through an op without gradient raises :class:`NullTypeGradError`.
    """
    seeds = list(seeds)
    stop = set(stop or ())
    sources = [w for w in wrt if is_float(w.dtype)] if check_from is None else list(check_from)
    _check_defined([v for v, _ in seeds], sources, stop)
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
