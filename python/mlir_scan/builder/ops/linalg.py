"""Linear algebra: inverse, solves, Cholesky, determinants and block-diagonal matrices.

The ops follow PyTensor's (``pytensor.tensor.linalg``) and Theano's
(``theano.tensor.nlinalg``/``slinalg``) definitions, results and gradients:

* :class:`MatrixInverse` (``inv``): a singular matrix (a zero pivot in the
  LU factorization) raises ``numpy.linalg.LinAlgError`` when the function
  runs, as PyTensor's default mode does;
* :class:`Solve` (``assume_a`` ``"gen"``, ``"sym"``, ``"her"``, ``"pos"``,
  ``"tridiagonal"``, ``"banded"``): a singular (or, with ``"pos"``, not
  positive-definite) matrix gives NaN, as PyTensor's ``Solve`` does;
  ``"sym"``/``"pos"`` read only the triangle `lower` names;
* :class:`SolveTriangular` (`lower`, `trans`, `unit_diagonal`): a zero on the
  diagonal gives NaN (LAPACK's ``trtrs``);
* :class:`Cholesky` (`lower`): a matrix that is not positive-definite gives a
  matrix of NaN (PyTensor's default ``on_error="nan"``);
* :class:`CholeskySolve` (``cho_solve``): plain substitution, no check
  (LAPACK's ``potrs``: a zero on the diagonal gives inf/NaN);
* :class:`Det`, :class:`SLogDet`: a singular matrix gives ``0`` and
  ``(0, -inf)``;
* :class:`BlockDiagonal`: the matrices on the diagonal of a zero matrix;
* :class:`Matmul`: NumPy's ``matmul`` of stacks of matrices (the gradients use it).

Every op takes leading batch dimensions (PyTensor's ``Blockwise``): the
batch dimensions of the inputs broadcast (a dimension of static size 1
broadcasts; other sizes must agree, checked when the function runs) and the
op loops over them. Square matrices and matching sizes are checked at run
time (``ValueError``).

The algorithms are emitted as loops in the function itself (no library call
per matrix): Gaussian elimination with partial pivoting (LAPACK's ``getrf``
pivoting rule) applied to the right-hand sides as it goes, then back
substitution; Cholesky right-looking by rows; forward/back substitution. Every inner
loop runs along a row (contiguous memory) so that LLVM can vectorize it;
see ``docs/linalg.md``.

Example::

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> A, b = T.matrix("A"), T.vector("b")
    >>> x = Solve(b_ndim=1)(A, b)
    >>> x.type
    TensorType(float64, (None,))
    >>> x.eval({A: np.array([[2.0, 1.0], [1.0, 3.0]]), b: np.array([3.0, 5.0])}).round(6).tolist()
    [0.8, 1.4]
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..emitter import Block
from ..graph import Apply, Constant, Op, TensorType, Variable, is_float, upcast
from .advanced_subtensor import for_nest
from .autodiff import zeros_like
from .basic import Arange, DimShuffle, Dot
from .elemwise import broadcast_shapes, cast, elemwise
from .misc import ExtractDiag

__all__ = ["MatrixInverse", "Solve", "SolveTriangular", "Cholesky", "CholeskySolve", "Det", "SLogDet",
           "BlockDiagonal", "Matmul", "matmul", "LUFactor", "QR", "PivotToPermutations", "ArgSort", "tril", "triu",
           "diagonal",
           "LinAlgError"]

LinAlgError = np.linalg.LinAlgError


# -- helpers: types -------------------------------------------------------------------------------


def _as_var(x) -> Variable:
    return x if isinstance(x, Variable) else Constant(np.asarray(x))


def _arange(n: Variable) -> Variable:
    """``arange(n)`` as int64 (the ops build graphs from ops, not from the DSL)."""
    return Arange("int64")(Constant(np.asarray(0, "int64")), cast(_as_var(n), "int64"),
                           Constant(np.asarray(1, "int64")))


def _out_dtype(*dtypes: str) -> str:
    """PyTensor's ``linalg_output_dtype``: float32 stays float32, the rest is float64."""
    d = upcast(*dtypes)
    return d if is_float(d) else "float64"


def _to_float(x: Variable, dtype: str) -> Variable:
    return x if x.dtype == dtype else cast(x, dtype)


def _batch(inputs: Sequence[Variable], core_nd: Sequence[int], what: str) -> tuple:
    for v, k in zip(inputs, core_nd):
        if v.ndim < k:
            raise ValueError(f"{what}: input {v} has rank {v.ndim}, expected at least {k} (core rank)")
    try:
        return broadcast_shapes([v.type.shape[: v.ndim - k] for v, k in zip(inputs, core_nd)], f"{what}: batch ")
    except ValueError as exc:
        raise ValueError(str(exc)) from None


# -- helpers: emitting loops ----------------------------------------------------------------------


def _for(b: Block, lo: str, hi: str, inits: Sequence[tuple[str, str]],
         body: Callable[[Block, str, list[str]], list[str]]) -> list[str]:
    """``scf.for %i = lo to hi`` carrying `inits` ((ssa, type) pairs); `body` returns the new values."""
    iv = b.module.fresh("i")
    args = [b.module.fresh("c") for _ in inits]
    inner = b.child(inherit=True)
    new = body(inner, iv, args)
    types = ", ".join(t for _, t in inits)
    inner.stmt(f"scf.yield {', '.join(new)} : {types}")
    res = b.module.fresh("for")
    lhs = res if len(inits) == 1 else f"{res}:{len(inits)}"
    iters = ", ".join(f"{a} = {s}" for a, (s, _) in zip(args, inits))
    b.stmt(f"{lhs} = scf.for {iv} = {lo} to {hi} step {b.index(1)} iter_args({iters}) -> ({types}) {{")
    b.lines.extend(inner.lines)
    b.stmt("}")
    return [res] if len(inits) == 1 else [f"{res}#{i}" for i in range(len(inits))]


def _if(b: Block, cond: str, then_fn: Callable[[Block], list[str]], else_fn: Callable[[Block], list[str]],
        types: Sequence[str]) -> list[str]:
    """``scf.if`` yielding values of `types`."""
    tb, eb = b.child(inherit=True), b.child(inherit=True)
    tb.stmt(f"scf.yield {', '.join(then_fn(tb))} : {', '.join(types)}")
    eb.stmt(f"scf.yield {', '.join(else_fn(eb))} : {', '.join(types)}")
    res = b.module.fresh("if")
    lhs = res if len(types) == 1 else f"{res}:{len(types)}"
    b.stmt(f"{lhs} = scf.if {cond} -> ({', '.join(types)}) {{")
    b.lines.extend(tb.lines)
    b.stmt("} else {")
    b.lines.extend(eb.lines)
    b.stmt("}")
    return [res] if len(types) == 1 else [f"{res}#{i}" for i in range(len(types))]


class _M:
    """A core value (matrix or vector) being computed: its SSA name, type and sizes."""

    def __init__(self, ssa: str, t: TensorType, rows: str, cols: str | None):
        self.ssa, self.t, self.rows, self.cols = ssa, t, rows, cols

    def get(self, b: Block, i: str, j: str | None = None, ssa: str | None = None) -> str:
        idx = f"{i}, {j}" if self.t.ndim == 2 else i
        return b.op(f"tensor.extract {ssa or self.ssa}[{idx}] : {self.t.mlir}")

    def put(self, b: Block, v: str, i: str, j: str | None = None, ssa: str | None = None) -> str:
        idx = f"{i}, {j}" if self.t.ndim == 2 else i
        return b.op(f"tensor.insert {v} into {ssa or self.ssa}[{idx}] : {self.t.mlir}")


def _f(b: Block, op: str, x: str, y: str, dt: str) -> str:
    return b.op(f"arith.{op} {x}, {y} : {dt}")


def _row_update(b: Block, B: _M, acc: str, dst: str, src: str, coef: str, dt: str) -> str:
    """``B[dst, :] -= coef * B[src, :]`` on the carried tensor `acc` (a vector: one element)."""
    if B.t.ndim == 1:
        x = B.get(b, src, ssa=acc)
        y = B.get(b, dst, ssa=acc)
        return B.put(b, _f(b, "subf", y, _f(b, "mulf", coef, x, dt), dt), dst, ssa=acc)

    def body(bb: Block, j: str, c: list[str]) -> list[str]:
        x = B.get(bb, src, j, ssa=c[0])
        y = B.get(bb, dst, j, ssa=c[0])
        return [B.put(bb, _f(bb, "subf", y, _f(bb, "mulf", coef, x, dt), dt), dst, j, ssa=c[0])]

    return _for(b, b.index(0), B.cols, [(acc, B.t.mlir)], body)[0]


def _row_div(b: Block, B: _M, acc: str, row: str, d: str, dt: str) -> str:
    """``B[row, :] /= d``."""
    if B.t.ndim == 1:
        return B.put(b, _f(b, "divf", B.get(b, row, ssa=acc), d, dt), row, ssa=acc)

    def body(bb: Block, j: str, c: list[str]) -> list[str]:
        return [B.put(bb, _f(bb, "divf", B.get(bb, row, j, ssa=c[0]), d, dt), row, j, ssa=c[0])]

    return _for(b, b.index(0), B.cols, [(acc, B.t.mlir)], body)[0]


def _rev(b: Block, n: str, ii: str) -> str:
    """``n - 1 - ii``."""
    return b.iop("subi", b.iop("subi", n, b.index(1)), ii)


def _nan_if(b: Block, bad: str, M: _M, dims: Sequence[str]) -> str:
    """`M` or, when the ``i1`` `bad` holds, a tensor of NaN of its shape."""
    dt = M.t.dtype
    nan = b.const(float("nan"), dt)
    return _if(b, bad, lambda bb: [bb.filled(M.t, dims, nan)], lambda bb: [M.ssa], [M.t.mlir])[0]


# -- algorithms -----------------------------------------------------------------------------------


def _lu(b: Block, A: _M, n: str, rhs: _M | None, piv: _M | None = None) -> tuple:
    """Gaussian elimination with partial pivoting of the (writable copy of) `A`, applied to `rhs`.

    Returns (LU, reduced rhs or None, sign of the permutation, singular flag),
    and the pivots (LAPACK's ``ipiv``, 0-based: row k was swapped with row
    ``piv[k]``) as a fifth value when `piv` (an int32 vector to fill) is given.
    The pivot of column k is the first row of largest magnitude (LAPACK's
    ``idamax``); a zero pivot sets the flag and skips that column's
    elimination (LAPACK's ``getrf``: the factorization goes on).
    """
    dt, et = A.t.dtype, A.t.mlir_elem
    one_f, zero_f = b.const(1.0, dt), b.const(0.0, dt)
    inits = [(A.ssa, A.t.mlir)] + ([(rhs.ssa, rhs.t.mlir)] if rhs else []) + [(one_f, et), (b.const(False, "bool"), "i1")]
    if piv is not None:
        inits.append((piv.ssa, piv.t.mlir))

    def step(bb: Block, k: str, c: list[str]) -> list[str]:
        a = c[0]
        r = c[1] if rhs else None
        pv = c[-1] if piv is not None else None
        cc = c[:-1] if piv is not None else c
        sign, sing = cc[-2], cc[-1]
        one = bb.index(1)
        k1 = bb.iop("addi", k, one)

        def search(sb: Block, i: str, s: list[str]) -> list[str]:
            v = sb.op(f"math.absf {A.get(sb, i, k, ssa=a)} : {et}")
            better = sb.op(f"arith.cmpf ogt, {v}, {s[1]} : {et}")
            return [sb.select(better, i, s[0], "index"), sb.select(better, v, s[1], et)]

        p, _ = _for(bb, k, n, [(k, "index"), (bb.const(-1.0, dt), et)], search)
        pval = A.get(bb, p, k, ssa=a)
        zero = bb.op(f"arith.cmpf oeq, {pval}, {zero_f} : {et}")
        sing2 = bb.op(f"arith.ori {sing}, {zero} : i1")
        moved = bb.icmp("ne", p, k)
        sign2 = bb.select(moved, bb.op(f"arith.negf {sign} : {et}"), sign, et)
        # Swap rows k and p (no-op loops when p == k).
        swap_hi = bb.select(moved, n, bb.index(0), "index")

        def swap(sb: Block, j: str, s: list[str]) -> list[str]:
            x, y = A.get(sb, k, j, ssa=s[0]), A.get(sb, p, j, ssa=s[0])
            return [A.put(sb, x, p, j, ssa=A.put(sb, y, k, j, ssa=s[0]))]

        a = _for(bb, bb.index(0), swap_hi, [(a, A.t.mlir)], swap)[0]
        if rhs is not None:
            if rhs.t.ndim == 1:
                def swap_r(sb: Block) -> list[str]:
                    x, y = rhs.get(sb, k, ssa=r), rhs.get(sb, p, ssa=r)
                    return [rhs.put(sb, x, p, ssa=rhs.put(sb, y, k, ssa=r))]

                r = _if(bb, moved, swap_r, lambda sb: [r], [rhs.t.mlir])[0]
            else:
                r_hi = bb.select(moved, rhs.cols, bb.index(0), "index")

                def swap_m(sb: Block, j: str, s: list[str]) -> list[str]:
                    x, y = rhs.get(sb, k, j, ssa=s[0]), rhs.get(sb, p, j, ssa=s[0])
                    return [rhs.put(sb, x, p, j, ssa=rhs.put(sb, y, k, j, ssa=s[0]))]

                r = _for(bb, bb.index(0), r_hi, [(r, rhs.t.mlir)], swap_m)[0]
        recip = bb.op(f"arith.divf {one_f}, {pval} : {et}")
        elim_hi = bb.select(zero, k1, n, "index")

        def elim(eb: Block, i: str, s: list[str]) -> list[str]:
            aa = s[0]
            lval = _f(eb, "mulf", A.get(eb, i, k, ssa=aa), recip, et)
            aa = A.put(eb, lval, i, k, ssa=aa)
            # a[i, k+1:] -= l * a[k, k+1:], along the rows (contiguous).
            def upd(ub: Block, j: str, u: list[str]) -> list[str]:
                x = A.get(ub, k, j, ssa=u[0])
                y = A.get(ub, i, j, ssa=u[0])
                return [A.put(ub, _f(ub, "subf", y, _f(ub, "mulf", lval, x, et), et), i, j, ssa=u[0])]

            aa = _for(eb, k1, n, [(aa, A.t.mlir)], upd)[0]
            if rhs is None:
                return [aa]
            return [aa, _row_update(eb, rhs, s[1], i, k, lval, et)]

        carried = [(a, A.t.mlir)] + ([(r, rhs.t.mlir)] if rhs else [])
        out = _for(bb, k1, elim_hi, carried, elim)
        if piv is None:
            return out + [sign2, sing2]
        p32 = bb.op(f"arith.index_cast {p} : index to i32")
        return out + [sign2, sing2, piv.put(bb, p32, k, ssa=pv)]

    res = _for(b, b.index(0), n, inits, step)
    extra = (res[-1],) if piv is not None else ()
    if rhs is None:
        return (res[0], None, res[1], res[2]) + extra
    return (res[0], res[1], res[2], res[3]) + extra


def _tri(b: Block, A: _M, B: _M, n: str, lower: bool, transposed: bool, unit: bool) -> str:
    """Solves ``M X = B`` in place of (a copy of) `B`: M is `A` (``A.T`` if `transposed`),
    lower- (`lower`) or upper-triangular, with a unit diagonal if `unit`.

    `A` alone gives the row form (B[i] -= A[i, k] B[k] along row i of A);
    ``A.T`` the column form (B[i] -= A[k, i] B[k] along row k of A): both read
    A by rows and update B by rows.
    """
    et = A.t.mlir_elem
    zero = b.index(0)

    if not transposed:
        def row(rb: Block, ii: str, c: list[str]) -> list[str]:
            i = ii if lower else _rev(rb, n, ii)
            lo, hi = (zero, i) if lower else (rb.iop("addi", i, rb.index(1)), n)

            def acc(kb: Block, k: str, s: list[str]) -> list[str]:
                return [_row_update(kb, B, s[0], i, k, A.get(kb, i, k), et)]

            x = _for(rb, lo, hi, [(c[0], B.t.mlir)], acc)[0]
            if not unit:
                x = _row_div(rb, B, x, i, A.get(rb, i, i), et)
            return [x]

        return _for(b, zero, n, [(B.ssa, B.t.mlir)], row)[0]

    # M = A.T: M lower <=> the rows of A hold the columns of M.
    def col(cb: Block, kk: str, c: list[str]) -> list[str]:
        k = kk if lower else _rev(cb, n, kk)
        x = c[0]
        if not unit:
            x = _row_div(cb, B, x, k, A.get(cb, k, k), et)
        lo, hi = (cb.iop("addi", k, cb.index(1)), n) if lower else (zero, k)

        def acc(ib: Block, i: str, s: list[str]) -> list[str]:
            return [_row_update(ib, B, s[0], i, k, A.get(ib, k, i), et)]

        return [_for(cb, lo, hi, [(x, B.t.mlir)], acc)[0]]

    return _for(b, zero, n, [(B.ssa, B.t.mlir)], col)[0]


def _zero_diag(b: Block, A: _M, n: str) -> str:
    """Whether a diagonal element of `A` is zero (an ``i1``)."""
    et = A.t.mlir_elem
    zf = b.const(0.0, A.t.dtype)

    def body(bb: Block, i: str, c: list[str]) -> list[str]:
        z = bb.op(f"arith.cmpf oeq, {A.get(bb, i, i)}, {zf} : {et}")
        return [bb.op(f"arith.ori {c[0]}, {z} : i1")]

    return _for(b, b.index(0), n, [(b.const(False, "bool"), "i1")], body)[0]


def _cholesky_upper(b: Block, A: _M, n: str, read_lower: bool) -> tuple[str, str]:
    """The upper Cholesky factor U (``U^T U = A``) of the symmetric matrix whose `read_lower` (or upper)
    triangle `A` holds, and the failure flag (a pivot that is not > 0, or NaN: LAPACK's ``potrf``).

    Right-looking, by rows: ``U[k, k] = sqrt(W[k, k])``, ``U[k, k+1:] = W[k, k+1:] / U[k, k]``, then every
    later row ``i`` loses ``U[k, i] * U[k, i:]`` (a loop along the rows, contiguous). The lower factor
    is its transpose.
    """
    dt, et = A.t.dtype, A.t.mlir_elem
    wt = TensorType(dt, A.t.shape)
    zf = b.const(0.0, dt)
    # W: the upper triangle of the symmetric matrix, zeros below.
    empty = b.empty(wt, [n, n])

    def fill(gb: Block, args: list[str]) -> list[str]:
        i, j = gb.op("linalg.index 0 : index"), gb.op("linalg.index 1 : index")
        up = gb.icmp("sle", i, j)
        r, c = (j, i) if read_lower else (i, j)
        # Clamped indices: the read is in bounds below the diagonal too (its value is discarded).
        r = gb.select(up, r, gb.index(0), "index")
        c = gb.select(up, c, gb.index(0), "index")
        v = gb.op(f"tensor.extract {A.ssa}[{r}, {c}] : {A.t.mlir}")
        return [gb.select(up, v, zf, et)]

    w0 = b.generic([], [(empty, wt, "(d0, d1)")], ["parallel", "parallel"], fill)[0]
    W = _M(w0, wt, n, n)

    def step(sb: Block, k: str, c: list[str]) -> list[str]:
        w, fail = c
        d = W.get(sb, k, k, ssa=w)
        bad = sb.op(f"arith.cmpf ule, {d}, {zf} : {et}")
        r = sb.op(f"math.sqrt {d} : {et}")
        w = W.put(sb, r, k, k, ssa=w)
        k1 = sb.iop("addi", k, sb.index(1))
        w = _for(sb, k1, n, [(w, wt.mlir)], lambda jb, j, v: [
            W.put(jb, _f(jb, "divf", W.get(jb, k, j, ssa=v[0]), r, et), k, j, ssa=v[0])])[0]

        def upd(ub: Block, i: str, u: list[str]) -> list[str]:
            coef = W.get(ub, k, i, ssa=u[0])

            def inner(jb: Block, j: str, v: list[str]) -> list[str]:
                x = W.get(jb, k, j, ssa=v[0])
                y = W.get(jb, i, j, ssa=v[0])
                return [W.put(jb, _f(jb, "subf", y, _f(jb, "mulf", coef, x, et), et), i, j, ssa=v[0])]

            return _for(ub, i, n, [(u[0], wt.mlir)], inner)

        w = _for(sb, k1, n, [(w, wt.mlir)], upd)[0]
        return [w, sb.op(f"arith.ori {fail}, {bad} : i1")]

    res = _for(b, b.index(0), n, [(w0, wt.mlir), (b.const(False, "bool"), "i1")], step)
    return res[0], res[1]


def _transpose(b: Block, ssa: str, t: TensorType, dims: Sequence[str]) -> str:
    ot = TensorType(t.dtype, (t.shape[1], t.shape[0]))
    empty = b.empty(ot, [dims[1], dims[0]])
    return b.generic([(ssa, t, "(d1, d0)")], [(empty, ot, "(d0, d1)")], ["parallel", "parallel"],
                     lambda bb, args: [args[0]])[0]


def _check_square(b: Block, ssa: str, t: TensorType, what: str) -> tuple[str, str]:
    r, c = b.dim(ssa, t, t.ndim - 2), b.dim(ssa, t, t.ndim - 1)
    if not (t.shape[-1] is not None and t.shape[-2] is not None):
        b.check(b.icmp("ne", r, c), f"{what}: expected a square matrix, got {{have}} x {{need}}", r, c)
    return r, c


def _check_rows(b: Block, n: str, rhs_ssa: str, rt: TensorType, core: int, what: str) -> None:
    m = b.dim(rhs_ssa, rt, rt.ndim - core)
    b.check(b.icmp("ne", m, n), f"{what}: the right-hand side has {{have}} rows, the matrix {{need}}", m, n)


# -- batching -------------------------------------------------------------------------------------


def _core_type(t: TensorType, k: int) -> TensorType:
    return TensorType(t.dtype, t.shape[t.ndim - k:])


def _batched(b: Block, node: Apply, inputs: list[str], core_in: Sequence[int], core_out: Sequence[int],
             out_core_dims: Callable[[Block, list[list[str]]], list[list[str]]],
             core: Callable[[Block, list[tuple[str, TensorType]]], list[str]], what: str) -> list[str]:
    """Applies `core` to every matrix of the broadcast batch dimensions.

    `core(block, [(ssa, core type)])` returns the core outputs (of the core
    types of the node's outputs); `out_core_dims(block, in_core_dims)` gives
    their sizes (for allocating the batched outputs).
    """
    ins = node.inputs
    outs = node.outputs
    rank = outs[0].ndim - core_out[0]
    cin = [_core_type(v.type, k) for v, k in zip(ins, core_in)]
    core = _as_helper(node.op, cin, [_core_type(o.type, k) for o, k in zip(outs, core_out)], core)
    if rank == 0:
        return core(b, [(s, t) for s, t in zip(inputs, cin)])
    # Batch sizes (broadcast, checked).
    sizes: list[str] = []
    bshape = outs[0].type.shape[:rank]
    for d in range(rank):
        cands = []
        for s, v, k in zip(inputs, ins, core_in):
            r = v.ndim - k
            e = d - (rank - r)
            if e >= 0 and v.type.shape[e] != 1:
                cands.append((s, v, e))
        if bshape[d] is not None and bshape[d] != 1:
            ref = b.index(bshape[d])
            known = True
        elif cands:
            s0, v0, e0 = cands.pop(0)
            ref = b.dim(s0, v0.type, e0)
            known = v0.type.shape[e0] is not None
        else:
            ref = b.index(1)
            known = True
        for s, v, e in cands:
            if v.type.shape[e] is None or not known:
                have = b.dim(s, v.type, e)
                b.check(b.icmp("ne", have, ref), f"{what}: batch dimension {d}: size {{have}} != {{need}} "
                        "(only dimensions of static size 1 broadcast)", have, ref)
        sizes.append(ref)
    in_core_dims = [[b.dim(s, v.type, v.ndim - k + j) for j in range(k)] for s, v, k in zip(inputs, ins, core_in)]
    ocd = out_core_dims(b, in_core_dims)
    inits = []
    for o, k, dims in zip(outs, core_out, ocd):
        inits.append((b.empty(o.type, sizes + list(dims)), o.type.mlir))

    def lit(t_size, ssa: str) -> str:
        return str(t_size) if t_size is not None else ssa

    def body(bb: Block, ivs: list[str], carried: list[str]) -> list[str]:
        cores = []
        for s, v, k, ct, dims in zip(inputs, ins, core_in, cin, in_core_dims):
            r = v.ndim - k
            offs = []
            for e in range(r):
                d = e + rank - r
                offs.append(bb.index(0) if v.type.shape[e] == 1 and bshape[d] != 1 else ivs[d])
            if k == 0:
                cores.append((bb.op(f"tensor.extract {s}[{', '.join(offs)}] : {v.type.mlir}") if r else s, ct))
                continue
            offsets = ", ".join(offs + ["0"] * k)
            szs = ", ".join(["1"] * r + [lit(ct.shape[j], dims[j]) for j in range(k)])
            ones = ", ".join(["1"] * v.ndim)
            cores.append((bb.op(f"tensor.extract_slice {s}[{offsets}] [{szs}] [{ones}] : {v.type.mlir} to {ct.mlir}"),
                          ct))
        res = core(bb, cores)
        new = []
        for o, k, dims, r_ssa, acc in zip(outs, core_out, ocd, res, carried):
            if k == 0:
                new.append(bb.op(f"tensor.insert {r_ssa} into {acc}[{', '.join(ivs)}] : {o.type.mlir}"))
                continue
            ct = _core_type(o.type, k)
            offsets = ", ".join(list(ivs) + ["0"] * k)
            szs = ", ".join(["1"] * rank + [lit(ct.shape[j], dims[j]) for j in range(k)])
            ones = ", ".join(["1"] * o.ndim)
            new.append(bb.op(f"tensor.insert_slice {r_ssa} into {acc}[{offsets}] [{szs}] [{ones}] : "
                             f"{ct.mlir} into {o.type.mlir}"))
        return new


    return for_nest(b, sizes, inits, body)


def _as_helper(op: Op, cin: Sequence[TensorType], cout: Sequence[TensorType],
               core: Callable[[Block, list[tuple[str, TensorType]]], list[str]]) -> Callable:
    """`core` emitted once per module as a private function (one per op and core types), and called.

    A program that uses an op many times (a scan's step and its gradient:
    the forward ops, their recomputation and the gradient's own solves)
    compiles each algorithm once: the call costs nanoseconds, LLVM's time
    grows with the code. The name is a hash of the signature, so that the
    module text (the compile cache's key) does not depend on the order of
    emission.
    """
    import hashlib

    key = f"{type(op).__name__}|{op}|{[t.mlir for t in cin]}|{[t.mlir for t in cout]}"
    name = f"__mlir_scan_linalg_{type(op).__name__.lower()}_{hashlib.sha1(key.encode()).hexdigest()[:12]}"
    in_types = ", ".join(t.mlir for t in cin)
    out_types = ", ".join(t.mlir for t in cout)

    def call(b: Block, ins: list[tuple[str, TensorType]]) -> list[str]:
        module = b.module
        if name not in module._helpers:
            fb = module.function_block()
            args = [f"%arg{i}" for i in range(len(cin))]
            results = core(fb, [(a, t) for a, t in zip(args, cin)])
            fb.stmt(f"return {', '.join(results)} : {out_types}")
            decl = ", ".join(f"{a}: {t.mlir}" for a, t in zip(args, cin))
            module.helper(name, f"  func.func private @{name}({decl}) -> ({out_types}) {{\n"
                          + fb.text() + "\n  }")
        operands = ", ".join(s for s, _ in ins)
        return b.ops(f"func.call @{name}({operands}) : ({in_types}) -> ({out_types})", len(cout), "lin")

    return call


# -- gradient helpers -----------------------------------------------------------------------------


def _mT(x: Variable) -> Variable:
    order = list(range(x.ndim))
    order[-1], order[-2] = order[-2], order[-1]
    return DimShuffle(x.ndim, tuple(order))(x)


def _sum_to(g: Variable, like: Variable) -> Variable:
    """`g` summed over the batch dimensions `like` broadcasts along (a Blockwise gradient)."""
    extra = g.ndim - like.ndim
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    axes = [d for d in range(like.ndim) if like.type.shape[d] == 1 and g.type.shape[d] != 1]
    if axes:
        g = g.sum(axis=tuple(axes), keepdims=True)
    if g.dtype != like.dtype and is_float(like.dtype):
        g = cast(g, like.dtype)
    return g


def _tri_mask(x: Variable, lower: bool, k: int = 0) -> Variable:
    r = _arange(x.shape[x.ndim - 2]).dimshuffle(0, "x")
    c = _arange(x.shape[x.ndim - 1]).dimshuffle("x", 0)
    return elemwise("ge" if lower else "le", r + k, c)


def tril(x: Variable, k: int = 0) -> Variable:
    """The lower triangle of (each matrix of) `x`, zeros elsewhere (NumPy's ``tril``)."""
    return elemwise("switch", _tri_mask(x, True, k), x, zeros_like(x))


def triu(x: Variable, k: int = 0) -> Variable:
    """The upper triangle of (each matrix of) `x`, zeros elsewhere (NumPy's ``triu``)."""
    m = _tri_mask(x, True, k - 1)
    return elemwise("switch", m, zeros_like(x), x)


def _diag_of(x: Variable) -> Variable:
    """x with everything off the diagonal zeroed (batched)."""
    r = _arange(x.shape[x.ndim - 2]).dimshuffle(0, "x")
    c = _arange(x.shape[x.ndim - 1]).dimshuffle("x", 0)
    return elemwise("switch", elemwise("eq", r, c), x, zeros_like(x))


def _expand2(x: Variable) -> Variable:
    """A batch of scalars as a batch of 1x1 matrices (for broadcasting)."""
    return x.dimshuffle(*range(x.ndim), "x", "x")


# -- matmul ---------------------------------------------------------------------------------------


class Matmul(Op):
    """NumPy's ``matmul`` of stacks of matrices (both of rank >= 2, batch dimensions broadcast)."""

    def make_node(self, a, b_) -> Apply:
        a, b_ = _as_var(a), _as_var(b_)
        if a.ndim < 2 or b_.ndim < 2:
            raise ValueError(f"matmul: inputs must have rank >= 2, got {a.type} and {b_.type}")
        if a.type.shape[-1] is not None and b_.type.shape[-2] is not None and a.type.shape[-1] != b_.type.shape[-2]:
            raise ValueError(f"matmul: shapes {a.type.shape} and {b_.type.shape} do not match")
        dt = upcast(a.dtype, b_.dtype)
        batch = _batch([a, b_], [2, 2], "matmul")
        return Apply(self, [a, b_], [TensorType(dt, batch + (a.type.shape[-2], b_.type.shape[-1]))])

    def infer_shape(self, node, input_shapes):
        return None

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        a, c = node.inputs
        out = node.outputs[0].type
        dt, et = out.dtype, out.mlir_elem
        k_a, k_b = b.dim(inputs[0], a.type, a.ndim - 1), b.dim(inputs[1], c.type, c.ndim - 2)
        if a.type.shape[-1] is None or c.type.shape[-2] is None:
            b.check(b.icmp("ne", k_a, k_b), "matmul: inner sizes differ: {have} != {need}", k_a, k_b)
        rank = out.ndim
        nb = rank - 2
        # Batch sizes (broadcast, checked like elementwise ops).
        dims = []
        for d in range(nb):
            cands = [(s, v, d - (nb - (v.ndim - 2))) for s, v in zip(inputs, node.inputs)
                     if d - (nb - (v.ndim - 2)) >= 0 and v.type.shape[d - (nb - (v.ndim - 2))] != 1]
            if out.shape[d] is not None:
                ref, known = b.index(out.shape[d]), True
            elif cands:
                s0, v0, e0 = cands.pop(0)
                ref, known = b.dim(s0, v0.type, e0), False
            else:
                ref, known = b.index(1), True
            for s, v, e in cands:
                if v.type.shape[e] is None or not known:
                    have = b.dim(s, v.type, e)
                    b.check(b.icmp("ne", have, ref), f"matmul: batch dimension {d}: size {{have}} != {{need}}",
                            have, ref)
            dims.append(ref)
        dims += [b.dim(inputs[0], a.type, a.ndim - 2), b.dim(inputs[1], c.type, c.ndim - 1)]
        init = b.filled(out, dims, b.const(0.0 if is_float(dt) else 0, dt))

        def m(v: Variable, last: str) -> str:
            r = v.ndim - 2
            ex = []
            for e in range(r):
                d = e + nb - r
                ex.append("0" if v.type.shape[e] == 1 and out.shape[d] != 1 else f"d{d}")
            return "(" + ", ".join(ex + [last]) + ")"

        bat = [f"d{d}" for d in range(nb)]
        i, j, k = f"d{nb}", f"d{nb + 1}", f"d{nb + 2}"
        ins = [(inputs[0], a.type, m(a, f"{i}, {k}")), (inputs[1], c.type, m(c, f"{k}, {j}"))]
        omap = "(" + ", ".join(bat + [i, j]) + ")"

        def body(bb: Block, args: list[str]) -> list[str]:
            x, y = bb.cast(args[0], a.dtype, dt), bb.cast(args[1], c.dtype, dt)
            if is_float(dt):
                return [bb.op(f"arith.addf {args[2]}, {bb.op(f'arith.mulf {x}, {y} : {et}')} : {et}")]
            return [bb.op(f"arith.addi {args[2]}, {bb.op(f'arith.muli {x}, {y} : {et}')} : {et}")]

        # Loop order (batch, i, k, j): j innermost streams rows of b and of the result.
        return b.generic(ins, [(init, out, omap)], ["parallel"] * (nb + 2) + ["reduction"], body)

    def L_op(self, node, output_grads):
        (g,) = output_grads
        a, c = node.inputs
        if g is None:
            return [None, None]
        return [_sum_to(matmul(g, _mT(c)), a), _sum_to(matmul(_mT(a), g), c)]


def matmul(a, b_) -> Variable:
    """NumPy's ``a @ b`` for stacks of matrices; vectors are matrices of one row/column.

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> A = T.tensor3("A")
    >>> matmul(A, A).eval({A: np.ones((2, 2, 2))}).tolist()
    [[[2.0, 2.0], [2.0, 2.0]], [[2.0, 2.0], [2.0, 2.0]]]
    """
    a, b_ = _as_var(a), _as_var(b_)
    if a.ndim == 2 and b_.ndim <= 2 or a.ndim == 1 and b_.ndim <= 2:
        return Dot()(a, b_)
    squeeze_a = squeeze_b = False
    if a.ndim == 1:
        a, squeeze_a = a.dimshuffle("x", 0), True
    if b_.ndim == 1:
        b_, squeeze_b = b_.dimshuffle(0, "x"), True
    out = Matmul()(a, b_)
    if squeeze_a:
        out = out.dimshuffle(*range(out.ndim - 2), out.ndim - 1)
    if squeeze_b:
        out = out.dimshuffle(*range(out.ndim - 1))
    return out


# -- the ops ----------------------------------------------------------------------------------------


class _SquareOp(Op):
    """Ops of one (batched) square matrix."""

    what = "linalg"

    def _input(self, x) -> Variable:
        x = _as_var(x)
        if x.ndim < 2:
            raise ValueError(f"{self.what}: expected a matrix (rank >= 2), got {x.type}")
        s = x.type.shape
        if s[-1] is not None and s[-2] is not None and s[-1] != s[-2]:
            raise ValueError(f"{self.what}: expected a square matrix, got shape {s}")
        return _to_float(x, _out_dtype(x.dtype))

    @staticmethod
    def _square_type(x: Variable) -> TensorType:
        """(Each matrix of) `x` as a square of the size its shape knows."""
        n = x.type.shape[-1] if x.type.shape[-1] is not None else x.type.shape[-2]
        return TensorType(x.dtype, x.type.shape[:-2] + (n, n))


class _SquareToSquareOp(_SquareOp):
    """Ops giving (each matrix of) a square matrix the same shape."""

    def make_node(self, x) -> Apply:
        x = self._input(x)
        return Apply(self, [x], [self._square_type(x)])

    def infer_shape(self, node, input_shapes):
        return [tuple(input_shapes[0])]


class MatrixInverse(_SquareToSquareOp):
    """The inverse of (each matrix of) `x`; a singular matrix raises ``numpy.linalg.LinAlgError``."""

    what = "matrix_inverse"

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        ct_out = _core_type(node.outputs[0].type, 2)

        def core(bb: Block, ins: list) -> list[str]:
            ssa, t = ins[0]
            n, _ = _check_square(bb, ssa, t, self.what)
            a = _M(bb.tensor_cast(ssa, t, ct_out), ct_out, n, n)
            zero, one = bb.const(0.0, t.dtype), bb.const(1.0, t.dtype)
            eye0 = bb.filled(ct_out, [n, n], zero)
            eye = _for(bb, bb.index(0), n, [(eye0, ct_out.mlir)],
                       lambda lb, i, c: [a.put(lb, one, i, i, ssa=c[0])])[0]
            rhs = _M(eye, ct_out, n, n)
            lu, red, _, sing = _lu(bb, a, n, rhs)
            bb.check(sing, "Matrix is singular to machine precision.", exception=LinAlgError)
            x = _tri(bb, _M(lu, ct_out, n, n), _M(red, ct_out, n, n), n, lower=False, transposed=False, unit=False)
            return [x]

        return _batched(b, node, inputs, [2], [2], lambda bb, d: [d[0]], core, self.what)

    def L_op(self, node, output_grads):
        (gz,) = output_grads
        if gz is None:
            return [None]
        xi = node.outputs[0]
        xiT = _mT(xi)
        # Theano/PyTensor: -(xi gz^T xi)^T = -xi^T gz xi^T.
        return [-matmul(matmul(xiT, gz), xiT)]


class Solve(Op):
    """``x`` with ``A x = b`` (SciPy's ``solve``); NaN where `A` is singular (PyTensor's rule).

    `assume_a`: ``"gen"`` (LU with partial pivoting), ``"sym"``/``"her"``
    (the `lower` or upper triangle of A, mirrored; LU), ``"pos"`` (Cholesky
    of that triangle: NaN unless positive-definite), ``"tridiagonal"`` (the
    three central diagonals; LU), ``"banded"`` (LU). `b_ndim` is the core
    rank of `b` (1: vectors, 2: matrices).
    """

    __props__ = ("assume_a", "lower", "b_ndim")
    what = "solve"
    _NAMES = {"general": "gen", "symmetric": "sym", "hermitian": "her", "positive definite": "pos"}

    def __init__(self, assume_a: str = "gen", lower: bool = False, b_ndim: int = 2):
        a = str(assume_a).lower()
        a = self._NAMES.get(a, a)
        if a not in ("gen", "sym", "her", "pos", "tridiagonal", "banded"):
            raise ValueError(f"solve: invalid assume_a {assume_a!r}")
        if b_ndim not in (1, 2):
            raise ValueError(f"solve: b_ndim must be 1 or 2, got {b_ndim!r}")
        self.assume_a, self.lower, self.b_ndim = a, bool(lower), int(b_ndim)

    def make_node(self, A, b_) -> Apply:
        A, b_ = _as_var(A), _as_var(b_)
        if A.ndim < 2:
            raise ValueError(f"{self.what}: `A` must be a matrix; got {A.type}")
        if b_.ndim < self.b_ndim:
            raise ValueError(f"{self.what}: `b` must have at least {self.b_ndim} dims; got {b_.type}")
        s = A.type.shape
        if s[-1] is not None and s[-2] is not None and s[-1] != s[-2]:
            raise ValueError(f"{self.what}: expected a square matrix, got shape {s}")
        n = s[-1] if s[-1] is not None else s[-2]
        rows = b_.type.shape[b_.ndim - self.b_ndim]
        if n is not None and rows is not None and n != rows:
            raise ValueError(f"{self.what}: shapes of a {s} and b {b_.type.shape} are incompatible")
        dt = _out_dtype(A.dtype, b_.dtype)
        A, b_ = _to_float(A, dt), _to_float(b_, dt)
        batch = _batch([A, b_], [2, self.b_ndim], self.what)
        core = b_.type.shape[b_.ndim - self.b_ndim:]
        core = ((rows if rows is not None else n),) + tuple(core[1:])
        return Apply(self, [A, b_], [TensorType(dt, batch + core)])

    def _system(self, bb: Block, ssa: str, t: TensorType, n: str) -> _M:
        """The matrix the LU factorization works on (a triangle mirrored, a band kept)."""
        if self.assume_a in ("sym", "her", "tridiagonal"):
            et = t.mlir_elem
            empty = bb.empty(t, [n, n])
            lower, kind = self.lower, self.assume_a
            zf = bb.const(0.0, t.dtype)

            def body(gb: Block, args: list[str]) -> list[str]:
                i, j = gb.op("linalg.index 0 : index"), gb.op("linalg.index 1 : index")
                if kind == "tridiagonal":
                    v = gb.op(f"tensor.extract {ssa}[{i}, {j}] : {t.mlir}")
                    d = gb.op(f"arith.subi {i}, {j} : index")
                    near = gb.op(f"arith.cmpi ule, {gb.op(f'arith.addi {d}, {gb.index(1)} : index')}, "
                                 f"{gb.index(2)} : index")
                    return [gb.select(near, v, zf, et)]
                below = gb.icmp("sge", i, j)
                lo, hi = gb.select(below, i, j, "index"), gb.select(below, j, i, "index")
                r, c = (lo, hi) if lower else (hi, lo)
                # lo = max(i, j) when lower: the element of the lower triangle.
                return [gb.op(f"tensor.extract {ssa}[{r}, {c}] : {t.mlir}")]

            full = bb.generic([], [(empty, t, "(d0, d1)")], ["parallel", "parallel"], body)[0]
            return _M(full, t, n, n)
        return _M(ssa, t, n, n)

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        out_core = _core_type(node.outputs[0].type, self.b_ndim)

        def core(bb: Block, ins: list) -> list[str]:
            (a_ssa, at), (r_ssa, rt) = ins
            n, _ = _check_square(bb, a_ssa, at, self.what)
            _check_rows(bb, n, r_ssa, rt, self.b_ndim, self.what)
            r_ssa = bb.tensor_cast(r_ssa, rt, out_core)
            cols = bb.dim(r_ssa, out_core, 1) if self.b_ndim == 2 else None
            rhs = _M(r_ssa, out_core, n, cols)
            dims = [n] + ([cols] if cols else [])
            if self.assume_a == "pos":
                u_ssa, fail = _cholesky_upper(bb, _M(a_ssa, at, n, n), n, self.lower)
                U = _M(u_ssa, TensorType(at.dtype, at.shape), n, n)
                # U^T y = b (M = U^T lower), then U x = y.
                y = _tri(bb, U, rhs, n, lower=True, transposed=True, unit=False)
                x = _tri(bb, U, _M(y, out_core, n, cols), n, lower=False, transposed=False, unit=False)
                return [_nan_if(bb, fail, _M(x, out_core, n, cols), dims)]
            A = self._system(bb, a_ssa, at, n)
            lu, red, _, sing = _lu(bb, A, n, rhs)
            x = _tri(bb, _M(lu, at, n, n), _M(red, out_core, n, cols), n, lower=False, transposed=False, unit=False)
            return [_nan_if(bb, sing, _M(x, out_core, n, cols), dims)]

        return _batched(b, node, inputs, [2, self.b_ndim], [self.b_ndim], lambda bb, d: [[d[0][0]] + d[1][1:]],
                        core, self.what)

    def _transposed_solve(self, A: Variable, c: Variable) -> Variable:
        return Solve(self.assume_a, not self.lower, self.b_ndim)(_mT(A), c)

    def L_op(self, node, output_grads):
        (c_bar,) = output_grads
        A, b_ = node.inputs
        if c_bar is None:
            return [None, None]
        c = node.outputs[0]
        b_bar = self._transposed_solve(A, c_bar)
        A_bar = -_outer_or_dot(b_bar, c, self.b_ndim)
        return [_sum_to(A_bar, A), _sum_to(b_bar, b_)]


def _outer_or_dot(u: Variable, v: Variable, b_ndim: int) -> Variable:
    """``outer(u, v)`` (b_ndim 1) or ``u @ v.T`` (2), batched."""
    if b_ndim == 1:
        return u.dimshuffle(*range(u.ndim), "x") * v.dimshuffle(*range(v.ndim - 1), "x", v.ndim - 1)
    return matmul(u, _mT(v))


class SolveTriangular(Op):
    """``x`` with ``A x = b`` (``A.T x = b`` if `trans`) for triangular `A` (SciPy's ``solve_triangular``).

    Only the `lower` (or upper) triangle of A is read; `unit_diagonal`: the
    diagonal is taken as ones. A zero on the diagonal gives NaN (LAPACK's ``trtrs``).
    """

    __props__ = ("lower", "trans", "unit_diagonal", "b_ndim")
    what = "solve_triangular"

    def __init__(self, lower: bool = False, trans: bool = False, unit_diagonal: bool = False, b_ndim: int = 2):
        if b_ndim not in (1, 2):
            raise ValueError(f"solve_triangular: b_ndim must be 1 or 2, got {b_ndim!r}")
        self.lower, self.trans, self.unit_diagonal, self.b_ndim = bool(lower), bool(trans), bool(unit_diagonal), \
            int(b_ndim)

    make_node = Solve.make_node

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        out_core = _core_type(node.outputs[0].type, self.b_ndim)

        def core(bb: Block, ins: list) -> list[str]:
            (a_ssa, at), (r_ssa, rt) = ins
            n, _ = _check_square(bb, a_ssa, at, self.what)
            _check_rows(bb, n, r_ssa, rt, self.b_ndim, self.what)
            r_ssa = bb.tensor_cast(r_ssa, rt, out_core)
            cols = bb.dim(r_ssa, out_core, 1) if self.b_ndim == 2 else None
            A = _M(a_ssa, at, n, n)
            # The system's matrix M is A or A.T; M is lower when A is lower xor transposed.
            x = _tri(bb, A, _M(r_ssa, out_core, n, cols), n, lower=self.lower != self.trans,
                     transposed=self.trans, unit=self.unit_diagonal)
            if self.unit_diagonal:
                return [x]
            return [_nan_if(bb, _zero_diag(bb, A, n), _M(x, out_core, n, cols), [n] + ([cols] if cols else []))]

        return _batched(b, node, inputs, [2, self.b_ndim], [self.b_ndim], lambda bb, d: [[d[0][0]] + d[1][1:]],
                        core, self.what)

    def L_op(self, node, output_grads):
        (c_bar,) = output_grads
        A, b_ = node.inputs
        if c_bar is None:
            return [None, None]
        c = node.outputs[0]
        # x = M^{-1} b with M = op(A): b_bar = M^{-T} c_bar, M_bar = -b_bar c^T, A_bar = op(M_bar).
        b_bar = SolveTriangular(self.lower, not self.trans, self.unit_diagonal, self.b_ndim)(A, c_bar)
        M_bar = -_outer_or_dot(b_bar, c, self.b_ndim)
        A_bar = _mT(M_bar) if self.trans else M_bar
        A_bar = tril(A_bar) if self.lower else triu(A_bar)
        if self.unit_diagonal:
            A_bar = A_bar - _diag_of(A_bar)
        return [_sum_to(A_bar, A), _sum_to(b_bar, b_)]


class Cholesky(_SquareToSquareOp):
    """The `lower` (``L L^T = x``) or upper (``U^T U = x``) Cholesky factor; reads only that triangle
    of `x`. A matrix that is not positive-definite gives a matrix of NaN (PyTensor's rule)."""

    __props__ = ("lower",)
    what = "cholesky"

    def __init__(self, lower: bool = True):
        self.lower = bool(lower)

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        ct_out = _core_type(node.outputs[0].type, 2)

        def core(bb: Block, ins: list) -> list[str]:
            ssa, t = ins[0]
            n, _ = _check_square(bb, ssa, t, self.what)
            a = bb.tensor_cast(ssa, t, ct_out)
            l_ssa, fail = _cholesky_upper(bb, _M(a, ct_out, n, n), n, self.lower)
            if self.lower:
                l_ssa = _transpose(bb, l_ssa, ct_out, [n, n])
            return [_nan_if(bb, fail, _M(l_ssa, ct_out, n, n), [n, n])]

        return _batched(b, node, inputs, [2], [2], lambda bb, d: [d[0]], core, self.what)

    def L_op(self, node, output_grads):
        # I. Murray, "Differentiation of the Cholesky decomposition" (PyTensor's formula).
        (dz,) = output_grads
        if dz is None:
            return [None]
        L = node.outputs[0]
        if not self.lower:
            L, dz = _mT(L), _mT(dz)
        inner = matmul(_mT(L), dz)
        phi = tril(inner) - _diag_of(inner) * 0.5
        # s = L^{-T} phi L^{-1}
        up = SolveTriangular(lower=False, b_ndim=2)
        s = up(_mT(L), _mT(up(_mT(L), _mT(phi))))
        sym = s + _mT(s)
        grad = (tril(sym) if self.lower else triu(sym)) - _diag_of(s)
        return [grad]


class CholeskySolve(Op):
    """``x`` with ``A x = b`` given the Cholesky factor `c` of A (`lower`: ``A = c c^T``, else ``c^T c``).

    SciPy's ``cho_solve``; reads only that triangle of `c`; no check (LAPACK's ``potrs``).
    """

    __props__ = ("lower", "b_ndim")
    what = "cho_solve"

    def __init__(self, lower: bool = True, b_ndim: int = 2):
        if b_ndim not in (1, 2):
            raise ValueError(f"cho_solve: b_ndim must be 1 or 2, got {b_ndim!r}")
        self.lower, self.b_ndim = bool(lower), int(b_ndim)

    make_node = Solve.make_node

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        out_core = _core_type(node.outputs[0].type, self.b_ndim)

        def core(bb: Block, ins: list) -> list[str]:
            (a_ssa, at), (r_ssa, rt) = ins
            n, _ = _check_square(bb, a_ssa, at, self.what)
            _check_rows(bb, n, r_ssa, rt, self.b_ndim, self.what)
            r_ssa = bb.tensor_cast(r_ssa, rt, out_core)
            cols = bb.dim(r_ssa, out_core, 1) if self.b_ndim == 2 else None
            C = _M(a_ssa, at, n, n)
            # lower: L y = b, L^T x = y;  upper: U^T y = b, U x = y.
            y = _tri(bb, C, _M(r_ssa, out_core, n, cols), n, lower=True, transposed=not self.lower, unit=False)
            x = _tri(bb, C, _M(y, out_core, n, cols), n, lower=False, transposed=self.lower, unit=False)
            return [x]

        return _batched(b, node, inputs, [2, self.b_ndim], [self.b_ndim], lambda bb, d: [[d[0][0]] + d[1][1:]],
                        core, self.what)

    def L_op(self, node, output_grads):
        (c_bar,) = output_grads
        C, b_ = node.inputs
        if c_bar is None:
            return [None, None]
        x = node.outputs[0]
        # SolveBase's gradient with A = C C^T (symmetric): b_bar = A^{-1} c_bar, A_bar = -b_bar x^T.
        b_bar = CholeskySolve(self.lower, self.b_ndim)(C, c_bar)
        A_bar = -_outer_or_dot(b_bar, x, self.b_ndim)
        sym = A_bar + _mT(A_bar)
        C_bar = tril(matmul(sym, C)) if self.lower else triu(matmul(C, sym))
        return [_sum_to(C_bar, C), _sum_to(b_bar, b_)]


class Det(_SquareOp):
    """The determinant of (each matrix of) `x` (LU with partial pivoting); 0 when singular."""

    what = "det"

    def make_node(self, x) -> Apply:
        x = self._input(x)
        return Apply(self, [x], [TensorType(x.dtype, x.type.shape[:-2])])

    def infer_shape(self, node, input_shapes):
        return [tuple(input_shapes[0][:-2])]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        def core(bb: Block, ins: list) -> list[str]:
            ssa, t = ins[0]
            n, _ = _check_square(bb, ssa, t, self.what)
            lu, _, sign, sing = _lu(bb, _M(ssa, t, n, n), n, None)
            et = t.mlir_elem
            L = _M(lu, t, n, n)
            prod = _for(bb, bb.index(0), n, [(sign, et)],
                        lambda lb, i, c: [_f(lb, "mulf", c[0], L.get(lb, i, i), et)])[0]
            return [bb.select(sing, bb.const(0.0, t.dtype), prod, et)]

        return _batched(b, node, inputs, [2], [0], lambda bb, d: [[]], core, self.what)

    def L_op(self, node, output_grads):
        (gz,) = output_grads
        if gz is None:
            return [None]
        x = node.inputs[0]
        # gz * det(x) * inv(x)^T (singular x: inv raises, as in PyTensor)
        return [_expand2(gz * node.outputs[0]) * _mT(MatrixInverse()(x))]


class SLogDet(_SquareOp):
    """(sign, log|det|) of (each matrix of) `x` (NumPy's ``slogdet``); ``(0, -inf)`` when singular."""

    what = "slogdet"

    def make_node(self, x) -> Apply:
        x = self._input(x)
        t = TensorType(x.dtype, x.type.shape[:-2])
        return Apply(self, [x], [t, t])

    def infer_shape(self, node, input_shapes):
        return [tuple(input_shapes[0][:-2])] * 2

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        def core(bb: Block, ins: list) -> list[str]:
            ssa, t = ins[0]
            dt, et = t.dtype, t.mlir_elem
            n, _ = _check_square(bb, ssa, t, self.what)
            lu, _, sign, sing = _lu(bb, _M(ssa, t, n, n), n, None)
            L = _M(lu, t, n, n)
            zf = bb.const(0.0, dt)

            def body(lb: Block, i: str, c: list[str]) -> list[str]:
                d = L.get(lb, i, i)
                neg = lb.op(f"arith.cmpf olt, {d}, {zf} : {et}")
                s = lb.select(neg, lb.op(f"arith.negf {c[0]} : {et}"), c[0], et)
                la = lb.op(f"math.log {lb.op(f'math.absf {d} : {et}')} : {et}")
                return [s, _f(lb, "addf", c[1], la, et)]

            s, la = _for(bb, bb.index(0), n, [(sign, et), (zf, et)], body)
            return [bb.select(sing, zf, s, et), bb.select(sing, bb.const(float("-inf"), dt), la, et)]

        return _batched(b, node, inputs, [2], [0, 0], lambda bb, d: [[], []], core, self.what)

    def L_op(self, node, output_grads):
        _, g = output_grads
        if g is None:
            return [None]
        x = node.inputs[0]
        return [_expand2(g) * _mT(MatrixInverse()(x))]


class BlockDiagonal(Op):
    """The matrices on the diagonal of a zero matrix (SciPy's ``block_diag``), batched."""

    __props__ = ("n_inputs",)
    what = "block_diag"

    def __init__(self, n_inputs: int):
        if n_inputs < 1:
            raise ValueError("block_diag: needs at least one matrix")
        self.n_inputs = int(n_inputs)

    def make_node(self, *mats) -> Apply:
        if len(mats) != self.n_inputs:
            raise ValueError(f"block_diag: expected {self.n_inputs} matrices, got {len(mats)}")
        mats = [_as_var(m) for m in mats]
        if any(m.ndim < 2 for m in mats):
            raise TypeError("block_diag: all inputs must have (at least) 2 dimensions")
        dt = upcast(*[m.dtype for m in mats])
        mats = [_to_float(m, dt) if m.dtype != dt else m for m in mats]
        batch = _batch(mats, [2] * len(mats), self.what)
        r = [m.type.shape[-2] for m in mats]
        c = [m.type.shape[-1] for m in mats]
        core = (None if None in r else sum(r), None if None in c else sum(c))
        return Apply(self, mats, [TensorType(dt, batch + core)])

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        out_core = _core_type(node.outputs[0].type, 2)

        def sizes(bb: Block, d: list[list[str]]) -> list[list[str]]:
            r, c = bb.index(0), bb.index(0)
            for rr, cc in d:
                r, c = bb.iop("addi", r, rr), bb.iop("addi", c, cc)
            return [[r, c]]

        def core(bb: Block, ins: list) -> list[str]:
            dims = [bb.dims(s, t) for s, t in ins]
            [[R, C]] = sizes(bb, dims)
            out = bb.filled(out_core, [R, C], bb.const(0.0 if is_float(out_core.dtype) else 0, out_core.dtype))
            r0, c0 = bb.index(0), bb.index(0)
            for (s, t), (rr, cc) in zip(ins, dims):
                szs = ", ".join(str(t.shape[j]) if t.shape[j] is not None else (rr, cc)[j] for j in range(2))
                out = bb.op(f"tensor.insert_slice {s} into {out}[{r0}, {c0}] [{szs}] [1, 1] : {t.mlir} into "
                            f"{out_core.mlir}")
                r0, c0 = bb.iop("addi", r0, rr), bb.iop("addi", c0, cc)
            return [out]

        return _batched(b, node, inputs, [2] * self.n_inputs, [2], sizes, core, self.what)

    def L_op(self, node, output_grads):
        (g,) = output_grads
        if g is None:
            return [None] * self.n_inputs
        res = []
        r0 = c0 = 0
        nd = g.ndim
        for m in node.inputs:
            r1 = r0 + m.shape[m.ndim - 2]
            c1 = c0 + m.shape[m.ndim - 1]
            idx = (slice(None),) * (nd - 2) + (slice(r0, r1), slice(c0, c1))
            res.append(_sum_to(g[idx], m))
            r0, c0 = r1, c1
        return res


class LUFactor(_SquareOp):
    """SciPy's ``lu_factor``: (LU, pivots) of (each matrix of) `x`, LAPACK's ``getrf`` layout.

    ``LU`` holds U and, below the diagonal, L's multipliers; ``pivots``
    (int32, 0-based) says that row k was swapped with row ``pivots[k]``. A
    singular matrix gives an LU of NaN (PyTensor's ``LUFactor``). No gradient
    (the builder's users differentiate ``solve``).
    """

    what = "lu_factor"

    def make_node(self, x) -> Apply:
        x = self._input(x)
        square = self._square_type(x)
        return Apply(self, [x], [square, TensorType("int32", square.shape[:-1])])

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        ct_out = _core_type(node.outputs[0].type, 2)
        pt_ = _core_type(node.outputs[1].type, 1)

        def core(bb: Block, ins: list) -> list[str]:
            ssa, t = ins[0]
            n, _ = _check_square(bb, ssa, t, self.what)
            a = _M(bb.tensor_cast(ssa, t, ct_out), ct_out, n, n)
            piv = _M(bb.empty(pt_, [n]), pt_, n, None)
            lu, _, _, sing, p = _lu(bb, a, n, None, piv)
            return [_nan_if(bb, sing, _M(lu, ct_out, n, n), [n, n]), p]

        return _batched(b, node, inputs, [2], [2, 1], lambda bb, d: [d[0], d[0][:1]], core, self.what)


class QR(Op):
    """SciPy's ``qr`` of (each matrix of) `x` (m x n, k = min(m, n)): Householder reflections with
    LAPACK's ``geqrf`` conventions (``R[j, j] = -sign(x[j, j]) * ||x[j:, j]||``; no reflection
    where a column is already zero below the diagonal), so R's signs are SciPy's.

    `mode`: ``"r"`` gives R (m x n, SciPy's full R); ``"economic"`` gives Q (m x k) and R (k x n);
    ``"full"`` gives Q (m x m) and R (m x n). No gradient in the builder (PyTensor builds its own,
    from an economic QR).
    """

    __props__ = ("mode",)
    what = "qr"

    def __init__(self, mode: str = "full"):
        if mode not in ("r", "economic", "full"):
            raise ValueError(f"qr: mode must be 'r', 'economic' or 'full', not {mode!r}")
        self.mode = mode

    def make_node(self, x) -> Apply:
        x = _as_var(x)
        if x.ndim < 2:
            raise ValueError(f"{self.what}: expected a matrix (rank >= 2), got {x.type}")
        x = _to_float(x, _out_dtype(x.dtype))
        *batch, m, n = x.type.shape
        k = min(m, n) if m is not None and n is not None else None
        batch = tuple(batch)
        if self.mode == "r":
            outs = [TensorType(x.dtype, batch + (m, n))]
        elif self.mode == "economic":
            outs = [TensorType(x.dtype, batch + (m, k)), TensorType(x.dtype, batch + (k, n))]
        else:
            outs = [TensorType(x.dtype, batch + (m, m)), TensorType(x.dtype, batch + (m, n))]
        return Apply(self, [x], outs)

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        dt = x.dtype
        M, N = x.type.shape[-2:]
        wt, qt = TensorType(dt, (M, N)), TensorType(dt, (M, M))
        vt = TensorType(dt, (M,))
        cout = [_core_type(o.type, 2) for o in node.outputs]

        def core(bb: Block, ins: list) -> list[str]:
            ssa, t = ins[0]
            et = t.mlir_elem
            m, n = bb.dim(ssa, t, 0), bb.dim(ssa, t, 1)
            k = bb.iop("minui", m, n)
            zf, one = bb.const(0.0, dt), bb.const(1.0, dt)
            W = _M(bb.tensor_cast(ssa, t, wt), wt, m, n)

            def eye(gb: Block, args: list[str]) -> list[str]:
                same = gb.icmp("eq", gb.op("linalg.index 0 : index"), gb.op("linalg.index 1 : index"))
                return [gb.select(same, one, zf, et)]

            Q = _M(bb.generic([], [(bb.empty(qt, [m, m]), qt, "(d0, d1)")], ["parallel", "parallel"], eye)[0],
                   qt, m, m)

            def column(sb: Block, j: str, c: list[str]) -> list[str]:
                w, q = c
                j1 = sb.iop("addi", j, sb.index(1))
                alpha = W.get(sb, j, j, ssa=w)
                norm2 = _for(sb, j1, m, [(zf, et)], lambda lb, i, a: [
                    _f(lb, "addf", a[0], _f(lb, "mulf", W.get(lb, i, j, ssa=w), W.get(lb, i, j, ssa=w), et), et)])[0]
                reflects = sb.op(f"arith.cmpf une, {norm2}, {zf} : {et}")
                size = sb.op(f"math.sqrt {_f(sb, 'addf', _f(sb, 'mulf', alpha, alpha, et), norm2, et)} : {et}")
                beta = sb.op(f"arith.negf {sb.op(f'math.copysign {size}, {alpha} : {et}')} : {et}")
                # tau = (beta - alpha) / beta; v = x[j:, j] / (alpha - beta) with v[j] = 1 (dlarfg)
                tau = sb.select(reflects, _f(sb, "divf", _f(sb, "subf", beta, alpha, et), beta, et), zf, et)
                scale = sb.select(reflects, _f(sb, "divf", one, _f(sb, "subf", alpha, beta, et), et), zf, et)

                def vfill(gb: Block, args: list[str]) -> list[str]:
                    i = gb.op("linalg.index 0 : index")
                    below = gb.icmp("ugt", i, j)
                    r = gb.select(below, i, j, "index")  # (in bounds: row j is read and discarded)
                    v = _f(gb, "mulf", gb.op(f"tensor.extract {w}[{r}, {j}] : {wt.mlir}"), scale, et)
                    at = gb.select(gb.icmp("eq", i, j), one, zf, et)
                    return [gb.select(below, v, at, et)]

                v = _M(sb.generic([], [(sb.empty(vt, [m]), vt, "(d0)")], ["parallel"], vfill)[0], vt, m, None)

                def reflect(M: _M, at: Callable[[str, str], tuple[str, str]]) -> Callable:
                    """The loop body applying H_j to line `line` of `M` (`at(line, i)`: its element i):
                    ``M[line][j:] -= tau * (M[line][j:] . v) * v``."""
                    def body(cb: Block, line: str, a: list[str]) -> list[str]:
                        dot = _for(cb, j, m, [(zf, et)], lambda lb, i, d: [
                            _f(lb, "addf", d[0], _f(lb, "mulf", v.get(lb, i), M.get(lb, *at(line, i), ssa=a[0]), et),
                               et)])[0]
                        ts = _f(cb, "mulf", tau, dot, et)
                        return _for(cb, j, m, [(a[0], M.t.mlir)], lambda lb, i, d: [M.put(
                            lb, _f(lb, "subf", M.get(lb, *at(line, i), ssa=d[0]), _f(lb, "mulf", ts, v.get(lb, i), et),
                                   et), *at(line, i), ssa=d[0])])

                    return body

                w = _for(sb, j1, n, [(w, wt.mlir)], reflect(W, lambda col, i: (i, col)))[0]  # H_j W
                w = W.put(sb, sb.select(reflects, beta, alpha, et), j, j, ssa=w)
                q = _for(sb, sb.index(0), m, [(q, qt.mlir)], reflect(Q, lambda row, i: (row, i)))[0]  # Q H_j
                return [w, q]

            w, q = _for(bb, bb.index(0), k, [(W.ssa, wt.mlir), (Q.ssa, qt.mlir)], column)

            def upper(gb: Block, args: list[str]) -> list[str]:
                i, jj = gb.op("linalg.index 0 : index"), gb.op("linalg.index 1 : index")
                return [gb.select(gb.icmp("ule", i, jj), args[0], zf, et)]

            r = bb.generic([(w, wt, "(d0, d1)")], [(bb.empty(wt, [m, n]), wt, "(d0, d1)")],
                           ["parallel", "parallel"], upper)[0]

            def part(ssa_: str, src: TensorType, dst: TensorType, rows: str, cols: str) -> str:
                dyn = TensorType(dst.dtype, (None, None))
                view = bb.op(f"tensor.extract_slice {ssa_}[0, 0] [{rows}, {cols}] [1, 1] : {src.mlir} to {dyn.mlir}")
                return bb.tensor_cast(view, dyn, dst)

            if self.mode == "r":
                return [bb.tensor_cast(r, wt, cout[0])]
            if self.mode == "full":
                return [bb.tensor_cast(q, qt, cout[0]), bb.tensor_cast(r, wt, cout[1])]
            return [part(q, qt, cout[0], m, k), part(r, wt, cout[1], k, n)]

        def out_dims(bb: Block, d: list[list[str]]) -> list[list[str]]:
            m, n = d[0]
            k = bb.iop("minui", m, n)
            return {"r": [[m, n]], "economic": [[m, k], [k, n]], "full": [[m, m], [m, n]]}[self.mode]

        return _batched(b, node, inputs, [2], [2] * len(node.outputs), out_dims, core, self.what)


class PivotToPermutations(Op):
    """LAPACK pivots (row k swapped with ``pivots[k]``, in order) as a permutation (PyTensor's op).

    `inverse`: the rows of the factorized matrix in the order of ``LU``'s rows
    (``A[p_inv] = L U``); else its inverse (``argsort(p_inv)``). int64.
    """

    __props__ = ("inverse",)

    def __init__(self, inverse: bool = True):
        self.inverse = bool(inverse)

    def make_node(self, pivots) -> Apply:
        pivots = _as_var(pivots)
        if pivots.ndim != 1 or pivots.dtype not in ("int8", "int16", "int32", "int64"):
            raise ValueError(f"pivot_to_permutation: expected an integer vector, got {pivots.type}")
        return Apply(self, [pivots], [TensorType("int64", pivots.type.shape)])

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        pv = node.inputs[0]
        out = node.outputs[0].type
        n = b.dim(inputs[0], pv.type, 0)
        P = _M(b.empty(out, [n]), out, n, None)
        ident = _for(b, b.index(0), n, [(P.ssa, out.mlir)],
                     lambda lb, i, c: [P.put(lb, lb.from_index(i), i, ssa=c[0])])[0]

        def swap(sb: Block, i: str, c: list[str]) -> list[str]:
            raw = sb.op(f"tensor.extract {inputs[0]}[{i}] : {pv.type.mlir}")
            j = sb.to_index(raw, pv.dtype)
            bad = sb.op(f"arith.ori {sb.icmp('slt', j, sb.index(0))}, {sb.icmp('sge', j, n)} : i1")
            sb.check(bad, "pivot_to_permutation: pivot {have} is out of bounds for size {need}", j, n, code=2)
            x, y = P.get(sb, i, ssa=c[0]), P.get(sb, j, ssa=c[0])
            return [P.put(sb, x, j, ssa=P.put(sb, y, i, ssa=c[0]))]

        p_inv = _for(b, b.index(0), n, [(ident, out.mlir)], swap)[0]
        if self.inverse:
            return [p_inv]
        Q = _M(b.empty(out, [n]), out, n, None)

        def inv(ib: Block, i: str, c: list[str]) -> list[str]:
            k = ib.to_index(P.get(ib, i, ssa=p_inv), "int64")
            return [Q.put(ib, ib.from_index(i), k, ssa=c[0])]

        return [_for(b, b.index(0), n, [(Q.ssa, out.mlir)], inv)[0]]

    def L_op(self, node, output_grads):
        return [None]


class ArgSort(Op):
    """NumPy's stable ``argsort`` of a vector (int64), NaN last; O(n^2) (for short vectors: pivots)."""

    def make_node(self, x) -> Apply:
        x = _as_var(x)
        if x.ndim != 1:
            raise ValueError(f"argsort: this op sorts vectors, got {x.type}")
        return Apply(self, [x], [TensorType("int64", x.type.shape)])

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        out = node.outputs[0].type
        n = b.dim(inputs[0], x.type, 0)
        et = x.type.mlir_elem
        fl = is_float(x.dtype)
        Q = _M(b.empty(out, [n]), out, n, None)

        def before(cb: Block, v: str, w: str, j: str, i: str) -> str:
            """Whether element (w, j) sorts before (v, i)."""
            if fl:
                lt = cb.op(f"arith.cmpf olt, {w}, {v} : {et}")
                eq = cb.op(f"arith.cmpf oeq, {w}, {v} : {et}")
                v_nan = cb.op(f"arith.cmpf uno, {v}, {v} : {et}")
                w_nan = cb.op(f"arith.cmpf uno, {w}, {w} : {et}")
                w_num = cb.not_(w_nan)
                lt = cb.op(f"arith.ori {lt}, {cb.op(f'arith.andi {v_nan}, {w_num} : i1')} : i1")
                eq = cb.op(f"arith.ori {eq}, {cb.op(f'arith.andi {v_nan}, {w_nan} : i1')} : i1")
            else:
                lt = cb.op(f"arith.cmpi slt, {w}, {v} : {et}")
                eq = cb.op(f"arith.cmpi eq, {w}, {v} : {et}")
            tie = cb.op(f"arith.andi {eq}, {cb.icmp('slt', j, i)} : i1")
            return cb.op(f"arith.ori {lt}, {tie} : i1")

        def place(pb: Block, i: str, c: list[str]) -> list[str]:
            v = pb.op(f"tensor.extract {inputs[0]}[{i}] : {x.type.mlir}")

            def count(cb: Block, j: str, r: list[str]) -> list[str]:
                w = cb.op(f"tensor.extract {inputs[0]}[{j}] : {x.type.mlir}")
                one = cb.select(before(cb, v, w, j, i), cb.index(1), cb.index(0), "index")
                return [cb.iop("addi", r[0], one)]

            rank = _for(pb, pb.index(0), n, [(pb.index(0), "index")], count)[0]
            return [Q.put(pb, pb.from_index(i), rank, ssa=c[0])]

        return [_for(b, b.index(0), n, [(Q.ssa, out.mlir)], place)[0]]

    def L_op(self, node, output_grads):
        return [None]


def diagonal(x, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Variable:
    """NumPy's ``diagonal`` for any rank (the diagonal becomes the last dimension), with a gradient.

    Rank 2 is ``T.diagonal``; a stack of matrices (a batched Cholesky's or LU's diagonal, as PyTensor's
    ``ExtractDiag`` of a ``Blockwise``) is integer-array indexing of the two axes moved last.

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> X = T.tensor3("X")
    >>> diagonal(X, 0, 1, 2).eval({X: np.arange(8.0).reshape(2, 2, 2)}).tolist()
    [[0.0, 3.0], [4.0, 7.0]]
    """
    x = _as_var(x)
    nd = x.ndim
    if nd < 2:
        raise ValueError(f"diagonal: expected rank >= 2, got {x.type}")
    a1, a2 = axis1 % nd, axis2 % nd
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    if nd == 2:
        return ExtractDiag(offset)(x if (a1, a2) == (0, 1) else _mT(x))
    k = int(offset)
    rest = [d for d in range(nd) if d not in (a1, a2)]
    y = x.dimshuffle(*rest, a1, a2)
    rows, cols = y.shape[nd - 2], y.shape[nd - 1]
    length = elemwise("maximum", elemwise("minimum", rows - max(-k, 0), cols - max(k, 0)),
                      Constant(np.asarray(0, "int64")))
    i = _arange(length)
    idx = (slice(None),) * (nd - 2) + (i + max(-k, 0), i + max(k, 0))
    return y[idx]
