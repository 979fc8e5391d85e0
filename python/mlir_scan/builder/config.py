"""Theano-style configuration flags (``mlir_scan.config.floatX``).

Only the flags the builder reads exist. ``floatX`` is the dtype of untyped
float placeholders (``T.vector()``, ``T.matrix()``...) and of Python float
constants; it is ``"float64"`` (set it to ``"float32"`` before building a
graph to get single precision)::

    >>> import mlir_scan
    >>> mlir_scan.config.floatX
    'float64'
"""

from __future__ import annotations

__all__ = ["floatX"]

#: The default float dtype (Theano's ``config.floatX``).
floatX: str = "float64"
