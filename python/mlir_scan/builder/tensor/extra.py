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

from .. import config
from ..graph import Variable, is_float, is_int
from ..ops.extra import ArgReduce
from ..ops.misc import AllocDiag, Assert, ExtractDiag, SpecifyShape, Unbroadcast
from ..ops.shape import Shape_i, dims_from_shape_arg, symbolic_shape
from .basic import (
    _cast, _keepdims, abs_, add, all, concatenate, ge, invert, isinf, isnan, le, maximum, minimum, or_, round, stack, _norm_axes, _norm_axis, alloc, and_, arange, as_tensor_variable, check_dtype, constant, dot,
    dimshuffle, eq, fill, flatten, max, mean, min, mul, reshape, sqr, sqrt, sub, sum, transpose, true_div,
)

__all__ = [
    "specify_shape", "unbroadcast", "addbroadcast", "patternbroadcast", "diag", "diagonal", "var", "std",
    "full", "full_like",
    "argmax", "argmin", "max_and_argmax", "eye", "identity_like", "tile", "shape_padleft", "shape_padright",
    "shape_padaxis", "expand_dims", "swapaxes", "ptp", "trace", "batched_dot", "batched_tensordot", "tensordot",
    "roll", "iround", "isclose", "allclose", "largest", "smallest", "stacklists", "horizontal_stack",
    "vertical_stack",
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


# -- argmax, eye, tile, padding, tensordot ------------------------------------------------------------


def _arg(kind: str, x, axis, keepdims: bool) -> Variable:
    x = as_tensor_variable(x)
    axes = _norm_axes(axis, x.ndim, f"arg{kind}")
    out = ArgReduce(kind, axes)(x)
    return _keepdims(out, axes, x.ndim) if keepdims else out


def argmax(x, axis=None, keepdims: bool = False) -> Variable:
    """The int64 index of the maximum over `axis` (all, flattened, by default; NumPy's ``argmax``).

    Ties give the first index and NaN counts as the maximum (NumPy's rule);
    several axes index the reduced axes flattened (Theano).

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> x = T.matrix("x")
    >>> argmax(x, axis=1).eval({x: np.array([[1.0, 3.0, 3.0], [5.0, 0.0, 1.0]])}).tolist()
    [1, 0]
    """
    return _arg("max", x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False) -> Variable:
    """The int64 index of the minimum over `axis` (all, flattened, by default; NumPy's ``argmin``)."""
    return _arg("min", x, axis, keepdims)


def max_and_argmax(a, axis=None, keepdims: bool = False) -> list[Variable]:
    """Theano's ``max_and_argmax``: ``[max(a, axis), argmax(a, axis)]``."""
    return [max(a, axis=axis, keepdims=keepdims), argmax(a, axis=axis, keepdims=keepdims)]


def eye(n, m=None, k=0, dtype=None) -> Variable:
    """The `n` x `m` matrix with ones on diagonal `k` (NumPy's and Theano's ``eye``; sizes may be symbolic).

    >>> eye(2, 3, k=1, dtype="int32").eval().tolist()
    [[0, 1, 0], [0, 0, 1]]
    """
    dtype = check_dtype(dtype or config.floatX, "eye")
    if m is None:
        m = n
    for name, v in (("n", n), ("m", m), ("k", k)):
        if isinstance(v, Variable):
            if v.ndim != 0 or not is_int(v.dtype):
                raise TypeError(f"eye: {name} must be an integer scalar, got {v.type}")
        elif isinstance(v, (bool, np.bool_)) or int(v) != v:
            raise TypeError(f"eye: {name} must be an integer, got {v!r}")
    for name, v in (("n", n), ("m", m)):
        if not isinstance(v, Variable) and int(v) < 0:
            raise ValueError(f"eye: {name} must be non-negative, got {v}")
    # NumPy's error for a negative symbolic size (an empty matrix otherwise); a dimension of a
    # tensor needs no check.
    def checked(v, name):
        if not isinstance(v, Variable) or (v.owner is not None and isinstance(v.owner.op, Shape_i)):
            return v
        return Assert(f"eye: negative dimensions are not allowed ({name} < 0)", ValueError)(v, ge(v, 0))

    n, m = checked(n, "n"), checked(m, "m")
    rows = arange(n if isinstance(n, Variable) else int(n), dtype="int64")
    cols = arange(m if isinstance(m, Variable) else int(m), dtype="int64")
    k = _cast(k, "int64") if isinstance(k, Variable) else constant(int(k), dtype="int64")
    return _cast(eq(dimshuffle(rows, 0, "x") + k, dimshuffle(cols, "x", 0)), dtype)


def identity_like(x, dtype=None) -> Variable:
    """A matrix of `x`'s shape (and dtype) with ones on the main diagonal."""
    x = as_tensor_variable(x)
    if x.ndim != 2:
        raise TypeError(f"identity_like: expected a matrix, got rank {x.ndim}")
    return eye(x.shape[0], x.shape[1], 0, dtype or x.dtype)


def _prod_dims(dims) -> Any:
    total: Any = 1
    for d in dims:
        total = total * d if isinstance(total, int) and isinstance(d, int) else mul(_i64(total), _i64(d))
    return total


def _i64(d):
    if isinstance(d, Variable):
        return d if d.dtype == "int64" else _cast(d, "int64")
    return constant(int(d), dtype="int64")


def tile(x, reps, ndim=None) -> Variable:
    """NumPy's ``tile``: `x` repeated `reps[d]` times along each dimension `d`.

    `reps` holds ints or integer scalars (or is an int); when it is longer
    than `x`'s rank, `x` gets leading dimensions of size 1, and shorter
    `reps` are padded with ones in front (NumPy's rules).
    """
    x = as_tensor_variable(x)
    if isinstance(reps, Variable) and reps.ndim == 1:
        reps = list(dims_from_shape_arg(reps, "tile", ndim))
    elif isinstance(reps, (int, np.integer)) or (isinstance(reps, Variable) and reps.ndim == 0):
        reps = [reps]
    reps = list(reps)
    if ndim is not None and ndim < builtins.max(len(reps), x.ndim):
        raise ValueError(f"tile: ndim={ndim} is less than the rank of x or the length of reps")
    for i, r in enumerate(reps):
        if isinstance(r, Variable):
            if r.ndim != 0 or not is_int(r.dtype):
                raise TypeError(f"tile: reps[{i}] must be an integer scalar, got {r.type}")
        elif isinstance(r, (bool, np.bool_)) or int(r) != r or int(r) < 0:
            raise ValueError(f"tile: reps[{i}] must be a non-negative integer, got {r!r}")
    nd = builtins.max(len(reps), x.ndim, ndim or 0)
    reps = [1] * (nd - len(reps)) + [r if isinstance(r, Variable) else int(r) for r in reps]
    if x.ndim < nd:
        x = dimshuffle(x, *(["x"] * (nd - x.ndim) + list(range(x.ndim))))
    if builtins.all(isinstance(r, int) and r == 1 for r in reps):
        return x
    dims = list(symbolic_shape(x))
    if builtins.any(isinstance(r, int) and r == 0 for r in reps):
        return alloc(constant(0, dtype=x.dtype), *[0 if isinstance(r, int) and r == 0 else _prod_dims([r, d])
                                                    for r, d in zip(reps, dims)])
    # (a, b) -> (1, a, 1, b) -> (ra, a, rb, b) -> (ra * a, rb * b)
    pattern: list = []
    for d in range(nd):
        pattern += ["x", d]
    wide_dims: list = []
    for r, d in zip(reps, dims):
        wide_dims += [r, d]
    wide = alloc(dimshuffle(x, *pattern), *wide_dims)
    return reshape(wide, [_prod_dims([r, d]) for r, d in zip(reps, dims)])


def shape_padleft(t, n_ones: int = 1) -> Variable:
    """`t` with `n_ones` leading dimensions of size 1."""
    t = as_tensor_variable(t)
    return dimshuffle(t, *(["x"] * n_ones + list(range(t.ndim))))


def shape_padright(t, n_ones: int = 1) -> Variable:
    """`t` with `n_ones` trailing dimensions of size 1."""
    t = as_tensor_variable(t)
    return dimshuffle(t, *(list(range(t.ndim)) + ["x"] * n_ones))


def shape_padaxis(t, axis: int) -> Variable:
    """`t` with a dimension of size 1 inserted at `axis` (negative counts from the end of the result)."""
    t = as_tensor_variable(t)
    if isinstance(axis, Variable) or int(axis) != axis:
        raise TypeError(f"shape_padaxis: axis must be a Python int, got {axis!r}")
    if not -t.ndim - 1 <= axis <= t.ndim:
        raise IndexError(f"shape_padaxis: axis {axis} is out of bounds [-{t.ndim + 1}, {t.ndim + 1})")
    axis = int(axis) % (t.ndim + 1)
    pattern: list = list(range(t.ndim))
    pattern.insert(axis, "x")
    return dimshuffle(t, *pattern)


def expand_dims(a, axis) -> Variable:
    """NumPy's (and PyTensor's) ``expand_dims``: size-1 dimensions inserted at `axis` (an int or ints)."""
    a = as_tensor_variable(a)
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    out_nd = a.ndim + len(axes)
    norm = sorted(_norm_axis(x, out_nd, "expand_dims") for x in axes)
    if len(set(norm)) != len(norm):
        raise ValueError(f"expand_dims: repeated axis in {axis}")
    for ax in norm:
        a = shape_padaxis(a, ax)
    return a


def swapaxes(y, axis1: int, axis2: int) -> Variable:
    """`y` with dimensions `axis1` and `axis2` swapped."""
    y = as_tensor_variable(y)
    a1, a2 = _norm_axis(axis1, y.ndim, "swapaxes"), _norm_axis(axis2, y.ndim, "swapaxes")
    order = list(range(y.ndim))
    order[a1], order[a2] = order[a2], order[a1]
    return transpose(y, order)


def ptp(a, axis=None, keepdims: bool = False) -> Variable:
    """Range of values (maximum minus minimum) over `axis`."""
    return sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def trace(x, offset: int = 0) -> Variable:
    """The sum of diagonal `offset` of matrix `x`."""
    return sum(diagonal(x, offset))


def batched_dot(a, b) -> Variable:
    """Theano's ``batched_dot``: ``dot(a[i], b[i])`` for each ``i`` of the first (batch) dimension.

    Each operand has rank 2 or 3 (a batch of vectors or matrices).
    """
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if a.ndim < 1 or b.ndim < 1 or a.ndim == 1 and b.ndim == 1:
        if a.ndim == 1 and b.ndim == 1:
            return mul(a, b)
        raise TypeError(f"batched_dot: operands must have a batch dimension, got ranks {a.ndim} and {b.ndim}")
    if a.ndim == 1 or b.ndim == 1:
        # A vector is a batch of scalars.
        return mul(a if a.ndim > 1 else _pad_to(a, b.ndim), b if b.ndim > 1 else _pad_to(b, a.ndim))
    return batched_tensordot(a, b, [[a.ndim - 1], [1]])


def _pad_to(v: Variable, ndim: int) -> Variable:
    return dimshuffle(v, *([0] + ["x"] * (ndim - 1)))


def batched_tensordot(x, y, axes) -> Variable:
    """Theano's ``batched_tensordot``: ``tensordot(x[i], y[i], axes)`` for each ``i`` of the batch dimension.

    `axes` counts the batch dimension (``[[2], [1]]`` contracts ``x``'s
    dimension 2 with ``y``'s dimension 1), or is an int: the last ``axes``
    of `x` with the first ``axes`` after the batch dimension of `y`.
    """
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if isinstance(axes, (int, np.integer)):
        ax_x = list(range(x.ndim - int(axes), x.ndim))
        ax_y = list(range(1, 1 + int(axes)))
    else:
        ax_x, ax_y = ([_norm_axis(v, t.ndim, "batched_tensordot") for v in (a if isinstance(a, (list, tuple)) else [a])]
                      for a, t in zip(axes, (x, y)))
    if 0 in ax_x or 0 in ax_y:
        raise ValueError("batched_tensordot: the batch dimension (0) cannot be contracted")
    _check_pairs(x, y, ax_x, ax_y, "batched_tensordot")
    x, y = _aligned(x, y, ax_x, ax_y, "batched_tensordot", 0, 0)
    fx = [d for d in range(1, x.ndim) if d not in ax_x]
    fy = [d for d in range(1, y.ndim) if d not in ax_y]
    # x -> (batch, free_x..., 1..., contracted...), y -> (batch, 1..., free_y..., contracted...)
    xs = dimshuffle(x, *([0] + fx + ["x"] * len(fy) + ax_x))
    ys = dimshuffle(y, *([0] + ["x"] * len(fx) + fy + ax_y))
    k = len(ax_x)
    prod = mul(xs, ys)
    if not k:
        return prod
    return sum(prod, axis=list(range(prod.ndim - k, prod.ndim)))


def _check_pairs(x, y, ax_x, ax_y, what: str) -> None:
    if len(ax_x) != len(ax_y):
        raise ValueError(f"{what}: the axes lists must have the same length, got {ax_x} and {ax_y}")
    if len(set(ax_x)) != len(ax_x) or len(set(ax_y)) != len(ax_y):
        raise ValueError(f"{what}: repeated axis in {ax_x} or {ax_y}")
    for a, b in zip(ax_x, ax_y):
        sa, sb = x.type.shape[a], y.type.shape[b]
        if sa is not None and sb is not None and sa != sb:
            raise ValueError(f"{what}: shape-mismatch for sum: dimension {a} of the first operand has size {sa}, "
                             f"dimension {b} of the second {sb}")


def _aligned(x, y, ax_x, ax_y, what: str, *batch) -> tuple[Variable, Variable]:
    """`x` and `y` with a run-time check that the contracted (and batch) sizes agree (``ValueError``)."""
    pairs = list(zip(ax_x, ax_y)) + ([tuple(batch)] if batch else [])
    conds = []
    sx, sy = symbolic_shape(x), symbolic_shape(y)
    for a, b in pairs:
        if isinstance(sx[a], int) and isinstance(sy[b], int):
            continue
        conds.append(eq(_i64(sx[a]), _i64(sy[b])))
    if not conds:
        return x, y
    ok = conds[0]
    for c in conds[1:]:
        ok = and_(ok, c)
    return Assert(f"{what}: shape mismatch between the contracted dimensions", ValueError)(x, ok), y


def tensordot(a, b, axes=2) -> Variable:
    """NumPy's ``tensordot``: sums products over the last `axes` dimensions of `a` and the first of `b`,
    or over the dimensions listed in ``axes = [axes_a, axes_b]``.

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> x, y = T.matrix("x"), T.matrix("y")
    >>> tensordot(x, y, axes=[[0], [0]]).eval({x: np.eye(2), y: np.ones((2, 3))}).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, (bool, np.bool_)):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError(f"tensordot: axes={n} is out of range for ranks {a.ndim} and {b.ndim}")
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        try:
            aa, bb = axes
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}") from exc
        aa = list(aa) if isinstance(aa, (list, tuple)) else [aa]
        bb = list(bb) if isinstance(bb, (list, tuple)) else [bb]
        ax_a = [_norm_axis(v, a.ndim, "tensordot") for v in aa]
        ax_b = [_norm_axis(v, b.ndim, "tensordot") for v in bb]
    _check_pairs(a, b, ax_a, ax_b, "tensordot")
    a, b = _aligned(a, b, ax_a, ax_b, "tensordot")
    fa = [d for d in range(a.ndim) if d not in ax_a]
    fb = [d for d in range(b.ndim) if d not in ax_b]
    sa, sb = symbolic_shape(a), symbolic_shape(b)
    k = _prod_dims([sa[d] for d in ax_a])
    # (free_a..., contracted) @ (contracted, free_b...) as one matrix product.
    am = reshape(transpose(a, fa + ax_a), [_prod_dims([sa[d] for d in fa]), k])
    bm = reshape(transpose(b, ax_b + fb), [k, _prod_dims([sb[d] for d in fb])])
    return reshape(dot(am, bm), [sa[d] for d in fa] + [sb[d] for d in fb])




Variable.argmax = argmax  # type: ignore[attr-defined]
Variable.argmin = argmin  # type: ignore[attr-defined]
Variable.swapaxes = swapaxes  # type: ignore[attr-defined]
Variable.ptp = ptp  # type: ignore[attr-defined]
Variable.trace = trace  # type: ignore[attr-defined]


def roll(x, shift, axis=None) -> Variable:
    """NumPy's ``roll``: elements shifted by `shift` (an int or integer scalar) along `axis`
    (flattened and reshaped back when ``axis=None``)."""
    x = as_tensor_variable(x)
    if axis is None:
        if x.ndim == 0:
            return x
        return reshape(roll(flatten(x), shift, 0), symbolic_shape(x))
    ax = _norm_axis(axis, x.ndim, "roll")
    n = symbolic_shape(x)[ax]
    if isinstance(shift, Variable):
        if shift.ndim != 0 or not is_int(shift.dtype):
            raise TypeError(f"roll: shift must be an integer scalar, got {shift.type}")
    elif isinstance(shift, (bool, np.bool_)) or int(shift) != shift:
        raise TypeError(f"roll: shift must be an integer, got {shift!r}")
    if isinstance(n, int) and not isinstance(shift, Variable):
        cut = (n - int(shift) % n) % n if n else 0
    else:
        # (n - shift % n) % n, with a zero-length axis left alone
        nv = _i64(n)
        safe = maximum(nv, 1)
        cut = (nv - _i64(shift) % safe) % safe
    head = (slice(None),) * ax
    return concatenate([x[head + (slice(cut, None),)], x[head + (slice(None, cut),)]], axis=ax)


def iround(a, mode=None) -> Variable:
    """``round(a, mode)`` as int64 (Theano's ``iround``)."""
    return _cast(round(a, mode), "int64")


def isclose(a, b, rtol: float = 1.0e-5, atol: float = 1.0e-8, equal_nan: bool = False) -> Variable:
    """NumPy's ``isclose``: ``|a - b| <= atol + rtol * |b|`` element-wise (equal infinities are close)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    finite = invert(or_(isinf(a), isinf(b)))  # infinities are close only when equal
    close = or_(and_(finite, le(abs_(sub(a, b)), add(atol, mul(rtol, abs_(b))))), eq(a, b))
    if equal_nan:
        close = or_(close, and_(isnan(a), isnan(b)))
    return close


def allclose(a, b, rtol: float = 1.0e-5, atol: float = 1.0e-8, equal_nan: bool = False) -> Variable:
    """True when every element of `a` is close to `b` (NumPy's ``allclose``)."""
    return all(isclose(a, b, rtol, atol, equal_nan))


def _fold(what: str, combine, args: tuple) -> Variable:
    if not args:
        raise TypeError(f"{what}: needs at least one argument")
    out = as_tensor_variable(args[0])
    for a in args[1:]:
        out = combine(out, a)
    return out


def largest(*args) -> Variable:
    """The element-wise maximum of all the arguments."""
    return _fold("largest", maximum, args)


def smallest(*args) -> Variable:
    """The element-wise minimum of all the arguments."""
    return _fold("smallest", minimum, args)


def stacklists(arg) -> Variable:
    """A tensor from nested lists of scalars or tensors: ``stacklists([[a, b], [c, d]])`` is a 2x2 matrix."""
    if isinstance(arg, (list, tuple)):
        return stack([stacklists(a) for a in arg])
    return as_tensor_variable(arg)


def horizontal_stack(*args) -> Variable:
    """Matrices (or vectors) joined side by side (NumPy's ``hstack``)."""
    ts = [as_tensor_variable(a) for a in args]
    if not ts:
        raise ValueError("horizontal_stack: needs at least one tensor")
    return concatenate(ts, axis=1 if ts[0].ndim >= 2 else 0)


def vertical_stack(*args) -> Variable:
    """Matrices joined one above the other (NumPy's ``vstack``; vectors become rows)."""
    ts = [as_tensor_variable(a) for a in args]
    if not ts:
        raise ValueError("vertical_stack: needs at least one tensor")
    return concatenate([dimshuffle(t, "x", 0) if t.ndim == 1 else t for t in ts], axis=0)
