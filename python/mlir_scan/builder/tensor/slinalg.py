"""Theano's ``T.slinalg`` (``theano.tensor.slinalg``; PyTensor's ``pt.linalg``): solves, Cholesky, blocks.

``solve`` (``assume_a`` ``"gen"``, ``"sym"``, ``"pos"``, ``"lower triangular"``...),
``solve_triangular``, ``solve_lower_triangular``/``solve_upper_triangular``/``solve_symmetric``
(Theano's), ``cholesky``, ``cho_solve`` and ``block_diag``, with PyTensor's
gradients, on stacks of matrices (leading batch dimensions, as PyTensor's
``Blockwise``). Bad input gives PyTensor's result: NaN from ``solve`` of a
singular matrix, from ``solve_triangular`` with a zero on the diagonal and
from ``cholesky`` of a matrix that is not positive-definite (or
``numpy.linalg.LinAlgError`` with ``on_error="raise"``). Sizes that do not
match raise ``ValueError`` when the function runs.

Example::

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> A, b = T.dmatrix("A"), T.dvector("b")
    >>> T.slinalg.solve(A, b).eval({A: np.array([[2.0, 1.0], [1.0, 3.0]]), b: np.array([3.0, 5.0])}).round(6)
    array([0.8, 1.4])
    >>> L = T.slinalg.cholesky(A)
    >>> L.eval({A: np.array([[4.0, 2.0], [2.0, 5.0]])}).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
"""

from __future__ import annotations

import numpy as np

from ..graph import Variable
from ..ops.linalg import BlockDiagonal, Cholesky, CholeskySolve, Solve, SolveTriangular, tril, triu
from ..ops.misc import Assert
from .basic import any as any_, as_tensor_variable, invert, isnan
from .extra import diagonal, swapaxes

__all__ = ["Solve", "solve", "SolveTriangular", "solve_triangular", "solve_lower_triangular",
           "solve_upper_triangular", "solve_symmetric", "Cholesky", "cholesky", "CholeskySolve", "cho_solve",
           "BlockDiagonal", "block_diag", "tril", "triu"]


def _b_ndim(b: Variable, b_ndim: int | None) -> int:
    """PyTensor's default: `b` is a batch of matrices unless it is a vector."""
    if b_ndim is not None:
        if b_ndim not in (1, 2):
            raise ValueError(f"b_ndim must be 1 or 2, got {b_ndim!r}")
        return b_ndim
    return min(b.ndim, 2)


def solve(a, b, *, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          check_finite: bool = True, assume_a: str = "gen", transposed: bool = False,
          b_ndim: int | None = None) -> Variable:
    """`x` with ``a x = b`` (SciPy's and PyTensor's ``solve``).

    `assume_a`: ``"gen"`` (LU with partial pivoting), ``"sym"``/``"her"``
    (only the `lower` or, by default, upper triangle of `a` is read),
    ``"pos"`` (Cholesky of that triangle), ``"tridiagonal"``, ``"banded"``,
    ``"diagonal"``, ``"lower triangular"``, ``"upper triangular"``.
    `transposed` solves ``a^T x = b``. A singular `a` (or, with ``"pos"``,
    one that is not positive-definite) gives NaN, as in PyTensor.
    `overwrite_*` and `check_finite` are accepted and ignored (PyTensor's).
    """
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    kind = str(assume_a).lower()
    if kind in ("lower triangular", "upper triangular"):
        return solve_triangular(a, b, lower=kind.startswith("lower"), trans=transposed, b_ndim=b_ndim)
    nd = _b_ndim(b, b_ndim)
    if kind == "diagonal":

        d = diagonal(a, 0, a.ndim - 2, a.ndim - 1)
        if nd == 1:
            return b / d
        return b / d.dimshuffle(*range(d.ndim), "x")
    if transposed:
        a = _mT(a)
        lower = not lower
    return Solve(assume_a=kind, lower=lower, b_ndim=nd)(a, b)


def _mT(x: Variable) -> Variable:

    return swapaxes(x, x.ndim - 1, x.ndim - 2)


def solve_triangular(a, b, *, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     check_finite: bool = True, b_ndim: int | None = None) -> Variable:
    """`x` with ``a x = b`` (`trans` 1/``"T"``: ``a^T x = b``) for triangular `a` (SciPy's ``solve_triangular``).

    Only the `lower` (default: upper) triangle of `a` is read;
    `unit_diagonal` takes the diagonal as ones. A zero on the diagonal gives
    NaN (as PyTensor, LAPACK's ``trtrs``).

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> A, b = T.dmatrix("A"), T.dvector("b")
    >>> solve_triangular(A, b, lower=True).eval({A: [[2.0, 0.0], [1.0, 1.0]], b: [2.0, 3.0]}).tolist()
    [1.0, 2.0]
    """
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if trans in (0, "N", False):
        t = False
    elif trans in (1, "T", True, 2, "C"):
        t = True
    else:
        raise ValueError(f"solve_triangular: invalid trans {trans!r} (0, 1, 2, 'N', 'T' or 'C')")
    return SolveTriangular(lower=lower, trans=t, unit_diagonal=unit_diagonal, b_ndim=_b_ndim(b, b_ndim))(a, b)


def solve_lower_triangular(a, b) -> Variable:
    """Theano's ``solve_lower_triangular``: `solve_triangular` with ``lower=True``."""
    return solve_triangular(a, b, lower=True)


def solve_upper_triangular(a, b) -> Variable:
    """Theano's ``solve_upper_triangular``: `solve_triangular` with ``lower=False``."""
    return solve_triangular(a, b, lower=False)


def solve_symmetric(a, b) -> Variable:
    """Theano's ``solve_symmetric``: `solve` with ``assume_a="sym"`` (the upper triangle of `a` is read)."""
    return solve(a, b, assume_a="sym")


def cholesky(x, lower: bool = True, *, check_finite: bool = True, overwrite_a: bool = False,
             on_error: str = "nan") -> Variable:
    """The `lower` (``L L^T = x``) or upper (``U^T U = x``) Cholesky factor of (each matrix of) `x`.

    Only that triangle of `x` is read. A matrix that is not positive-definite
    gives a matrix of NaN (``on_error="nan"``, PyTensor's default) or raises
    ``numpy.linalg.LinAlgError("Matrix is not positive definite")`` when the
    function runs (``on_error="raise"``). Gradient: I. Murray's formula, as
    Theano and PyTensor.
    """
    if on_error not in ("nan", "raise"):
        raise ValueError(f"cholesky: on_error must be 'nan' or 'raise', got {on_error!r}")
    res = Cholesky(lower=lower)(as_tensor_variable(x))
    if on_error == "raise":

        ok = invert(any_(isnan(res)))
        res = Assert("Matrix is not positive definite", np.linalg.LinAlgError)(res, ok)
    return res


def cho_solve(c_and_lower, b, *, check_finite: bool = True, b_ndim: int | None = None) -> Variable:
    """`x` with ``A x = b`` from the Cholesky factor: ``c_and_lower = (c, lower)`` (SciPy's ``cho_solve``).

    ``A = c c^T`` if `lower`, else ``c^T c``; only that triangle of `c` is read.

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> C, b = T.dmatrix("C"), T.dvector("b")
    >>> cho_solve((C, True), b).eval({C: [[2.0, 0.0], [1.0, 2.0]], b: [4.0, 6.0]}).tolist()
    [0.5, 1.0]
    """
    c, lower = c_and_lower
    c, b = as_tensor_variable(c), as_tensor_variable(b)
    return CholeskySolve(lower=bool(lower), b_ndim=_b_ndim(b, b_ndim))(c, b)


def block_diag(*matrices) -> Variable:
    """The block-diagonal matrix of `matrices` (SciPy's ``block_diag``; stacks of matrices batch).

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> A, B = T.dmatrix("A"), T.dmatrix("B")
    >>> block_diag(A, B).eval({A: [[1.0]], B: [[2.0, 3.0]]}).tolist()
    [[1.0, 0.0, 0.0], [0.0, 2.0, 3.0]]
    """
    if not matrices:
        raise TypeError("block_diag: needs at least one matrix")
    mats = [as_tensor_variable(m) for m in matrices]
    if len(mats) == 1:
        return mats[0]
    return BlockDiagonal(len(mats))(*mats)
