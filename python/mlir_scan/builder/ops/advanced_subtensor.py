"""Integer-array ("advanced") indexing: ``x[idx]``, ``x[i, j]``, ``x[mask]`` and their writes.

NumPy's rules, as Theano follows them: the integer arrays of an index (and
the integer scalars beside them) broadcast together to a shape ``B``; the
result has ``B`` in place of the indexed dimensions when those are adjacent
in the index, and first otherwise; slices keep their dimensions. A boolean
mask of rank ``k`` stands for the ``k`` integer vectors of its ``nonzero()``
(:class:`MaskNonzero`, whose length is known at run time only). Negative
indices count from the end; an index out of bounds raises ``IndexError``
when the function is called (a build-time ``IndexError`` when both the
index and the dimension are constants), before anything is read or written.

An index list holds one entry per indexed dimension: ``("a",)`` for an
integer array or scalar (the next input) and ``("s", start, stop, step)``
for a slice, whose parts are ints, ``None`` or ``"v"`` (the next input) as
in :mod:`~mlir_scan.builder.ops.subtensor`.

:class:`AdvancedSubtensor` reads with one ``linalg.generic``;
:class:`AdvancedIncSubtensor` writes with a loop nest (``scf.for``) whose
outer loops run over ``B`` and inner loops over the slices, so repeated
indices accumulate in order (``inc``: ``np.add.at``; ``set``: the last write
wins). Both cost O(elements indexed), independent of the size of the indexed
dimension; the gradient of a read is a scatter-add of this kind into zeros.

Example::

    >>> from mlir_scan import tensor as T
    >>> W, idx = T.matrix("W"), T.lvector("idx")
    >>> W[idx].owner.op, W[idx].type
    (AdvancedSubtensor(('a',)), TensorType(float64, (None, None)))
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..emitter import Block
from ..graph import Apply, Constant, Op, TensorType, Variable, is_float, is_int, upcast
from .elemwise import broadcast_shapes
from .subtensor import _as_ssa, _normalize, read_L_op, write_L_op

__all__ = ["AdvancedSubtensor", "AdvancedIncSubtensor", "MaskNonzero"]

_FULL = ("s", None, None, None)


def _split_inputs(idx_list: tuple, inputs: Sequence) -> tuple[list, list]:
    """(slice inputs in order, one input per array entry) from the index inputs."""
    it = iter(inputs)
    slice_in, arrays = [], []
    for e in idx_list:
        if e[0] == "a":
            arrays.append(next(it))
        else:
            slice_in.extend(next(it) for v in e[1:] if v == "v")
    return slice_in, arrays


def _n_inputs(idx_list: tuple) -> int:
    return sum(1 if e[0] == "a" else sum(1 for v in e[1:] if v == "v") for e in idx_list)


def _array_positions(idx_list: tuple) -> list[int]:
    return [d for d, e in enumerate(idx_list) if e[0] == "a"]


def _adjacent(idx_list: tuple) -> bool:
    pos = _array_positions(idx_list)
    return pos == list(range(pos[0], pos[0] + len(pos))) if pos else True


def _out_layout(idx_list: tuple, ndim: int, b_rank: int) -> list[tuple[str, int]]:
    """The result's dimensions in order: ``("b", i)`` (broadcast dim i) or ``("x", d)`` (x's dim d)."""
    slices = [("x", d) for d in range(ndim) if d >= len(idx_list) or idx_list[d][0] == "s"]
    b_dims = [("b", i) for i in range(b_rank)]
    if not _adjacent(idx_list):
        return b_dims + slices
    first = _array_positions(idx_list)[0]
    before = [s for s in slices if s[1] < first]
    return before + b_dims + slices[len(before):]


def _static_slice_size(entry: tuple, size: int | None) -> int | None:
    if entry == _FULL:
        return size
    _, start, stop, step = entry
    if size is None or "v" in (start, stop, step):
        return None
    return len(range(*slice(start, stop, step).indices(size)))


def _check_arrays(idx_list: tuple, x: Variable, arrays: Sequence[Variable], what: str) -> tuple:
    """Types the index arrays; returns their broadcast shape (static)."""
    for d, a in zip(_array_positions(idx_list), arrays):
        if not is_int(a.dtype):
            raise IndexError(f"{what}: arrays used as indices must be of integer type, got {a.dtype} on axis {d}")
        if isinstance(a, Constant) and x.type.shape[d] is not None and a.data.size:
            n = x.type.shape[d]
            bad = a.data[(a.data < -n) | (a.data >= n)]
            if bad.size:
                raise IndexError(f"{what}: index {int(bad.flat[0])} is out of bounds for axis {d} with size {n}")
    try:
        return broadcast_shapes([a.type.shape for a in arrays])
    except ValueError as exc:
        raise IndexError(f"{what}: shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {', '.join(str(a.type.shape) for a in arrays)}") from exc


def _result_shape(idx_list: tuple, x: Variable, bshape: tuple) -> tuple:
    out = []
    for kind, k in _out_layout(idx_list, x.ndim, len(bshape)):
        if kind == "b":
            out.append(bshape[k])
        else:
            entry = idx_list[k] if k < len(idx_list) else _FULL
            out.append(_static_slice_size(entry, x.type.shape[k]))
    return tuple(out)


class _Indexing:
    """The run-time side of one advanced index: sizes, checks, and source indices."""

    def __init__(self, b: Block, x_ssa: str, xt: TensorType, idx_list: tuple,
                 slice_syms: list[tuple[str, str]], arrays: list[tuple[str, TensorType]],
                 bshape: tuple, what: str):
        self.x_ssa, self.xt, self.idx_list = x_ssa, xt, idx_list
        basic = tuple(_FULL if e[0] == "a" else e for e in idx_list)
        self.dims = _normalize(b, x_ssa, xt, basic, slice_syms, what)
        self.positions = _array_positions(idx_list)
        self.arrays = arrays
        self.bshape = bshape
        self.layout = _out_layout(idx_list, xt.ndim, len(bshape))
        self.b_sizes = self._broadcast_sizes(b, what)
        self.scalars: dict[int, str] = {}  # array entry -> its checked index (0-d arrays)
        self._check_bounds(b, what)
        self.out_sizes = [self.b_sizes[k] if kind == "b" else _as_ssa(b, self.dims[k].size)
                          for kind, k in self.layout]

    def _broadcast_sizes(self, b: Block, what: str) -> list[str]:
        rank = len(self.bshape)
        sizes = []
        for i, static in enumerate(self.bshape):
            cands = []
            for ssa, t in self.arrays:
                k = i - (rank - t.ndim)
                if k >= 0 and t.shape[k] != 1:
                    cands.append((ssa, t, k))
            if static is not None:
                ref = b.index(static)
            else:
                ssa, t, k = cands.pop(0)
                ref = b.dim(ssa, t, k)
            for ssa, t, k in cands:
                if t.shape[k] is None or static is None:
                    have = b.dim(ssa, t, k)
                    b.check(b.icmp("ne", have, ref),
                            f"{what}: shape mismatch: indexing arrays could not be broadcast together "
                            f"(size {{have}} != {{need}} along dimension {i})", have, ref, code=2)
            sizes.append(ref)
        return sizes

    def _check_bounds(self, b: Block, what: str) -> None:
        for j, (d, (ssa, t)) in enumerate(zip(self.positions, self.arrays)):
            n = b.dim(self.x_ssa, self.xt, d)
            message = f"{what}: index {{have}} is out of bounds for axis {d} with size {{need}}"
            if t.ndim == 0:
                k = b.to_index(ssa, t.dtype)
                zero = b.index(0)
                k = b.select(b.icmp("slt", k, zero), b.iop("addi", k, n), k, "index")
                bad = b.op(f"arith.ori {b.icmp('slt', k, zero)}, {b.icmp('sge', k, n)} : i1")
                b.check(bad, message, b.to_index(ssa, t.dtype), n, code=2)
                self.scalars[j] = k
                continue
            lo, hi = _min_max(b, ssa, t)
            n64 = b.from_index(n)
            neg_n = b.op(f"arith.subi {b.i64(0)}, {n64} : i64")
            too_low = b.icmp("slt", lo, neg_n, "i64")
            too_high = b.icmp("sge", hi, n64, "i64")
            bad = b.op(f"arith.ori {too_low}, {too_high} : i1")
            have = b.to_index(b.select(too_high, hi, lo, "i64"), "int64")
            b.check(bad, message, have, n, code=2)

    def array_indices(self, b: Block, b_ivs: Sequence[str]) -> dict[int, str]:
        """x dim -> the (wrapped) index the arrays give at broadcast position `b_ivs`."""
        out = {}
        rank = len(self.bshape)
        zero = b.index(0)
        for j, (d, (ssa, t)) in enumerate(zip(self.positions, self.arrays)):
            if j in self.scalars:
                out[d] = self.scalars[j]
                continue
            pos = [zero if t.shape[k] == 1 and self.bshape[k + rank - t.ndim] != 1 else b_ivs[k + rank - t.ndim]
                   for k in range(t.ndim)]
            v = b.op(f"tensor.extract {ssa}[{', '.join(pos)}] : {t.mlir}")
            k = b.to_index(v, t.dtype)
            n = b.dim(self.x_ssa, self.xt, d)
            out[d] = b.select(b.icmp("slt", k, zero), b.iop("addi", k, n), k, "index")
        return out

    def source(self, b: Block, out_ivs: Sequence[str], arr: dict[int, str]) -> list[str]:
        """The index into x of the result's element `out_ivs`."""
        by_dim = {k: iv for (kind, k), iv in zip(self.layout, out_ivs) if kind == "x"}
        idx = []
        for d, di in enumerate(self.dims):
            if d in arr:
                idx.append(arr[d])
            else:
                step = _as_ssa(b, di.step)
                idx.append(b.iop("addi", _as_ssa(b, di.offset), b.iop("muli", by_dim[d], step)))
        return idx


def _min_max(b: Block, ssa: str, t: TensorType) -> tuple[str, str]:
    """The smallest and largest element of the integer tensor `ssa`, as i64 (max/min of i64 when empty)."""

    def body(bb: Block, ivs: list[str], carried: list[str]) -> list[str]:
        v = bb.cast(bb.op(f"tensor.extract {ssa}[{', '.join(ivs)}] : {t.mlir}"), t.dtype, "int64")
        return [bb.op(f"arith.minsi {v}, {carried[0]} : i64"), bb.op(f"arith.maxsi {v}, {carried[1]} : i64")]

    inits = [(b.i64(np.iinfo(np.int64).max), "i64"), (b.i64(np.iinfo(np.int64).min), "i64")]
    lo, hi = for_nest(b, b.dims(ssa, t), inits, body)
    return lo, hi


def for_nest(b: Block, upper: Sequence[str], inits: Sequence[tuple[str, str]],
             body: Callable[[Block, list[str], list[str]], list[str]],
             at_depth: dict[int, Callable[[Block, list[str]], None]] | None = None) -> list[str]:
    """Nested ``scf.for`` loops from 0 to each of `upper`, carrying `inits` ((ssa, type) pairs).

    `body(block, ivs, carried)` returns the new carried values; ``at_depth[k]``
    (optional) runs in the loop body of depth `k` (after `k` loops) before the
    inner loops, with the ivs bound so far: values it computes there are
    loop-invariant for the inner loops.
    """
    at_depth = at_depth or {}

    def level(bb: Block, k: int, carried: list[str], ivs: list[str]) -> list[str]:
        if k in at_depth:
            at_depth[k](bb, ivs)
        if k == len(upper):
            return body(bb, ivs, carried)
        iv = bb.module.fresh("i")
        args = [bb.module.fresh("acc") for _ in carried]
        inner = bb.child(inherit=True)
        new = level(inner, k + 1, args, ivs + [iv])
        types = ", ".join(t for _, t in inits)
        inner.stmt(f"scf.yield {', '.join(new)} : {types}")
        res = bb.module.fresh("for")
        lhs = res if len(carried) == 1 else f"{res}:{len(carried)}"
        iters = ", ".join(f"{a} = {c}" for a, c in zip(args, carried))
        bb.stmt(f"{lhs} = scf.for {iv} = {bb.index(0)} to {upper[k]} step {bb.index(1)} "
                f"iter_args({iters}) -> ({types}) {{")
        bb.lines.extend(inner.lines)
        bb.stmt("}")
        return [res] if len(carried) == 1 else [f"{res}#{i}" for i in range(len(carried))]

    return level(b, 0, [s for s, _ in inits], [])


class _AdvancedOp(Op):
    __props__ = ("idx_list",)

    def __init__(self, idx_list: tuple):
        self.idx_list = tuple(tuple(e) for e in idx_list)
        if not any(e[0] == "a" for e in self.idx_list):
            raise ValueError(f"{type(self).__name__}: an index without arrays is basic indexing")

    def __str__(self) -> str:
        return f"{type(self).__name__}({', '.join(str(e) for e in self.idx_list)})"

    __repr__ = __str__

    def _parts(self, x: Variable, index_inputs: Sequence[Variable], what: str) -> tuple[list, list, tuple]:
        if len(index_inputs) != _n_inputs(self.idx_list):
            raise TypeError(f"{what}: wrong number of index inputs")
        if len(self.idx_list) > x.ndim:
            raise IndexError(f"{what}: too many indices for {x} of rank {x.ndim}")
        slice_in, arrays = _split_inputs(self.idx_list, index_inputs)
        for v in slice_in:
            if v.ndim != 0 or not is_int(v.dtype):
                raise IndexError(f"{what}: slice bounds must be integer scalars, got {v.type}")
        return slice_in, arrays, _check_arrays(self.idx_list, x, arrays, what)

    def _indexing(self, b: Block, node: Apply, inputs: list[str], first: int, what: str) -> _Indexing:
        x = node.inputs[0]
        slice_in, arrays = _split_inputs(self.idx_list, list(zip(inputs[first:], node.inputs[first:])))
        bshape = broadcast_shapes([v.type.shape for _, v in arrays])
        return _Indexing(b, inputs[0], x.type, self.idx_list, [(s, v.dtype) for s, v in slice_in],
                         [(s, v.type) for s, v in arrays], bshape, what)


class AdvancedSubtensor(_AdvancedOp):
    """``x[idx_list]`` with integer arrays (Theano's ``AdvancedSubtensor`` and ``AdvancedSubtensor1``)."""

    def make_node(self, x: Variable, *index_inputs: Variable) -> Apply:
        _, _, bshape = self._parts(x, index_inputs, "advanced subtensor")
        return Apply(self, [x, *index_inputs], [TensorType(x.dtype, _result_shape(self.idx_list, x, bshape))])

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        ix = self._indexing(b, node, inputs, 1, "advanced subtensor")
        out = node.outputs[0].type
        empty = b.empty(out, ix.out_sizes)
        b_out = [p for p, (kind, _) in enumerate(ix.layout) if kind == "b"]

        def body(bb: Block, args: list[str]) -> list[str]:
            ivs = [bb.op(f"linalg.index {p} : index") for p in range(out.ndim)]
            arr = ix.array_indices(bb, [ivs[p] for p in b_out])
            src = ix.source(bb, ivs, arr)
            return [bb.op(f"tensor.extract {inputs[0]}[{', '.join(src)}] : {ix.xt.mlir}")]

        ident = "(" + ", ".join(f"d{i}" for i in range(out.ndim)) + ")"
        return b.generic([], [(empty, out, ident)], ["parallel"] * out.ndim, body)

    def L_op(self, node, output_grads):
        return read_L_op(node, output_grads, AdvancedIncSubtensor(self.idx_list, False))


class AdvancedIncSubtensor(_AdvancedOp):
    """``set_subtensor``/``inc_subtensor`` of an advanced index: a new `x`.

    ``inc`` with repeated indices adds every contribution (``np.add.at``);
    ``set`` keeps the last value written, as NumPy's assignment does.
    """

    __props__ = ("idx_list", "set_instead_of_inc")

    def __init__(self, idx_list: tuple, set_instead_of_inc: bool):
        super().__init__(idx_list)
        self.set_instead_of_inc = bool(set_instead_of_inc)

    def __str__(self) -> str:
        kind = "Set" if self.set_instead_of_inc else "Inc"
        return f"AdvancedIncSubtensor{{{kind}}}({', '.join(str(e) for e in self.idx_list)})"

    __repr__ = __str__

    @property
    def _what(self) -> str:
        return "set_subtensor" if self.set_instead_of_inc else "inc_subtensor"

    def make_node(self, x: Variable, y: Variable, *index_inputs: Variable) -> Apply:
        what = self._what
        _, _, bshape = self._parts(x, index_inputs, what)
        target = _result_shape(self.idx_list, x, bshape)
        if y.ndim > len(target):
            raise ValueError(f"{what}: value of rank {y.ndim} does not fit a subtensor of rank {len(target)}")
        for i, d in enumerate(y.type.shape):
            t = target[len(target) - y.ndim + i]
            if d is not None and d != 1 and t is not None and d != t:
                raise ValueError(f"{what}: value of shape {y.type.shape} does not fit subtensor of shape {target}")
        if upcast(x.dtype, y.dtype) != x.dtype:
            raise TypeError(
                f"{what}: the value has dtype {y.dtype}, which cannot be stored in {x} ({x.dtype}) "
                f"without a downcast; cast it explicitly with .astype('{x.dtype}')")
        return Apply(self, [x, y, *index_inputs], [x.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        what = self._what
        x, y = node.inputs[:2]
        xt, yt = x.type, y.type
        xs, ys = inputs[:2]
        ix = self._indexing(b, node, [xs] + inputs[1:], 2, what)
        rank = len(ix.layout)
        for k, size in enumerate(yt.shape):
            if size == 1:
                continue
            p = k + rank - yt.ndim
            have = b.dim(ys, yt, k)
            b.check(b.icmp("ne", have, ix.out_sizes[p]),
                    f"{what}: the value has size {{have}} along dimension {k} but the subtensor has {{need}}",
                    have, ix.out_sizes[p])
        b_out = [p for p, (kind, _) in enumerate(ix.layout) if kind == "b"]
        x_out = [p for p, (kind, _) in enumerate(ix.layout) if kind == "x"]
        order = b_out + x_out  # broadcast dims outermost: array reads are hoisted out of the slices' loops
        arr: dict[int, str] = {}

        def hoist(bb: Block, ivs: list[str]) -> None:
            arr.update(ix.array_indices(bb, ivs))

        dt = xt.dtype
        add = "ori" if dt == "bool" else ("addf" if is_float(dt) else "addi")

        def body(bb: Block, ivs: list[str], carried: list[str]) -> list[str]:
            out_ivs = [None] * rank
            for p, iv in zip(order, ivs):
                out_ivs[p] = iv
            src = ", ".join(ix.source(bb, out_ivs, arr))
            if yt.ndim:
                zero = bb.index(0)
                ypos = [zero if s == 1 else out_ivs[k + rank - yt.ndim] for k, s in enumerate(yt.shape)]
                v = bb.op(f"tensor.extract {ys}[{', '.join(ypos)}] : {yt.mlir}")
            else:
                v = ys
            v = bb.cast(v, yt.dtype, dt)
            (acc,) = carried
            if not self.set_instead_of_inc:
                old = bb.op(f"tensor.extract {acc}[{src}] : {xt.mlir}")
                v = bb.op(f"arith.{add} {old}, {v} : {xt.mlir_elem}")
            return [bb.op(f"tensor.insert {v} into {acc}[{src}] : {xt.mlir}", "set")]

        upper = [ix.out_sizes[p] for p in order]
        return for_nest(b, upper, [(xs, xt.mlir)], body, at_depth={len(b_out): hoist})

    def L_op(self, node, output_grads):
        return write_L_op(node, output_grads, AdvancedSubtensor(self.idx_list),
                          AdvancedIncSubtensor(self.idx_list, True) if self.set_instead_of_inc else None)


class MaskNonzero(Op):
    """The int64 coordinates of the true elements of a boolean `mask` (NumPy's ``nonzero``), one vector per axis.

    With `like` (``make_node(mask, like)``), `mask` is an index of ``like``
    starting at dimension `axis`: its shape must equal those dimensions of
    `like` (NumPy's ``IndexError`` otherwise, at run time when they are not
    static).
    """

    __props__ = ("axis",)

    def __init__(self, axis: int | None = None):
        self.axis = axis

    def make_node(self, mask: Variable, *like: Variable) -> Apply:
        if mask.ndim == 0:
            raise IndexError("a boolean index must have at least one dimension")
        if len(like) != (0 if self.axis is None else 1):
            raise TypeError("MaskNonzero: `like` is given exactly when `axis` is")
        if like:
            shape = like[0].type.shape[self.axis: self.axis + mask.ndim]
            if len(shape) != mask.ndim:
                raise IndexError(f"too many indices: a boolean index of rank {mask.ndim} at dimension "
                                 f"{self.axis} of {like[0]} (rank {like[0].ndim})")
            for k, (m, s) in enumerate(zip(mask.type.shape, shape)):
                if m is not None and s is not None and m != s:
                    raise IndexError(f"boolean index did not match indexed array along axis {self.axis + k}; "
                                     f"size of axis is {s} but size of corresponding boolean axis is {m}")
        return Apply(self, [mask, *like], [TensorType("int64", (None,))] * mask.ndim)

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        mask = node.inputs[0]
        mt, ms = mask.type, inputs[0]
        if self.axis is not None:
            lt = node.inputs[1].type
            for k in range(mt.ndim):
                if mt.shape[k] is None or lt.shape[self.axis + k] is None:
                    have, need = b.dim(ms, mt, k), b.dim(inputs[1], lt, self.axis + k)
                    b.check(b.icmp("ne", have, need),
                            f"boolean index did not match indexed array along axis {self.axis + k}; size of "
                            "axis is {need} but size of corresponding boolean axis is {have}", have, need, code=2)

        def count(bb: Block, ivs: list[str], carried: list[str]) -> list[str]:
            m = bb.cast(bb.op(f"tensor.extract {ms}[{', '.join(ivs)}] : {mt.mlir}"), mt.dtype, "bool")
            return [bb.op(f"arith.addi {carried[0]}, {bb.cast(m, 'bool', 'int64')} : i64")]

        (total,) = for_nest(b, b.dims(ms, mt), [(b.i64(0), "i64")], count)
        n = b.to_index(total, "int64")
        vec = TensorType("int64", (None,))
        outs = [b.empty(vec, [n]) for _ in range(mt.ndim)]

        def body(bb: Block, ivs: list[str], carried: list[str]) -> list[str]:
            pos, *cols = carried
            m = bb.cast(bb.op(f"tensor.extract {ms}[{', '.join(ivs)}] : {mt.mlir}"), mt.dtype, "bool")
            then_b, else_b = bb.child(inherit=True), bb.child(inherit=True)
            new_cols = [then_b.op(f"tensor.insert {then_b.from_index(iv)} into {c}[{pos}] : {vec.mlir}")
                        for iv, c in zip(ivs, cols)]
            nxt = then_b.iop("addi", pos, then_b.index(1))
            types = ", ".join(["index"] + [vec.mlir] * len(cols))
            then_b.stmt(f"scf.yield {', '.join([nxt] + new_cols)} : {types}")
            else_b.stmt(f"scf.yield {', '.join(carried)} : {types}")
            res = bb.module.fresh("nz")
            bb.stmt(f"{res}:{len(carried)} = scf.if {m} -> ({types}) {{")
            bb.lines.extend(then_b.lines)
            bb.stmt("} else {")
            bb.lines.extend(else_b.lines)
            bb.stmt("}")
            return [f"{res}#{i}" for i in range(len(carried))]

        inits = [(b.index(0), "index")] + [(o, vec.mlir) for o in outs]
        return for_nest(b, b.dims(ms, mt), inits, body)[1:]

    def L_op(self, node, output_grads):
        return [None] * len(node.inputs)
