"""Theano's ``theano.sandbox``: :mod:`.rng_mrg` (``MRG_RandomStreams``)."""

from __future__ import annotations

from . import rng_mrg

__all__ = ["rng_mrg"]
