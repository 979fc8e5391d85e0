"""``mlir_scan.tensor``: Theano's ``theano.tensor`` namespace (``from mlir_scan import tensor as T``).

The DSL itself is :mod:`~mlir_scan.builder.tensor.basic` (placeholders,
constants, math, structure, indexing; every name of its ``__all__`` is here),
more of Theano's API and PyTensor's spellings in
:mod:`~mlir_scan.builder.tensor.extra` (``argmax``, ``eye``, ``tile``,
``tensordot``...) and :mod:`~mlir_scan.builder.tensor.extra_ops` (Theano's
``T.extra_ops``: ``cumsum``, ``repeat``...), and Theano's sub-namespaces as
modules of their own: ``T.nnet`` (:mod:`~mlir_scan.builder.tensor.nnet`),
``T.shared_randomstreams``
(:mod:`~mlir_scan.builder.tensor.shared_randomstreams`), ``T.xlogx``
(:mod:`~mlir_scan.builder.tensor.xlogx`: ``xlogx``, ``xlogy0``), ``T.opt``
(:mod:`~mlir_scan.builder.tensor.opt`: ``assert_op``) and PyTensor's
``pt.random`` (:mod:`~mlir_scan.builder.tensor.random`: ``RandomStream``).

Example::

    >>> from mlir_scan import tensor as T
    >>> T.vector is T.basic.vector, T.nnet.sigmoid is T.sigmoid
    (True, True)
    >>> T.shared_randomstreams.RandomStreams(seed=3).normal((2,)).type
    TensorType(float64, (2,))
"""

from __future__ import annotations

from . import basic, extra, extra_ops, nnet, opt, random, shared_randomstreams, xlogx
from . import nlinalg, slinalg  # T.nlinalg, T.slinalg: linear algebra
from .basic import *  # noqa: F401,F403
from .extra import *  # noqa: F401,F403
from .extra_ops import *  # noqa: F401,F403
from .basic import (  # noqa: F401  (rank-4 placeholders, not in basic.__all__)
    btensor4, dtensor4, ftensor4, itensor4, ltensor4, wtensor4,
)
from .nnet import relu, softmax  # noqa: F401

__all__ = list(basic.__all__) + list(extra.__all__) + list(extra_ops.__all__) + [
    "nnet", "opt", "random", "shared_randomstreams", "extra_ops", "xlogx", "nlinalg", "slinalg"]

