"""Translations of PyTensor's element-wise ops: ``Elemwise`` (and its fused ``Composite``).

An ``Elemwise`` node applies a scalar op to broadcast tensors; the builder's
element-wise DSL functions (``T.add``, ``T.tanh``, ``T.switch``...) do the
same on builder tensors, so a scalar op maps to one DSL function
(:data:`SCALAR_OPS`). A ``Composite`` (what PyTensor's fusion makes) is its
scalar graph replayed with the same functions on the tensors. A scalar op
applied directly to PyTensor's ``ScalarType`` values (index arithmetic) is
the same function on 0-d builder tensors.

Example::

    >>> import pytensor.tensor as pt
    >>> x = pt.vector("x")
    >>> scalar_fn(pt.exp(x).owner.op.scalar_op)(T.vector("y")).owner.op
    Elemwise(exp)
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
import pytensor.scalar.basic as ps
import pytensor.scalar.math as psm
from pytensor.graph.basic import Constant as PtConstant
from pytensor.tensor.elemwise import Elemwise

from ..builder import tensor as T
from .translate import Translator, Unsupported, builder_type, register

__all__ = ["SCALAR_OPS", "scalar_fn"]


def _nary(fn: Callable) -> Callable:
    return lambda *xs: functools.reduce(fn, xs)


def _second(a, b):
    """PyTensor's ``second(a, b)``: `b` broadcast to the shape of `a`."""
    return T.add(T.zeros_like(a, dtype=b.dtype), b)


#: PyTensor scalar op class -> builder function on tensors. Only ops whose
#: builder counterpart computes the same values (no approximations).
SCALAR_OPS: dict[type, Callable[..., Any]] = {
    ps.Add: _nary(T.add),
    ps.Mul: _nary(T.mul),
    ps.Sub: T.sub,
    ps.TrueDiv: T.true_div,
    ps.IntDiv: T.int_div,
    ps.Mod: T.mod,
    ps.Pow: T.pow,
    ps.Neg: T.neg,
    ps.Abs: T.abs,
    ps.Exp: T.exp,
    ps.Log: T.log,
    ps.Log1p: T.log1p,
    ps.Sqrt: T.sqrt,
    ps.Sqr: T.sqr,
    ps.Tanh: T.tanh,
    psm.Sigmoid: T.sigmoid,
    psm.Softplus: T.softplus,
    ps.Sin: T.sin,
    ps.Cos: T.cos,
    ps.Floor: T.floor,
    ps.Ceil: T.ceil,
    ps.Maximum: _nary(T.maximum),
    ps.Minimum: _nary(T.minimum),
    ps.EQ: T.eq,
    ps.NEQ: T.neq,
    ps.LT: T.lt,
    ps.LE: T.le,
    ps.GT: T.gt,
    ps.GE: T.ge,
    ps.AND: _nary(T.and_),
    ps.OR: _nary(T.or_),
    ps.XOR: _nary(T.xor),
    ps.Invert: T.invert,
    ps.Switch: T.switch,
    ps.Identity: lambda x: x,
    ps.Second: _second,
    ps.Reciprocal: lambda x: T.true_div(T.constant(np.asarray(1, dtype=x.dtype)), x),
    ps.Clip: T.clip,
    ps.Log2: T.log2,
    ps.Log10: T.log10,
    ps.Expm1: T.expm1,
    ps.Exp2: T.exp2,
    ps.Sinh: T.sinh,
    ps.Cosh: T.cosh,
    ps.Tan: T.tan,
    ps.ArcSin: T.arcsin,
    ps.ArcCos: T.arccos,
    ps.ArcTan: T.arctan,
    ps.ArcSinh: T.arcsinh,
    ps.ArcCosh: T.arccosh,
    ps.ArcTanh: T.arctanh,
    ps.ArcTan2: T.arctan2,
    psm.Erf: T.erf,
    psm.Erfc: T.erfc,
    psm.GammaLn: T.gammaln,
    psm.Psi: T.psi,
    psm.TriGamma: T.tri_gamma,
    psm.PolyGamma: T.polygamma,
    ps.Deg2Rad: T.deg2rad,
    ps.Rad2Deg: T.rad2deg,
    ps.RoundHalfToEven: T.round_half_to_even,
    ps.RoundHalfAwayFromZero: T.round_half_away_from_zero,
    ps.Sign: T.sgn,
    ps.IsNan: T.isnan,
    ps.IsInf: T.isinf,
}


def scalar_fn(scalar_op: Any) -> Callable[..., Any]:
    """The builder function computing `scalar_op` element-wise (or :class:`Unsupported`)."""
    if isinstance(scalar_op, ps.Cast):
        dtype = scalar_op.o_type.dtype
        return lambda x: T.cast(x, dtype)
    if isinstance(scalar_op, ps.Composite):
        return _composite(scalar_op)
    for cls in type(scalar_op).__mro__:
        fn = SCALAR_OPS.get(cls)
        if fn is not None:
            return fn
    raise Unsupported(scalar_op, "no element-wise counterpart in mlir-scan's tensor DSL")


def _composite(op: Any) -> Callable[..., Any]:
    """A fused ``Composite``: its scalar graph replayed on tensors."""
    fgraph = op.fgraph
    steps = []
    for node in fgraph.toposort():
        steps.append((node, scalar_fn(node.op)))  # raises Unsupported early

    def apply(*xs):
        values: dict = dict(zip(fgraph.inputs, xs))

        def get(v):
            if v in values:
                return values[v]
            if isinstance(v, PtConstant):
                t = builder_type(v.type)
                return T.constant(np.asarray(v.data, dtype=t.dtype), dtype=t.dtype)
            raise Unsupported(op, f"Composite: no value for {v}")

        for node, fn in steps:
            out = fn(*[get(i) for i in node.inputs])
            want = node.outputs[0].type.dtype
            if out.dtype != want:
                out = T.cast(out, want)
            values[node.outputs[0]] = out
        outs = [get(o) for o in fgraph.outputs]
        return outs if len(outs) > 1 else outs[0]

    apply.n_outputs = len(fgraph.outputs)  # type: ignore[attr-defined]
    return apply


def _apply(scalar_op: Any, ins: list) -> list:
    out = scalar_fn(scalar_op)(*ins)
    return list(out) if isinstance(out, list) else [out]


@register(Elemwise)
def _elemwise(tr: Translator, node: Any, ins: list) -> list:
    return _apply(node.op.scalar_op, ins)


@register(ps.ScalarOp)
def _scalar(tr: Translator, node: Any, ins: list) -> list:
    """A scalar op applied to ``ScalarType`` values (outside an ``Elemwise``).

    PyTensor computes indices this way: ``out[i]`` of a scan's output reads
    its buffer at ``switch(i < 0, i, ScalarFromTensor(i) + 1)``. The builder
    has no scalar type of its own (a scalar is a 0-d tensor), so the scalar
    op's element-wise counterpart computes it.
    """
    return _apply(node.op, ins)
