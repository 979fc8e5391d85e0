"""Theano's ``T.nnet``: sigmoid, softplus, softmax, relu.

Example::

    >>> from mlir_scan import tensor as T
    >>> T.nnet.sigmoid is T.sigmoid, T.nnet.softmax(T.matrix("x")).type
    (True, TensorType(float64, (None, None)))
"""

from __future__ import annotations

from ..graph import Variable
from .basic import as_tensor_variable, exp, max, maximum, mul, sigmoid, softplus, sum  # noqa: A004

__all__ = ["sigmoid", "softplus", "softmax", "relu"]


def softmax(x) -> Variable:
    """Row-wise softmax of a vector or matrix."""
    x = as_tensor_variable(x)
    axis = x.ndim - 1
    e = exp(x - max(x, axis=axis, keepdims=True))
    return e / sum(e, axis=axis, keepdims=True)


def relu(x, alpha=0) -> Variable:
    """``maximum(x, alpha * x)``."""
    x = as_tensor_variable(x)
    return maximum(x, 0) if alpha == 0 else maximum(x, mul(alpha, x))
