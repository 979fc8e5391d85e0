"""``disconnected_grad``: the identity whose gradient is disconnected (Theano's ``theano.gradient``).

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

from ..emitter import Block
from ..graph import Apply, Constant, Op, Variable

__all__ = ["DisconnectedGrad", "disconnected_grad"]


class DisconnectedGrad(Op):
    """The identity, through which no gradient flows."""

    def make_node(self, x: Variable) -> Apply:
        return Apply(self, [x], [x.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        return [inputs[0]]

    def L_op(self, node: Apply, output_grads: list) -> list:
        return [None]  # disconnected: no gradient reaches the input


def disconnected_grad(x) -> Variable:
    """`x`, with its gradient disconnected (``theano.gradient.disconnected_grad``)."""
    return DisconnectedGrad()(x if isinstance(x, Variable) else Constant(x))
