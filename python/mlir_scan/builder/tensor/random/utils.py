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
        """Counts of `n` draws among the categories of `p` (its last dimension)."""
        return self._streams.multinomial(size, n, p, dtype=dtype)
