"""Theano's ``theano.sandbox.rng_mrg.MRG_RandomStreams``.

The streams API of
:class:`~mlir_scan.builder.tensor.shared_randomstreams.RandomStreams`
(``uniform``, ``normal``, ``binomial``, ``multinomial``, shared states
with default updates, ``seed``) with ``MRG_RandomStreams``' signatures:
``binomial(size, p)`` draws Bernoulli samples and ``nstreams`` is accepted
and ignored. The generator is the same counter-based one (not the MRG31k3p
of Theano: the numbers differ from Theano's, their distribution does not).

Example::

    >>> import mlir_scan as theano
    >>> from mlir_scan.sandbox.rng_mrg import MRG_RandomStreams
    >>> srng = MRG_RandomStreams(seed=234)
    >>> u = srng.uniform((2, 2))
    >>> v = theano.function([], u)()
    >>> v.shape, bool(((0 <= v) & (v < 1)).all())
    ((2, 2), True)
"""

from __future__ import annotations

from ..tensor.shared_randomstreams import RandomStreams

__all__ = ["MRG_RandomStreams"]


class MRG_RandomStreams(RandomStreams):  # noqa: N801 - Theano's name
    """``MRG_RandomStreams(seed=12345)``: Theano's GPU-friendly streams, same API as ``RandomStreams``."""

    def uniform(self, size=None, low=0.0, high=1.0, ndim=None, dtype=None, nstreams=None, **kwargs):
        """Uniform samples in [low, high)."""
        return super().uniform(size, low, high, ndim=ndim, dtype=dtype)

    def normal(self, size=None, avg=0.0, std=1.0, ndim=None, dtype=None, nstreams=None, truncate=False, **kwargs):
        """Normal samples with mean `avg` and standard deviation `std`."""
        if truncate:
            raise NotImplementedError("MRG_RandomStreams.normal: truncate=True is not supported")
        return super().normal(size, avg, std, ndim=ndim, dtype=dtype)

    def binomial(self, size=None, p=1, ndim=None, dtype="int64", nstreams=None, n=1, **kwargs):
        """Samples that are 1 with probability `p` (MRG's ``binomial`` draws one trial)."""
        return super().binomial(size, n, p, ndim=ndim, dtype=dtype)

    def multinomial(self, size=None, n=1, pvals=None, ndim=None, dtype="int64", nstreams=None, **kwargs):
        """Counts of `n` draws among the categories of each row of `pvals`."""
        return super().multinomial(size, n, pvals, ndim=ndim, dtype=dtype)
