"""Theano's ``theano.scalar`` (``mlir_scan.scalar``, also ``mlir_scan.scalar.basic``): scalar types and dtype rules.

Real code names its scalar types (``theano.scalar.float32``, ``int64``...),
its dtype groups (``float_types``, ``discrete_types``...) and its promotion
rule :func:`upcast`. A scalar here is a rank-0 tensor: calling a scalar type
makes a rank-0 placeholder (``theano.scalar.float64("x")`` is
``T.dscalar("x")``), and :func:`constant` / :func:`as_scalar` make rank-0
variables. Types whose dtype the compiler does not support (unsigned
integers other than through their names, float16, complex) exist for
comparisons and :func:`upcast`; making a variable of one raises
``TypeError``. Theano's scalar ops (``theano.scalar.add``...) are not
provided: use the element-wise ``T.add``, ``T.exp``... on rank-0 tensors.

Example::

    >>> import mlir_scan as theano
    >>> theano.scalar.upcast("int32", "float32"), theano.scalar.upcast("int8", "int16")
    ('float64', 'int16')
    >>> x = theano.scalar.float32("x")
    >>> x.type, theano.scalar.float32.dtype
    (TensorType(float32, ()), 'float32')
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

import numpy as np

from . import config
from .graph import TensorType as _TensorType
from .graph import Variable, check_dtype
from .tensor import as_tensor_variable
from .tensor import constant as _constant

__all__ = [
    "Scalar", "ScalarType", "get_scalar_type", "upcast", "upgrade_to_float", "upcast_out", "same_out",
    "as_scalar", "constant",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
    "int_types", "uint_types", "integer_types", "float_types", "complex_types", "discrete_types",
    "continuous_types", "all_types",
]


def upcast(dtype: str, *dtypes: str) -> str:
    """Theano's ``theano.scalar.upcast``: NumPy's promotion of the dtypes, which keeps
    float32 (or float16) when ``config.cast_policy == "numpy+floatX"`` and floatX
    asks for it, unless a float64 is among them.

    >>> upcast("float32", "int64"), upcast("int8", "bool"), upcast("float32", "float64")
    ('float64', 'int8', 'float64')
    """
    names = [str(np.dtype(d)) for d in (dtype, *dtypes)]
    keep = config.cast_policy == "numpy+floatX" and config.floatX in ("float32", "float16")
    if keep and "float64" in names:
        keep = False
    if keep and config.floatX == "float16" and "float32" in names:
        keep = False
    result = str(np.result_type(*[np.zeros((), dtype=d) for d in names]))
    if keep and result in ("float64", "float32") and np.dtype(result).itemsize > np.dtype(config.floatX).itemsize:
        return config.floatX
    return result


class Scalar:
    """Theano's scalar type (PyTensor's ``ScalarType``) of one dtype.

    Calling it makes a rank-0 placeholder of the dtype; it compares equal to
    the scalar type of the same dtype and to nothing else.

    >>> Scalar("int32")("k").type
    TensorType(int32, ())
    """

    __slots__ = ("dtype",)

    def __init__(self, dtype: Any):
        object.__setattr__(self, "dtype", str(np.dtype(dtype)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("scalar types are immutable")

    @property
    def ndim(self) -> int:
        return 0

    @property
    def broadcastable(self) -> tuple:
        return ()

    def tensor_type(self) -> _TensorType:
        """The rank-0 :class:`~mlir_scan.builder.graph.TensorType` of this dtype (TypeError if unsupported)."""
        return _TensorType(check_dtype(self.dtype, f"theano.scalar.{self.dtype}"), ())

    def __call__(self, name: str | None = None) -> Variable:
        return self.tensor_type()(name)

    make_variable = __call__

    @staticmethod
    def upcast(*types: "Scalar") -> str:
        """The dtype :func:`upcast` gives the dtypes of `types`."""
        return upcast(*[t.dtype for t in types])

    def __eq__(self, other: object) -> builtins.bool:
        return type(other) is type(self) and other.dtype == self.dtype  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((Scalar, self.dtype))

    def __reduce__(self) -> tuple:
        return (Scalar, (self.dtype,))

    def __repr__(self) -> str:
        return self.dtype

    __str__ = __repr__


ScalarType = Scalar


def get_scalar_type(dtype: Any) -> Scalar:
    """The scalar type of `dtype` (Theano's ``get_scalar_type``)."""
    return Scalar(dtype)


bool = Scalar("bool")  # noqa: A001  (Theano's name)
int8, int16, int32, int64 = (Scalar(f"int{n}") for n in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (Scalar(f"uint{n}") for n in (8, 16, 32, 64))
float16, float32, float64 = (Scalar(f"float{n}") for n in (16, 32, 64))
complex64, complex128 = Scalar("complex64"), Scalar("complex128")

int_types = (int8, int16, int32, int64)
uint_types = (uint8, uint16, uint32, uint64)
float_types = (float16, float32, float64)
complex_types = (complex64, complex128)
integer_types = int_types + uint_types
discrete_types = (bool,) + integer_types
continuous_types = float_types + complex_types
all_types = discrete_types + continuous_types

_TO_FLOAT = {"bool": "float32", "int8": "float32", "int16": "float32", "int32": "float64", "int64": "float64",
             "uint8": "float32", "uint16": "float32", "uint32": "float64", "uint64": "float64"}


def upcast_out(*types: Scalar) -> tuple[Scalar]:
    """Theano's output-type rule ``upcast_out``: the upcast of the input types."""
    return (get_scalar_type(Scalar.upcast(*types)),)


def same_out(type_: Scalar) -> tuple[Scalar]:
    """Theano's output-type rule ``same_out``: the input's type."""
    return (type_,)


def upgrade_to_float(*types: Scalar) -> tuple[Scalar]:
    """Theano's ``upgrade_to_float``: integer types become float32 (8 and 16 bits, bool) or
    float64, then the upcast.

    >>> upgrade_to_float(int16), upgrade_to_float(int64, float32)
    ((float32,), (float64,))
    """
    return (get_scalar_type(upcast(*[_TO_FLOAT.get(t.dtype, t.dtype) for t in types])),)


def as_scalar(x: Any, name: str | None = None) -> Variable:
    """`x` as a rank-0 variable (Theano's ``as_scalar``); a tensor of another rank is a TypeError."""
    v = as_tensor_variable(x, name=name) if name is not None else as_tensor_variable(x)
    if v.ndim != 0:
        raise TypeError(f"as_scalar: {x!r} is not a scalar (rank {v.ndim})")
    return v


def constant(x: Any, name: str | None = None, dtype: str | None = None) -> Variable:
    """A rank-0 constant (Theano's ``theano.scalar.constant``)."""
    v = _constant(x, name=name, dtype=dtype)
    if v.ndim != 0:
        raise TypeError(f"theano.scalar.constant: {x!r} is not a scalar")
    return v


#: Theano's module path ``theano.scalar.basic`` (this module).
basic = sys.modules[__name__]
sys.modules[f"{__name__}.basic"] = basic
