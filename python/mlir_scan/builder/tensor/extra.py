"""More of Theano's tensor API, and PyTensor's spellings of it.

Theano: ``specify_shape``, ``unbroadcast``, ``addbroadcast``,
``patternbroadcast``, ``diag``, ``var``, ``std`` and the variable methods
``x.ravel()``, ``x.var()``, ``x.std()`` (``x.eval()`` is installed by
:mod:`mlir_scan.builder.function`, which compiles); PyTensor:
``full``, ``full_like`` (``T.alloc`` / ``T.fill`` under PyTensor's names).
All are re-exported by :mod:`mlir_scan.tensor`.

Example::

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> x = T.dvector("x")
    >>> float((x * 2).sum().eval({x: np.ones(3)}))
    6.0
    >>> T.full((2, 3), 7.0).eval().tolist()
    [[7.0, 7.0, 7.0], [7.0, 7.0, 7.0]]
    >>> x.std().eval({x: np.array([1.0, 3.0])}).item()
    1.0
"""

from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..graph import Variable, is_float
from ..ops.misc import AllocDiag, ExtractDiag, SpecifyShape, Unbroadcast
from ..ops.shape import dims_from_shape_arg, symbolic_shape
from .basic import (
    _cast, _keepdims, _norm_axes, _norm_axis, alloc, as_tensor_variable, check_dtype, constant, fill, flatten,
    mean, mul, sqr, sqrt, sub, sum, true_div,
)

__all__ = [
    "specify_shape", "unbroadcast", "addbroadcast", "patternbroadcast", "diag", "diagonal", "var", "std",
    "full", "full_like",
]


def specify_shape(x, shape) -> Variable:
    """`x`, promised to have `shape` (checked at run time: ``AssertionError``).

    `shape` holds ints, integer scalars and ``None`` (PyTensor: a size that
    is not checked), or is an integer vector of static length. Static sizes
    become part of the result's type.
    """
    x = as_tensor_variable(x)
    if isinstance(shape, Variable) and shape.ndim == 1:
        dims = list(dims_from_shape_arg(shape, "specify_shape"))
    else:
        if isinstance(shape, (int, np.integer)) or (isinstance(shape, Variable) and shape.ndim == 0):
            shape = [shape]
        dims = []
        for i, d in enumerate(list(shape)):
            dims.append(-1 if d is None else dims_from_shape_arg([d], "specify_shape")[0])
    if len(dims) != x.ndim:
        raise ValueError(f"specify_shape: {x} has rank {x.ndim}, the shape has {len(dims)} entries")
    pattern = tuple(d if isinstance(d, int) else None for d in dims)
    sym = [d if d.dtype == "int64" else _cast(d, "int64") for d in dims if isinstance(d, Variable)]
    return SpecifyShape(pattern)(x, *sym)


def unbroadcast(x, *axes: int) -> Variable:
    """`x` with the dimensions `axes` no longer statically of size 1."""
    x = as_tensor_variable(x)
    axes = tuple(_norm_axis(a, x.ndim, "unbroadcast") for a in axes)
    if not builtins.any(x.type.shape[a] == 1 for a in axes):
        return x
    return Unbroadcast(axes)(x)


def addbroadcast(x, *axes: int) -> Variable:
    """`x` with the dimensions `axes` statically of size 1 (checked at run time)."""
    x = as_tensor_variable(x)
    axes = {_norm_axis(a, x.ndim, "addbroadcast") for a in axes}
    if builtins.all(x.type.shape[a] == 1 for a in axes):
        return x
    return SpecifyShape(tuple(1 if d in axes else -1 for d in range(x.ndim)))(x)


def patternbroadcast(x, broadcastable: Sequence[bool]) -> Variable:
    """`x` with Theano's broadcastable pattern `broadcastable` (True: size 1, checked)."""
    x = as_tensor_variable(x)
    pattern = tuple(bool(b) for b in broadcastable)
    if len(pattern) != x.ndim:
        raise ValueError(f"patternbroadcast: pattern {pattern} for a rank-{x.ndim} tensor")
    x = unbroadcast(x, *[d for d, b in enumerate(pattern) if not b])
    return addbroadcast(x, *[d for d, b in enumerate(pattern) if b])


def diag(v, k: int = 0) -> Variable:
    """NumPy's ``diag``: the matrix with vector `v` on diagonal `k`, or diagonal `k` of matrix `v`."""
    v = as_tensor_variable(v)
    k = _offset(k, "diag")
    if v.ndim == 1:
        return AllocDiag(k)(v)
    if v.ndim == 2:
        return ExtractDiag(k)(v)
    raise ValueError(f"diag: input must be a vector or a matrix, got rank {v.ndim}")


def diagonal(x, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Variable:
    """Diagonal `offset` of matrix `x` (NumPy's ``diagonal``; ``x.diagonal(offset)``)."""
    x = as_tensor_variable(x)
    offset = _offset(offset, "diagonal")
    if x.ndim != 2:
        raise ValueError(f"diagonal: only matrices are supported, got rank {x.ndim}")
    a1, a2 = _norm_axis(axis1, 2, "diagonal"), _norm_axis(axis2, 2, "diagonal")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    return ExtractDiag(offset)(x if (a1, a2) == (0, 1) else x.T)


def _offset(k, what: str) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{what}: the diagonal's offset must be a Python int, got {k!r}")
    return int(k)


def var(x, axis=None, ddof: int = 0, keepdims: bool = False, corrected: bool = False) -> Variable:
    """Variance over `axis` (NumPy's ``var``; `ddof` degrees of freedom; ints give float64)."""
    x = as_tensor_variable(x)
    axes = _norm_axes(axis, x.ndim, "var")
    fx = x if is_float(x.dtype) else _cast(x, "float64")
    centered = sub(fx, mean(fx, axis=axes, keepdims=True)) if axes else sub(fx, fx)
    total = sum(sqr(centered), axis=axes) if axes else sqr(centered)
    dims = symbolic_shape(x)
    count: Any = 1
    for d in axes:
        count = count * dims[d] if isinstance(count, int) and isinstance(dims[d], int) else mul(count, dims[d])
    if ddof:
        count = count - ddof if isinstance(count, int) else sub(count, ddof)
    out = true_div(total, constant(float(count), dtype=fx.dtype) if isinstance(count, int) else _cast(count, fx.dtype))
    if keepdims:
        out = _keepdims(out, axes, x.ndim)
    return out


def std(x, axis=None, ddof: int = 0, keepdims: bool = False, corrected: bool = False) -> Variable:
    """Standard deviation over `axis` (the square root of :func:`var`)."""
    return sqrt(var(x, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected))


def full(shape, fill_value, dtype: str | None = None) -> Variable:
    """PyTensor's ``full``: a tensor of `shape` filled with `fill_value` (``T.alloc``)."""
    value = as_tensor_variable(fill_value) if dtype is None else as_tensor_variable(fill_value, dtype=check_dtype(dtype))
    if isinstance(shape, (int, np.integer)) or (isinstance(shape, Variable) and shape.ndim == 0):
        shape = [shape]
    return alloc(value, *dims_from_shape_arg(shape, "full"))


def full_like(x, fill_value, dtype: str | None = None) -> Variable:
    """PyTensor's ``full_like``: `fill_value` broadcast to the shape of `x` (``T.fill``)."""
    x = as_tensor_variable(x)
    value = as_tensor_variable(fill_value, dtype=check_dtype(dtype or x.dtype)) if not isinstance(
        fill_value, Variable) else fill_value
    if value.dtype != (dtype or x.dtype):
        value = _cast(value, check_dtype(dtype or x.dtype))
    return fill(x, value)


Variable.ravel = lambda self: flatten(self)  # type: ignore[attr-defined]
Variable.var = var  # type: ignore[attr-defined]
Variable.std = std  # type: ignore[attr-defined]
Variable.diagonal = diagonal  # type: ignore[attr-defined]
