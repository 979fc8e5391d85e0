"""Theano's ``T.nlinalg`` (``theano.tensor.nlinalg``; PyTensor's ``pt.linalg``): inverse and determinants.

``matrix_inverse`` (also ``inv``), ``det``, ``slogdet``, ``matrix_dot``,
``matrix_power`` and ``trace``, with Theano's/PyTensor's gradients. Every
function takes stacks of matrices (leading batch dimensions, as PyTensor's
``Blockwise``). The algorithms are loops in the compiled function itself (LU
with partial pivoting; see :mod:`mlir_scan.builder.ops.linalg` and
``docs/linalg.md``). A singular matrix: ``matrix_inverse`` raises
``numpy.linalg.LinAlgError`` when the function runs, ``det`` gives 0 and
``slogdet`` ``(0, -inf)``, as in PyTensor.

Example::

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> A = T.dmatrix("A")
    >>> f = T.nlinalg.det(A)
    >>> float(f.eval({A: np.array([[2.0, 1.0], [1.0, 3.0]])}))
    5.0
    >>> T.nlinalg.matrix_inverse(A).eval({A: np.array([[2.0, 0.0], [0.0, 4.0]])}).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
"""

from __future__ import annotations

from ..graph import Variable
from ..ops.linalg import Det, MatrixInverse, SLogDet, matmul
from .basic import as_tensor_variable
from .extra import eye, trace

__all__ = ["MatrixInverse", "matrix_inverse", "inv", "Det", "det", "SLogDet", "slogdet", "matrix_dot",
           "matrix_power", "trace", "matmul"]


def matrix_inverse(x) -> Variable:
    """The inverse of (each matrix of) `x`.

    A singular matrix (a zero pivot of its LU factorization) raises
    ``numpy.linalg.LinAlgError("Matrix is singular to machine precision.")``
    when the function runs, as PyTensor's default mode does. Gradient:
    ``-inv(x)^T g inv(x)^T``.
    """
    return MatrixInverse()(as_tensor_variable(x))


inv = matrix_inverse


def det(x) -> Variable:
    """The determinant of (each matrix of) `x`; 0 for a singular matrix.

    Gradient (Theano's): ``g * det(x) * inv(x)^T`` (which, like PyTensor's,
    raises ``LinAlgError`` at a singular `x`).
    """
    return Det()(as_tensor_variable(x))


def slogdet(x) -> tuple[Variable, Variable]:
    """``(sign, log|det|)`` of (each matrix of) `x` (NumPy's ``slogdet``); ``(0, -inf)`` when singular.

    The gradient of ``log|det|`` is ``inv(x)^T``; the sign has none (zero).

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> A = T.dmatrix("A")
    >>> s, l = slogdet(A)
    >>> [float(v) for v in (s.eval({A: -np.eye(3)}), l.eval({A: 2 * np.eye(3)}))]
    [-1.0, 2.0794415416798357]
    """
    return tuple(SLogDet()(as_tensor_variable(x)))


def matrix_dot(*args) -> Variable:
    """The product of the matrices `args` in order (Theano's ``matrix_dot``): ``args[0] @ args[1] @ ...``."""
    if not args:
        raise TypeError("matrix_dot: needs at least one matrix")
    out = as_tensor_variable(args[0])
    for a in args[1:]:
        out = matmul(out, as_tensor_variable(a))
    return out


def matrix_power(M, n: int) -> Variable:
    """``M`` to the integer power `n` (NumPy's ``matrix_power``; a negative `n` inverts first)."""
    M = as_tensor_variable(M)
    n = int(n)
    if n < 0:
        M, n = matrix_inverse(M), -n
    if n == 0:

        size = M.shape[M.ndim - 1]
        return eye(size, dtype=M.dtype) + M * 0
    result = None
    base = M
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result
