"""Theano's ``T.xlogx``: ``xlogx(x) = x * log(x)`` and ``xlogy0(x, y) = x * log(y)``, 0 where ``x == 0``.

Element-wise, with Theano's special case ``0 * log(0) = 0`` (and ``0 *
log(y) = 0`` for any `y`) and Theano's gradients: ``d xlogx / dx = 1 +
log(x)`` (``-inf`` at 0), ``d xlogy0 / dx = log(y)`` and ``d xlogy0 / dy = x
/ y``. Integer inputs are converted to floats first (Theano's
``upgrade_to_float``: float32 for bool/int8/int16, float64 for int32/int64).

Example::

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> x = T.dvector("x")
    >>> T.xlogx.xlogx(x).eval({x: [0.0, 1.0, np.e]})
    array([0.        , 0.        , 2.71828183])
"""

from __future__ import annotations

from ..emitter import Block
from ..graph import Apply, Op, Variable, is_float
from ..ops.elemwise import cast as _cast
from .basic import add, as_tensor_variable, eq, log, mul, switch, true_div

__all__ = ["xlogx", "xlogy0", "XlogX", "XlogY0"]


def _to_float(x: Variable) -> Variable:
    """`x` as Theano's ``upgrade_to_float`` types it."""
    if is_float(x.dtype):
        return x
    return _cast(x, "float32" if x.dtype in ("bool", "int8", "int16") else "float64")


class _WithGradient(Op):
    """Forward the identity on its first input (the value); backward, the gradient
    of the value with respect to the other inputs by the subclass's rule (:meth:`rule`),
    the value's own graph getting none (Theano's scalar op with a ``grad`` method)."""

    def make_node(self, value: Variable, *args: Variable) -> Apply:
        return Apply(self, [value, *args], [value.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        return [inputs[0]]

    def rule(self, args: list[Variable], g: Variable) -> list[Variable]:  # pragma: no cover - abstract
        raise NotImplementedError

    def L_op(self, node: Apply, output_grads: list) -> list:
        (g,) = output_grads
        if g is None:
            return [None] * len(node.inputs)
        return [None] + self.rule(node.inputs[1:], g)


class XlogX(_WithGradient):
    """The gradient of :func:`xlogx`: ``g * (1 + log(x))``."""

    def rule(self, args, g):
        (x,) = args
        return [mul(g, add(1, log(x)))]


class XlogY0(_WithGradient):
    """The gradients of :func:`xlogy0`: ``g * log(y)`` and ``g * x / y``."""

    def rule(self, args, g):
        x, y = args
        return [mul(g, log(y)), true_div(mul(g, x), y)]


def xlogx(x) -> Variable:
    """``x * log(x)`` element-wise, 0 where ``x == 0`` (Theano's ``T.xlogx.xlogx``).

    >>> from mlir_scan import tensor as T
    >>> T.xlogx.xlogx(T.constant([0.0, 1.0])).eval()
    array([0., 0.])
    """
    x = _to_float(as_tensor_variable(x))
    value = switch(eq(x, 0), 0, mul(x, log(x)))
    return XlogX()(_cast(value, x.dtype), x)


def xlogy0(x, y) -> Variable:
    """``x * log(y)`` element-wise, 0 where ``x == 0`` (Theano's ``T.xlogx.xlogy0``).

    >>> from mlir_scan import tensor as T
    >>> T.xlogx.xlogy0(T.constant([0.0, 2.0]), T.constant([0.0, 1.0])).eval()
    array([0., 0.])
    """
    x, y = _to_float(as_tensor_variable(x)), _to_float(as_tensor_variable(y))
    value = switch(eq(x, 0), 0, mul(x, log(y)))
    return XlogY0()(value, x, y)
