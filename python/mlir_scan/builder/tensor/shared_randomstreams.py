"""Theano's ``T.shared_randomstreams.RandomStreams``: random draws with shared states.

Each draw (``binomial``, ``uniform``, ``normal``, ``multinomial``) is a
:class:`~mlir_scan.builder.ops.random.RandomDraw` node reading an int64 state
kept in a shared variable whose ``default_update`` is the next state, so a
function (or a scan, which threads the state through its steps) that uses the
draw advances it: repeated calls give fresh numbers, and the same seed gives
the same numbers.

Example::

    >>> import mlir_scan as ms
    >>> from mlir_scan import tensor as T
    >>> srng = T.shared_randomstreams.RandomStreams(seed=1234)
    >>> u = srng.uniform((3,))
    >>> f = ms.function([], u)
    >>> a, b = f(), f()
    >>> bool((a != b).all()) and bool(((0 <= a) & (a < 1)).all())
    True
"""

from __future__ import annotations

import numpy as np

from .. import config
from ..graph import TensorType, Variable, check_dtype, is_float, is_int
from ..ops.elemwise import broadcast_shapes
from ..ops.random import RandomDraw, initial_state, mix64  # noqa: F401  (mix64: kept at its old path, mlir_scan.random.mix64)
from ..ops.shape import dims_from_shape_arg, symbolic_shape
from ..sharedvar import SharedVariable
from .basic import arange, as_tensor_variable, cast, concatenate, constant, dot, le, switch, zeros

__all__ = ["RandomStreams"]


class RandomStreams:
    """Theano's ``RandomStreams(seed)``: symbolic random draws with shared states.

    Every draw creates a shared int64 state derived from the seed and the
    draw's position; its ``default_update`` advances it, and :meth:`seed`
    resets every state.
    """

    def __init__(self, seed: int = 12345):
        self._seed = int(seed)
        self.state_updates: list[tuple[SharedVariable, Variable]] = []
        self._states: list[SharedVariable] = []

    def _initial_state(self, index: int) -> np.ndarray:
        return initial_state(self._seed, index)

    def seed(self, seed: int) -> None:
        """Resets every state as if the streams had just been created with `seed`."""
        self._seed = int(seed)
        for i, state in enumerate(self._states):
            state.set_value(self._initial_state(i))

    def _draw(self, dist: str, size, params: list[Variable], dtype: str, n: int = 1) -> Variable:
        params = [as_tensor_variable(p) for p in params]
        for p in params:
            if not (is_float(p.dtype) or is_int(p.dtype)):
                raise TypeError(f"{dist}: parameters must be numbers, got {p.dtype}")
        if size is None:
            broadcast_shapes([p.type.shape for p in params], f"{dist}: ")
            ref = max(params, key=lambda p: p.ndim)
            if ref.ndim == 0:
                dims: tuple = ()
            else:
                dims = symbolic_shape(sum(params[1:], params[0]) if len(params) > 1 else params[0])
        else:
            dims = dims_from_shape_arg(size, f"{dist}: size")
        static = tuple(d if isinstance(d, int) else None for d in dims)
        sym = [d if d.dtype == "int64" else cast(d, "int64") for d in dims if not isinstance(d, int)]
        index = len(self._states)
        state = SharedVariable(self._initial_state(index), TensorType("int64", ()), name=f"rng_state_{index}")
        self._states.append(state)
        op = RandomDraw(dist, dtype, static, n)
        nxt, sample = op(state, *sym, *params)
        state.default_update = nxt
        self.state_updates.append((state, nxt))
        return sample

    def uniform(self, size=None, low=0.0, high=1.0, ndim=None, dtype=None) -> Variable:
        """Uniform samples in [low, high)."""
        dtype = check_dtype(dtype or config.floatX, "uniform")
        if not is_float(dtype):
            raise TypeError(f"uniform: dtype must be a float type, got {dtype}")
        return self._draw("uniform", size, [low, high], dtype)

    def normal(self, size=None, avg=0.0, std=1.0, ndim=None, dtype=None) -> Variable:
        """Normal samples with mean `avg` and standard deviation `std`."""
        dtype = check_dtype(dtype or config.floatX, "normal")
        if not is_float(dtype):
            raise TypeError(f"normal: dtype must be a float type, got {dtype}")
        return self._draw("normal", size, [avg, std], dtype)

    def binomial(self, size=None, n=1, p=0.5, ndim=None, dtype="int64", prob=None) -> Variable:
        """Binomial samples: successes in `n` trials with probability `p`."""
        if prob is not None:
            p = prob
        if isinstance(n, Variable) or int(n) != n or int(n) < 0:
            raise TypeError(f"binomial: n must be a non-negative Python int, got {n!r}")
        if int(n) > 64:
            raise ValueError(f"binomial: n={n} trials are unrolled in the generated code; at most 64 are supported")
        dtype = check_dtype(dtype, "binomial")
        return self._draw("binomial", size, [p], dtype, int(n))

    def multinomial(self, size=None, n=1, pvals=None, ndim=None, dtype="int64") -> Variable:
        """Counts of `n` draws among the categories of `pvals` (its last dimension).

        `pvals` is a vector or a matrix of rows of probabilities (default
        ``[0.5, 0.5]``); the result has the shape of `pvals`, or `size` plus
        the number of categories. Each row of the result sums to `n`.
        """
        if pvals is None:
            pvals = [0.5, 0.5]
        p = as_tensor_variable(pvals)
        if p.ndim == 0:
            raise ValueError("multinomial: pvals must have at least one dimension (the categories)")
        if not is_float(p.dtype):
            p = cast(p, config.floatX)
        if isinstance(n, Variable) or int(n) != n or int(n) < 0:
            raise TypeError(f"multinomial: n must be a non-negative Python int, got {n!r}")
        if int(n) > 64:
            raise ValueError(f"multinomial: n={n} draws are unrolled in the generated code; at most 64 are supported")
        dtype = check_dtype(dtype, "multinomial")
        # Category j of a row takes the uniforms in [hi[j-1], hi[j]), with
        # hi the running sum of the row (the last one open-ended): the
        # intervals share their bounds exactly, so each draw counts once.
        k = symbolic_shape(p)[-1]
        idx = arange(k)
        upper = cast(le(idx.dimshuffle(0, "x"), idx.dimshuffle("x", 0)), p.dtype)
        hi = dot(p, upper)
        last = idx.dimshuffle(*(["x"] * (p.ndim - 1)), 0) >= (k - 1)
        hi = switch(last, constant(np.inf, dtype=p.dtype), hi)
        first = zeros([symbolic_shape(p)[d] for d in range(p.ndim - 1)] + [1], dtype=p.dtype)
        lo = concatenate([first, hi[(slice(None),) * (p.ndim - 1) + (slice(None, -1),)]], axis=p.ndim - 1)
        if size is not None:
            size = list(dims_from_shape_arg(size, "multinomial: size")) + [k]
        return self._draw("multinomial", size, [lo, hi], dtype, int(n))
