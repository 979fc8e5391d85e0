"""Theano's ``T.nnet``: sigmoid, softplus, softmax, relu, categorical_crossentropy.

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
    all, and_, arange, as_tensor_variable, eq, exp, ge, log, lt, max, maximum, mul, neg, sigmoid, softplus, sum,
    switch,
)

__all__ = ["sigmoid", "softplus", "softmax", "relu", "categorical_crossentropy"]


def softmax(x, axis: int | None = -1) -> Variable:
    """Softmax along `axis` (the last by default: each row of a matrix; ``None``: all elements).

    PyTensor's ``softmax(x, axis=...)``; Theano's ``softmax(x)`` is ``axis=-1``.
    """
    x = as_tensor_variable(x)
    if x.ndim == 0:
        raise ValueError("softmax: expected a tensor of rank 1 or more, got a scalar")
    if axis is None:
        e = exp(x - max(x))
        return e / sum(e)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"softmax: axis {axis!r} is out of bounds for rank {x.ndim}")
    axis %= x.ndim
    e = exp(x - max(x, axis=axis, keepdims=True))
    return e / sum(e, axis=axis, keepdims=True)


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
