"""PyTensor's ``IfElse`` (``pytensor.ifelse.ifelse``) as the builder's lazy ``ifelse``.

``IfElse(n_outs)`` takes the condition, then the ``n_outs`` values of the
``then`` branch, then those of the ``else`` branch. The builder's
:func:`mlir_scan.builder.ifelse.ifelse` is lazy in the same sense as
PyTensor's: what only the branch not taken needs is not computed (an
``scf.if``), so a check in that branch does not fire, as in PyTensor.
(pymc-extras' Cholesky Kalman filter chooses its update with one.)

Example::

    >>> import numpy as np, pytensor, pytensor.tensor as pt
    >>> from pytensor.ifelse import ifelse
    >>> import mlir_scan.pytensor
    >>> a, x = pt.dscalar("a"), pt.dvector("x")
    >>> f = pytensor.function([a, x], ifelse(pt.lt(a, 0), x.sum(), x.max()),
    ...                       mode=mlir_scan.pytensor.get_mode(strict=True))
    >>> float(f(-1.0, np.arange(3.0))), float(f(1.0, np.arange(3.0)))
    (3.0, 2.0)
"""

from __future__ import annotations

from typing import Any

from pytensor.ifelse import IfElse

from ..builder.ifelse import ifelse as builder_ifelse
from .translate import Translator, register

__all__: list[str] = []


@register(IfElse)
def _ifelse(tr: Translator, node: Any, ins: list) -> list:
    n = node.op.n_outs
    cond, then, other = ins[0], ins[1:1 + n], ins[1 + n:]
    got = builder_ifelse(cond, list(then), list(other))
    return list(got) if isinstance(got, (list, tuple)) else [got]
