"""Theano's ``theano.ifelse``: ``ifelse(condition, then_branch, else_branch)``, lazy.

Only the branch that the condition selects is computed (``scf.if``): the
other one's nodes, its run-time checks and its random draws do not run. Also
importable as ``mlir_scan.ifelse`` (``from theano.ifelse import ifelse``).
``T.switch`` is the element-wise, eager counterpart.

Example::

    >>> import numpy as np
    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> from mlir_scan.ifelse import ifelse
    >>> a, b = T.dscalar("a"), T.dscalar("b")
    >>> x, y = T.dmatrix("x"), T.dmatrix("y")
    >>> z_lazy = ifelse(T.lt(a, b), T.mean(x), T.mean(y))
    >>> f = theano.function([a, b, x, y], z_lazy)
    >>> float(f(1, 2, np.ones((2, 2)), np.zeros((2, 2))))
    1.0
    >>> theano.function([a], T.grad(ifelse(T.gt(a, 0), a ** 2, -a), a))(3.0)
    array(6.)
"""

from __future__ import annotations

from typing import Any

from .graph import Variable
from .ops.ifelse import IfElse
from .tensor.basic import as_tensor_variable

__all__ = ["ifelse", "IfElse"]


def ifelse(condition: Any, then_branch: Any, else_branch: Any, name: str | None = None) -> Any:
    """`then_branch` if the scalar `condition` is non-zero, else `else_branch`, computing only that one.

    The branches are variables (or values) or lists/tuples of them, of equal
    length and pairwise of one dtype and rank (a Python number takes the
    dtype of the variable it is paired with); the result is a variable, or a
    list/tuple like the branches.
    """
    kind = type(then_branch) if isinstance(then_branch, (list, tuple)) else None
    thens = list(then_branch) if isinstance(then_branch, (list, tuple)) else [then_branch]
    elses = list(else_branch) if isinstance(else_branch, (list, tuple)) else [else_branch]
    if len(thens) != len(elses):
        raise ValueError(f"ifelse: the then branch has {len(thens)} outputs and the else branch {len(elses)}; "
                         "they must have the same number of outputs")
    if not thens:
        raise ValueError("ifelse: the branches are empty")
    cond = as_tensor_variable(condition)
    if cond.ndim != 0:
        raise TypeError(f"ifelse: the condition must be a scalar, got {cond.type}")
    new_t, new_e = [], []
    for i, (t, e) in enumerate(zip(thens, elses)):
        if not isinstance(t, Variable) and isinstance(e, Variable):
            t = as_tensor_variable(t, dtype=e.dtype)
        elif not isinstance(e, Variable) and isinstance(t, Variable):
            e = as_tensor_variable(e, dtype=t.dtype)
        else:
            t, e = as_tensor_variable(t), as_tensor_variable(e)
        new_t.append(t)
        new_e.append(e)
    outs = IfElse(len(thens), name=name).make_node(cond, *new_t, *new_e).outputs
    if kind is None:
        return outs[0]
    return kind(outs)
