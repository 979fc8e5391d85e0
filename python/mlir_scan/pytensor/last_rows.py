"""Reads of a scan's last rows at a symbolic index, made constant: ``buffer[-j]``.

PyTensor gives ``scan(...)[-1]`` and ``scan(...)[k - 1]`` to the mode in several
forms: ``buffer[-1]``, ``buffer[k]`` (PyTensor 2.38's ``local_subtensor_merge``),
``buffer[switch(k - 1 < 0, k - 1, k)]`` (PyTensor 3's
``local_subtensor_merge_integer``), ``buffer[buffer.shape[0] - 1]``... Each reads
the same row of a buffer of ``n_steps + K`` rows (``K`` init rows), for every
number of steps. The translation keeps only the last rows of a buffer that is
read only at constant negative indices (``scan.BufferHint``: what PyTensor's
``scan_save_mem`` does), so :func:`local_scan_last_row_index` rewrites each such
index into the constant ``-j`` it always equals.

The proof is an evaluation of the index as a piecewise-affine function of
``n = n_steps`` over ``n >= 0``: integer constants, ``n`` itself (through casts
and the scalar/tensor conversions), the buffer's own length, ``+``, ``-``,
negation, products with a constant, ``switch`` on a comparison of two such
values, ``maximum``/``minimum``, and fused ``Composite``s of these. The read is
``buffer[-j]`` when every piece is either ``n + b`` with ``n + b >= 0`` (then
``j = K - b``) or a negative constant ``-j``, all with the same ``j``. Anything
else is left as it is (the whole trace is kept: correct, only slower), except an index
that moves among the last few rows (:func:`last_rows_bound`, ``res[k - 2]``), which the
translation reads from the kept rows at a run-time position.

Example::

    >>> import numpy as np, pytensor, pytensor.tensor as pt
    >>> from pytensor.graph.fg import FunctionGraph
    >>> k = pt.iscalar("k")
    >>> res = pytensor.scan(lambda h: 2 * h, outputs_info=pt.ones(()), n_steps=k, return_updates=False)
    >>> buf = res.owner.inputs[0]               # res is buf[1:]; buf has k + 1 rows
    >>> rows_from_end(pt.switch(pt.lt(k - 1, 0), k - 1, k), buf)     # PyTensor 3's res[k - 1]
    1
    >>> rows_from_end(buf.shape[0] - 1, buf), rows_from_end(k - 1 + 1, buf)
    (1, 1)
    >>> rows_from_end(k - 1, buf) is None       # the last row at k = 0, the one before it after
    True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pytensor.compile import optdb
from pytensor.graph.basic import Constant
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.scalar import basic as ps
from pytensor.scan.op import Scan
from pytensor.tensor.basic import ScalarFromTensor, TensorFromScalar
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.subtensor import Subtensor

__all__ = ["rows_from_end", "last_rows_bound", "local_scan_last_row_index", "TAG", "MAX_LAST_ROWS"]

#: The optimizer tag of this module's rewrite (the mode's query includes it).
TAG = "mlir_scan_last_rows"

#: A piece: value = a * n + b for integer n in [lo, hi] (hi may be math.inf).
Piece = tuple[int, int, float, float]


class _NotAffine(Exception):
    pass


def _plus(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
    return x[0] + y[0], x[1] + y[1]


def _minus(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
    return x[0] - y[0], x[1] - y[1]


def _scan_buffer(buffer: Any) -> tuple[Any, int] | None:
    """(the scan's ``n_steps`` variable, ``K`` init rows) when `buffer` is a mit_sot/sit_sot output,
    or ``output[s:]`` with a constant ``s <= K`` (then ``K - s``: what ``scan`` returns is ``output[K:]``)."""
    node = buffer.owner
    if node is not None and isinstance(node.op, Subtensor) and len(node.op.idx_list) == 1:
        entry = node.op.idx_list[0]
        if isinstance(entry, slice) and entry.stop is None and entry.step is None and len(node.inputs) == 2 \
                and isinstance(node.inputs[1], Constant):
            found = _scan_buffer(node.inputs[0])
            start = int(np.asarray(node.inputs[1].data))
            if found is not None and 0 <= start <= found[1]:
                return found[0], found[1] - start
        return None
    if node is None or not isinstance(node.op, Scan) or node.op.info.as_while:
        return None
    op = node.op
    mitsot = op.outer_mitsot_outs(node.outputs)
    sitsot = op.outer_sitsot_outs(node.outputs)
    if buffer in mitsot:
        taps = op.info.mit_sot_in_slices[mitsot.index(buffer)]
        return node.inputs[0], -min(taps)
    if buffer in sitsot:
        return node.inputs[0], 1
    return None


def _root(var: Any) -> Any:
    """`var` through integer casts and the scalar/tensor conversions."""
    while var.owner is not None:
        op = var.owner.op
        if isinstance(op, (ScalarFromTensor, TensorFromScalar)) \
                or isinstance(getattr(op, "scalar_op", None), (ps.Cast, ps.Identity)):
            if not str(var.owner.inputs[0].dtype).startswith(("int", "uint")):
                break
            var = var.owner.inputs[0]
            continue
        break
    return var


class _Evaluator:
    """The index as pieces of ``a * n + b`` (see the module docstring)."""

    def __init__(self, n_steps: Any, buffer: Any, init_rows: int):
        self.n = _root(n_steps)
        self.buffer, self.init_rows = buffer, init_rows

    def pieces(self, var: Any, lo: float, hi: float, env: dict | None = None) -> list[Piece]:
        if env is not None and var in env:
            return env[var](lo, hi)
        if isinstance(var, Constant):
            data = np.asarray(var.data)
            if data.size != 1 or data.dtype.kind not in "iu":
                raise _NotAffine
            return [(0, int(data.reshape(())), lo, hi)]
        if env is None and _root(var) is self.n:
            return [(1, 0, lo, hi)]
        node = var.owner
        if node is None:
            raise _NotAffine
        op = node.op
        if env is None and isinstance(op, Shape_i) and op.i == 0 and node.inputs[0] is self.buffer:
            return [(1, self.init_rows, lo, hi)]
        if env is None and isinstance(op, Subtensor) and node.inputs[0].owner is not None \
                and isinstance(node.inputs[0].owner.op, Shape) and node.inputs[0].owner.inputs[0] is self.buffer:
            idx = node.inputs[1] if len(node.inputs) == 2 else None
            if isinstance(idx, Constant) and int(np.asarray(idx.data)) == 0:
                return [(1, self.init_rows, lo, hi)]
            raise _NotAffine
        if isinstance(op, (ScalarFromTensor, TensorFromScalar)):
            return self.pieces(node.inputs[0], lo, hi, env)
        scalar_op = op.scalar_op if isinstance(op, Elemwise) else op
        if not isinstance(scalar_op, ps.ScalarOp):
            raise _NotAffine
        if str(var.dtype)[:3] not in ("int", "uin"):
            raise _NotAffine
        args = [(lambda v: (lambda a, b: self.pieces(v, a, b, env)))(v) for v in node.inputs]
        return self._apply(scalar_op, args, lo, hi, var, env)

    def _apply(self, scalar_op: Any, args: list, lo: float, hi: float, var: Any, env: dict | None) -> list[Piece]:
        if isinstance(scalar_op, ps.Composite):
            inner = scalar_op.fgraph
            out = inner.outputs[var.owner.outputs.index(var)] if len(inner.outputs) > 1 else inner.outputs[0]
            return self.pieces(out, lo, hi, dict(zip(inner.inputs, args)))
        if isinstance(scalar_op, (ps.Cast, ps.Identity)):
            return args[0](lo, hi)
        if isinstance(scalar_op, ps.Add):
            return self._combine(args, lo, hi, _plus)
        if isinstance(scalar_op, ps.Sub):
            return self._combine(args, lo, hi, _minus)
        if isinstance(scalar_op, ps.Neg):
            return [(-a, -b, l, h) for a, b, l, h in args[0](lo, hi)]
        if isinstance(scalar_op, ps.Mul):
            def mul(x, y):
                if x[0] and y[0]:
                    raise _NotAffine
                return (x[0] * y[1] + y[0] * x[1], x[1] * y[1])
            return self._combine(args, lo, hi, mul)
        if isinstance(scalar_op, ps.Switch):
            cond = _comparison(var.owner.inputs[0])
            if cond is None:
                raise _NotAffine
            cmp_op, p, q = cond
            out: list[Piece] = []
            for (l, h), truth in self._truth_split(p, q, cmp_op, lo, hi, env):
                out += (args[1] if truth else args[2])(l, h)
            return out
        if isinstance(scalar_op, (ps.Maximum, ps.Minimum)):
            out = []
            want_ge = isinstance(scalar_op, ps.Maximum)
            x, y = args
            for a, b, l, h in self._combine(args, lo, hi, _minus):
                for l2, h2, nonneg in _sign_intervals(a, b, l, h):
                    out += (x if nonneg == want_ge else y)(l2, h2)
            return out
        raise _NotAffine

    def _combine(self, args: list, lo: float, hi: float, f) -> list[Piece]:
        if len(args) == 1:
            return args[0](lo, hi)
        out: list[Piece] = []
        for a, b, l, h in args[0](lo, hi):
            for c, d, l2, h2 in self._combine(args[1:], l, h, f):
                out.append((*f((a, b), (c, d)), l2, h2))
        return out

    def _truth_split(self, p: Any, q: Any, cmp_op: Any, lo: float, hi: float, env: dict | None):
        """Sub-intervals of [lo, hi], each with the comparison's truth value on it."""
        diff = self._combine([lambda a, b: self.pieces(p, a, b, env), lambda a, b: self.pieces(q, a, b, env)],
                             lo, hi, _minus)
        for a, b, l, h in diff:
            for l2, h2, nonneg in _sign_intervals(a, b, l, h):
                for l3, h3, zero in _zero_split(a, b, l2, h2):
                    yield (l3, h3), _compare(cmp_op, 0 if zero else (1 if nonneg else -1))


def _compare(cmp_op: Any, sign: int) -> bool:
    if isinstance(cmp_op, ps.LT):
        return sign < 0
    if isinstance(cmp_op, ps.LE):
        return sign <= 0
    if isinstance(cmp_op, ps.GT):
        return sign > 0
    if isinstance(cmp_op, ps.GE):
        return sign >= 0
    if isinstance(cmp_op, ps.EQ):
        return sign == 0
    if isinstance(cmp_op, ps.NEQ):
        return sign != 0
    raise _NotAffine


def _sign_intervals(a: int, b: int, lo: float, hi: float):
    """[lo, hi] split where a * n + b >= 0 (True) and < 0 (False), integer n."""
    if lo > hi:
        return
    if a == 0:
        yield lo, hi, b >= 0
        return
    root = -b / a  # a * n + b >= 0  <=>  n >= root (a > 0) or n <= root (a < 0)
    if a > 0:
        cut = math.ceil(root)
        parts = [(lo, min(hi, cut - 1), False), (max(lo, cut), hi, True)]
    else:
        cut = math.floor(root)
        parts = [(lo, min(hi, cut), True), (max(lo, cut + 1), hi, False)]
    for l, h, s in parts:
        if l <= h:
            yield l, h, s


def _zero_split(a: int, b: int, lo: float, hi: float):
    """[lo, hi] split into where a * n + b == 0 (True) and not (False)."""
    if a == 0:
        yield lo, hi, b == 0
        return
    if b % a == 0 and lo <= -b // a <= hi:
        z = -b // a
        for l, h, s in ((lo, z - 1, False), (z, z, True), (z + 1, hi, False)):
            if l <= h:
                yield l, h, s
    else:
        yield lo, hi, False


def _comparison(var: Any):
    """(comparison op, lhs, rhs) when `var` is a comparison (scalar or elemwise), else None."""
    if var is None or var.owner is None:
        return None
    op = var.owner.op
    scalar_op = op.scalar_op if isinstance(op, Elemwise) else op
    if isinstance(scalar_op, (ps.LT, ps.LE, ps.GT, ps.GE, ps.EQ, ps.NEQ)):
        return scalar_op, var.owner.inputs[0], var.owner.inputs[1]
    return None


def _index_pieces(index: Any, buffer: Any) -> tuple[list[Piece], int] | None:
    """(`index` as pieces over ``n_steps >= 0``, ``K`` init rows) when `buffer` is a scan's state
    buffer (see :func:`_scan_buffer`) and the index is piecewise affine in its ``n_steps``; else None."""
    found = _scan_buffer(buffer)
    if found is None:
        return None
    n_steps, init_rows = found
    try:
        return _Evaluator(n_steps, buffer, init_rows).pieces(index, 0, math.inf), init_rows
    except (_NotAffine, RecursionError):
        return None


def rows_from_end(index: Any, buffer: Any) -> int | None:
    """`j` when ``buffer[index]`` is ``buffer[-j]`` for every number of steps, else None.

    `buffer` is a scan's mit_sot/sit_sot output (``n_steps + K`` rows), or such an
    output without its first rows (``output[s:]``, constant ``s <= K``).
    """
    found = _index_pieces(index, buffer)
    if found is None:
        return None
    pieces, init_rows = found
    js = set()
    for a, b, lo, hi in pieces:
        for l, h, nonneg in _sign_intervals(a, b, lo, hi):
            if l == h:  # one number of steps: one row, -(index) from the end if negative
                v = a * int(l) + b
                js.add(int(l) + init_rows - v if nonneg else -v)
            elif nonneg and a == 1:  # n + b counts from the front of n + K rows
                js.add(init_rows - b)
            elif not nonneg and a == 0:
                js.add(-b)
            else:
                return None
    if len(js) != 1:
        return None
    (j,) = js
    return j if j >= 1 else None


#: The most rows :func:`last_rows_bound` lets a symbolic read keep: a scan then keeps this many rows
#: even when it runs fewer steps (the rows that do not exist are zeros).
MAX_LAST_ROWS = 64


def last_rows_bound(index: Any, buffer: Any) -> int | None:
    """`J` when ``buffer[index]``, wherever it reads a row that exists, reads one of the last `J`
    rows, for every number of steps, but not always the same one (that is :func:`rows_from_end`);
    else None.

    ``res[k - 2]`` is the last row at ``k = 1`` and the one before it from ``k = 2`` on (and an
    IndexError at ``k = 0``): the translation then keeps 2 rows and reads ``last[2 - j]``, with ``j``
    computed, and checked to be a row that exists, at run time. A bound above
    :data:`MAX_LAST_ROWS` is refused.
    """
    found = _index_pieces(index, buffer)
    if found is None:
        return None
    pieces, init_rows = found
    seen: set[int] = set()
    for a, b, lo, hi in pieces:
        for l, h, nonneg in _sign_intervals(a, b, lo, hi):
            if not math.isinf(h) and h - l <= 4 * MAX_LAST_ROWS:
                for n in range(int(l), int(h) + 1):  # a few numbers of steps: row by row
                    v, rows = a * n + b, n + init_rows
                    j = rows - v if v >= 0 else -v
                    if 1 <= j <= rows:  # (the others are the run-time IndexError)
                        seen.add(j)
            elif nonneg and a == 1:  # n + b, from some n on: the (K - b)-th row from the end
                if init_rows - b >= 1:
                    seen.add(init_rows - b)
            elif not nonneg and a == 0:  # -j, from some n on
                seen.add(-b)
            else:
                return None
    if len(seen) < 2 or max(seen) > MAX_LAST_ROWS:
        return None
    return max(seen)


@node_rewriter([Subtensor])
def local_scan_last_row_index(fgraph: Any, node: Any) -> list | None:
    """``buffer[i]`` -> ``buffer[-j]`` when `i` always reads the `j`-th row from the end."""
    if len(node.op.idx_list) != 1 or isinstance(node.op.idx_list[0], slice) or len(node.inputs) != 2:
        return None
    if isinstance(node.inputs[1], Constant):
        return None
    j = rows_from_end(node.inputs[1], node.inputs[0])
    if j is None:
        return None
    return [node.op(node.inputs[0], np.asarray(-j, dtype=node.inputs[1].dtype))]


# After canonicalize/specialize (which make the merged index forms), before fusion.
optdb.register("local_scan_last_row_index", in2out(local_scan_last_row_index, name="local_scan_last_row_index"),
               TAG, position=2.5)
