"""Shared variables: symbolic variables with a value that persists between calls.

A :class:`SharedVariable` is an implicit input of every function that uses it
(its current value is passed to the compiled code) and can be updated by a
function's ``updates`` (the new value comes back as an extra result). Values
given to :func:`shared`, :meth:`SharedVariable.set_value` and compiled
functions are converted with Theano's rules (:func:`filter_value`).

Example::

    >>> import mlir_scan as ms
    >>> a = ms.shared(1)
    >>> a.dtype, a.get_value()
    ('int64', array(1))
    >>> a.set_value(5); a.get_value()
    array(5)
"""

from __future__ import annotations

import copy
import io
import pickle
import warnings
from typing import Any

import numpy as np

from . import config
from .graph import TensorType, Variable, check_dtype

__all__ = ["SharedVariable", "shared", "filter_value"]


def filter_value(value: Any, type_: TensorType, what: str, allow_downcast: bool | None = None) -> np.ndarray:
    """`value` as an array of `type_`, with Theano's conversion rules.

    NumPy arrays and scalars must convert safely (``np.can_cast``); Python
    numbers and lists may take any dtype that represents them exactly. A lossy
    conversion raises ``TypeError`` naming `what` unless `allow_downcast`.
    As in Theano, a Python float given for a ``config.floatX`` input is
    narrowed to floatX unless `allow_downcast` is False.

    >>> filter_value([1, 2], TensorType("float32", (None,)), "x")
    array([1., 2.], dtype=float32)
    >>> filter_value(2.5, TensorType("int32", ()), "k")
    Traceback (most recent call last):
    ...
    TypeError: k: 2.5 cannot be converted to int32 without loss (...)
    """
    dtype = np.dtype(type_.dtype)
    if isinstance(value, Variable):
        raise TypeError(f"{what}: expected a value, got the symbolic variable {value}")
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype != dtype:
            if array.dtype.kind not in "biuf":
                raise TypeError(f"{what}: cannot convert an array of dtype {array.dtype} to {dtype.name}")
            if not (allow_downcast or np.can_cast(array.dtype, dtype, casting="safe")):
                raise TypeError(
                    f"{what}: an array of dtype {array.dtype.name} cannot be converted to "
                    f"{dtype.name} without loss; cast it with .astype(np.{dtype.name}) "
                    "(or pass allow_input_downcast=True)"
                )
            array = array.astype(dtype)
    elif type(value) is float and allow_downcast is None and dtype.name == config.floatX:
        # Theano's special case: Python float literals are downcast to floatX.
        array = np.asarray(value, dtype=dtype)
    else:
        try:
            raw = np.asarray(value)
        except Exception as exc:  # pragma: no cover - NumPy raises many kinds
            raise TypeError(f"{what}: cannot convert {value!r} to an array") from exc
        if raw.dtype.kind not in "biuf":
            raise TypeError(f"{what}: cannot convert {value!r} to {dtype.name}")
        with np.errstate(all="ignore"):
            try:
                array = raw.astype(dtype)
            except (OverflowError, ValueError) as exc:  # pragma: no cover
                raise TypeError(f"{what}: {value!r} does not fit in {dtype.name}") from exc
            exact = bool(np.all((array == raw) | (np.isnan(array) & np.isnan(raw)) if raw.dtype.kind == "f" else array == raw))
        if not exact and not allow_downcast:
            shown = value if raw.size <= 6 else f"a value of dtype {raw.dtype.name}"
            raise TypeError(
                f"{what}: {shown} cannot be converted to {dtype.name} without loss "
                "(pass a NumPy array of that dtype, or allow_input_downcast=True)"
            )
    if array.ndim != type_.ndim:
        raise TypeError(f"{what}: expected rank {type_.ndim} ({type_.dtype}), got an array of shape {array.shape}")
    for d, (have, want) in enumerate(zip(array.shape, type_.shape)):
        if want is not None and have != want:
            raise ValueError(f"{what}: dimension {d} must be {want}, got shape {array.shape}")
    return array


class _Container:
    """Theano's ``Container`` of a shared variable, as read: ``storage[0]`` is its value."""

    def __init__(self, shared: "SharedVariable"):
        self._shared = shared

    @property
    def storage(self) -> list:
        return [self._shared._value]

    @property
    def value(self) -> np.ndarray:
        return self._shared._value


class SharedVariable(Variable):
    """A variable whose value lives between function calls (``theano.shared``)."""

    def __init__(self, value: np.ndarray, type_: TensorType, name: str | None = None,
                 allow_downcast: bool | None = None):
        super().__init__(type_, name=name)
        self._allow_downcast = allow_downcast
        self._value = filter_value(value, type_, f"shared variable {name or ''}".strip(), allow_downcast).copy()
        #: Expression of the value after each use (random states set it).
        self.default_update: Variable | None = None

    @property
    def container(self) -> Any:
        """Theano's ``container``: ``container.storage[0]`` is the value itself (not a copy)."""
        return _Container(self)

    def get_value(self, borrow: bool = False, return_internal_type: bool = False) -> np.ndarray:
        """The current value (a copy unless `borrow`)."""
        return self._value if borrow else self._value.copy()

    def set_value(self, value: Any, borrow: bool = False) -> None:
        """Replaces the value (converted to the variable's dtype and rank)."""
        array = filter_value(value, self.type, f"{self}.set_value", self._allow_downcast)
        self._value = array if borrow and array is value else array.copy()

    def _store(self, array: np.ndarray) -> None:
        """Stores a value computed by a compiled function (already the right type)."""
        self._value = np.asarray(array)

    def __str__(self) -> str:
        return self.name or super().__str__()

    def __deepcopy__(self, memo: dict) -> "SharedVariable":
        """A new shared variable with a copy of the value (and of the default update's graph);
        a function deep-copied with it uses the copy (see ``Function.__reduce__``)."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(Variable.__getstate__(self), memo))
        return new

    def __getstate__(self) -> dict:
        """The state pickle saves: a default update whose graph cannot be pickled
        (it holds an op that is not picklable) is left out, with a warning."""
        state = super().__getstate__()
        update = state.get("default_update")
        if update is not None:
            try:
                _GraphProbe(io.BytesIO()).dump(update)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:
                warnings.warn(f"pickling shared variable {self}: its default_update is not saved "
                              f"(its graph cannot be pickled: {exc})", stacklevel=2)
                state["default_update"] = None
        return state

    def clone(self) -> "SharedVariable":
        return SharedVariable(self._value, self.type, self.name, self._allow_downcast)


class _GraphProbe(pickle.Pickler):
    """Pickles a graph without its shared variables (they are checked when they are
    pickled themselves): whether the graph's ops can be pickled."""

    def persistent_id(self, obj: Any) -> Any:
        return id(obj) if isinstance(obj, SharedVariable) else None


def shared(value: Any, name: str | None = None, strict: bool = False, allow_downcast: bool | None = None,
           borrow: bool = False, broadcastable: tuple[bool, ...] | None = None) -> SharedVariable:
    """A shared variable holding `value` (``theano.shared``).

    Python ints become int64, Python floats ``config.floatX``; arrays keep
    their dtype. Every dimension may change with ``set_value`` except those
    marked broadcastable (static size 1).
    """
    if isinstance(value, Variable):
        raise TypeError(f"shared: expected a value, got the symbolic variable {value}")
    if isinstance(value, (bool, np.bool_)):
        array = np.asarray(value, dtype=bool)
    elif isinstance(value, int) and not isinstance(value, np.integer):
        array = np.asarray(value, dtype=np.int64)
    elif isinstance(value, float) and not isinstance(value, np.floating):
        array = np.asarray(value, dtype=config.floatX)
    else:
        array = np.asarray(value)
    if array.dtype.kind == "u":
        raise TypeError(f"shared: unsigned dtype {array.dtype} is not supported; convert to a signed type")
    dtype = check_dtype(array.dtype, "shared")
    if broadcastable is None:
        shape = (None,) * array.ndim
    else:
        if len(broadcastable) != array.ndim:
            raise ValueError(f"shared: broadcastable {broadcastable} does not match rank {array.ndim}")
        shape = tuple(1 if b else None for b in broadcastable)
    if strict:
        shape = tuple(array.shape[d] if s == 1 else s for d, s in enumerate(shape))
    return SharedVariable(array, TensorType(dtype, shape), name=name, allow_downcast=allow_downcast)
