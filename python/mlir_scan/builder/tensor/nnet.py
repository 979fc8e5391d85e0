"""Theano's ``T.nnet``: sigmoid, softplus, softmax, softmax_graph, logsoftmax, relu, elu, selu,
softsign, hard_sigmoid, categorical_crossentropy, crossentropy_categorical_1hot,
crossentropy_softmax_1hot, binary_crossentropy, sigmoid_binary_crossentropy, ultra_fast_sigmoid.

As in Theano 1.0, ``softmax`` and ``logsoftmax`` of a vector are a 1 x n row
(Theano's ``Softmax.make_node`` pads a vector on the left); PyTensor's
``softmax(x, axis=...)`` with an explicit axis keeps the rank. Not provided:
the convolutions (``conv2d``, ``conv3d``...), ``batch_normalization``,
``h_softmax`` and the ops' classes (``Softmax``...).

Example::

    >>> from mlir_scan import tensor as T
    >>> T.nnet.sigmoid is T.sigmoid, T.nnet.softmax(T.matrix("x")).type
    (True, TensorType(float64, (None, None)))
    >>> T.nnet.softmax(T.vector("v")).type, T.nnet.softmax(T.vector("v"), axis=-1).type
    (TensorType(float64, (1, None)), TensorType(float64, (None,)))
"""

from __future__ import annotations

from ..graph import Variable, is_int
from ..ops.elemwise import cast as _cast
from ..ops.misc import Assert
from .xlogx import _WithGradient
from .basic import (  # noqa: A004
    abs_, all, and_, arange, as_tensor_variable, clip, eq, exp, expm1, ge, gt, log, log_softmax_of, lt, max, maximum,
    mul, neg, sigmoid, softplus, sub, sum, switch, true_div,
)

__all__ = ["sigmoid", "softplus", "softmax", "softmax_graph", "logsoftmax", "relu", "elu", "selu", "softsign",
           "hard_sigmoid", "categorical_crossentropy", "crossentropy_categorical_1hot", "crossentropy_softmax_1hot",
           "binary_crossentropy", "sigmoid_binary_crossentropy", "ultra_fast_sigmoid"]

#: The default `axis` of :func:`softmax` / :func:`logsoftmax`: Theano's
#: ``softmax(c)`` (the last axis, a vector padded to a 1 x n row).
_THEANO = "theano"


def _theano_axis(x: Variable, axis, what: str):
    """(`x`, `axis`) with Theano 1.0's rule for the default axis: a vector is a 1 x n row."""
    if x.ndim == 0:
        raise ValueError(f"{what}: expected a tensor of rank 1 or more, got a scalar")
    if axis is _THEANO:
        if x.ndim == 1:
            x = x.dimshuffle("x", 0)
        axis = -1
    return x, axis


def softmax(x, axis: int | None = _THEANO) -> Variable:  # type: ignore[assignment]
    """Softmax along `axis` (the last by default: each row of a matrix; ``None``: all elements).

    Theano's ``softmax(c)``: the last axis, and a vector gives a 1 x n row
    (Theano 1.0's op pads it). PyTensor's ``softmax(x, axis=...)``: with an
    explicit `axis` the result has `x`'s shape.

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> v = T.dvector("v")
    >>> T.nnet.softmax(v).eval({v: np.log([1.0, 3.0])})
    array([[0.25, 0.75]])
    """
    x = as_tensor_variable(x)
    x, axis = _theano_axis(x, axis, "softmax")
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


def logsoftmax(x, axis: int | None = _THEANO) -> Variable:  # type: ignore[assignment]
    """``log(softmax(x))`` along `axis`, computed stably (``x - max - log(sum(exp(x - max)))``).

    The default is Theano's ``logsoftmax(c)``: the last axis, a vector gives a 1 x n row.
    """
    x = as_tensor_variable(x)
    x, axis = _theano_axis(x, axis, "logsoftmax")
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


def softmax_graph(c) -> Variable:
    """Theano's ``softmax_graph(c)``: ``exp(c) / exp(c).sum(axis=-1, keepdims=True)``, as written
    (no max subtracted, the rank of `c` kept).

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> v = T.dvector("v")
    >>> T.nnet.softmax_graph(v).eval({v: np.log([1.0, 3.0])})
    array([0.25, 0.75])
    """
    c = as_tensor_variable(c)
    e = exp(c)
    return e / sum(e, axis=-1, keepdims=True)


def selu(x) -> Variable:
    """Theano's scaled exponential linear unit: ``scale * elu(x, alpha)`` with Klambauer et al.'s constants."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return mul(scale, elu(x, alpha))


def sigmoid_binary_crossentropy(output, target) -> Variable:
    """``binary_crossentropy(sigmoid(output), target)`` computed stably, as Theano does:
    ``softplus(-|output|) + output * ((output > 0) - target)``, with Theano's gradients
    ``sigmoid(output) - target`` and ``-output``."""
    output, target = as_tensor_variable(output), as_tensor_variable(target)
    value = softplus(neg(abs_(output))) + mul(output, sub(_cast(gt(output, 0), "int8"), target))
    return _SigmoidBinaryCrossentropy()(value, output, target)


class _SigmoidBinaryCrossentropy(_WithGradient):
    """The gradients of :func:`sigmoid_binary_crossentropy` (Theano's ``grad_overrides``)."""

    def rule(self, args, g):
        output, target = args
        return [mul(g, sub(sigmoid(output), target)), mul(g, neg(output))]


def crossentropy_categorical_1hot(coding_dist, true_one_of_n) -> Variable:
    """Theano's ``-log(coding_dist[i, true_one_of_n[i]])`` for each row `i` (class indices)."""
    coding, true = as_tensor_variable(coding_dist), as_tensor_variable(true_one_of_n)
    if coding.ndim != 2 or true.ndim != 1 or not is_int(true.dtype):
        raise TypeError(f"crossentropy_categorical_1hot: expected a matrix and an integer vector, "
                        f"got {coding.type} and {true.type}")
    return categorical_crossentropy(coding, true)


def crossentropy_softmax_1hot(x, y_idx) -> tuple[Variable, Variable]:
    """Theano's ``(nll, softmax(x))``: the cross-entropy of each row of ``softmax(x)`` against the class
    indices `y_idx`, computed from ``logsoftmax(x)``, and the softmax itself."""
    x, y = as_tensor_variable(x), as_tensor_variable(y_idx)
    if x.ndim != 2 or y.ndim != 1 or not is_int(y.dtype):
        raise TypeError(f"crossentropy_softmax_1hot: expected a matrix and an integer vector, "
                        f"got {x.type} and {y.type}")
    sm = softmax(x)
    return categorical_crossentropy(sm, y), sm


def ultra_fast_sigmoid(x) -> Variable:
    """Theano's fast piecewise approximation of the sigmoid (``0.5 * (t(x / 2) + 1)`` with ``t``
    a rational/linear approximation of tanh; absolute error below 0.03). Its gradient is
    the derivative of the pieces (Theano's op has none)."""
    x = as_tensor_variable(x)
    if is_int(x.dtype) or x.dtype == "bool":
        x = _cast(x, "float32" if x.dtype in ("bool", "int8", "int16") else "float64")
    half = mul(0.5, x)
    a = abs_(half)
    z = switch(lt(a, 1.7), true_div(mul(1.5, a), a + 1),
               switch(lt(a, 3), sub(a, 1.7) * 0.0458812946797165 + 0.935409070603099, 0.99505475368673))
    z = switch(ge(half, 0), z, neg(z))
    return _cast(mul(0.5, z + 1), x.dtype)
