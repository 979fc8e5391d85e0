"""Symbolic shapes: ``x.shape``, ``Shape_i`` and :func:`shape_of`.

:func:`shape_of` gives the shape of any variable as a tuple whose entries are
ints (static) or int64 scalar variables computing the dimension from other
variables of the graph (Theano's ``ShapeFeature``). The scan builder uses it
to size outputs before the loop runs.

Example::

    >>> from mlir_scan import tensor as T
    >>> x = T.matrix("x")
    >>> [str(d) for d in shape_of(T.exp(x) + 1)]
    ['Shape_i(0)', 'Shape_i(1)']
    >>> [str(d) for d in shape_of(T.zeros((3, x.shape[0])))]
    ['3', 'Shape_i(0)']
"""

from __future__ import annotations

import numpy as np

from ..emitter import Block
from ..graph import Apply, Constant, Op, TensorType, Variable, clone_replace, is_int, toposort
from .elemwise import cast

__all__ = ["Shape", "Shape_i", "MakeVector", "shape_of", "checked_shape_of", "symbolic_shape",
           "fold_shapes", "sizes_read_from_value", "carries_checks", "dims_from_shape_arg", "Dim"]

#: A dimension: a static int or an int64 scalar variable.
Dim = "int | Variable"


class Shape_i(Op):
    """Dimension `i` of a tensor, as an int64 scalar."""

    __props__ = ("i",)

    def __init__(self, i: int):
        self.i = i

    def make_node(self, x: Variable) -> Apply:
        if not 0 <= self.i < x.ndim:
            raise IndexError(f"Shape_i: dimension {self.i} of a rank-{x.ndim} tensor")
        return Apply(self, [x], [TensorType("int64", ())])

    def infer_shape(self, node, input_shapes):
        return [()]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        d = b.dim(inputs[0], node.inputs[0].type, self.i)
        return [b.from_index(d)]


class Shape(Op):
    """The shape of a tensor, as an int64 vector (``x.shape``)."""

    def make_node(self, x: Variable) -> Apply:
        return Apply(self, [x], [TensorType("int64", (x.ndim,))])

    def infer_shape(self, node, input_shapes):
        return [(node.inputs[0].ndim,)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        if x.ndim == 0:
            return [b.op("tensor.empty() : tensor<0xi64>")]
        dims = [b.from_index(d) for d in b.dims(inputs[0], x.type)]
        return [b.op(f"tensor.from_elements {', '.join(dims)} : tensor<{x.ndim}xi64>", "shape")]


class MakeVector(Op):
    """A vector from scalars of one dtype."""

    __props__ = ("dtype",)

    def __init__(self, dtype: str):
        self.dtype = dtype

    def make_node(self, *scalars: Variable) -> Apply:
        for i, s in enumerate(scalars):
            if s.ndim != 0 or s.dtype != self.dtype:
                raise TypeError(f"MakeVector: input #{i} must be a {self.dtype} scalar, got {s.type}")
        return Apply(self, scalars, [TensorType(self.dtype, (len(scalars),))])

    def infer_shape(self, node, input_shapes):
        return [(len(node.inputs),)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        t = node.outputs[0].type
        if not inputs:
            return [b.op(f"tensor.empty() : {t.mlir}")]
        return [b.op(f"tensor.from_elements {', '.join(inputs)} : {t.mlir}", "vec")]


def _fallback(var: Variable) -> tuple:
    return tuple(
        size if size is not None else Shape_i(d)(var) for d, size in enumerate(var.type.shape)
    )


def sizes_read_from_value(node: Apply) -> list[tuple]:
    """``infer_checked_shape`` of an op that checks its sizes when it runs.

    A shape query of such an op's result reads the sizes of the result
    itself (statically known sizes stay ints): the op runs, so its checks
    (a negative size, sizes that do not add up) fail the query as they
    would fail the value (``checks_shape``, :func:`checked_shape_of`).
    """
    return [tuple(s if s is not None else Shape_i(d)(out) for d, s in enumerate(out.type.shape))
            for out in node.outputs]


def symbolic_shape(var: Variable) -> tuple:
    """The shape of `var` as the graph reads it: ints where static, ``Shape_i(d)(var)`` elsewhere.

    What the DSL builds user-visible sizes from (``x.shape``, ``mean``,
    ``ones_like``, the gradient of ``sum``, ...): the sizes stay attached to
    `var`, so replacing `var` (``clone``, ``givens``, an intermediate
    variable given as a ``function`` input) replaces its sizes too, as in
    Theano. :func:`fold_shapes` rewrites them into sizes computed from the
    graph's inputs when a function is compiled (Theano's ``ShapeFeature``).

    >>> from mlir_scan import tensor as T
    >>> x = T.vector("x")
    >>> [str(d) for d in symbolic_shape(T.exp(x))]
    ['Shape_i(0)']
    """
    return _fallback(var)


def fold_shapes(outputs: list[Variable]) -> list[Variable]:
    """`outputs` with each size read from a computed variable replaced by its inferred size.

    ``Shape_i(d)(v)`` and ``Shape(v)`` of a variable computed in the graph
    become the size :func:`checked_shape_of` infers from `v`'s inputs (so
    `v` itself need not be computed for its shape, and the sizes keep the
    run-time checks `v` would make). Sizes of the graph's inputs stay reads
    of those inputs. Run on a function's outputs after its graph has been
    cut at its inputs and ``givens`` applied, and on every scan's inner
    graph.

    >>> from mlir_scan import tensor as T
    >>> x = T.vector("x")
    >>> [n] = fold_shapes([T.exp(x).shape[0]])
    >>> str(n), n.owner.inputs[0] is x
    ('Shape_i(0)', True)
    """
    replace: dict[Variable, Variable] = {}
    for node in toposort(outputs):
        if isinstance(node.op, Shape_i):
            src = node.inputs[0]
            if src.owner is None:
                continue
            dim = _resolve(Shape_i(node.op.i)(src), checked=True)
            if not _reads(dim, src, node.op.i):
                replace[node.outputs[0]] = _dim_variable(dim)
        elif isinstance(node.op, Shape):
            src = node.inputs[0]
            if src.owner is None or src.ndim == 0:
                continue
            dims = [_resolve(Shape_i(d)(src), checked=True) for d in range(src.ndim)]
            if not all(_reads(dim, src, d) for d, dim in enumerate(dims)):
                replace[node.outputs[0]] = MakeVector("int64")(*[_dim_variable(d) for d in dims])
    if not replace:
        return list(outputs)
    return clone_replace(list(outputs), replace)


def _reads(dim, src: Variable, i: int) -> bool:
    """True when `dim` is ``Shape_i(i)(src)``: a size that could not be inferred."""
    return (isinstance(dim, Variable) and dim.owner is not None and isinstance(dim.owner.op, Shape_i)
            and dim.owner.op.i == i and dim.owner.inputs[0] is src)


def _resolve(dim, checked: bool, inferred_only: bool = False):
    """`dim`, a size read from a computed variable, as the size inferred for that variable.

    With `inferred_only`, only variables whose shape is inferred already
    (during an inference: never the outputs of the node being inferred,
    which may read their own sizes).
    """
    infer = checked_shape_of if checked else shape_of
    tag = "checked_shape" if checked else "shape"
    while (isinstance(dim, Variable) and dim.owner is not None and isinstance(dim.owner.op, Shape_i)
           and dim.owner.inputs[0].owner is not None):
        src, i = dim.owner.inputs[0], dim.owner.op.i
        if inferred_only and tag not in src.tag:
            break
        inferred = infer(src)[i]
        if _reads(inferred, src, i):
            break
        dim = inferred
    return dim


def _dim_variable(dim) -> Variable:
    if isinstance(dim, Variable):
        return dim if dim.dtype == "int64" else cast(dim, "int64")
    return Constant(np.asarray(int(dim), "int64"))


def shape_of(var: Variable) -> tuple:
    """The shape of `var`: ints where static, int64 scalar variables elsewhere.

    The sizes are inferred from the graph that computes `var` (in terms of
    its inputs, where the ops can tell): what the scan builder sizes buffers
    with before a loop runs. User-visible sizes use :func:`symbolic_shape`.
    """
    cached = var.tag.get("shape")
    if cached is not None:
        return cached
    if var.ndim == 0:
        return ()
    pending = [n for n in toposort([var]) if any("shape" not in o.tag for o in n.outputs)]
    for node in pending:
        in_shapes = []
        for inp in node.inputs:
            if "shape" not in inp.tag:
                inp.tag["shape"] = _fallback(inp) if inp.ndim else ()
            in_shapes.append(inp.tag["shape"])
        try:
            inferred = node.op.infer_shape(node, in_shapes)
        except NotImplementedError:  # pragma: no cover - ops opt out this way
            inferred = None
        for k, out in enumerate(node.outputs):
            shape = _fallback(out) if out.ndim else ()
            if inferred is not None and inferred[k] is not None:
                shape = tuple(
                    static if static is not None else _as_dim(_resolve(dim, checked=False, inferred_only=True))
                    for static, dim in zip(out.type.shape, inferred[k])
                )
            out.tag["shape"] = shape
    if "shape" not in var.tag:
        var.tag["shape"] = _fallback(var)
    return var.tag["shape"]


def checked_shape_of(var: Variable) -> tuple:
    """The shape of `var` as a user's shape query sees it: sizes that keep their checks.

    Like :func:`shape_of`, but a size computed by an op that checks it at run
    time stays that computation even where the type knows the size: ops give
    such sizes with ``infer_checked_shape`` (a scan's rows are its
    ``n_steps``, checked against its sequences as the scan itself would
    check them, see :class:`~mlir_scan.builder.ops.scan.ScanShape`). So
    ``o.shape[0]`` of ``scan(..., sequences=x, n_steps=20)`` is 20 only
    when ``x`` has at least 20 rows, and depends on ``x``.
    """
    cached = var.tag.get("checked_shape")
    if cached is not None:
        return cached
    if var.ndim == 0:
        return ()
    pending = [n for n in toposort([var]) if any("checked_shape" not in o.tag for o in n.outputs)]
    for node in pending:
        in_shapes = []
        for inp in node.inputs:
            if "checked_shape" not in inp.tag:
                inp.tag["checked_shape"] = shape_of(inp) if inp.owner is None else _fallback(inp)
            in_shapes.append(inp.tag["checked_shape"])
        infer = getattr(node.op, "infer_checked_shape", None) or node.op.infer_shape
        try:
            inferred = infer(node, in_shapes)
        except NotImplementedError:  # pragma: no cover
            inferred = None
        for k, out in enumerate(node.outputs):
            shape = shape_of(out) if out.ndim else ()
            if inferred is not None and inferred[k] is not None:
                resolved = [_resolve(dim, checked=True, inferred_only=True) for dim in inferred[k]]
                shape = tuple(
                    _as_dim(dim) if carries_checks(dim) else known for known, dim in zip(shape, resolved)
                )
            out.tag["checked_shape"] = shape
    if "checked_shape" not in var.tag:
        var.tag["checked_shape"] = shape_of(var)
    return var.tag["checked_shape"]


def carries_checks(dim) -> bool:
    """True when the size `dim` is computed by an op that checks it (``checks_shape``)."""
    if not isinstance(dim, Variable) or isinstance(dim, Constant):
        return False
    cached = dim.tag.get("carries_checks")
    if cached is None:
        cached = any(getattr(n.op, "checks_shape", False) for n in toposort([dim]))
        dim.tag["carries_checks"] = cached
    return cached


def _as_dim(dim):
    """An inferred dimension as an int or an int64 scalar variable."""
    if isinstance(dim, Variable):
        if isinstance(dim, Constant):
            return int(dim.data)
        if dim.dtype != "int64":
            return cast(dim, "int64")
        return dim
    return int(dim)


def dims_from_shape_arg(shape, what: str, ndim: int | None = None) -> tuple:
    """Dimensions from a shape argument: ints, int scalars or an int vector.

    Accepts ``(3, n)``, ``[x.shape[0], 2]``, ``x.shape`` or any symbolic
    integer vector of static length, or of any length when `ndim` says how
    many entries to read (Theano's ``reshape(x, shape, ndim=k)``).
    """

    if isinstance(shape, Variable):
        if shape.ndim == 0:
            shape = [shape]
        elif shape.ndim == 1:
            if shape.owner is not None and isinstance(shape.owner.op, Shape):
                return symbolic_shape(shape.owner.inputs[0])
            if shape.owner is not None and isinstance(shape.owner.op, MakeVector):
                return tuple(_as_dim(v) for v in shape.owner.inputs)
            if isinstance(shape, Constant):
                return tuple(int(v) for v in shape.data)
            n = shape.type.shape[0]
            if n is None:
                n = ndim
            if n is None:
                raise ValueError(
                    f"{what}: a shape vector must have a static length, got {shape.type} (or give ndim, "
                    "the number of its entries)")
            if not is_int(shape.dtype):
                raise TypeError(f"{what}: a shape must hold integers, got {shape.dtype}")
            return tuple(_as_dim(shape[i]) for i in range(n))
        else:
            raise ValueError(f"{what}: a shape must be a vector, got rank {shape.ndim}")
    if isinstance(shape, (int,)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        items = list(shape)
    except TypeError as exc:
        raise TypeError(f"{what}: expected a shape (tuple of ints / int scalars), got {shape!r}") from exc
    dims = []
    for i, d in enumerate(items):
        if isinstance(d, Variable):
            if d.ndim != 0 or not is_int(d.dtype):
                raise TypeError(f"{what}: dimension #{i} must be an integer scalar, got {d.type}")
            dims.append(_as_dim(d))
            continue
        try:
            value = int(d)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what}: dimension #{i} is not an integer: {d!r}") from exc
        if value != d or isinstance(d, bool):
            raise TypeError(f"{what}: dimension #{i} is not an integer: {d!r}")
        if value < 0:
            raise ValueError(f"{what}: dimension #{i} is negative ({value})")
        dims.append(value)
    return tuple(dims)
