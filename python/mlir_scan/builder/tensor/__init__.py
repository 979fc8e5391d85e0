"""``mlir_scan.tensor``: Theano's ``theano.tensor`` namespace (``from mlir_scan import tensor as T``).

The DSL itself is :mod:`~mlir_scan.builder.tensor.basic` (placeholders,
constants, math, structure, indexing; every name of its ``__all__`` is here),
with Theano's two sub-namespaces as modules of their own:
``T.nnet`` (:mod:`~mlir_scan.builder.tensor.nnet`) and
``T.shared_randomstreams`` (:mod:`~mlir_scan.builder.tensor.shared_randomstreams`).

Example::

    >>> from mlir_scan import tensor as T
    >>> T.vector is T.basic.vector, T.nnet.sigmoid is T.sigmoid
    (True, True)
    >>> T.shared_randomstreams.RandomStreams(seed=3).normal((2,)).type
    TensorType(float64, (2,))
"""

from __future__ import annotations

from . import basic, nnet, shared_randomstreams
from .basic import *  # noqa: F401,F403
from .basic import (  # noqa: F401  (rank-4 placeholders, not in basic.__all__)
    btensor4, dtensor4, ftensor4, itensor4, ltensor4, wtensor4,
)
from .nnet import relu, softmax  # noqa: F401

__all__ = list(basic.__all__) + ["nnet", "shared_randomstreams"]
