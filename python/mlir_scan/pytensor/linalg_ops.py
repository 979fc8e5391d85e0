"""Translations of PyTensor's linear algebra (``pytensor.tensor.linalg``) and its ``Blockwise`` forms.

``MatrixInverse``, ``Solve`` (every ``assume_a``), ``SolveTriangular``,
``Cholesky``, ``CholeskySolve``, ``Det``, ``SLogDet``, ``BlockDiagonal``, ``QR``
(modes ``r``, ``economic``, ``full``: pymc-extras' Cholesky Kalman filter),
and what PyTensor's gradients and rewrites of these produce: ``LUFactor``,
``PivotToPermutations`` and ``ArgSortOp`` (of ``lu_solve``, which PyTensor's
``reuse_decomposition_multiple_solves`` rewrite puts in place of two solves
with one matrix, and ``scan_split_non_sequence_decomposition_and_solve``
inside scans), ``AllocDiag``, and ``Dot`` in a ``Blockwise`` or as
``BatchedDot`` (a batched matrix product). Each maps onto :mod:`mlir_scan.builder.ops.linalg`, whose
ops loop over batch dimensions themselves, so a ``Blockwise`` node is its
core op applied to the batched inputs.

PyTensor's results on bad input are kept: a singular ``MatrixInverse``
raises ``numpy.linalg.LinAlgError``; ``Solve``, ``SolveTriangular``,
``Cholesky`` and ``LUFactor`` give NaN; ``Det`` gives 0.

``SolveSylvester`` (the ``OpFromGraph`` of ``solve_sylvester``,
``solve_continuous_lyapunov`` and the ``bilinear`` ``solve_discrete_lyapunov``
of pymc-extras' stationary SARIMAX initialization) is translated as one
linear system in the entries of its solution, not through its inner graph's
Schur decompositions (see :func:`_solve_sylvester`).

Example::

    >>> import pytensor.tensor as pt
    >>> from pytensor.graph.fg import FunctionGraph
    >>> from mlir_scan.pytensor.translate import Translator
    >>> A, b = pt.dmatrix("A"), pt.dvector("b")
    >>> fg = FunctionGraph([A, b], [pt.linalg.solve(A, b)], clone=False)
    >>> tr = Translator(); _ = tr.inputs(fg.inputs)
    >>> tr.outputs(fg.outputs)[0].owner.op
    Solve(gen, False, 1)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant as PtConstant
from pytensor.tensor.blas import BatchedDot
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.math import Dot
from pytensor.tensor.sort import ArgSortOp

from ..builder import tensor as T
from ..builder.scan_module import map as bmap
from ..builder.ops import linalg as BL
from ..builder.ops.misc import Assert as BAssert
from .translate import Translator, Unsupported, lookup, register

try:  # PyTensor 3.x
    from pytensor.tensor.linalg.constructors import BlockDiagonal
    from pytensor.tensor.linalg.decomposition.cholesky import Cholesky
    from pytensor.tensor.linalg.decomposition.lu import LUFactor, PivotToPermutations
    from pytensor.tensor.linalg.inverse import MatrixInverse
    from pytensor.tensor.linalg.solvers.general import Solve
    from pytensor.tensor.linalg.solvers.psd import CholeskySolve
    from pytensor.tensor.linalg.solvers.triangular import SolveTriangular
    from pytensor.tensor.linalg.summary import Det, SLogDet
    from pytensor.tensor.linalg.decomposition.qr import QR
except ImportError:  # PyTensor 2.38
    from pytensor.tensor.nlinalg import Det, MatrixInverse, SLogDet
    from pytensor.tensor.slinalg import (QR, BlockDiagonal, Cholesky, CholeskySolve, LUFactor,
                                         PivotToPermutations, Solve, SolveTriangular)

try:  # PyTensor 3.x
    from pytensor.tensor.linalg.solvers.linear_control import SolveSylvester
except ImportError:  # PyTensor 2.38
    from pytensor.tensor._linalg.solve.linear_control import SolveSylvester

try:
    from pytensor.tensor.basic import AllocDiag
except ImportError:  # pragma: no cover - older PyTensor
    AllocDiag = None

__all__ = ["CORE_TRANSLATORS"]


def _cholesky(op: Any, ins: list) -> list:
    out = BL.Cholesky(lower=op.lower)(ins[0])
    if getattr(op, "on_error", "nan") == "raise":  # PyTensor 2.x's prop: the error comes from the op
        ok = T.invert(T.any(T.isnan(out)))
        out = BAssert("Matrix is not positive definite", np.linalg.LinAlgError)(out, ok)
    return [out]


def _solve_triangular(op: Any, ins: list) -> list:
    trans = getattr(op, "trans", 0)  # PyTensor 2.x's prop
    return [BL.SolveTriangular(lower=op.lower, trans=trans in (1, 2, "T", "C", True),
                               unit_diagonal=op.unit_diagonal, b_ndim=op.b_ndim)(*ins)]


def _solve(op: Any, ins: list) -> list:
    kind = getattr(op, "assume_a", "gen")
    A, b = ins
    if getattr(op, "transposed", False):  # older PyTensor
        A = T.swapaxes(A, A.ndim - 1, A.ndim - 2)
        return [BL.Solve(kind, not op.lower, op.b_ndim)(A, b)]
    return [BL.Solve(kind, op.lower, op.b_ndim)(A, b)]


def _qr(op: Any, ins: list) -> list:
    if op.pivoting or op.mode == "raw":
        raise Unsupported(op, "a QR with pivoting or mode='raw'")
    got = BL.QR(op.mode)(*ins)
    return list(got) if isinstance(got, (list, tuple)) else [got]


def _dot_core(op: Any, ins: list) -> list:
    a, b = ins
    if a.ndim >= 2 and b.ndim >= 2:
        return [BL.Matmul()(a, b)]
    raise Unsupported(op, "a Blockwise Dot of vectors")


#: PyTensor core op class -> ``(op, builder inputs) -> builder outputs``; the ops batch themselves,
#: so a ``Blockwise`` of one of these is the same translation.
CORE_TRANSLATORS: dict[type, Callable[[Any, list], list]] = {
    MatrixInverse: lambda op, ins: [BL.MatrixInverse()(*ins)],
    Solve: _solve,
    SolveTriangular: _solve_triangular,
    Cholesky: _cholesky,
    CholeskySolve: lambda op, ins: [BL.CholeskySolve(lower=op.lower, b_ndim=op.b_ndim)(*ins)],
    Det: lambda op, ins: [BL.Det()(*ins)],
    SLogDet: lambda op, ins: list(BL.SLogDet()(*ins)),
    BlockDiagonal: lambda op, ins: [BL.BlockDiagonal(len(ins))(*ins)],
    LUFactor: lambda op, ins: list(BL.LUFactor()(*ins)),
    PivotToPermutations: lambda op, ins: [BL.PivotToPermutations(op.inverse)(*ins)],
    QR: _qr,
}


def _core_translator(op: Any) -> Callable[[Any, list], list] | None:
    for cls in type(op).__mro__:
        fn = CORE_TRANSLATORS.get(cls)
        if fn is not None:
            return fn
    return None


@register(*CORE_TRANSLATORS)
def _linalg(tr: Translator, node: Any, ins: list) -> list:
    return _core_translator(node.op)(node.op, ins)


@register(Blockwise)
def _blockwise(tr: Translator, node: Any, ins: list) -> list:
    """A ``Blockwise``: the batched builder op of a linear-algebra core op (or of ``Dot``);
    any other core op with a translation is mapped over the batch (:func:`_mapped_blockwise`)."""
    core = node.op.core_op
    fn = _core_translator(core)
    if fn is None and isinstance(core, Dot):
        fn = _dot_core
    if fn is None or isinstance(core, PivotToPermutations):
        return _mapped_blockwise(tr, node, ins)
    return fn(core, ins)


def _mapped_blockwise(tr: Translator, node: Any, ins: list) -> list:
    """A ``Blockwise`` of any translated core op, as a ``map`` over its (flattened, broadcast) batch.

    The core op's translation runs once, in the map's step, on core-shaped
    values; inputs that are constants without batch (``argsort``'s axis) stay
    constants, so that translations reading them statically still can.
    """
    op = node.op
    core = op.core_op
    fn = lookup(core)
    if fn is None:
        raise Unsupported(op, f"no translation for a Blockwise of {type(core).__name__}")
    bnd = op.batch_ndim(node)
    if bnd == 0:  # an unbatched Blockwise: the core op on the same inputs
        return fn(tr, core.make_node(*node.inputs), ins)
    core_inputs = []
    for inp in node.inputs:
        if isinstance(inp, PtConstant) and all(d == 1 for d in inp.type.shape[:bnd]):
            core_inputs.append(pt.constant(np.asarray(inp.data)[(0,) * bnd], dtype=inp.type.dtype))
        else:
            core_inputs.append(inp.type.clone(shape=inp.type.shape[bnd:])())
    core_node = core.make_node(*core_inputs)
    mapped = [k for k, ci in enumerate(core_inputs) if not isinstance(ci, PtConstant)]
    if not mapped:
        raise Unsupported(op, "a Blockwise of constants")
    # The broadcast batch shape (sizes are 1 or equal, as PyTensor's Blockwise requires).
    batch = []
    for d in range(bnd):
        size = None
        for k in mapped:
            s = ins[k].shape[d]
            size = s if size is None else T.maximum(size, s)
        batch.append(size)
    count = batch[0]
    for s in batch[1:]:
        count = count * s
    flat = []
    for k in mapped:
        x = ins[k]
        core_shape = [x.shape[d] for d in range(bnd, x.ndim)]
        full = T.alloc(x, *(batch + core_shape))
        flat.append(T.reshape(full, [count] + core_shape, ndim=1 + len(core_shape)))

    def step(*vals):
        values = {}
        for k, v in zip(mapped, vals):
            values[k] = v
            tr.bind(core_inputs[k], v)  # for translations that read node.inputs
        step_ins = [values[k] if k in values else tr.value(core_inputs[k]) for k in range(len(core_inputs))]
        outs = fn(tr, core_node, step_ins)
        outs = [tr.conform(o, po, core) for o, po in zip(outs, core_node.outputs)]
        return outs if len(outs) > 1 else outs[0]

    res = bmap(step, sequences=flat)
    res = res[0] if isinstance(res, tuple) else res
    res = res if isinstance(res, list) else [res]
    out = []
    for r, po in zip(res, node.outputs):
        core_shape = [r.shape[d] for d in range(1, r.ndim)]
        out.append(T.reshape(r, batch + core_shape, ndim=bnd + len(core_shape)))
    return out


@register(BatchedDot)
def _batched_dot(tr: Translator, node: Any, ins: list) -> list:
    """``BatchedDot`` (what PyTensor's rewrites make of a ``Blockwise`` of ``Dot``: batched gradients'
    matrix products): stacks of matrix products, :class:`~mlir_scan.builder.ops.linalg.Matmul`."""
    a, b = ins
    if a.ndim != 3 or b.ndim != 3:
        raise Unsupported(node.op, "BatchedDot of other than two stacks of matrices")
    return [BL.Matmul()(a, b)]


@register(ArgSortOp)
def _argsort(tr: Translator, node: Any, ins: list) -> list:
    """``argsort`` of a vector (what ``lu_solve`` applies to a permutation): a stable O(n^2) rank count.

    NumPy's default quicksort orders equal elements arbitrarily; the stable
    order is one of its answers (and the only one for a permutation).
    """
    x = ins[0]
    if x.ndim != 1:
        raise Unsupported(node.op, "argsort of more than a vector")
    axis = tr.static_int(node.inputs[1])
    if axis not in (0, -1):
        raise Unsupported(node.op, "argsort along a symbolic axis")
    return [BL.ArgSort()(x)]


if AllocDiag is not None:
    @register(AllocDiag)
    def _alloc_diag(tr: Translator, node: Any, ins: list) -> list:
        """``AllocDiag`` (``pt.diag`` of a vector; the Cholesky gradient's): a matrix with the vector on a diagonal."""
        op = node.op
        x = ins[0]
        if x.ndim != 1 or (op.axis1, op.axis2) not in ((0, 1), (-2, -1)):
            raise Unsupported(op, "AllocDiag of more than a vector")
        k = int(op.offset)
        n = x.shape[0]
        size = n + abs(k)
        r = T.arange(size).dimshuffle(0, "x")
        c = T.arange(size).dimshuffle("x", 0)
        on = T.eq(c - r, k)
        # x[min(r, c)] on the diagonal (r for k >= 0, c for k < 0), 0 elsewhere
        idx = T.clip(r if k >= 0 else c, 0, T.maximum(n - 1, 0))
        vals = x[idx.flatten()].reshape((size, 1)) if k >= 0 else x[idx.flatten()].reshape((1, size))
        return [T.switch(on, vals, T.zeros((size, size), dtype=x.dtype))]


@register(SolveSylvester)
def _solve_sylvester(tr: Translator, node: Any, ins: list) -> list:
    """``SolveSylvester`` (``A X + X B = C``; ``solve_continuous_lyapunov``, the ``bilinear``
    ``solve_discrete_lyapunov`` of pymc-extras' stationary SARIMAX initialization and their gradients)
    as one linear system in the ``m n`` entries of ``X``, ``(A (x) I_n + I_m (x) B^T) vec(X) = vec(C)``
    (row-major ``vec``), solved by LU with partial pivoting.

    PyTensor's inner graph (a real Schur decomposition of ``A`` and ``B``, then LAPACK's ``trsyl``) and
    this give the same ``X``, the equation's unique solution, up to rounding; the Schur factors themselves
    are not unique, so ``Schur`` is not translated on its own. The cost is ``O((m n)^3)`` against the Schur
    route's ``O(m^3 + n^3)``: nothing for the state sizes of these models (a discrete Lyapunov
    equation: 0.9 ms at 14 states), slower than PyTensor past ~20 (61 ms against 6 ms at 25 states,
    1.2 s against 67 ms at 40). When ``A`` and ``-B`` share an eigenvalue (no unique
    solution) the result is NaN (an exactly zero pivot) or very large, where ``trsyl`` returns a
    perturbed solution.
    """
    A, B, C = ins
    if A.ndim != 2 or B.ndim != 2 or C.ndim != 2:
        raise Unsupported(node.op, "SolveSylvester of other than matrices")
    dtype = node.outputs[0].type.dtype
    A, B, C = (T.cast(v, dtype) if v.dtype != dtype else v for v in (A, B, C))
    m, n = C.shape[0], C.shape[1]
    eye_m, eye_n = T.eye(m, dtype=dtype), T.eye(n, dtype=dtype)
    # K[(i, k), (j, l)] = A[i, j] [k == l] + [i == j] B[l, k]
    K = (A.dimshuffle(0, "x", 1, "x") * eye_n.dimshuffle("x", 0, "x", 1)
         + eye_m.dimshuffle(0, "x", 1, "x") * B.dimshuffle("x", 1, "x", 0))
    mn = m * n
    x = BL.Solve("gen", False, 1)(T.reshape(K, [mn, mn], ndim=2), T.reshape(C, [mn], ndim=1))
    return [T.reshape(x, [m, n], ndim=2)]
