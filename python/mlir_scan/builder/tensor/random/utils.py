"""PyTensor's ``RandomStream``: the draws of ``RandomStreams`` with PyTensor's argument order.

PyTensor puts the distribution's parameters first and ``size`` last
(``srng.normal(loc, scale, size=...)``), where Theano's ``RandomStreams``
puts ``size`` first (``srng.normal(size, avg, std)``). The generator and
its shared states are those of
:class:`~mlir_scan.builder.tensor.shared_randomstreams.RandomStreams`.

Example::

    >>> import mlir_scan as ms
    >>> from mlir_scan.tensor.random.utils import RandomStream
    >>> srng = RandomStream(seed=42)
    >>> x = srng.normal(10.0, 0.0, size=(3,))
    >>> ms.function([], x)().tolist()
    [10.0, 10.0, 10.0]
"""

from __future__ import annotations

from ...ops.shape import symbolic_shape
from ..basic import as_tensor_variable
from ..shared_randomstreams import RandomStreams

__all__ = ["RandomStream"]


class RandomStream:
    """``RandomStream(seed)``: random draws with PyTensor's signatures."""

    def __init__(self, seed: int | None = None, namespace=None, rng_ctor=None):
        self._streams = RandomStreams(12345 if seed is None else int(seed))

    @property
    def state_updates(self):
        return self._streams.state_updates

    def seed(self, seed: int) -> None:
        """Resets every state as if the stream had just been created with `seed`."""
        self._streams.seed(seed)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=None, **kwargs):
        """Uniform samples in [low, high)."""
        return self._streams.uniform(size, low, high, dtype=dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=None, **kwargs):
        """Normal samples with mean `loc` and standard deviation `scale`."""
        return self._streams.normal(size, loc, scale, dtype=dtype)

    def binomial(self, n, p, size=None, dtype="int64", **kwargs):
        """Binomial samples: successes in `n` (a Python int) trials of probability `p`."""
        return self._streams.binomial(size, n, p, dtype=dtype)

    def bernoulli(self, p, size=None, dtype="int64", **kwargs):
        """Bernoulli samples (1 with probability `p`)."""
        return self._streams.binomial(size, 1, p, dtype=dtype)

    def multinomial(self, n, p, size=None, dtype="int64", **kwargs):
        """Counts of `n` draws among the categories of `p` (its last dimension; `n` may be a tensor)."""
        return self._streams.multinomial(size, n, p, dtype=dtype)

    def integers(self, low, high=None, size=None, dtype="int64", **kwargs):
        """Integers uniform in [low, high) (``high=None``: [0, low))."""
        return self._streams.integers(size, low, high, dtype=dtype)

    def choice(self, a, size=None, replace=True, p=None, **kwargs):
        """Samples of `a` (an int: ``arange(a)``), uniform or with probabilities `p`, with or without
        replacement."""
        return self._streams.choice(size, a, replace, p)

    def permutation(self, x, size=None, **kwargs):
        """A random permutation of ``arange(x)`` (an int; `size`: that many, shape ``size + (x,)``),
        or of the rows of the tensor `x`."""
        x = as_tensor_variable(x)
        if x.ndim == 0:
            return self._streams.permutation(size, x)
        if size is not None:
            raise NotImplementedError("permutation: size is not supported when x is a tensor (draw one permutation)")
        return self._streams.choice(symbolic_shape(x)[:1], x, replace=False)

    def poisson(self, lam=1.0, size=None, dtype="int64", **kwargs):
        """Poisson samples of rate `lam`."""
        return self._streams.poisson(size, lam, dtype=dtype)

    def exponential(self, scale=1.0, size=None, dtype=None, **kwargs):
        """Exponential samples of mean `scale`."""
        return self._streams.exponential(size, scale, dtype=dtype)

    def gamma(self, shape, rate=None, scale=None, size=None, dtype=None, **kwargs):
        """Gamma samples (PyTensor: give `scale`, or the deprecated `rate` = 1 / scale)."""
        if rate is not None and scale is not None:
            raise ValueError("Cannot specify both rate and scale")
        if rate is None and scale is None:
            raise ValueError("Must specify scale")
        if rate is not None:
            scale = 1.0 / as_tensor_variable(rate)
        return self._streams.gamma(size, shape, scale, dtype=dtype)

    def categorical(self, p, size=None, dtype="int64", **kwargs):
        """Category indices drawn with the probabilities of the vector `p`."""
        return self._streams.categorical(size, p, dtype=dtype)
