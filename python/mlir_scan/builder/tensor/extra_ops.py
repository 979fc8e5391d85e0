"""Theano's ``theano.tensor.extra_ops``: ``cumsum``, ``cumprod``, ``repeat``, ``squeeze``, ``diff``, ``to_one_hot``.

Also re-exported by :mod:`mlir_scan.tensor` (``T.cumsum``...). ``axis=None``
flattens first, as in NumPy; integer inputs of ``cumsum``/``cumprod`` give
int64 (NumPy's rule). Both have gradients (Theano's rules).

Example::

    >>> import numpy as np
    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x = T.dmatrix("x")
    >>> f = theano.function([x], [T.cumsum(x), T.cumprod(x, axis=0), T.repeat(x, 2, axis=1)])
    >>> [r.tolist() for r in f(np.array([[1.0, 2.0], [3.0, 4.0]]))]
    [[1.0, 3.0, 6.0, 10.0], [[1.0, 2.0], [3.0, 8.0]], [[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0]]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Constant, Variable, is_int
from ..ops.extra import CumOp
from ..ops.shape import symbolic_shape
from .basic import (
    _floatX, _norm_axis, alloc, arange, as_tensor_variable, cast, concatenate, constant, dimshuffle, eq, flatten, mul,
    reshape, sub,
)
from .extra import addbroadcast, specify_shape

__all__ = ["cumsum", "cumprod", "repeat", "squeeze", "diff", "to_one_hot", "CumOp"]


def _cum(x, axis, mode: str, what: str) -> Variable:
    x = as_tensor_variable(x)
    if axis is None:
        x, axis = flatten(x) if x.ndim != 1 else x, 0
    if x.ndim == 0:
        raise ValueError(f"{what}: axis {axis} is out of bounds for a scalar (use axis=None)")
    return CumOp(_norm_axis(axis, x.ndim, what), mode)(x)


def cumsum(x, axis=None) -> Variable:
    """Running sums along `axis` (all elements, flattened, by default), as NumPy's ``cumsum``."""
    return _cum(x, axis, "add", "cumsum")


def cumprod(x, axis=None) -> Variable:
    """Running products along `axis` (all elements, flattened, by default), as NumPy's ``cumprod``."""
    return _cum(x, axis, "mul", "cumprod")


def _mul_dims(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return mul(cast(a, "int64") if isinstance(a, Variable) else a, cast(b, "int64") if isinstance(b, Variable) else b)


def repeat(x, repeats, axis=None) -> Variable:
    """NumPy's ``repeat``: each element of `x` `repeats` times along `axis` (flattened by default).

    `repeats` is a non-negative int, an integer scalar variable, or a
    constant vector of one count per element along `axis`.
    """
    x = as_tensor_variable(x)
    if axis is None:
        x, axis = (flatten(x) if x.ndim != 1 else x), 0
    if x.ndim == 0:
        x = dimshuffle(x, "x")
    ax = _norm_axis(axis, x.ndim, "repeat")
    if isinstance(repeats, (list, tuple, np.ndarray)) or (isinstance(repeats, Constant) and repeats.ndim == 1):
        counts = np.asarray(repeats.data if isinstance(repeats, Constant) else repeats)
        if counts.ndim == 0:
            repeats = int(counts)
        else:
            if counts.dtype.kind not in "iu" or counts.ndim != 1:
                raise TypeError(f"repeat: repeats must be integers, got {counts!r}")
            if counts.size == 1:
                repeats = int(counts[0])
            else:
                n = x.type.shape[ax]
                if n is not None and n != counts.size:
                    raise ValueError(f"repeat: {counts.size} counts for {n} elements along axis {ax}")
                if n is None:
                    x = specify_shape(x, [counts.size if d == ax else None for d in range(x.ndim)])
                pieces = [repeat(x[(slice(None),) * ax + (slice(i, i + 1),)], int(c), axis=ax)
                          for i, c in enumerate(counts)]
                return concatenate(pieces, axis=ax)
    if isinstance(repeats, Variable):
        if repeats.ndim != 0:
            raise NotImplementedError("repeat: a symbolic vector of counts is not supported (give an int, an "
                                      "integer scalar or a constant vector)")
        if not is_int(repeats.dtype):
            raise TypeError(f"repeat: repeats must be an integer, got {repeats.dtype}")
        r: Any = cast(repeats, "int64")
    else:
        if isinstance(repeats, (bool, np.bool_)) or int(repeats) != repeats:
            raise TypeError(f"repeat: repeats must be an integer, got {repeats!r}")
        r = int(repeats)
        if r < 0:
            raise ValueError(f"repeat: repeats may not be negative ({r})")
    dims = list(symbolic_shape(x))
    if isinstance(r, int) and r == 0:
        return alloc(constant(0, dtype=x.dtype), *(dims[:ax] + [0] + dims[ax + 1:]))
    # (..., n, ...) -> (..., n, 1, ...) -> (..., n, r, ...) -> (..., n * r, ...)
    pattern = list(range(x.ndim))
    pattern.insert(ax + 1, "x")
    wide = alloc(dimshuffle(x, *pattern), *(dims[: ax + 1] + [r] + dims[ax + 1:]))
    return reshape(wide, dims[:ax] + [_mul_dims(dims[ax], r)] + dims[ax + 1:])


def squeeze(x, axis=None) -> Variable:
    """`x` without its dimensions of size 1: those statically 1 (``axis=None``), or
    those of `axis` (checked at run time when not static, as in Theano)."""
    x = as_tensor_variable(x)
    if axis is None:
        axes = [d for d, s in enumerate(x.type.shape) if s == 1]
    else:
        axes = axis if isinstance(axis, (list, tuple)) else [axis]
        axes = sorted({_norm_axis(a, x.ndim, "squeeze") for a in axes})
        for a in axes:
            if x.type.shape[a] not in (1, None):
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size not equal to one "
                                 f"(axis {a} has size {x.type.shape[a]})")
        x = addbroadcast(x, *axes)
    return dimshuffle(x, *[d for d in range(x.ndim) if d not in axes])


def diff(x, n: int = 1, axis: int = -1) -> Variable:
    """The `n`-th discrete difference along `axis` (NumPy's ``diff``)."""
    x = as_tensor_variable(x)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"diff: order n must be a non-negative int, got {n!r}")
    ax = _norm_axis(axis, x.ndim, "diff")
    for _ in range(int(n)):
        head = (slice(None),) * ax
        x = sub(x[head + (slice(1, None),)], x[head + (slice(None, -1),)])
    return x


def to_one_hot(y, nb_class, dtype=None) -> Variable:
    """Theano's ``to_one_hot``: the (n, nb_class) matrix with a 1 at column ``y[i]`` of row ``i``."""
    y = as_tensor_variable(y)
    if y.ndim != 1 or not is_int(y.dtype):
        raise TypeError(f"to_one_hot: y must be an integer vector, got {y.type}")
    hit = eq(dimshuffle(y, 0, "x"), dimshuffle(arange(nb_class, dtype="int64"), "x", 0))
    return cast(hit, dtype or _floatX())



Variable.cumsum = cumsum  # type: ignore[attr-defined]
Variable.cumprod = cumprod  # type: ignore[attr-defined]
Variable.repeat = repeat  # type: ignore[attr-defined]
Variable.squeeze = squeeze  # type: ignore[attr-defined]
