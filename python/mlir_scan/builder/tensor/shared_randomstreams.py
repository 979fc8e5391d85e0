"""Theano's ``T.shared_randomstreams.RandomStreams``: random draws with shared states.

Each draw (``binomial``, ``uniform``, ``normal``, ``multinomial``, ``random_integers``,
``choice``, ``poisson``, ``permutation``, and PyTensor's ``integers``,
``exponential``, ``gamma``, ``categorical``) is a
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
from ..graph import Constant, TensorType, Variable, check_dtype, is_float, is_int
from ..ops.elemwise import broadcast_shapes
from ..ops.misc import Assert
from ..ops.random import RandomDraw, Take, initial_state, mix64  # noqa: F401  (mix64: kept at its old path, mlir_scan.random.mix64)
from ..ops.shape import dims_from_shape_arg, symbolic_shape
from ..sharedvar import SharedVariable
from .basic import all as t_all
from .basic import (
    abs_, and_, arange, as_tensor_variable, cast, concatenate, constant, dot, ge, invert, le, lt, reshape, sub, switch,
    zeros,
)
from .basic import any as t_any
from .basic import sum as t_sum

__all__ = ["RandomStreams"]

#: Unrolled trials up to this many (the numbers of small draws are those of
#: earlier versions); more, or a symbolic count, loop over the trials.
_UNROLL = 64
#: The most trials a multinomial row may have (the counters of one element).
_MULTINOMIAL_MAX_TRIALS = (1 << 32) - 1
#: NumPy's largest Poisson rate (samples must fit in int64).
_POISSON_LAM_MAX = float(np.iinfo(np.int64).max - np.sqrt(np.iinfo(np.int64).max) * 10)


def _require(x: Variable, cond: Variable, message: str) -> Variable:
    """`x`, once `cond` holds at run time (``ValueError(message)``, as NumPy's check)."""
    return Assert(message, ValueError)(x, cond)


def _trials(n, what: str):
    """(Python int, None) for a small static count, else (None, int64 variable checked >= 0)."""
    if isinstance(n, Constant) and n.ndim == 0:
        n = n.data.item()
    if not isinstance(n, Variable):
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer, float, np.floating)) or int(n) != n:
            if not isinstance(n, (list, tuple, np.ndarray)):
                raise TypeError(f"{what}: n must be an integer or an integer tensor, got {n!r}")
        elif int(n) < 0:
            raise ValueError(f"{what}: n < 0 (got {int(n)})")
        elif int(n) <= _UNROLL:
            return int(n), None
        else:
            n = int(n)
    n = as_tensor_variable(n)
    if not is_int(n.dtype):
        raise TypeError(f"{what}: n must be an integer or an integer tensor, got dtype {n.dtype}")
    n = cast(n, "int64")
    return None, _require(n, t_all(ge(n, 0)), f"{what}: n < 0")


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

    def _draw(self, dist: str, size, params: list[Variable], dtype: str, n: int | None = 1) -> Variable:
        params = [as_tensor_variable(p) for p in params]
        for p in params:
            if not (is_float(p.dtype) or is_int(p.dtype)):
                raise TypeError(f"{dist}: parameters must be numbers, got {p.dtype}")
        if dist == "categorical" and size is None:
            size = ()
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
        # Theano's attributes of a draw: its shared state and that state's update.
        sample.rng, sample.update = state, (state, nxt)
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
        # NumPy's check: a negative std fails the call (a NaN one gives NaNs).
        std = as_tensor_variable(std)
        std = _require(std, invert(t_any(lt(std, 0))), "normal: std < 0")
        return self._draw("normal", size, [avg, std], dtype)

    def binomial(self, size=None, n=1, p=0.5, ndim=None, dtype="int64", prob=None) -> Variable:
        """Binomial samples: successes in `n` trials with probability `p` (p outside [0, 1]
        or NaN fails the call: ``ValueError``).

        Up to 64 trials are counted (one uniform each); more are sampled, by
        inversion where ``n min(p, 1 - p) < 10`` and by Hormann's BTRS above: a
        bounded cost whatever `n`.
        """
        if prob is not None:
            p = prob
        dtype = check_dtype(dtype, "binomial")
        small, n_var = _trials(n, "binomial")
        p = as_tensor_variable(p)
        if is_float(p.dtype) or is_int(p.dtype):  # (other dtypes: _draw's TypeError)
            p = _require(p, t_all(and_(ge(p, 0), le(p, 1))), "binomial: p < 0, p > 1 or p is NaN")
        if n_var is None:
            return self._draw("binomial", size, [p], dtype, small)
        return self._draw("binomial", size, [n_var, p], dtype, None)

    def multinomial(self, size=None, n=1, pvals=None, ndim=None, dtype="int64") -> Variable:
        """Counts of `n` draws among the categories of `pvals` (its last dimension).

        `pvals` is a vector or a matrix of rows of probabilities (default
        ``[0.5, 0.5]``); the result has the shape of `pvals`, or `size` plus
        the number of categories. Each row of the result sums to `n`; its trials
        are counted one by one (``O(n)``, at most 2**32 - 1 of them: more fail the
        call with ``ValueError``).
        """
        if pvals is None:
            pvals = [0.5, 0.5]
        p = as_tensor_variable(pvals)
        if p.ndim == 0:
            raise ValueError("multinomial: pvals must have at least one dimension (the categories)")
        if not is_float(p.dtype):
            p = cast(p, config.floatX)
        small, n_var = _trials(n, "multinomial")
        dtype = check_dtype(dtype, "multinomial")
        p = _checked_pvals(p, "multinomial")
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
        if n_var is None:
            return self._draw("multinomial", size, [lo, hi], dtype, small)
        # A row's trials take the counters of its element (2**32 of them): more trials would
        # reuse the next row's, and would take hours (a multinomial counts its trials).
        n_var = _require(n_var, t_all(le(n_var, _MULTINOMIAL_MAX_TRIALS)),
                         f"multinomial: n > {_MULTINOMIAL_MAX_TRIALS} (the trials of a row are counted one by one)")
        # n: one count per row (broadcast against the rows of pvals, or size).
        return self._draw("multinomial", size, [n_var.dimshuffle(*range(n_var.ndim), "x"), lo, hi], dtype, None)

    # -- more of Theano's draws (``random_integers``, ``choice``, ``poisson``, ``permutation``)
    # and PyTensor's (``integers``, ``exponential``, ``gamma``, ``categorical``) ---------------

    def integers(self, size=None, low=0, high=None, dtype="int64") -> Variable:
        """Integers uniform in [low, high) (PyTensor's ``integers``; ``high=None``: [0, low)).

        ``high <= low`` fails the call with ``ValueError`` (NumPy's ``low >= high``).
        """
        if high is None:
            low, high = 0, low
        dtype = check_dtype(dtype, "integers")
        low, high = as_tensor_variable(low), as_tensor_variable(high)
        for name, v in (("low", low), ("high", high)):
            if not is_int(v.dtype):
                raise TypeError(f"integers: {name} must be an integer, got dtype {v.dtype}")
        low, high = cast(low, "int64"), cast(high, "int64")
        high = _require(high, t_all(lt(low, high)), "integers: low >= high")
        return self._draw("integers", size, [low, high], dtype)

    def random_integers(self, size=None, low=0, high=1, ndim=None, dtype="int64") -> Variable:
        """Theano's ``random_integers``: integers uniform in [low, high], both included."""
        high = as_tensor_variable(high)
        if not is_int(high.dtype):
            raise TypeError(f"random_integers: high must be an integer, got dtype {high.dtype}")
        return self.integers(size, low, cast(high, "int64") + 1, dtype=dtype)

    def poisson(self, size=None, lam=1.0, ndim=None, dtype="int64") -> Variable:
        """Poisson samples of rate `lam` (``lam < 0``, NaN or above NumPy's largest rate,
        about 9.2e18, fail the call: ``ValueError``).

        Knuth's method below a rate of 10, Hormann's transformed rejection (PTRS)
        above: a bounded expected cost (about 2.2 uniforms) whatever the rate.
        """
        if lam is None:
            lam = 1.0
        dtype = check_dtype(dtype, "poisson")
        lam = as_tensor_variable(lam)
        lam = cast(lam, "float64") if not is_float(lam.dtype) else lam
        lam = _require(lam, t_all(ge(lam, 0)), "poisson: lam < 0 or lam is NaN")
        lam = _require(lam, t_all(le(lam, _POISSON_LAM_MAX)), "poisson: lam value too large")
        return self._draw("poisson", size, [lam], dtype)

    def exponential(self, size=None, scale=1.0, dtype=None) -> Variable:
        """Exponential samples of mean `scale`."""
        dtype = check_dtype(dtype or config.floatX, "exponential")
        if not is_float(dtype):
            raise TypeError(f"exponential: dtype must be a float type, got {dtype}")
        scale = as_tensor_variable(scale)
        scale = _require(scale, t_all(ge(scale, 0)), "exponential: scale < 0")
        return self._draw("exponential", size, [scale], dtype)

    def gamma(self, size=None, shape=1.0, scale=1.0, dtype=None) -> Variable:
        """Gamma samples of `shape` and `scale` (mean ``shape * scale``)."""
        dtype = check_dtype(dtype or config.floatX, "gamma")
        if not is_float(dtype):
            raise TypeError(f"gamma: dtype must be a float type, got {dtype}")
        shape, scale = as_tensor_variable(shape), as_tensor_variable(scale)
        shape = _require(shape, t_all(ge(shape, 0)), "gamma: shape < 0")
        scale = _require(scale, t_all(ge(scale, 0)), "gamma: scale < 0")
        return self._draw("gamma", size, [shape, scale], dtype)

    def categorical(self, size=None, p=None, dtype="int64") -> Variable:
        """Category indices drawn with the probabilities of the vector `p`."""
        p = as_tensor_variable(p)
        if p.ndim != 1:
            raise ValueError(f"categorical: p must be a vector of probabilities, got rank {p.ndim}")
        if not is_float(p.dtype):
            p = cast(p, config.floatX)
        p = _checked_pvals(p, "categorical")
        k = symbolic_shape(p)[0]
        idx = arange(k)
        upper = cast(le(idx.dimshuffle(0, "x"), idx.dimshuffle("x", 0)), p.dtype)
        hi = switch(idx >= (k - 1), constant(np.inf, dtype=p.dtype), dot(p, upper))
        return self._draw("categorical", size, [hi], check_dtype(dtype, "categorical"))

    def _permutations(self, size, n) -> Variable:
        """``size + (n,)`` int64: each row a random permutation of ``arange(n)``."""
        dims = list(dims_from_shape_arg(size, "permutation: size")) if size is not None else []
        n = dims_from_shape_arg([n], "permutation: n")[0]
        rows: object = 1
        for d in dims:
            rows = rows * d if isinstance(rows, int) and isinstance(d, int) else (
                cast(as_tensor_variable(rows), "int64") * cast(as_tensor_variable(d), "int64"))
        flat = self._draw("permutation", [rows, n], [], "int64")
        return reshape(flat, dims + [n])

    def permutation(self, size=None, n=1, ndim=None, dtype="int64") -> Variable:
        """Theano's ``permutation``: random permutations of ``arange(n)``, shape ``size + (n,)``."""
        out = self._permutations(size, n)
        return out if check_dtype(dtype, "permutation") == "int64" else cast(out, dtype)

    def choice(self, size=None, a=2, replace=True, p=None, ndim=None, dtype=None) -> Variable:
        """Samples of `a` (an int: ``arange(a)``; a tensor: its rows), uniform or with probabilities `p`.

        Without replacement (``replace=False``) the samples are distinct:
        the first ones of a random permutation (asking for more than the
        population fails the call: ``ValueError``); ``p`` then is not supported.
        """
        a = as_tensor_variable(a)
        if a.ndim == 0:
            if not is_int(a.dtype):
                raise TypeError(f"choice: an integer population size or a tensor is needed, got {a.type}")
            population, elements = cast(a, "int64"), None
        else:
            population, elements = symbolic_shape(a)[0], a
            population = population if isinstance(population, Variable) else constant(population, dtype="int64")
        if p is not None:
            p = as_tensor_variable(p)
            if p.ndim != 1:
                raise ValueError(f"choice: p must be a vector, got rank {p.ndim}")
            if not replace:
                raise NotImplementedError("choice: replace=False with probabilities p is not supported")
            p = _require(p, lt(abs_(sub(symbolic_shape(p)[0], population)), 1), "choice: a and p must have the "
                         "same size")
            idx = self.categorical(size, p)
        elif replace:
            idx = self.integers(size, 0, population)
        else:
            dims = list(dims_from_shape_arg(size, "choice: size")) if size is not None else []
            count: object = 1
            for d in dims:
                count = count * d if isinstance(count, int) and isinstance(d, int) else (
                    cast(as_tensor_variable(count), "int64") * cast(as_tensor_variable(d), "int64"))
            count_v = cast(as_tensor_variable(count), "int64")
            population = _require(population, le(count_v, population),
                                  "choice: cannot take a larger sample than population when replace=False")
            perm = self._permutations(None, population)
            idx = reshape(perm[:count_v], dims) if dims else perm[0]
        out = idx if elements is None else Take()(elements, idx)
        return out if dtype is None else cast(out, dtype)


def _checked_pvals(p: Variable, what: str) -> Variable:
    """`p` (rows of probabilities along its last dimension), checked at run time (``ValueError``).

    NumPy's checks: every probability in [0, 1] (no NaN), and each row
    summing to 1 (within 1e-8, float32 rows 1e-4); NumPy itself only
    rejects rows whose categories but the last sum to more than 1.
    """
    in_range = and_(t_all(ge(p, 0)), t_all(le(p, 1)))
    p = _require(p, in_range, f"{what}: pvals < 0, pvals > 1 or pvals contains NaNs")
    tol = 1e-4 if p.dtype == "float32" else 1e-8
    rows = t_sum(p, axis=p.ndim - 1)
    return _require(p, t_all(le(abs_(sub(rows, 1.0)), tol)), f"{what}: sum(pvals) != 1 (each row of pvals must sum "
                    f"to 1, within {tol})")
