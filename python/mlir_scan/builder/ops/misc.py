"""Ops that check or re-type a value, and the diagonal ops.

* :class:`Assert` (Theano's ``T.opt.Assert``; ``T.opt.assert_op``): the input,
  after checking scalar conditions at run time (``AssertionError``);
* :class:`SpecifyShape` (``T.specify_shape``): the input with the sizes it is
  promised to have, checked at run time (``AssertionError``), known
  statically afterwards;
* :class:`Unbroadcast` (``T.unbroadcast``): the input with some statically-1
  sizes forgotten;
* :class:`ExtractDiag` / :class:`AllocDiag` (``T.diag``): a matrix's
  diagonal, and the square matrix with a vector on its diagonal.

Example::

    >>> from mlir_scan import tensor as T
    >>> x = T.vector("x")
    >>> T.specify_shape(x, (3,)).type, T.unbroadcast(T.row(), 0).type
    (TensorType(float64, (3,)), TensorType(float64, (None, None)))
    >>> T.diag(T.matrix()).type, T.diag(x).type
    (TensorType(float64, (None,)), TensorType(float64, (None, None)))
"""

from __future__ import annotations

import numpy as np

from ..emitter import Block
from ..graph import Apply, Constant, Op, TensorType, Variable, is_float, is_int
from .shape import Shape_i

__all__ = ["Assert", "SpecifyShape", "Unbroadcast", "ExtractDiag", "AllocDiag"]


def _zero(b: Block, dtype: str) -> str:
    return b.const(0.0 if is_float(dtype) else (False if dtype == "bool" else 0), dtype)


class Assert(Op):
    """``Assert(msg)(x, *conds)``: `x`, once every scalar condition is true at run time.

    A false condition fails the call with ``AssertionError(msg)`` (or with
    ``exception(msg)``, for the checks other ops of the DSL make with it).
    """

    __props__ = ("msg", "exception")

    def __init__(self, msg: str = "Theano Assert failed!", exception: type = AssertionError):
        self.msg = str(msg)
        self.exception = exception

    def make_node(self, x: Variable, *conds: Variable) -> Apply:
        cs = []
        for i, c in enumerate(conds):
            if not isinstance(c, Variable):
                raise TypeError(f"Assert: condition #{i} is not a symbolic variable: {c!r}")
            if c.ndim != 0:
                raise TypeError(f"Assert: condition #{i} must be a scalar, got {c.type}")
            if not (is_int(c.dtype) or is_float(c.dtype) or c.dtype == "bool"):
                raise TypeError(f"Assert: condition #{i} has dtype {c.dtype}")  # pragma: no cover
            cs.append(c)
        return Apply(self, [x, *cs], [x.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def infer_checked_shape(self, node, input_shapes):
        # A shape query keeps the assertion (the sizes read the checked value).
        return [tuple(Shape_i(d)(node.outputs[0]) for d in range(node.outputs[0].ndim))]

    #: Its sizes come with a run-time check (see ``checked_shape_of``).
    checks_shape = True

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        message = self.msg.replace("{", "{{").replace("}", "}}")
        for ssa, var in zip(inputs[1:], node.inputs[1:]):
            cond = b.cast(ssa, var.dtype, "bool")
            bad = b.not_(cond)
            b.check(bad, message, exception=self.exception)
        return [inputs[0]]

    def L_op(self, node, output_grads):
        # The value passes through unchanged: so does its gradient (the
        # other inputs, conditions or sizes, have none).
        return [output_grads[0]] + [None] * (len(node.inputs) - 1)


class SpecifyShape(Op):
    """`x` with the sizes `shape` promises: ints, ``None`` (given as inputs) or ``-1`` (not checked).

    Each promised size is checked at run time (``AssertionError``, or, for
    the checks other ops make with it (`what` is their name), ``ValueError``);
    static ones become part of the result's type.
    """

    __props__ = ("shape", "what")
    checks_shape = True

    def __init__(self, shape: tuple, what: str = "SpecifyShape"):
        self.shape = tuple(shape)
        self.what = what

    def make_node(self, x: Variable, *dims: Variable) -> Apply:
        if x.ndim != len(self.shape):
            raise ValueError(f"specify_shape: {x} has rank {x.ndim}, the shape {self._text()} has {len(self.shape)} "
                             "entries")
        if len(dims) != sum(1 for s in self.shape if s is None):
            raise TypeError("SpecifyShape: one input per symbolic size")
        out = []
        for d, (have, want) in enumerate(zip(x.type.shape, self.shape)):
            if want is not None and want >= 0 and have is not None and have != want:
                raise AssertionError(
                    f"SpecifyShape: dimension {d} of {x} has size {have}, the shape {self._text()} says {want}")
            out.append(want if want is not None and want >= 0 else have)
        return Apply(self, [x, *dims], [TensorType(x.dtype, tuple(out))])

    def _text(self) -> str:
        return "(" + ", ".join("?" if s is None else ("None" if s < 0 else str(s)) for s in self.shape) + ")"

    def infer_shape(self, node, input_shapes):
        it = iter(node.inputs[1:])
        dims = []
        for have, want in zip(input_shapes[0], self.shape):
            if want is None:
                dims.append(next(it))
            elif want >= 0:
                dims.append(want)
            else:
                dims.append(have)
        return [tuple(dims)]

    def infer_checked_shape(self, node, input_shapes):
        return [tuple(Shape_i(d)(node.outputs[0]) for d in range(node.outputs[0].ndim))]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        it = iter(zip(inputs[1:], node.inputs[1:]))
        for d, want in enumerate(self.shape):
            if want is not None and want < 0:
                continue
            if want is None:
                ssa, var = next(it)
                need = b.to_index(ssa, var.dtype)
            else:
                if x.type.shape[d] == want:
                    continue
                need = b.index(want)
            have = b.dim(inputs[0], x.type, d)
            if self.what == "SpecifyShape":
                b.check(b.icmp("ne", have, need), f"SpecifyShape: dimension {d} has size {{have}}, expected {{need}}",
                        have, need, exception=AssertionError)
            else:
                b.check(b.icmp("ne", have, need), f"{self.what}: dimension {d} has size {{have}}, expected {{need}}",
                        have, need)
        if x.ndim == 0:
            return [inputs[0]]
        return [b.tensor_cast(inputs[0], x.type, node.outputs[0].type)]

    def L_op(self, node, output_grads):
        # The value passes through unchanged: so does its gradient (the
        # other inputs, conditions or sizes, have none).
        return [output_grads[0]] + [None] * (len(node.inputs) - 1)


class Unbroadcast(Op):
    """`x` with the statically-1 sizes of `axes` made unknown (Theano's ``unbroadcast``)."""

    __props__ = ("axes",)

    def __init__(self, axes: tuple[int, ...]):
        self.axes = tuple(sorted(set(axes)))

    def make_node(self, x: Variable) -> Apply:
        for a in self.axes:
            if not 0 <= a < x.ndim:
                raise ValueError(f"unbroadcast: axis {a} is out of bounds for rank {x.ndim}")
        shape = tuple(None if d in self.axes and s == 1 else s for d, s in enumerate(x.type.shape))
        return Apply(self, [x], [TensorType(x.dtype, shape)])

    def infer_shape(self, node, input_shapes):
        return [tuple(input_shapes[0])]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        return [b.tensor_cast(inputs[0], node.inputs[0].type, node.outputs[0].type)]

    def L_op(self, node, output_grads):
        # The value passes through unchanged: so does its gradient (the
        # other inputs, conditions or sizes, have none).
        return [output_grads[0]] + [None] * (len(node.inputs) - 1)


class ExtractDiag(Op):
    """Diagonal `offset` of a matrix (``T.diag(matrix, k)``, ``x.diagonal(offset)``, NumPy's ``diagonal``).

    Element ``i`` is ``x[i, i + offset]`` (``offset >= 0``) or ``x[i - offset, i]``.
    """

    __props__ = ("offset",)

    def __init__(self, offset: int = 0):
        self.offset = int(offset)

    def make_node(self, x: Variable) -> Apply:
        if x.ndim != 2:
            raise TypeError(f"diag: expected a matrix, got rank {x.ndim}")
        n, m = x.type.shape
        size = _diag_length(n, m, self.offset) if n is not None and m is not None else None
        return Apply(self, [x], [TensorType(x.dtype, (size,))])

    def infer_shape(self, node, input_shapes):
        n, m = input_shapes[0]
        if isinstance(n, int) and isinstance(m, int):
            return [(_diag_length(n, m, self.offset),)]
        return None

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        out = node.outputs[0].type
        k = self.offset
        n, m = b.dim(inputs[0], x.type, 0), b.dim(inputs[0], x.type, 1)
        # min(n, m - k) or min(n + k, m), at least 0
        if k >= 0:
            size = b.iop("minsi", n, b.iop("subi", m, b.index(k)))
        else:
            size = b.iop("minsi", b.iop("subi", n, b.index(-k)), m)
        size = b.iop("maxsi", size, b.index(0))
        empty = b.empty(out, [size])

        def body(bb: Block, args: list[str]) -> list[str]:
            i = bb.op("linalg.index 0 : index")
            row, col = (i, bb.iop("addi", i, bb.index(k))) if k >= 0 else (bb.iop("addi", i, bb.index(-k)), i)
            return [bb.op(f"tensor.extract {inputs[0]}[{row}, {col}] : {x.type.mlir}")]

        return b.generic([], [(empty, out, "(d0)")], ["parallel"], body)

    def L_op(self, node, output_grads):
        (g,) = output_grads
        if g is None or not is_float(node.outputs[0].dtype):
            return [None]
        x = node.inputs[0]
        dims = [Shape_i(d)(x) if s is None else _i64(s) for d, s in enumerate(x.type.shape)]
        return [AllocDiag(self.offset, shaped=True)(g, *dims)]


def _diag_length(n: int, m: int, k: int) -> int:
    return max(0, min(n, m - k) if k >= 0 else min(n + k, m))


def _i64(value: int) -> Variable:
    return Constant(np.asarray(value, "int64"))


class AllocDiag(Op):
    """The matrix with vector `v` on diagonal `offset`, zeros elsewhere (``T.diag(vector, k)``).

    Square, of size ``len(v) + |offset|``, like NumPy's ``diag``; with
    ``shaped=True`` the node takes the matrix's two sizes as inputs (the
    gradient of :class:`ExtractDiag`, whose matrix need not be square).
    """

    __props__ = ("offset", "shaped")

    def __init__(self, offset: int = 0, shaped: bool = False):
        self.offset, self.shaped = int(offset), bool(shaped)

    def make_node(self, v: Variable, *dims: Variable) -> Apply:
        if v.ndim != 1:
            raise TypeError(f"diag: expected a vector, got rank {v.ndim}")
        if self.shaped:
            if len(dims) != 2 or any(d.ndim != 0 or not is_int(d.dtype) for d in dims):
                raise TypeError("AllocDiag: the matrix's two sizes must be integer scalars")
            shape = tuple(int(d.data) if isinstance(d, Constant) else None for d in dims)
        else:
            if dims:
                raise TypeError("AllocDiag: sizes are given only with shaped=True")
            n = v.type.shape[0]
            shape = (n + abs(self.offset),) * 2 if n is not None else (None, None)
        return Apply(self, [v, *dims], [TensorType(v.dtype, shape)])

    def infer_shape(self, node, input_shapes):
        if self.shaped:
            return [tuple(node.inputs[1:])]
        n = input_shapes[0][0]
        size = n + abs(self.offset) if self.offset else n
        return [(size, size)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        v = node.inputs[0]
        out = node.outputs[0].type
        k = self.offset
        length = b.dim(inputs[0], v.type, 0)
        if self.shaped:
            rows = b.to_index(inputs[1], node.inputs[1].dtype)
            cols = b.to_index(inputs[2], node.inputs[2].dtype)
        else:
            rows = cols = b.iop("addi", length, b.index(abs(k))) if k else length
        dtype = v.dtype
        empty = b.empty(out, [rows, cols])
        # The element read is clamped into v (an empty v is never read: its
        # diagonal is empty, the matrix all zeros).
        last = b.iop("maxsi", b.iop("subi", length, b.index(1)), b.index(0))
        nonempty = b.icmp("sgt", length, b.index(0))

        def body(bb: Block, args: list[str]) -> list[str]:
            i = bb.op("linalg.index 0 : index")
            j = bb.op("linalg.index 1 : index")
            on = bb.icmp("eq", bb.iop("subi", j, i), bb.index(k))
            at = bb.iop("minsi", i if k >= 0 else j, last)
            on = bb.op(f"arith.andi {on}, {nonempty} : i1")
            safe = bb.select(nonempty, at, bb.index(0), "index")
            value = bb.if_else(
                on, lambda t: t.op(f"tensor.extract {inputs[0]}[{safe}] : {v.type.mlir}"),
                lambda e: _zero(e, dtype), v.type.mlir_elem, "diag")
            return [value]

        return b.generic([], [(empty, out, "(d0, d1)")], ["parallel", "parallel"], body)

    def L_op(self, node, output_grads):
        (g,) = output_grads
        rest = [None] * (len(node.inputs) - 1)
        if g is None or not is_float(node.outputs[0].dtype):
            return [None] + rest
        return [ExtractDiag(self.offset)(g)] + rest
