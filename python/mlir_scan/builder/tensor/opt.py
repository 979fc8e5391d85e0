"""Theano's ``theano.tensor.opt``: the run-time assertion ``Assert`` / ``assert_op``.

Example::

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x = T.dscalar("x")
    >>> f = theano.function([x], T.opt.assert_op(x, T.gt(x, 0)))
    >>> float(f(2.0))
    2.0
    >>> f(-1.0)
    Traceback (most recent call last):
    ...
    AssertionError: Theano Assert failed!
"""

from __future__ import annotations

from ..ops import misc
from .basic import as_tensor_variable

__all__ = ["Assert", "assert_op", "assert_"]


class Assert(misc.Assert):
    """``Assert(msg)(x, *conds)``: `x`, once every scalar condition holds at run time (``AssertionError``)."""

    def __call__(self, x, *conds):
        return super().__call__(as_tensor_variable(x), *[as_tensor_variable(c) for c in conds])


#: Theano's ``theano.tensor.opt.assert_op``: ``assert_op(x, cond, ...)``.
assert_op = Assert()
#: Theano's other name for it (``theano.tensor.opt.assert_``).
assert_ = assert_op
