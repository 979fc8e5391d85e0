"""Theano's ``T.nnet``: sigmoid, softplus, softmax, logsoftmax, relu, elu, softsign, hard_sigmoid,
categorical_crossentropy, binary_crossentropy.

Example::

    >>> from mlir_scan import tensor as T
    >>> T.nnet.sigmoid is T.sigmoid, T.nnet.softmax(T.matrix("x")).type
    (True, TensorType(float64, (None, None)))
"""

from __future__ import annotations

from ..graph import Variable, is_int
from ..ops.elemwise import cast as _cast
from ..ops.misc import Assert
from .basic import (  # noqa: A004
    abs_, all, and_, arange, as_tensor_variable, clip, eq, exp, expm1, ge, gt, log, log_softmax_of, lt, max, maximum,
    mul, neg, sigmoid, softplus, sub, sum, switch, true_div,
)

__all__ = ["sigmoid", "softplus", "softmax", "logsoftmax", "relu", "elu", "softsign", "hard_sigmoid",
           "categorical_crossentropy", "binary_crossentropy"]


def softmax(x, axis: int | None = -1) -> Variable:
    """Softmax along `axis` (the last by default: each row of a matrix; ``None``: all elements).

    PyTensor's ``softmax(x, axis=...)``; Theano's ``softmax(x)`` is ``axis=-1``.
    """
    x = as_tensor_variable(x)
    if x.ndim == 0:
        raise ValueError("softmax: expected a tensor of rank 1 or more, got a scalar")
    if axis is None:
        e = exp(x - max(x))
        out = e / sum(e)
    else:
        if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
            raise ValueError(f"softmax: axis {axis!r} is out of bounds for rank {x.ndim}")
        axis %= x.ndim
        e = exp(x - max(x, axis=axis, keepdims=True))
        out = e / sum(e, axis=axis, keepdims=True)
    # T.log of it is logsoftmax (Theano's stabilizing rewrite)
    out.tag["softmax_of"] = (x, axis)
    return out


def relu(x, alpha=0) -> Variable:
    """``maximum(x, alpha * x)``."""
    x = as_tensor_variable(x)
    return maximum(x, 0) if alpha == 0 else maximum(x, mul(alpha, x))


def categorical_crossentropy(coding_dist, true_dist) -> Variable:
    """Theano's cross-entropy of each row of `coding_dist` against `true_dist`.

    `true_dist` is either one-hot / probability rows of the same rank
    (``-sum(true_dist * log(coding_dist), axis=-1)``) or a vector of class
    indices (``-log(coding_dist[i, true_dist[i]])``).
    """
    coding = as_tensor_variable(coding_dist)
    true = as_tensor_variable(true_dist)
    if true.ndim == coding.ndim:
        return neg(sum(mul(true, log(coding)), axis=coding.ndim - 1))
    if is_int(true.dtype) and true.ndim == coding.ndim - 1:
        # The log-probability of each row's class: a one-hot selection, so
        # that the other (possibly zero) probabilities are never logged.
        k = coding.shape[coding.ndim - 1]
        # Theano's op fails on a class index outside [0, k) ("y_i value out of bounds").
        in_range = and_(all(ge(true, 0)), all(lt(true, _cast(k, true.dtype))))
        true = Assert("categorical_crossentropy: a class index of true_dist is out of bounds "
                      "(y_i value out of bounds)", ValueError)(true, in_range)
        classes = arange(k).dimshuffle(*(["x"] * true.ndim), 0)
        hit = eq(true.dimshuffle(*range(true.ndim), "x"), classes)
        return neg(sum(switch(hit, log(coding), 0), axis=coding.ndim - 1))
    raise TypeError(
        f"categorical_crossentropy: true_dist must be a distribution of rank {coding.ndim} or a vector of "
        f"class indices, got {true.type}")


def logsoftmax(x, axis: int | None = -1) -> Variable:
    """``log(softmax(x))`` along `axis`, computed stably (``x - max - log(sum(exp(x - max)))``)."""
    x = as_tensor_variable(x)
    if x.ndim == 0:
        raise ValueError("logsoftmax: expected a tensor of rank 1 or more, got a scalar")
    if axis is None:
        return log_softmax_of(x, None)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"logsoftmax: axis {axis!r} is out of bounds for rank {x.ndim}")
    return log_softmax_of(x, axis % x.ndim)


def elu(x, alpha=1.0) -> Variable:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    x = as_tensor_variable(x)
    return switch(gt(x, 0), x, mul(alpha, expm1(x)))


def softsign(x) -> Variable:
    """``x / (1 + |x|)``."""
    x = as_tensor_variable(x)
    return true_div(x, abs_(x) + 1)


def hard_sigmoid(x) -> Variable:
    """Theano's piecewise-linear sigmoid: ``clip(0.2 * x + 0.5, 0, 1)``."""
    x = as_tensor_variable(x)
    return clip(x * 0.2 + 0.5, 0, 1)


def binary_crossentropy(output, target) -> Variable:
    """Element-wise ``-(target * log(output) + (1 - target) * log(1 - output))``."""
    output, target = as_tensor_variable(output), as_tensor_variable(target)
    return neg(target * log(output) + sub(1.0, target) * log(sub(1.0, output)))
