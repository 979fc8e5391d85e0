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

from ..emitter import Block
from ..graph import Apply, Op, TensorType, Variable, is_float, is_int
from .shape import Shape_i

__all__ = ["Assert", "SpecifyShape", "Unbroadcast", "ExtractDiag", "AllocDiag"]


def _zero(b: Block, dtype: str) -> str:
    return b.const(0.0 if is_float(dtype) else (False if dtype == "bool" else 0), dtype)


class Assert(Op):
    """``Assert(msg)(x, *conds)``: `x`, once every scalar condition is true at run time.

    A false condition fails the call with ``AssertionError(msg)``.
    """

    __props__ = ("msg",)

    def __init__(self, msg: str = "Theano Assert failed!"):
        self.msg = str(msg)

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
            bad = b.op(f"arith.xori {cond}, {b.const(True, 'bool')} : i1")
            b.check(bad, message, exception=AssertionError)
        return [inputs[0]]


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


class ExtractDiag(Op):
    """The main diagonal of a matrix (``T.diag(matrix)``, NumPy's ``diag``)."""

    def make_node(self, x: Variable) -> Apply:
        if x.ndim != 2:
            raise TypeError(f"diag: expected a matrix, got rank {x.ndim}")
        n, m = x.type.shape
        size = min(n, m) if n is not None and m is not None else None
        return Apply(self, [x], [TensorType(x.dtype, (size,))])

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        out = node.outputs[0].type
        n = b.iop("minsi", b.dim(inputs[0], x.type, 0), b.dim(inputs[0], x.type, 1))
        empty = b.empty(out, [n])

        def body(bb: Block, args: list[str]) -> list[str]:
            i = bb.op("linalg.index 0 : index")
            return [bb.op(f"tensor.extract {inputs[0]}[{i}, {i}] : {x.type.mlir}")]

        return b.generic([], [(empty, out, "(d0)")], ["parallel"], body)


class AllocDiag(Op):
    """The square matrix with vector `v` on its diagonal (``T.diag(vector)``)."""

    def make_node(self, v: Variable) -> Apply:
        if v.ndim != 1:
            raise TypeError(f"diag: expected a vector, got rank {v.ndim}")
        n = v.type.shape[0]
        return Apply(self, [v], [TensorType(v.dtype, (n, n))])

    def infer_shape(self, node, input_shapes):
        return [(input_shapes[0][0], input_shapes[0][0])]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        v = node.inputs[0]
        out = node.outputs[0].type
        n = b.dim(inputs[0], v.type, 0)
        empty = b.empty(out, [n, n])
        dtype = v.dtype

        def body(bb: Block, args: list[str]) -> list[str]:
            i = bb.op("linalg.index 0 : index")
            j = bb.op("linalg.index 1 : index")
            on = bb.icmp("eq", i, j)
            return [bb.select(on, args[0], _zero(bb, dtype), v.type.mlir_elem)]

        return b.generic([(inputs[0], v.type, "(d0)")], [(empty, out, "(d0, d1)")], ["parallel", "parallel"], body)
