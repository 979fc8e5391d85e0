"""Identities with special gradients (Theano's ``theano.gradient``): ``disconnected_grad``, ``zero_grad``,
``grad_clip``, ``grad_scale``.

Forward, :class:`DisconnectedGrad` is the identity (it emits nothing: its
output is its input). Backward, no gradient flows through it
(:meth:`DisconnectedGrad.L_op`); ``mlir_scan.gradient.disconnected_grad`` is
:func:`disconnected_grad`.

Example::

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x = T.dvector("x")
    >>> y = theano.gradient.disconnected_grad(x * 2)
    >>> y.owner.op, theano.function([x], y)([1.0, 2.0])
    (DisconnectedGrad, array([2., 4.]))
"""

from __future__ import annotations

import numpy as np

from ..emitter import Block
from ..graph import Apply, Constant, Op, Variable
from .elemwise import elemwise

__all__ = ["DisconnectedGrad", "disconnected_grad", "ZeroGrad", "GradClip", "GradScale"]


class _GradientOnly(Op):
    """The identity on values: what its subclasses change is the gradient (``L_op``)."""

    def make_node(self, x: Variable) -> Apply:
        return Apply(self, [x], [x.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        return [inputs[0]]


class DisconnectedGrad(_GradientOnly):
    """The identity, through which no gradient flows."""

    def L_op(self, node: Apply, output_grads: list) -> list:
        return [None]  # disconnected: no gradient reaches the input


def disconnected_grad(x) -> Variable:
    """`x`, with its gradient disconnected (``theano.gradient.disconnected_grad``)."""
    return DisconnectedGrad()(x if isinstance(x, Variable) else Constant(x))


class ZeroGrad(_GradientOnly):
    """The identity whose gradient is zero (Theano's ``theano.gradient.zero_grad``)."""

    def L_op(self, node: Apply, output_grads: list) -> list:
        return [None]  # a zero gradient (the input stays connected: no DisconnectedInputError)


class GradClip(_GradientOnly):
    """The identity whose gradient is clipped to [`lower`, `upper`] (``theano.gradient.grad_clip``)."""

    __props__ = ("lower", "upper")

    def __init__(self, lower: float, upper: float):
        if not lower <= upper:
            raise ValueError(f"grad_clip: the lower bound {lower} is above the upper bound {upper}")
        self.lower, self.upper = float(lower), float(upper)

    def L_op(self, node: Apply, output_grads: list) -> list:
        (g,) = output_grads
        if g is None:
            return [None]
        lo = Constant(np.asarray(self.lower, g.dtype))
        hi = Constant(np.asarray(self.upper, g.dtype))
        return [elemwise("minimum", elemwise("maximum", g, lo), hi)]


class GradScale(_GradientOnly):
    """The identity whose gradient is multiplied by `multiplier` (``theano.gradient.grad_scale``)."""

    __props__ = ("multiplier",)

    def __init__(self, multiplier: float):
        self.multiplier = float(multiplier)

    def L_op(self, node: Apply, output_grads: list) -> list:
        (g,) = output_grads
        if g is None:
            return [None]
        return [elemwise("mul", g, Constant(np.asarray(self.multiplier, g.dtype)))]
