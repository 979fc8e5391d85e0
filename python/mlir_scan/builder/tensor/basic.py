"""The tensor DSL, Theano's ``theano.tensor.basic`` (use it as ``from mlir_scan import tensor as T``).

Typed placeholders (``T.vector("x")``, ``T.imatrix()``...), constants,
element-wise math with NumPy broadcasting and dtype promotion, ``dot``,
reductions, indexing, ``set_subtensor``/``inc_subtensor``, ``concatenate``,
``stack``, ``reshape``. Importing it installs the operators and methods of
:class:`~mlir_scan.builder.graph.Variable` (``+``, ``x[i]``, ``x.sum()``...).
Every function builds graph nodes; :func:`mlir_scan.function` compiles them.
``T.nnet`` and ``T.shared_randomstreams`` are the sibling modules
:mod:`~mlir_scan.builder.tensor.nnet` and
:mod:`~mlir_scan.builder.tensor.shared_randomstreams`.

Placeholder prefixes follow Theano: ``b`` int8, ``w`` int16, ``i`` int32,
``l`` int64, ``f`` float32, ``d`` float64, none: ``config.floatX``
(float64). Python ints become the smallest int dtype that holds them
(``T.as_tensor_variable(0)`` is int8, as in Theano); Python floats take the
dtype of the float tensor they meet (float64 otherwise).

Example::

    >>> import numpy as np
    >>> import mlir_scan as ms
    >>> from mlir_scan import tensor as T
    >>> x = T.dvector("x")
    >>> f = ms.function([x], [T.tanh(x).sum(), x[::-1] * 2])
    >>> f([0.0, 1.0, 2.0])
    [array(1.72..., array([4., 2., 0.])]
"""

from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from .. import config
from ..graph import Constant, TensorType, Variable, check_dtype, is_float, is_int, upcast
from ..ops.basic import Alloc, Arange, DimShuffle, Dot, Join, Reduce, Reshape
from ..ops.elemwise import Cast as _Cast, Elemwise, SCALAR_OPS, cast as _cast, elemwise_inputs, power as _power
from ..ops.misc import Assert as _Assert, SpecifyShape
from ..ops.shape import (MakeVector, Shape, Shape_i, carries_checks, checked_shape_of, dims_from_shape_arg,
                         symbolic_shape)
from ..ops.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor, MaskNonzero
from ..ops.scan import ScanOp
from ..ops.subtensor import IncSubtensor, Subtensor, make_index_list

__all__ = [
    # placeholders
    "scalar", "vector", "matrix", "tensor3", "tensor4", "tensor", "row", "col",
    "bscalar", "wscalar", "iscalar", "lscalar", "fscalar", "dscalar",
    "bvector", "wvector", "ivector", "lvector", "fvector", "dvector",
    "bmatrix", "wmatrix", "imatrix", "lmatrix", "fmatrix", "dmatrix",
    "btensor3", "wtensor3", "itensor3", "ltensor3", "ftensor3", "dtensor3",
    "TensorType", "TensorVariable", "TensorConstant",
    "brow", "wrow", "irow", "lrow", "frow", "drow", "bcol", "wcol", "icol", "lcol", "fcol", "dcol",
    "scalars", "vectors", "matrices", "rows", "cols", "tensor3s", "tensor4s",
    "bscalars", "wscalars", "iscalars", "lscalars", "fscalars", "dscalars",
    "bvectors", "wvectors", "ivectors", "lvectors", "fvectors", "dvectors",
    "bmatrices", "wmatrices", "imatrices", "lmatrices", "fmatrices", "dmatrices",
    "tensor5", "tensor6", "tensor7",
    # construction
    "constant", "as_tensor_variable", "as_tensor", "arange", "zeros", "ones", "zeros_like", "ones_like",
    "alloc", "fill", "second",
    # element-wise
    "add", "sub", "mul", "true_div", "int_div", "floor_div", "mod", "pow", "neg", "abs", "abs_",
    "eq", "neq", "lt", "le", "gt", "ge", "and_", "or_", "xor", "invert", "bitwise_and", "bitwise_or",
    "exp", "log", "log1p", "sqrt", "sqr", "tanh", "sigmoid", "softplus", "sin", "cos", "floor", "ceil",
    "maximum", "minimum", "switch", "where", "clip", "cast",
    "log2", "log10", "expm1", "exp2", "sinh", "cosh", "tan", "arcsin", "arccos", "arctan", "arctan2",
    "arcsinh", "arccosh", "arctanh", "erf", "erfc", "gammaln", "psi", "polygamma", "tri_gamma", "round",
    "round_half_to_even", "round_half_away_from_zero",
    "sgn", "sign", "isnan", "isinf", "reciprocal", "inv", "deg2rad", "rad2deg",
    # structure
    "dot", "outer", "transpose", "dimshuffle", "shape", "reshape", "flatten", "concatenate", "join", "stack", "split",
    "sum", "mean", "max", "min", "prod", "all", "any",
    "set_subtensor", "inc_subtensor", "nonzero", "flatnonzero", "nonzero_values",
]

TensorVariable = Variable
TensorConstant = Constant


# -- placeholders ----------------------------------------------------------------


def _floatX() -> str:
    return check_dtype(config.floatX, "config.floatX")


def tensor(*args, dtype: str | None = None, shape: Sequence[int | None] | None = None, name: str | None = None,
           broadcastable: Sequence[bool] | None = None, ndim: int | None = None) -> Variable:
    """A placeholder of any rank: ``T.tensor("float32", (None, 3), "x")``.

    Positional arguments are Theano's ``(dtype, shape, name)`` (a second
    argument of booleans is Theano's broadcastable pattern: True = static
    size 1); `broadcastable` or `ndim` can replace `shape`. PyTensor's
    spelling ``pt.tensor("x", dtype=..., shape=...)`` works too: a first
    argument that is not a dtype is the name.
    """
    args = list(args)
    if len(args) > 3:
        raise TypeError(f"tensor: at most 3 positional arguments (dtype, shape, name), got {len(args)}")
    if args and isinstance(args[0], str) and not _is_dtype_name(args[0]):
        if len(args) > 1 or name is not None:
            raise TypeError(f"tensor: {args[0]!r} is not a dtype; give the name alone, then dtype=/shape=")
        name = args.pop(0)
    else:
        for value, key in zip(args, ("dtype", "shape", "name")):
            if {"dtype": dtype, "shape": shape, "name": name}[key] is not None:
                raise TypeError(f"tensor: {key} given twice")
            if key == "dtype":
                dtype = value
            elif key == "shape":
                shape = value
            else:
                name = value
    if shape is not None and len(shape) and builtins.all(isinstance(b, (bool, np.bool_)) for b in shape):
        shape, broadcastable = None, shape
    if dtype == "floatX":
        dtype = None
    dtype = check_dtype(dtype or _floatX(), "tensor")
    if shape is None:
        if broadcastable is not None:
            shape = tuple(1 if b else None for b in broadcastable)
        else:
            shape = (None,) * (ndim or 0)
    return Variable(TensorType(dtype, tuple(shape)), name=name)


def _is_dtype_name(text: str) -> bool:
    """True for a dtype's name ("float32", "floatX"...); one-letter codes are names of variables."""
    if text == "floatX":
        return True
    if len(text) < 2:
        return False
    try:
        np.dtype(text)
    except TypeError:
        return False
    return True


def _maker(ndim: int, dtype: str | None, name: str):
    """A placeholder constructor such as ``T.fvector(name=None, dtype=..., shape=...)``."""

    def make(name: str | None = None, dtype: str | None = dtype, shape: Sequence[int | None] | None = None) -> Variable:
        if shape is not None and len(shape) != ndim:
            raise ValueError(f"shape {shape} has rank {len(shape)}, expected {ndim}")
        return tensor(dtype, shape if shape is not None else (None,) * ndim, name)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"A rank-{ndim} placeholder of dtype {dtype or 'config.floatX'}: ``T.{name}(name=None, dtype=..., shape=...)``."
    return make


_KINDS = {"": None, "b": "int8", "w": "int16", "i": "int32", "l": "int64", "f": "float32", "d": "float64"}
_RANKS = {"scalar": 0, "vector": 1, "matrix": 2, "tensor3": 3, "tensor4": 4}

scalar = _maker(0, None, "scalar")
vector = _maker(1, None, "vector")
matrix = _maker(2, None, "matrix")
tensor3 = _maker(3, None, "tensor3")
tensor4 = _maker(4, None, "tensor4")

bscalar = _maker(0, 'int8', "bscalar")
bvector = _maker(1, 'int8', "bvector")
bmatrix = _maker(2, 'int8', "bmatrix")
btensor3 = _maker(3, 'int8', "btensor3")
btensor4 = _maker(4, 'int8', "btensor4")

wscalar = _maker(0, 'int16', "wscalar")
wvector = _maker(1, 'int16', "wvector")
wmatrix = _maker(2, 'int16', "wmatrix")
wtensor3 = _maker(3, 'int16', "wtensor3")
wtensor4 = _maker(4, 'int16', "wtensor4")

iscalar = _maker(0, 'int32', "iscalar")
ivector = _maker(1, 'int32', "ivector")
imatrix = _maker(2, 'int32', "imatrix")
itensor3 = _maker(3, 'int32', "itensor3")
itensor4 = _maker(4, 'int32', "itensor4")

lscalar = _maker(0, 'int64', "lscalar")
lvector = _maker(1, 'int64', "lvector")
lmatrix = _maker(2, 'int64', "lmatrix")
ltensor3 = _maker(3, 'int64', "ltensor3")
ltensor4 = _maker(4, 'int64', "ltensor4")

fscalar = _maker(0, 'float32', "fscalar")
fvector = _maker(1, 'float32', "fvector")
fmatrix = _maker(2, 'float32', "fmatrix")
ftensor3 = _maker(3, 'float32', "ftensor3")
ftensor4 = _maker(4, 'float32', "ftensor4")

dscalar = _maker(0, 'float64', "dscalar")
dvector = _maker(1, 'float64', "dvector")
dmatrix = _maker(2, 'float64', "dmatrix")
dtensor3 = _maker(3, 'float64', "dtensor3")
dtensor4 = _maker(4, 'float64', "dtensor4")


tensor5 = _maker(5, None, "tensor5")
tensor6 = _maker(6, None, "tensor6")
tensor7 = _maker(7, None, "tensor7")
btensor5, wtensor5, itensor5, ltensor5, ftensor5, dtensor5 = (
    _maker(5, _KINDS[k], k + "tensor5") for k in "bwilfd")


def _row_maker(dtype: str | None, name: str, col: bool):
    """Theano's ``T.drow`` / ``T.dcol``...: a matrix placeholder of shape (1, n) or (n, 1)."""

    def make(name: str | None = None, dtype: str | None = dtype, shape: Sequence[int | None] | None = None) -> Variable:
        return (col_ if col else row_)(name, dtype, shape if shape is not None else ((None, 1) if col else (1, None)))

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"A {'(n, 1)' if col else '(1, n)'} matrix placeholder of dtype {dtype or 'config.floatX'} "
                    f"(Theano's broadcastable {'column' if col else 'row'}): ``T.{name}(name=None)``.")
    return make


def _multi(make):
    """Theano's plural constructors: ``T.dscalars('x', 'y')``, ``T.dscalars(3)``, ``T.dscalars('xy')``."""

    def many(*names):
        if names and isinstance(names[0], int) and not isinstance(names[0], bool):
            if len(names) != 1:
                raise TypeError(f"{make.__name__}s: give a count or names, not both")
            return make() if names[0] == 1 else [make() for _ in range(names[0])]
        if len(names) == 1:
            names = names[0]
        if isinstance(names, str) and len(names) == 1:
            return make(names)
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"{make.__name__}s: names must be strings, got {n!r}")
        return [make(n) for n in names]

    many.__name__ = many.__qualname__ = make.__name__ + "s"
    many.__doc__ = f"Several ``{make.__name__}`` placeholders: one per name (or a count)."
    return many


def row(name: str | None = None, dtype: str | None = None, shape: Sequence[int | None] = (1, None)) -> Variable:
    """A (1, n) matrix placeholder (broadcastable rows)."""
    if len(shape) != 2 or shape[0] != 1:
        raise ValueError(f"row: the shape must be (1, n), got {shape}")
    return tensor(dtype, tuple(shape), name)


def col(name: str | None = None, dtype: str | None = None, shape: Sequence[int | None] = (None, 1)) -> Variable:
    """A (n, 1) matrix placeholder (broadcastable columns)."""
    if len(shape) != 2 or shape[1] != 1:
        raise ValueError(f"col: the shape must be (n, 1), got {shape}")
    return tensor(dtype, tuple(shape), name)


row_, col_ = row, col
for _k, _dt in _KINDS.items():
    if _k:
        globals()[_k + "row"] = _row_maker(_dt, _k + "row", col=False)
        globals()[_k + "col"] = _row_maker(_dt, _k + "col", col=True)
_PLURAL = {"scalar": "scalars", "vector": "vectors", "matrix": "matrices", "row": "rows", "col": "cols",
           "tensor3": "tensor3s", "tensor4": "tensor4s"}
for _k in _KINDS:
    for _single, _plural in _PLURAL.items():
        _many = _multi(globals()[_k + _single])
        _many.__name__ = _many.__qualname__ = _k + _plural
        globals()[_k + _plural] = _many
_ROW_NAMES = [k + w for k in "bwilfd" for w in ("row", "col")]
_PLURAL_NAMES = [k + p for k in _KINDS for p in _PLURAL.values()]
del _k, _dt, _single, _plural, _many
__all__ += [n for n in _ROW_NAMES + _PLURAL_NAMES + [k + "tensor5" for k in "bwilfd"] if n not in __all__]


# -- constants -------------------------------------------------------------------


def _smallest_int(value: int) -> str:
    for dtype in ("int8", "int16", "int32", "int64"):
        info = np.iinfo(dtype)
        if info.min <= value <= info.max:
            return dtype
    raise OverflowError(f"integer {value} does not fit in int64")


def _python_dtype(x: Any, like: str | None = None) -> str | None:
    """The dtype a Python scalar takes (None if `x` is not a Python scalar)."""
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, int) and not isinstance(x, np.integer):
        if like is not None and is_int(like):
            info = np.iinfo(like)
            if info.min <= x <= info.max:
                return like
        return _smallest_int(x)
    if isinstance(x, float) and not isinstance(x, np.floating):
        if like is not None and is_float(like):
            if like == "float32" and np.isfinite(x) and not np.isfinite(np.float32(x)):
                return "float64"
            if like == "float64" and _floatX() == "float32" and np.isfinite(np.float32(x)):
                # Theano's autocast: with floatX=float32 a Python float is a float32
                # constant, upcast where it meets float64 (``dvector * 1.1`` uses 1.1f).
                return "float32"
            return like
        return _floatX()
    return None


def constant(x: Any, name: str | None = None, ndim: int | None = None, dtype: str | None = None) -> Constant:
    """A constant tensor (Python scalars get Theano's dtypes: ``T.constant(0)`` is int8)."""
    if isinstance(x, Variable):
        raise TypeError(f"constant: {x} is already symbolic")
    if dtype is None:
        dtype = _python_dtype(x)
        if dtype is None:
            arr = np.asarray(x)
            if arr.dtype == object:
                raise TypeError(f"constant: cannot convert {x!r} to a tensor")
            if arr.dtype.kind == "u":
                arr = arr.astype(np.int64)
            dtype = arr.dtype.name
    dtype = check_dtype(dtype, "constant")
    arr = np.asarray(x)
    if arr.dtype.kind in "iub" and np.dtype(dtype).kind in "i" and arr.size:
        info = np.iinfo(dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise OverflowError(f"constant: {x!r} does not fit in {dtype}")
    arr = np.asarray(x, dtype=dtype)
    if ndim is not None:
        if arr.ndim > ndim:
            raise ValueError(f"constant: value of rank {arr.ndim} does not fit ndim={ndim}")
        arr = arr.reshape((1,) * (ndim - arr.ndim) + arr.shape)
    return Constant(arr, name=name)


def as_tensor_variable(x: Any, name: str | None = None, ndim: int | None = None, dtype: str | None = None) -> Variable:
    """`x` as a symbolic variable: variables pass through, values become constants.

    >>> as_tensor_variable(0).dtype, as_tensor_variable(np.asarray(0, "int32")).dtype
    ('int8', 'int32')
    """
    if isinstance(x, Variable):
        if dtype is not None and x.dtype != check_dtype(dtype):
            x = _cast(x, check_dtype(dtype))
        if ndim is not None and x.ndim != ndim:
            raise TypeError(f"as_tensor_variable: {x} has rank {x.ndim}, expected {ndim}")
        return x
    if isinstance(x, (list, tuple)) and builtins.any(isinstance(v, Variable) for v in x):
        return stack([as_tensor_variable(v) for v in x])
    return constant(x, name=name, ndim=ndim, dtype=dtype)


as_tensor = as_tensor_variable


def _operands(*xs: Any) -> list[Variable]:
    """Inputs of an element-wise op: Python scalars adapt to the symbolic operands."""
    like = None
    for x in xs:
        if isinstance(x, Variable):
            like = x.dtype if like is None else upcast(like, x.dtype)
    out = []
    for x in xs:
        if isinstance(x, Variable):
            out.append(x)
        else:
            dtype = _python_dtype(x, like)
            out.append(constant(x, dtype=dtype))
    return out


def _elem(name: str, *xs: Any) -> Variable:
    return Elemwise(SCALAR_OPS[name])(*_operands(*xs))


# -- element-wise math --------------------------------------------------------------


def add(a, b): return _elem("add", a, b)  # noqa: E704
def sub(a, b): return _elem("sub", a, b)  # noqa: E704
def mul(a, b): return _elem("mul", a, b)  # noqa: E704
def true_div(a, b): return _elem("true_div", a, b)  # noqa: E704
def int_div(a, b): return _elem("int_div", a, b)  # noqa: E704
def mod(a, b): return _elem("mod", a, b)  # noqa: E704
def eq(a, b): return _elem("eq", a, b)  # noqa: E704
def neq(a, b): return _elem("neq", a, b)  # noqa: E704
def lt(a, b): return _elem("lt", a, b)  # noqa: E704
def le(a, b): return _elem("le", a, b)  # noqa: E704
def gt(a, b): return _elem("gt", a, b)  # noqa: E704
def ge(a, b): return _elem("ge", a, b)  # noqa: E704
def and_(a, b): return _elem("and", a, b)  # noqa: E704
def or_(a, b): return _elem("or", a, b)  # noqa: E704
def xor(a, b): return _elem("xor", a, b)  # noqa: E704
def maximum(a, b): return _elem("maximum", a, b)  # noqa: E704
def minimum(a, b): return _elem("minimum", a, b)  # noqa: E704
def neg(a): return _elem("neg", a)  # noqa: E704
def invert(a): return _elem("invert", a)  # noqa: E704
def exp(a): return _elem("exp", a)  # noqa: E704


def _is_scalar_one(v: Any) -> bool:
    return isinstance(v, Constant) and np.ndim(v.data) == 0 and v.data == 1


def log(a) -> Variable:
    """The natural logarithm, with the stabilizations of Theano's rewrites:
    ``log(sigmoid(x))`` is ``-softplus(-x)``, ``log(1 - sigmoid(x))`` is
    ``-softplus(x)`` and ``log(softmax(x))`` is ``logsoftmax(x)`` (finite
    where the naive forms are ``-inf`` and their gradients NaN)."""
    inner = elemwise_inputs(a, "sigmoid")
    if inner:
        return neg(softplus(neg(inner[0])))
    diff = elemwise_inputs(a, "sub")
    if diff and _is_scalar_one(diff[0]):
        inner = elemwise_inputs(diff[1], "sigmoid")
        if inner:
            return neg(softplus(inner[0]))
    if isinstance(a, Variable) and "softmax_of" in a.tag:
        return log_softmax_of(*a.tag["softmax_of"])
    return _elem("log", a)


def log1p(a) -> Variable:
    """``log(1 + a)``; ``log1p(exp(x))`` is ``softplus(x)`` (no overflow)."""
    inner = elemwise_inputs(a, "exp")
    if inner:
        return softplus(inner[0])
    return _elem("log1p", a)


def log_softmax_of(x: Variable, axis: int | None) -> Variable:
    """``log(softmax(x))`` along `axis` (an int in range, or None for all
    elements), computed stably as ``x - max - log(sum(exp(x - max)))``."""
    if axis is None:
        shifted = x - max(x)
        return shifted - log(sum(exp(shifted)))
    shifted = x - max(x, axis=axis, keepdims=True)
    return shifted - log(sum(exp(shifted), axis=axis, keepdims=True))


def sqrt(a): return _elem("sqrt", a)  # noqa: E704
def sqr(a): return _elem("sqr", a)  # noqa: E704
def tanh(a): return _elem("tanh", a)  # noqa: E704
def sigmoid(a): return _elem("sigmoid", a)  # noqa: E704
def softplus(a): return _elem("softplus", a)  # noqa: E704
def sin(a): return _elem("sin", a)  # noqa: E704
def cos(a): return _elem("cos", a)  # noqa: E704
def floor(a): return _elem("floor", a)  # noqa: E704
def ceil(a): return _elem("ceil", a)  # noqa: E704
def log2(a): return _elem("log2", a)  # noqa: E704
def log10(a): return _elem("log10", a)  # noqa: E704
def expm1(a): return _elem("expm1", a)  # noqa: E704
def exp2(a): return _elem("exp2", a)  # noqa: E704
def sinh(a): return _elem("sinh", a)  # noqa: E704
def cosh(a): return _elem("cosh", a)  # noqa: E704
def tan(a): return _elem("tan", a)  # noqa: E704
def arcsin(a): return _elem("arcsin", a)  # noqa: E704
def arccos(a): return _elem("arccos", a)  # noqa: E704
def arctan(a): return _elem("arctan", a)  # noqa: E704
def arcsinh(a): return _elem("arcsinh", a)  # noqa: E704
def arccosh(a): return _elem("arccosh", a)  # noqa: E704
def arctanh(a): return _elem("arctanh", a)  # noqa: E704
def arctan2(a, b): return _elem("arctan2", a, b)  # noqa: E704
def round_half_to_even(a): return _elem("round_half_to_even", a)  # noqa: E704
def round_half_away_from_zero(a): return _elem("round_half_away_from_zero", a)  # noqa: E704
def isnan(a): return _elem("isnan", a)  # noqa: E704
def isinf(a): return _elem("isinf", a)  # noqa: E704


def erf(a):
    """The error function (libm's ``erf``), element-wise; ints compute in float."""
    return _elem("erf", a)


def erfc(a):
    """The complementary error function ``1 - erf(a)`` (libm's ``erfc``)."""
    return _elem("erfc", a)


def gammaln(a):
    """``log |Gamma(a)|``, element-wise (libm's ``lgamma_r``; ``inf`` at the poles 0, -1, ...).

    >>> float(gammaln(constant(5.0)).eval())  # log(4!)
    3.1780538303479458
    """
    return _elem("gammaln", a)


def psi(a):
    """The digamma function ``d/da log Gamma(a)``, element-wise, as SciPy's ``psi``
    (``-inf`` at 0, NaN at the negative integers)."""
    return _elem("psi", a)


def polygamma(n, a):
    """``psi^(n)(a)``, the n-th derivative of the digamma function, element-wise, as SciPy's
    ``polygamma`` (integer ``n`` >= 0; 0 is :func:`psi`). Its gradient in ``a`` is
    ``polygamma(n + 1, a)``; ``n`` has none."""
    return _elem("polygamma", n, a)


def tri_gamma(a):
    """The trigamma function ``polygamma(1, a)``, element-wise."""
    return _elem("polygamma", 1, a)


def round(a, mode: str | None = None):  # noqa: A001 - Theano's name
    """Rounds to integral values: ``mode`` "half_to_even" (the default, NumPy's ``round``) or
    "half_away_from_zero"; integers are returned as they are.

    >>> import numpy as np
    >>> x = vector("x")
    >>> round(x).eval({x: np.array([0.5, 1.5, -2.5])}).tolist()
    [0.0, 2.0, -2.0]
    >>> round(x, "half_away_from_zero").eval({x: np.array([0.5, 1.5, -2.5])}).tolist()
    [1.0, 2.0, -3.0]
    """
    if mode is None or mode == "half_to_even":
        return round_half_to_even(a)
    if mode == "half_away_from_zero":
        return round_half_away_from_zero(a)
    raise ValueError(f"round: mode {mode!r} is not implemented (use 'half_to_even' or 'half_away_from_zero')")


def sgn(a):
    """The sign of `a`: -1, 0 or 1 in its dtype (NaN stays NaN); PyTensor's ``sign``."""
    return _elem("sgn", a)


sign = sgn


def reciprocal(a):
    """``1 / a`` (integers give floats, as ``true_div``); Theano's ``inv``."""
    return true_div(1, a)


inv = reciprocal


def deg2rad(a):
    """Degrees to radians."""
    a = as_tensor_variable(a)
    return mul(a if is_float(a.dtype) else _cast(a, SCALAR_OPS["exp"].out_dtype([a.dtype])), np.pi / 180.0)


def rad2deg(a):
    """Radians to degrees."""
    a = as_tensor_variable(a)
    return mul(a if is_float(a.dtype) else _cast(a, SCALAR_OPS["exp"].out_dtype([a.dtype])), 180.0 / np.pi)


floor_div = int_div
bitwise_and, bitwise_or = and_, or_


def pow(a, b):  # noqa: A001 - Theano's name
    """``a ** b`` (float math for floats, exact integer powers for ints;
    ``x ** 2``, ``x ** 3``, ``x ** 4`` and ``x ** -1`` of a float `x` by
    multiplications, as Theano's ``local_pow_specialize`` rewrites them)."""
    return _power(*_operands(a, b))


def abs(a):  # noqa: A001 - Theano's name
    """Absolute value."""
    return _elem("abs", a)


abs_ = abs


def switch(cond, a, b) -> Variable:
    """Element-wise ``a if cond else b`` (NumPy's ``where``)."""
    cond, = _operands(cond)
    a, b = _operands(a, b)
    return Elemwise(SCALAR_OPS["switch"])(cond, a, b)


where = switch


def clip(x, lo, hi) -> Variable:
    """``minimum(maximum(x, lo), hi)``."""
    return minimum(maximum(x, lo), hi)


def cast(x, dtype: str) -> Variable:
    """``x`` converted to `dtype` (NumPy's ``astype``)."""
    x = as_tensor_variable(x)
    return _cast(x, check_dtype(dtype, "cast"))


# -- construction -----------------------------------------------------------------------


def _alloc(value: Variable, dims: tuple, dtype: str) -> Variable:
    static = tuple(d if isinstance(d, int) else None for d in dims)
    sym = [_cast(d, "int64") if d.dtype != "int64" else d for d in dims if isinstance(d, Variable)]
    return Alloc(dtype, static)(value, *sym)


def alloc(value, *shape) -> Variable:
    """A tensor of `shape` filled with `value` (broadcast): ``T.alloc(0.0, n, 3)``."""
    value = as_tensor_variable(value)
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) and not (
        isinstance(shape[0], Variable) and shape[0].ndim == 0
    ):
        dims = dims_from_shape_arg(shape[0], "alloc")
    else:
        dims = dims_from_shape_arg(list(shape), "alloc")
    return _alloc(value, dims, value.dtype)


def zeros(shape, dtype: str | None = None) -> Variable:
    """A tensor of zeros; `shape` holds ints and int scalars (or is ``x.shape``)."""
    dtype = check_dtype(dtype or _floatX(), "zeros")
    return _alloc(constant(0, dtype=dtype), dims_from_shape_arg(shape, "zeros"), dtype)


def ones(shape, dtype: str | None = None) -> Variable:
    """A tensor of ones."""
    dtype = check_dtype(dtype or _floatX(), "ones")
    return _alloc(constant(1, dtype=dtype), dims_from_shape_arg(shape, "ones"), dtype)


def zeros_like(x, dtype: str | None = None) -> Variable:
    """Zeros with the shape (and dtype) of `x`."""
    x = as_tensor_variable(x)
    dtype = check_dtype(dtype or x.dtype, "zeros_like")
    return _alloc(constant(0, dtype=dtype), symbolic_shape(x), dtype)


def ones_like(x, dtype: str | None = None) -> Variable:
    """Ones with the shape (and dtype) of `x`."""
    x = as_tensor_variable(x)
    dtype = check_dtype(dtype or x.dtype, "ones_like")
    return _alloc(constant(1, dtype=dtype), symbolic_shape(x), dtype)


def fill(model, value) -> Variable:
    """`value` broadcast to the shape of `model` (Theano's ``fill``)."""
    model = as_tensor_variable(model)
    value, = _operands(value)
    return _alloc(value, symbolic_shape(model), value.dtype)


second = fill


def arange(start, stop=None, step=1, dtype: str | None = None) -> Variable:
    """``arange`` like NumPy's; the bounds may be symbolic scalars.

    >>> arange(10).type, arange(iscalar()).dtype
    (TensorType(int64, (10,)), 'int64')
    """
    if stop is None:
        start, stop = 0, start
    args = [start, stop, step]
    sym = [a for a in args if isinstance(a, Variable)]
    for name, a in zip(("start", "stop", "step"), args):
        if isinstance(a, Variable) and a.ndim != 0:
            raise TypeError(f"arange: {name} must be a scalar, got {a.type}")
    if dtype is None:
        py = [a for a in args if not isinstance(a, Variable)]
        if not sym:
            if step == 0:
                raise ValueError("arange: step must not be zero")
            dtype = np.arange(*args).dtype.name
        else:
            dtypes = [a.dtype for a in sym]
            if builtins.any(isinstance(a, float) for a in py):
                dtypes.append(_floatX())
            dtype = upcast(*dtypes)
            # Theano: "don't try to be stingy and byte-optimize, this leads to
            # overflow problems" (arange of an int8 scalar times 100)
            if dtype == "bool" or dtype.startswith("int"):
                dtype = "int64"
            elif dtype.startswith("uint"):
                dtype = "uint64"
    dtype = check_dtype(dtype, "arange")
    start_v, stop_v, step_v = (a if isinstance(a, Variable) else constant(a, dtype=_python_dtype(a, dtype) or None) for a in args)
    if isinstance(step_v, Constant) and step_v.data == 0:
        raise ValueError("arange: step must not be zero")
    return Arange(dtype)(start_v, stop_v, step_v)


# -- structure ---------------------------------------------------------------------------


def dot(a, b) -> Variable:
    """NumPy's ``dot``: vector-vector, matrix-vector, vector-matrix, matrix-matrix (and N-D)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if a.ndim == 0 or b.ndim == 0:
        return mul(a, b)
    return Dot()(a, b)


def outer(x, y) -> Variable:
    """The outer product of two vectors."""
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    return mul(dimshuffle(x, 0, "x"), dimshuffle(y, "x", 0))


def dimshuffle(x, *pattern) -> Variable:
    """Theano's ``dimshuffle``: ``x.dimshuffle(1, 0)``, ``x.dimshuffle('x', 0)``."""
    x = as_tensor_variable(x)
    if len(pattern) == 1 and isinstance(pattern[0], (list, tuple)):
        pattern = tuple(pattern[0])
    if tuple(pattern) == tuple(range(x.ndim)):
        return x
    return DimShuffle(x.ndim, tuple(pattern))(x)


def transpose(x, axes: Sequence[int] | None = None) -> Variable:
    """Permutes the dimensions (reverses them by default; ``x.T``)."""
    x = as_tensor_variable(x)
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    axes = tuple(_norm_axis(a, x.ndim, "transpose") for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {axes} are not a permutation of {x.ndim} dimensions")
    return dimshuffle(x, *axes)


def shape(x) -> Variable:
    """The shape of `x`, an int64 vector (``x.shape``).

    Sizes that an op checks at run time keep their checks (a scan's rows are
    its ``n_steps`` only if its sequences are long enough; see
    :func:`~mlir_scan.builder.ops.shape.checked_shape_of`).
    """
    x = as_tensor_variable(x)
    return Shape()(x)


def _shape_entry(x: Variable, d: int) -> Variable:
    """Size `d` of `x` (``x.shape[d]``): a constant where it is static and needs no
    check, otherwise read from `x` (and folded into a computed size, with the
    checks it needs, when the function is compiled: ``fold_shapes``)."""
    dim = checked_shape_of(x)[d]
    if isinstance(dim, int):
        return constant(dim, dtype="int64")
    return Shape_i(d)(x)


def _norm_axis(axis, ndim: int, what: str) -> int:
    if isinstance(axis, Variable) or int(axis) != axis:
        raise TypeError(f"{what}: axis must be a Python int, got {axis!r}")
    a = int(axis)
    if not -ndim <= a < builtins.max(ndim, 1):
        raise ValueError(f"{what}: axis {a} is out of bounds for rank {ndim}")
    return a % ndim if ndim else 0


def _norm_axes(axis, ndim: int, what: str) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (list, tuple)):
        axes = tuple(sorted({_norm_axis(a, ndim, what) for a in axis}))
        if len(axes) != len(axis):
            raise ValueError(f"{what}: repeated axis in {axis}")
        return axes
    return (_norm_axis(axis, ndim, what),)


def _keepdims(result: Variable, axes: tuple[int, ...], ndim: int) -> Variable:
    pattern, k = [], 0
    for d in range(ndim):
        if d in axes:
            pattern.append("x")
        else:
            pattern.append(k)
            k += 1
    return dimshuffle(result, *pattern)


def _reduce(kind: str, x, axis, keepdims: bool, dtype: str | None) -> Variable:
    x = as_tensor_variable(x)
    axes = _norm_axes(axis, x.ndim, kind)
    out = Reduce(kind, axes)(x) if axes else x
    if dtype is not None:
        out = _cast(out, check_dtype(dtype, kind))
    if keepdims:
        out = _keepdims(out, axes, x.ndim)
    return out


def sum(x, axis=None, dtype: str | None = None, keepdims: bool = False, acc_dtype: str | None = None) -> Variable:  # noqa: A001
    """Sum over `axis` (all by default); ints and bools sum to int64."""
    return _reduce("sum", x, axis, keepdims, dtype)


def prod(x, axis=None, dtype: str | None = None, keepdims: bool = False, acc_dtype: str | None = None) -> Variable:
    """Product over `axis`."""
    return _reduce("prod", x, axis, keepdims, dtype)


def max(x, axis=None, keepdims: bool = False) -> Variable:  # noqa: A001
    """Maximum over `axis` (NaN propagates, as in NumPy)."""
    return _reduce("max", x, axis, keepdims, None)


def min(x, axis=None, keepdims: bool = False) -> Variable:  # noqa: A001
    """Minimum over `axis`."""
    return _reduce("min", x, axis, keepdims, None)


def all(x, axis=None, keepdims: bool = False) -> Variable:  # noqa: A001
    """True where every element over `axis` is non-zero."""
    return _reduce("min", cast(x, "bool"), axis, keepdims, None)


def any(x, axis=None, keepdims: bool = False) -> Variable:  # noqa: A001
    """True where some element over `axis` is non-zero."""
    return _reduce("max", cast(x, "bool"), axis, keepdims, None)


def mean(x, axis=None, dtype: str | None = None, keepdims: bool = False, acc_dtype: str | None = None) -> Variable:
    """Mean over `axis`; integer inputs give float64."""
    x = as_tensor_variable(x)
    axes = _norm_axes(axis, x.ndim, "mean")
    fdt = x.dtype if is_float(x.dtype) else "float64"
    total = _reduce("sum", _cast(x, fdt), axes, False, None)
    dims = symbolic_shape(x)
    count: Any = 1
    for d in axes:
        count = count * dims[d] if isinstance(count, int) and isinstance(dims[d], int) else mul(count, dims[d])
    if isinstance(count, int):
        out = true_div(total, constant(float(count), dtype=fdt))
    else:
        out = true_div(total, _cast(count, fdt))
    if dtype is not None:
        out = _cast(out, check_dtype(dtype, "mean"))
    if keepdims:
        out = _keepdims(out, axes, x.ndim)
    return out


def concatenate(tensor_list: Sequence[Any], axis: int = 0) -> Variable:
    """Joins tensors of equal rank along an existing `axis`."""
    tensors = [as_tensor_variable(t) for t in tensor_list]
    if not tensors:
        raise ValueError("concatenate: needs at least one tensor")
    if tensors[0].ndim == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated (use stack)")
    ax = _norm_axis(axis, tensors[0].ndim, "concatenate")
    if len(tensors) == 1:
        return tensors[0]
    return Join(ax)(*tensors)


def join(axis: int, *tensors) -> Variable:
    """Theano's ``join(axis, *tensors)``."""
    return concatenate(tensors, axis)


def split(x, splits_size, n_splits: int, axis: int = 0) -> list[Variable]:
    """`x` cut along `axis` into `n_splits` pieces of sizes `splits_size` (Theano's ``T.split``).

    `splits_size` is an integer vector (symbolic or not) of length `n_splits`;
    its entries must be non-negative and sum to ``x.shape[axis]``
    (``ValueError`` at run time otherwise, as PyTensor's ``Split``).

    >>> from mlir_scan import tensor as T
    >>> [p.type.shape for p in T.split(T.matrix("m", shape=(2, 5)), [2, 3], 2, axis=1)]
    [(2, 2), (2, 3)]
    """
    x = as_tensor_variable(x)
    ax = _norm_axis(axis, x.ndim, "split")
    sizes = as_tensor_variable(splits_size)
    if sizes.ndim != 1 or not is_int(sizes.dtype):
        raise TypeError(f"split: splits_size must be an integer vector, got {sizes.type}")
    if sizes.type.shape[0] is not None and sizes.type.shape[0] != n_splits:
        raise ValueError(f"split: {n_splits} splits but splits_size has {sizes.type.shape[0]} entries")
    if isinstance(sizes, Constant):
        static = [int(v) for v in sizes.data]
        if builtins.any(v < 0 for v in static):
            raise ValueError("Split sizes cannot be negative")
        n = x.type.shape[ax]
        if n is not None and builtins.sum(static) != n:
            raise ValueError(f"Split sizes sum to {builtins.sum(static)}; expected {n}")
        parts = static
    else:
        x = _Assert("Split sizes cannot be negative", ValueError)(x, all(ge(sizes, 0)))
        parts = [sizes[i] for i in range(n_splits)]
    total = builtins.sum(parts) if isinstance(sizes, Constant) else sum(sizes)
    x = _Assert("Split sizes do not sum to the length of the split axis", ValueError)(
        x, eq(total, shape(x)[ax]))
    out, start = [], 0
    for size in parts:
        stop = start + size
        out.append(x[(slice(None),) * ax + (slice(start, stop),)])
        start = stop
    return out


def stack(tensors: Sequence[Any], axis: int = 0) -> Variable:
    """Joins tensors of equal shape along a new `axis`."""
    ts = [as_tensor_variable(t) for t in tensors]
    if not ts:
        raise ValueError("stack: needs at least one tensor")
    nd = ts[0].ndim
    for i, t in enumerate(ts):
        if t.ndim != nd:
            raise ValueError(f"stack: tensor #{i} has rank {t.ndim}, tensor #0 has rank {nd}")
    ax = _norm_axis(axis, nd + 1, "stack")
    expanded = []
    for t in ts:
        pattern = list(range(nd))
        pattern.insert(ax, "x")
        expanded.append(dimshuffle(t, *pattern))
    if len(expanded) == 1:
        return expanded[0]
    return Join(ax)(*expanded)


def reshape(x, newshape, ndim: int | None = None) -> Variable:
    """Reshape (one dimension may be -1, as in NumPy).

    `newshape` may be a symbolic vector; its length must then be static or
    given as `ndim`. Symbolic sizes may be -1 at run time (one of them), as
    in Theano.
    """
    x = as_tensor_variable(x)
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    if isinstance(newshape, Variable):
        if newshape.ndim == 1 and newshape.type.shape[0] is not None and ndim is not None \
                and ndim != newshape.type.shape[0]:
            raise ValueError(f"reshape: ndim={ndim} but the shape vector has {newshape.type.shape[0]} entries")
        if newshape.ndim == 1 and newshape.type.shape[0] is None and ndim is not None:
            # Its length is checked at run time (Theano: "incorrect length").
            newshape = SpecifyShape((int(ndim),), "reshape: the shape vector")(newshape)
        dims = list(dims_from_shape_arg(newshape, "reshape", ndim))
    else:
        dims = []
        for d in newshape:
            if isinstance(d, Variable):
                dims.append(d)
            elif int(d) == -1:
                dims.append(-1)
            else:
                dims.append(dims_from_shape_arg([d], "reshape")[0])
    if ndim is not None and ndim != len(dims):
        raise ValueError(f"reshape: ndim={ndim} but the new shape has {len(dims)} entries")
    if builtins.sum(1 for d in dims if isinstance(d, int) and d == -1) > 1:
        raise ValueError("reshape: can only specify one unknown dimension (-1)")
    if -1 in [d for d in dims if isinstance(d, int)]:
        k = [i for i, d in enumerate(dims) if isinstance(d, int) and d == -1][0]
        known = [d for i, d in enumerate(dims) if i != k]
        total: Any = 1
        for d in symbolic_shape(x):
            total = total * d if isinstance(total, int) and isinstance(d, int) else mul(total, d)
        rest: Any = 1
        for d in known:
            rest = rest * d if isinstance(rest, int) and isinstance(d, int) else mul(rest, d)
        if isinstance(rest, int) and rest == 0:
            # (NumPy: whatever the input's size)
            raise ValueError(f"reshape: cannot infer the unknown dimension (-1) of {tuple(newshape)}: "
                             "the other dimensions multiply to 0")
        if isinstance(total, int) and isinstance(rest, int):
            if total % rest:
                raise ValueError(f"reshape: cannot reshape {x.type.shape} into {tuple(newshape)}")
            dims[k] = total // rest
        else:
            # Left to the op, which infers it at run time (and fails, as
            # NumPy, when the others multiply to 0).
            dims[k] = constant(-1, dtype="int64")
    dims = [d if isinstance(d, int) else (_cast(d, "int64") if d.dtype != "int64" else d) for d in dims]
    for d in dims:
        if isinstance(d, Variable) and (d.ndim != 0 or not is_int(d.dtype)):
            raise TypeError(f"reshape: dimensions must be integer scalars, got {d.type}")
    static = tuple(d if isinstance(d, int) else None for d in dims)
    return Reshape(static)(x, *[d for d in dims if isinstance(d, Variable)])


def flatten(x, ndim: int = 1, outdim: int | None = None) -> Variable:
    """Collapses the trailing dimensions so the result has `ndim` dimensions."""
    x = as_tensor_variable(x)
    ndim = outdim or ndim
    if not 1 <= ndim <= builtins.max(x.ndim, 1):
        raise ValueError(f"flatten: ndim={ndim} for a rank-{x.ndim} tensor")
    dims = list(symbolic_shape(x))
    keep = dims[: ndim - 1]
    rest: Any = 1
    for d in dims[ndim - 1:]:
        rest = rest * d if isinstance(rest, int) and isinstance(d, int) else mul(rest, d)
    return reshape(x, keep + [rest])


# -- indexing ---------------------------------------------------------------------------------


def _getitem(x: Variable, key) -> Variable:
    if x.owner is not None and isinstance(x.owner.op, Shape) and isinstance(key, (int, np.integer)):
        src = x.owner.inputs[0]
        d = _norm_axis(key, src.ndim, "shape index")
        return _shape_entry(src, d)
    if (x.owner is not None and isinstance(x.owner.op, MakeVector) and isinstance(key, (int, np.integer))
            and not isinstance(key, (bool, np.bool_)) and -len(x.owner.inputs) <= key < len(x.owner.inputs)):
        return x.owner.inputs[int(key)]
    if builtins.any(_is_array_index(k) for k in (key if isinstance(key, tuple) else (key,))):
        return _advanced_getitem(x, key)
    if isinstance(key, tuple) and key and _is_last_row(x, key[0]):
        key = (-1,) + key[1:]
    elif _is_last_row(x, key):
        key = -1
    idx_list, syms, newaxes = make_index_list(x, key)
    # Trailing full slices are implicit (x[:] is a Subtensor with no index).
    while idx_list and idx_list[-1] == ("s", None, None, None):
        idx_list = idx_list[:-1]
    out = Subtensor(idx_list)(x, *syms)
    if newaxes:
        pattern: list = list(range(out.ndim))
        for p in newaxes:
            pattern.insert(p, "x")
        out = dimshuffle(out, *pattern)
    return out


def _widened(v: Variable) -> Variable:
    """`v` without the integer casts that widen it (they keep its value)."""
    while (v.owner is not None and isinstance(v.owner.op, Elemwise) and isinstance(v.owner.op.scalar_op, _Cast)
           and is_int(v.dtype) and is_int(v.owner.inputs[0].dtype)
           and np.dtype(v.dtype).itemsize >= np.dtype(v.owner.inputs[0].dtype).itemsize):
        v = v.owner.inputs[0]
    return v


def _is_last_row(x: Variable, k) -> bool:
    """True when the index `k` of `x`'s leading axis is ``len(x) - 1``, written
    with ``x.shape[0]`` or with the ``n_steps`` of the scan that made `x`.

    Such an index is ``x[-1]`` exactly (both are out of bounds when `x` is
    empty), and written so, scan-save-mem sees that the scan's last row is all
    that is read: ``scan(..., n_steps=k)[0][k - 1]`` keeps one row, not `k`.
    """
    if not isinstance(k, Variable) or k.ndim != 0 or x.ndim == 0:
        return False
    def const(v, value) -> bool:
        return isinstance(v, Constant) and v.data.shape == () and v.data == value

    sub, add = elemwise_inputs(k, "sub"), elemwise_inputs(k, "add")
    if sub is not None and const(sub[1], 1):
        length = sub[0]
    elif add is not None and const(add[0], -1):  # (PyTensor's canonical form of n - 1)
        length = add[1]
    elif add is not None and const(add[1], -1):
        length = add[0]
    else:
        return False
    length = _widened(length)
    if length.owner is not None and isinstance(length.owner.op, Shape_i):
        return length.owner.op.i == 0 and length.owner.inputs[0] is x
    node = x.owner
    if node is None or not isinstance(node.op, ScanOp) or node.op.until:
        return False
    j = node.outputs.index(x) - node.op.n_mitmot
    return j >= 0 and not node.op.keep[j] and _widened(node.inputs[0]) is length


def _is_array_index(k) -> bool:
    """True for the index entries NumPy treats as arrays (integer arrays, lists, boolean masks)."""
    if isinstance(k, Variable):
        return k.ndim > 0 or k.dtype == "bool"
    if isinstance(k, (list, tuple)):
        return True
    return isinstance(k, np.ndarray) and (k.ndim > 0 or k.dtype == np.bool_)


def _index_array(k) -> Variable:
    if isinstance(k, Variable):
        return k
    arr = np.asarray(k)
    if arr.dtype == object:
        raise IndexError(f"cannot index with {k!r}: not an array of integers")
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # NumPy: ``x[[]]`` is an empty integer index
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    return constant(arr)


def _advanced_getitem(x: Variable, key) -> Variable:
    """``x[key]`` where `key` holds integer arrays or boolean masks (NumPy's advanced indexing)."""
    entries = [_index_array(k) if _is_array_index(k) else k for k in (key if isinstance(key, tuple) else (key,))]
    if builtins.sum(1 for k in entries if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis (...)")

    def consumed(k) -> int:
        if k is None or k is Ellipsis:
            return 0
        return k.ndim if isinstance(k, Variable) and k.dtype == "bool" else 1

    n_real = builtins.sum(consumed(k) for k in entries)
    if n_real > x.ndim:
        raise IndexError(f"too many indices for {x} of rank {x.ndim}: {n_real} given")
    expanded = []
    for k in entries:
        expanded.extend([slice(None)] * (x.ndim - n_real) if k is Ellipsis else [k])
    if builtins.any(k is None for k in expanded):
        # A new axis is a full slice of an axis of length 1 added first.
        pattern: list = []
        d = 0
        for k in expanded:
            if k is None:
                pattern.append("x")
            else:
                pattern.extend(range(d, d + consumed(k)))
                d += consumed(k)
        x = dimshuffle(x, *(pattern + list(range(d, x.ndim))))
        expanded = [slice(None) if k is None else k for k in expanded]
    idx_list: list = []
    inputs: list[Variable] = []
    d = 0
    for k in expanded:
        if isinstance(k, slice):
            (entry,), syms, _ = make_index_list(x, (k,))
            idx_list.append(entry)
            inputs.extend(syms)
        elif isinstance(k, Variable) and k.dtype == "bool":
            for coords in MaskNonzero(d)(k, x) if k.ndim > 1 else [MaskNonzero(d)(k, x)]:
                idx_list.append(("a",))
                inputs.append(coords)
        else:
            if isinstance(k, (bool, np.bool_)):
                raise IndexError("boolean scalar indices are not supported")
            if not isinstance(k, Variable):
                (entry,), _, _ = make_index_list(x, (k,))  # validates a Python integer
                k = constant(np.asarray(entry[1], dtype="int64"))
            idx_list.append(("a",))
            inputs.append(k)
        d += consumed(k)
    while idx_list and idx_list[-1] == ("s", None, None, None):
        idx_list.pop()
    return AdvancedSubtensor(tuple(idx_list))(x, *inputs)


def nonzero(a, return_matrix: bool = False):
    """The indices of the non-zero elements of `a`, one int64 vector per axis (NumPy's ``nonzero``).

    With `return_matrix`, one ``(a.ndim, count)`` matrix instead (Theano's option).

    >>> from mlir_scan import tensor as T
    >>> [v.type for v in T.nonzero(T.matrix("m"))]
    [TensorType(int64, (None,)), TensorType(int64, (None,))]
    """
    a = as_tensor_variable(a)
    if a.ndim == 0:
        raise ValueError("nonzero: the input must have at least one dimension")
    mask = a if a.dtype == "bool" else neq(a, 0)
    coords = MaskNonzero()(mask)
    coords = [coords] if a.ndim == 1 else list(coords)
    return stack(coords) if return_matrix else tuple(coords)


def flatnonzero(a) -> Variable:
    """The indices of the non-zero elements of ``a.flatten()``."""
    a = as_tensor_variable(a)
    return nonzero(flatten(a) if a.ndim != 1 else a)[0]


def nonzero_values(a) -> Variable:
    """The non-zero elements of `a`, flattened (``a.flatten()[flatnonzero(a)]``)."""
    a = as_tensor_variable(a)
    flat = flatten(a) if a.ndim != 1 else a
    return flat[flatnonzero(flat)]


def _subtensor_parts(x: Variable, what: str):
    if x.owner is None or not isinstance(x.owner.op, (Subtensor, AdvancedSubtensor)):
        raise TypeError(f"{what}: the first argument must be a subtensor such as x[i], x[a:b] or x[idx], got {x}")
    return x.owner.inputs[0], x.owner.op, x.owner.inputs[1:]


def _inc(x, y, set_instead_of_inc: bool, what: str) -> Variable:
    base, op, index_inputs = _subtensor_parts(x, what)
    y, = _operands(y)
    if isinstance(op, AdvancedSubtensor):
        return AdvancedIncSubtensor(op.idx_list, set_instead_of_inc)(base, y, *index_inputs)
    return IncSubtensor(op.idx_list, set_instead_of_inc)(base, y, *index_inputs)


def set_subtensor(x, y, inplace: bool = False, tolerate_inplace_aliasing: bool = False) -> Variable:
    """A copy of the tensor indexed by `x` with the indexed part replaced by `y`.

    ``T.set_subtensor(z[i, j], v)`` is ``z`` with ``z[i, j] = v``; `x` may be
    any index, integer arrays and masks included (``z[idx]``: with repeated
    indices the last value wins). `inplace` and `tolerate_inplace_aliasing`
    are Theano's and change nothing (the compiler decides what runs in place).
    """
    return _inc(x, y, True, "set_subtensor")


def inc_subtensor(x, y, inplace: bool = False, set_instead_of_inc: bool = False,
                  tolerate_inplace_aliasing: bool = False, ignore_duplicates: bool = False) -> Variable:
    """A copy of the tensor indexed by `x` with `y` added to the indexed part.

    With integer arrays, repeated indices accumulate (``np.add.at``), as in
    Theano; `ignore_duplicates` (PyTensor's) gives the same result here.
    """
    return _inc(x, y, set_instead_of_inc, "set_subtensor" if set_instead_of_inc else "inc_subtensor")


# -- Variable methods and operators ----------------------------------------------------------------


def _rev(fn):
    return lambda self, other: fn(other, self)


_METHODS = {
    "__add__": add, "__radd__": _rev(add), "__sub__": sub, "__rsub__": _rev(sub),
    "__mul__": mul, "__rmul__": _rev(mul), "__truediv__": true_div, "__rtruediv__": _rev(true_div),
    "__floordiv__": int_div, "__rfloordiv__": _rev(int_div), "__mod__": mod, "__rmod__": _rev(mod),
    "__pow__": pow, "__rpow__": _rev(pow), "__neg__": neg, "__pos__": lambda self: self,
    "__abs__": abs, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "__and__": and_, "__rand__": _rev(and_), "__or__": or_, "__ror__": _rev(or_),
    "__xor__": xor, "__rxor__": _rev(xor), "__invert__": invert,
    "__matmul__": dot, "__rmatmul__": _rev(dot), "__getitem__": _getitem,
    "sum": sum, "prod": prod, "max": max, "min": min, "mean": mean, "all": all, "any": any,
    "astype": cast, "reshape": lambda self, *shape, ndim=None: reshape(
        self, shape[0] if len(shape) == 1 else shape, ndim),
    "flatten": flatten, "dimshuffle": dimshuffle, "dot": dot,
    "transpose": lambda self, *axes: transpose(self, axes[0] if len(axes) == 1 and isinstance(axes[0], (list, tuple)) else (axes or None)),
    "clip": clip, "exp": exp, "log": log, "sqrt": sqrt, "tanh": tanh, "copy": lambda self: self,
    "round": lambda self, mode=None: round(self, mode), "__round__": lambda self, ndigits=None: round(self),
    "nonzero": lambda self, return_matrix=False: nonzero(self, return_matrix),
    "nonzero_values": nonzero_values,
}
_METHODS = {k: v for k, v in _METHODS.items() if v is not None}

for _name, _fn in _METHODS.items():
    setattr(Variable, _name, _fn)


def _setitem(self, key, value):
    raise TypeError(
        "symbolic variables are immutable: use T.set_subtensor(x[key], value) "
        "or T.inc_subtensor(x[key], value)"
    )


Variable.__setitem__ = _setitem
Variable.T = property(lambda self: transpose(self))
Variable.shape = property(shape)  # type: ignore[assignment]
Variable.size = property(lambda self: prod(shape(self)) if self.ndim else constant(1, dtype="int64"))
