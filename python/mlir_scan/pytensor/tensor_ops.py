"""Translations of PyTensor's tensor ops other than ``Elemwise`` and ``Scan``.

Products (``Dot`` and the BLAS ops PyTensor's rewrites introduce: ``Gemv``,
``Gemm``, ``Dot22``, ``Dot22Scalar``, ``Ger`` and their C/SciPy subclasses),
``DimShuffle``, reductions (``CAReduce``: sum, prod, max, min, all, any;
``Argmax``; ``CumOp``: cumsum, cumprod), ``Softmax`` and ``LogSoftmax``,
``Eye``, ``ExtractDiag``, ``Repeat`` (counts an int, a scalar or a constant),
indexing (``Subtensor``, ``IncSubtensor``), allocation (``Alloc``,
``AllocEmpty``, ``ARange``), shapes (``Shape``, ``Shape_i``, ``Reshape``,
``SpecifyShape``, ``MakeVector``, ``Join``), and the identity-like ops
(``ScalarFromTensor``, ``TensorFromScalar``, ``DeepCopyOp``, ``ViewOp``).
Each maps onto the builder's DSL.

Example::

    >>> import pytensor.tensor as pt
    >>> from pytensor.graph.fg import FunctionGraph
    >>> from mlir_scan.pytensor.translate import Translator
    >>> A, x = pt.matrix("A"), pt.vector("x")
    >>> fg = FunctionGraph([A, x], [pt.dot(A, x).sum()], clone=False)
    >>> tr = Translator(); _ = tr.inputs(fg.inputs)
    >>> tr.outputs(fg.outputs)[0].type
    TensorType(float64, ())
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytensor.scalar.basic as ps
from pytensor.compile.ops import DeepCopyOp, ViewOp
from pytensor.graph.basic import Constant as PtConstant
from pytensor.tensor import blas
from pytensor.tensor.basic import (
    ARange,
    Alloc,
    AllocEmpty,
    ExtractDiag,
    Eye,
    Join,
    Split,
    MakeVector,
    ScalarFromTensor,
    TensorFromScalar,
)
from pytensor.tensor.elemwise import CAReduce, DimShuffle
from pytensor.tensor.extra_ops import CumOp, Repeat
from pytensor.tensor.math import Argmax, Dot
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape
from pytensor.tensor.special import LogSoftmax, Softmax
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.subtensor import (
    AdvancedIncSubtensor,
    AdvancedIncSubtensor1,
    AdvancedSubtensor,
    AdvancedSubtensor1,
    IncSubtensor,
    Subtensor,
    indices_from_subtensor,
)

from ..builder import tensor as T
from ..builder.ops.misc import Assert as BAssert
from ..builder.ops.basic import DimShuffle as BDimShuffle
from ..builder.ops.linalg import diagonal as linalg_diagonal
from ..builder.ops.misc import SpecifyShape as BSpecifyShape
from ..builder.ops.shape import Shape_i as BShape_i
from ..builder.ops.shape import MakeVector as BMakeVector
from .translate import Translator, Unsupported, register

__all__: list[str] = []


# -- products -------------------------------------------------------------------------------


def _is_zero(tr: Translator, pt_var: Any) -> bool:
    if isinstance(pt_var, PtConstant):
        data = np.asarray(pt_var.data)
        return data.size > 0 and bool(np.all(data == 0))
    return False


def _is_one(pt_var: Any) -> bool:
    if isinstance(pt_var, PtConstant):
        data = np.asarray(pt_var.data)
        return data.size > 0 and bool(np.all(data == 1))
    return False


def _scaled(alpha_pt: Any, alpha: Any, value: Any) -> Any:
    return value if _is_one(alpha_pt) else T.mul(alpha, value)


def _dot_of(x: Any, y: Any) -> Any:
    """``T.dot(x, y)``, as a vector product when a matrix operand is one row or column.

    PyTensor's rewrites turn ``dot(v, M)`` into ``dot(v[None], M)`` (a 1 x n
    matrix); the builder's vector products vectorize better than a 1-row matmul.
    """
    if x.ndim == 2 and y.ndim == 2 and x.type.shape[0] == 1:
        return T.dimshuffle(T.dot(dimshuffle_folded(x, (1,)), y), "x", 0)
    if x.ndim == 2 and y.ndim == 2 and y.type.shape[1] == 1:
        return T.dimshuffle(T.dot(x, dimshuffle_folded(y, (0,))), 0, "x")
    return T.dot(x, y)


@register(Dot, blas.Dot22)
def _dot(tr: Translator, node: Any, ins: list) -> list:
    return [_dot_of(*ins)]


@register(blas.Dot22Scalar)
def _dot22scalar(tr: Translator, node: Any, ins: list) -> list:
    x, y, a = ins
    return [T.mul(_dot_of(x, y), a)]


def _axpby(tr: Translator, node: Any, y: Any, alpha: Any, product: Any, beta: Any) -> Any:
    """``beta * y + alpha * product``; a zero `beta` ignores `y` (it may be uninitialised)."""
    _, alpha_pt, *_ = node.inputs
    beta_pt = node.inputs[-1]
    term = _scaled(alpha_pt, alpha, product)
    if _is_zero(tr, beta_pt):
        return term
    return T.add(_scaled(beta_pt, beta, y), term)


@register(blas.Gemv)
def _gemv(tr: Translator, node: Any, ins: list) -> list:
    y, alpha, A, x, beta = ins
    return [_axpby(tr, node, y, alpha, _dot_of(A, x), beta)]


@register(blas.Gemm)
def _gemm(tr: Translator, node: Any, ins: list) -> list:
    z, a, x, y, b = ins
    return [_axpby(tr, node, z, a, _dot_of(x, y), b)]


@register(blas.Ger)
def _ger(tr: Translator, node: Any, ins: list) -> list:
    A, alpha, x, y = ins
    return [T.add(A, _scaled(node.inputs[1], alpha, T.outer(x, y)))]


# -- structure ------------------------------------------------------------------------------


def dimshuffle_folded(x: Any, order: tuple) -> Any:
    """``T.dimshuffle(x, *order)``, composed with the dimshuffle that made `x` if there is one.

    PyTensor's rewritten scans squeeze what they just expanded
    (``Squeeze(ExpandDims(h))``): composing the two patterns gives ``h`` itself
    instead of two copies per step.

    >>> v = T.vector("v")
    >>> dimshuffle_folded(T.dimshuffle(v, "x", 0), (1,)) is v
    True
    """
    node = x.owner
    if node is not None and isinstance(node.op, BDimShuffle):
        inner = node.op.new_order
        composed = tuple("x" if d == "x" else inner[d] for d in order)
        source = node.inputs[0]
        dropped = set(range(source.ndim)) - {d for d in composed if d != "x"}
        if all(source.type.shape[d] == 1 for d in dropped):
            if composed == tuple(range(source.ndim)):
                return source
            return T.dimshuffle(source, *composed)
    return T.dimshuffle(x, *order)


@register(DimShuffle)
def _dimshuffle(tr: Translator, node: Any, ins: list) -> list:
    x, order = ins[0], tuple(node.op.new_order)
    kept = {d for d in order if d != "x"}
    unsure = [d for d in range(x.ndim) if d not in kept and x.type.shape[d] != 1]
    if unsure:
        # PyTensor drops an axis of unknown length after checking it is 1 at run time.
        x = BSpecifyShape(tuple(1 if d in unsure else -1 for d in range(x.ndim)),
                          what="DimShuffle: Attempting to squeeze axes with size not equal to one")(x)
    return [dimshuffle_folded(x, order)]


@register(Split)
def _split(tr: Translator, node: Any, ins: list) -> list:
    axis = tr.static_int(node.inputs[1])
    if axis is None:
        raise Unsupported(node.op, "a split along a symbolic axis")
    sizes = ins[2]
    if isinstance(node.inputs[2], PtConstant):
        sizes = T.constant(np.asarray(node.inputs[2].data, dtype="int64"))
    return T.split(ins[0], sizes, node.op.len_splits, axis=axis)


_REDUCTIONS = {
    ps.Add: T.sum,
    ps.Mul: T.prod,
    ps.Maximum: T.max,
    ps.ScalarMaximum: T.max,
    ps.Minimum: T.min,
    ps.ScalarMinimum: T.min,
    ps.AND: T.all,
    ps.OR: T.any,
}


@register(CAReduce)
def _careduce(tr: Translator, node: Any, ins: list) -> list:
    op = node.op
    fn = None
    for cls in type(op.scalar_op).__mro__:
        fn = _REDUCTIONS.get(cls)
        if fn is not None:
            break
    if fn is None or type(op).__name__ in ("ProdWithoutZeros", "MulWithoutZeros"):
        raise Unsupported(op, f"reduction by {op.scalar_op}")
    x = ins[0]
    axis = None if op.axis is None else tuple(op.axis)
    acc = getattr(op, "acc_dtype", None)
    if acc is not None and acc != x.dtype and fn in (T.sum, T.prod):
        x = T.cast(x, acc)
    if axis == ():
        return [x]
    return [fn(x, axis=axis)]


def _one_axis(op: Any) -> int | None:
    """The axis of a ``Softmax``/``LogSoftmax`` (a one-element tuple, or None for all)."""
    axis = op.axis
    if axis is None:
        return None
    axis = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(axis) != 1:
        raise Unsupported(op, f"over several axes {axis}")
    return int(axis[0])


@register(Argmax)
def _argmax(tr: Translator, node: Any, ins: list) -> list:
    axis = node.op.axis
    return [T.argmax(ins[0], axis=None if axis is None else tuple(int(a) for a in axis))]


@register(CumOp)
def _cumop(tr: Translator, node: Any, ins: list) -> list:
    fn = {"add": T.cumsum, "mul": T.cumprod}.get(node.op.mode)
    if fn is None:
        raise Unsupported(node.op, f"mode {node.op.mode!r}")
    return [fn(ins[0], axis=node.op.axis)]


@register(Eye)
def _eye(tr: Translator, node: Any, ins: list) -> list:
    n, m, k = (tr.int_or_value(v) for v in node.inputs)
    return [T.eye(n, m, k, dtype=node.op.dtype)]


@register(ExtractDiag)
def _extract_diag(tr: Translator, node: Any, ins: list) -> list:
    op = node.op
    # (any rank: a batched Cholesky's diagonal, PyMC's MvNormal with an LKJ prior)
    return [linalg_diagonal(ins[0], op.offset, op.axis1, op.axis2)]


@register(Repeat)
def _repeat(tr: Translator, node: Any, ins: list) -> list:
    counts = node.inputs[1]
    if counts.ndim == 1 and not isinstance(counts, PtConstant):
        raise Unsupported(node.op, "repeat counts given as a symbolic vector")
    repeats = np.asarray(counts.data) if isinstance(counts, PtConstant) else ins[1]
    return [T.repeat(ins[0], repeats, axis=node.op.axis)]


@register(Softmax)
def _softmax(tr: Translator, node: Any, ins: list) -> list:
    return [T.nnet.softmax(ins[0], axis=_one_axis(node.op))]


@register(LogSoftmax)
def _logsoftmax(tr: Translator, node: Any, ins: list) -> list:
    return [T.nnet.logsoftmax(ins[0], axis=_one_axis(node.op))]


@register(Join)
def _join(tr: Translator, node: Any, ins: list) -> list:
    axis = tr.static_int(node.inputs[0])
    if axis is None:
        raise Unsupported(node.op, "the axis of a Join must be a constant")
    tensors = ins[1:]
    if len(tensors) == 1:
        return [tensors[0]]
    return [T.concatenate(tensors, axis=axis)]


@register(MakeVector)
def _make_vector(tr: Translator, node: Any, ins: list) -> list:
    dtype = node.outputs[0].type.dtype
    return [BMakeVector(dtype)(*[T.cast(v, dtype) if v.dtype != dtype else v for v in ins])]


@register(Alloc)
def _alloc(tr: Translator, node: Any, ins: list) -> list:
    return [T.alloc(ins[0], *ins[1:])]


@register(AllocEmpty)
def _alloc_empty(tr: Translator, node: Any, ins: list) -> list:
    # Zeros: PyTensor leaves the values undefined, so zeros are one valid choice.
    return [T.zeros(list(ins), dtype=node.op.dtype)]


@register(ARange)
def _arange(tr: Translator, node: Any, ins: list) -> list:
    return [T.arange(*ins, dtype=node.op.dtype)]


# -- shapes -----------------------------------------------------------------------------------


@register(Shape)
def _shape(tr: Translator, node: Any, ins: list) -> list:
    return [T.shape(ins[0])]


@register(Shape_i)
def _shape_i(tr: Translator, node: Any, ins: list) -> list:
    return [BShape_i(node.op.i)(ins[0])]


@register(Reshape)
def _reshape(tr: Translator, node: Any, ins: list) -> list:
    x, shp = ins
    const = node.inputs[1]
    if isinstance(const, PtConstant):
        return [T.reshape(x, [int(d) for d in np.asarray(const.data)], ndim=node.op.ndim)]
    return [T.reshape(x, shp, ndim=node.op.ndim)]


@register(SpecifyShape)
def _specify_shape(tr: Translator, node: Any, ins: list) -> list:
    shape = []
    for pv in node.inputs[1:]:
        if isinstance(pv, PtConstant) and pv.data is None:
            shape.append(None)
        else:
            shape.append(tr.int_or_value(pv))
    return [T.specify_shape(ins[0], shape)]


@register(ScalarFromTensor, TensorFromScalar, DeepCopyOp, ViewOp)
def _identity(tr: Translator, node: Any, ins: list) -> list:
    return [ins[0]]


# -- indexing ---------------------------------------------------------------------------------


def _index_key(tr: Translator, node: Any, index_inputs: list) -> tuple:
    """PyTensor's index list as a Python key over builder values (constants as ints)."""

    def conv(v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, PtConstant) and v.data is None:
            return None
        return tr.int_or_value(v)

    key = []
    for entry in indices_from_subtensor(index_inputs, node.op.idx_list):
        if isinstance(entry, slice):
            key.append(slice(conv(entry.start), conv(entry.stop), conv(entry.step)))
        else:
            key.append(conv(entry))
    return tuple(key)


@register(Subtensor)
def _subtensor(tr: Translator, node: Any, ins: list) -> list:
    key = _index_key(tr, node, node.inputs[1:])
    hint = tr.buffers.get(node.inputs[0])
    if hint is not None:
        sub = hint.tail(key)
        if sub is not None:  # buffer[s:] of a buffer kept to its last rows: its readers index it
            tr.buffers[node.outputs[0]] = sub
            return [None]
        got = hint.index(key)
        if got is not None:
            return [got]
    return [ins[0][key] if key else ins[0]]


@register(IncSubtensor)
def _inc_subtensor(tr: Translator, node: Any, ins: list) -> list:
    key = _index_key(tr, node, node.inputs[2:])
    x, y = ins[0], ins[1]
    if not key:
        return [y + T.zeros_like(x) if node.op.set_instead_of_inc else x + y]
    view = x[key]
    if node.op.set_instead_of_inc:
        return [T.set_subtensor(view, y)]
    return [T.inc_subtensor(view, y)]



# -- integer-array ("advanced") indexing ------------------------------------------------------------


def _advanced_key(tr: Translator, node: Any, index_inputs: list) -> tuple:
    """The index tuple of an ``Advanced*Subtensor`` node over builder values.

    PyTensor 3 keeps an ``idx_list`` like ``Subtensor``'s; PyTensor 2.38 passes
    the entries themselves as inputs (``MakeSlice`` results for slices,
    ``NoneConst`` for new axes).
    """
    if hasattr(node.op, "idx_list"):
        return _index_key(tr, node, index_inputs)
    key: list = []
    for v in index_inputs:
        if v.owner is not None and type(v.owner.op).__name__ == "MakeSlice":
            parts = [None if _is_none(p) else tr.int_or_value(p) for p in v.owner.inputs]
            key.append(slice(*parts))
        elif isinstance(v, PtConstant) and isinstance(v.data, slice):
            key.append(slice(*(None if p is None else int(p) for p in (v.data.start, v.data.stop, v.data.step))))
        elif _is_none(v):
            key.append(None)
        else:
            key.append(tr.int_or_value(v))
    return tuple(key)


def _is_none(v: Any) -> bool:
    return v is None or (isinstance(v, PtConstant) and v.data is None) or type(v.type).__name__ == "NoneTypeT"


@register(AdvancedSubtensor1)
def _advanced_subtensor1(tr: Translator, node: Any, ins: list) -> list:
    return [ins[0][ins[1]]]


@register(AdvancedSubtensor)
def _advanced_subtensor(tr: Translator, node: Any, ins: list) -> list:
    return [ins[0][_advanced_key(tr, node, node.inputs[1:])]]


@register(AdvancedIncSubtensor1)
def _advanced_inc_subtensor1(tr: Translator, node: Any, ins: list) -> list:
    view = ins[0][ins[2]]
    return [T.set_subtensor(view, ins[1]) if node.op.set_instead_of_inc else T.inc_subtensor(view, ins[1])]


@register(AdvancedIncSubtensor)
def _advanced_inc_subtensor(tr: Translator, node: Any, ins: list) -> list:
    view = ins[0][_advanced_key(tr, node, node.inputs[2:])]
    if node.op.set_instead_of_inc:
        return [T.set_subtensor(view, ins[1])]
    if getattr(node.op, "ignore_duplicates", False):
        # NumPy's ``x[idx] += y``: a repeated index gets one contribution (the last).
        return [T.set_subtensor(view, view + ins[1])]
    return [T.inc_subtensor(view, ins[1])]

# -- run-time checks ---------------------------------------------------------------------------


@register(CheckAndRaise)
def _check_and_raise(tr: Translator, node: Any, ins: list) -> list:
    """``Assert``, PyMC's ``CheckParameterValue``... : `x` once every condition holds.

    A condition that is a tensor holds when all its elements do (PyTensor's
    ``np.all``); a failed one raises the op's ``exc_type`` with its message,
    as PyTensor does (PyMC rejects a point on ``ParameterValueError``).
    """
    x, conds = ins[0], ins[1:]
    scalars = [T.all(c) if c.ndim else c for c in conds]
    return [BAssert(node.op.msg, node.op.exc_type)(x, *scalars)]
