"""Basic indexing: ``x[i, a:b:c]``, ``set_subtensor`` and ``inc_subtensor``.

An index list holds one entry per indexed dimension: ``("i", k)`` for an
integer index and ``("s", start, stop, step)`` for a slice; each of `k`,
`start`, `stop`, `step` is an int (static), ``None`` (slice default) or
``"v"`` (the next symbolic scalar input). Python's rules apply: negative
indices count from the end, slices clip, negative steps go backwards. An
integer index out of bounds is an ``IndexError`` at build time when it is
static and a run-time error otherwise.

Example::

    >>> from mlir_scan import tensor as T
    >>> x, i = T.matrix("x"), T.iscalar("i")
    >>> y = x[i, ::-1]
    >>> y.owner.op, y.type
    (Subtensor(('i', 'v'), ('s', None, None, -1)), TensorType(float64, (None,)))
"""

from __future__ import annotations

from dataclasses import dataclass

from ..emitter import Block
from ..graph import DTYPES, Apply, Constant, Op, TensorType, Variable, is_float, is_int, upcast
import numpy as np

from .elemwise import broadcast_shapes, elemwise
from .shape import Shape_i

__all__ = ["Subtensor", "RowsReversed", "IncSubtensor", "make_index_list"]


def make_index_list(x: Variable, key) -> tuple[tuple, list[Variable], list]:
    """Parses a Python index into (index list, symbolic inputs, new-axis positions).

    Ellipsis expands to full slices; ``None`` (new axis) positions are
    returned separately (the caller inserts them with a dimshuffle).
    """

    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis (...)")
    if n_real > x.ndim:
        raise IndexError(f"too many indices for {x} of rank {x.ndim}: {n_real} given")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(k)
    idx_list = []
    inputs: list[Variable] = []
    newaxes = []
    out_pos = 0

    def scalar(v, what: str):
        if v is None:
            return None
        if isinstance(v, Variable):
            if v.ndim != 0:
                raise IndexError(
                    f"{what} must be an integer scalar; advanced indexing with a {v.ndim}-d "
                    f"tensor is not supported (got {v.type})"
                )
            if not is_int(v.dtype):
                raise IndexError(f"{what} must be an integer, got a {v.dtype} variable")
            if isinstance(v, Constant):
                return int(v.data)
            inputs.append(v)
            return "v"
        if isinstance(v, bool):
            raise IndexError(f"{what}: boolean indices are not supported")
        try:
            iv = int(v)
        except (TypeError, ValueError) as exc:
            raise IndexError(f"{what}: expected an integer, a symbolic integer scalar or a slice, got {v!r}") from exc
        if iv != v:
            raise IndexError(f"{what}: expected an integer, got {v!r}")
        return iv

    dim = 0
    for k in expanded:
        if k is None:
            newaxes.append(out_pos)
            out_pos += 1
            continue
        if isinstance(k, slice):
            entry = ("s", scalar(k.start, "slice start"), scalar(k.stop, "slice stop"), scalar(k.step, "slice step"))
            if entry[3] == 0:
                raise ValueError("slice step cannot be zero")
            idx_list.append(entry)
            out_pos += 1
        else:
            if isinstance(k, (list, tuple)) or (hasattr(k, "ndim") and getattr(k, "ndim", 0) > 0 and not isinstance(k, Variable)):
                raise IndexError("advanced (array) indexing is not supported; index with ints, scalars and slices")
            idx_list.append(("i", scalar(k, "index")))
        dim += 1
    return tuple(idx_list), inputs, newaxes


def _static_result_shape(idx_list: tuple, shape: tuple) -> tuple:
    out = []
    for d, size in enumerate(shape):
        if d >= len(idx_list):
            out.append(size)
            continue
        entry = idx_list[d]
        if entry[0] == "i":
            k = entry[1]
            if k != "v" and size is not None and not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for axis {d} with size {size}")
            continue
        _, start, stop, step = entry
        if size is not None and "v" not in (start, stop, step):
            out.append(len(range(*slice(start, stop, step).indices(size))))
        else:
            out.append(None)
    return tuple(out)


class _IndexOp(Op):
    __props__ = ("idx_list",)

    def __init__(self, idx_list: tuple):
        self.idx_list = tuple(idx_list)

    def __str__(self) -> str:
        return f"{type(self).__name__}({', '.join(str(e) for e in self.idx_list)})"

    __repr__ = __str__

    def n_symbolic(self) -> int:
        return sum(1 for e in self.idx_list for v in e[1:] if v == "v")


@dataclass
class _DimIndex:
    """One indexed dimension, normalized at run time."""

    kind: str  # "i" (integer), "s" (slice), "full"
    index: str | None = None  # "i": the index (index type)
    offset: "str | int | None" = None  # "s"/"full": the first element read
    size: "str | int | None" = None  # number of elements
    step: "str | int | None" = None  # int when static
    bad: str | None = None  # "i" checked at run time: i1, true when out of bounds


def _normalize(b: Block, x_ssa: str, xt: TensorType, idx_list: tuple, syms: list[tuple[str, str]],
               what: str) -> list[_DimIndex]:
    """Index values per dimension of `x`, with Python's rules and run-time bounds checks."""
    it = iter(syms)

    def get(v):
        if v is None or isinstance(v, int):
            return v
        ssa, dtype = next(it)
        return b.to_index(ssa, dtype)

    out = []
    for d in range(xt.ndim):
        size_static = xt.shape[d]
        if d >= len(idx_list):
            out.append(_DimIndex("full", offset=0, size=size_static if size_static is not None else b.dim(x_ssa, xt, d), step=1))
            continue
        entry = idx_list[d]
        n = b.dim(x_ssa, xt, d)
        if entry[0] == "i":
            k = get(entry[1])
            if isinstance(k, int):
                if size_static is not None:
                    out.append(_DimIndex("i", index=b.index(k % size_static if k < 0 else k)))
                    continue
                k = b.index(k)
            zero = b.index(0)
            neg = b.icmp("slt", k, zero)
            wrapped = b.iop("addi", k, n)
            k2 = b.select(neg, wrapped, k, "index")
            lo = b.icmp("slt", k2, zero)
            hi = b.icmp("sge", k2, n)
            bad = b.op(f"arith.ori {lo}, {hi} : i1")
            b.check(bad, f"{what}: index {{have}} is out of bounds for axis {d} with size {{need}}", k, n, code=2)
            # A failed check ends the call: past it the index is in bounds,
            # and reads at `rows - c` stay visible to scan-save-mem.
            out.append(_DimIndex("i", index=k2))
            continue
        _, start, stop, step = entry
        start, stop, step = get(start), get(stop), get(step)
        if size_static is not None and all(v is None or isinstance(v, int) for v in (start, stop, step)):
            s0, s1, st = slice(start, stop, step).indices(size_static)
            length = len(range(s0, s1, st))
            if length == 0:
                # Nothing is read, but MLIR rejects a static offset past the end even
                # for an empty slice (``v[1:]`` of a one-row ``v``): read at 0.
                s0, st = 0, 1
            elif length == 1 and st > 1:
                # One element, at s0: its step reads nothing else. Kept, a step over a
                # unit dimension made upstream's expand-strided-metadata assert on the
                # rank-reduced view (``x[i, 0, ::2]`` of an (n, 1, 1) tensor). (Negative
                # steps take the gather path, which has no view.)
                st = 1
            out.append(_DimIndex("s", offset=s0, size=length, step=st))
            continue
        if step is None or (isinstance(step, int) and step > 0):
            out.append(_positive_slice(b, n, start, stop, step or 1))
        elif isinstance(step, int):
            out.append(_negative_slice(b, n, start, stop, step))
        else:
            out.append(_symbolic_step_slice(b, n, start, stop, step, d, what))
    return out


def _clip(b: Block, v, n: str, lo_neg: str, hi: str) -> str:
    """Python's clipping of a slice bound: v < 0 -> max(v + n, lo_neg); else min(v, hi)."""
    v = b.index(v) if isinstance(v, int) else v
    zero = b.index(0)
    neg = b.icmp("slt", v, zero)
    wrapped = b.iop("maxsi", b.iop("addi", v, n), lo_neg)
    clipped = b.iop("minsi", v, hi)
    return b.select(neg, wrapped, clipped, "index")


def _any_bad(b: Block, dims: list[_DimIndex]) -> str | None:
    """True when some integer index is out of bounds (nothing may then be read or written)."""
    bad = None
    for di in dims:
        if di.bad is not None:
            bad = di.bad if bad is None else b.op(f"arith.ori {bad}, {di.bad} : i1")
    return bad


def _zero(b: Block, dtype: str) -> str:
    return b.const(0.0 if is_float(dtype) else (False if dtype == "bool" else 0), dtype)


def _positive_slice(b: Block, n: str, start, stop, step) -> _DimIndex:
    zero = b.index(0)
    s0 = zero if start is None else _clip(b, start, n, zero, n)
    s1 = n if stop is None else _clip(b, stop, n, zero, n)
    st = b.index(step) if isinstance(step, int) else step
    span = b.iop("subi", s1, s0)
    num = b.iop("addi", span, b.iop("subi", st, b.index(1)))
    length = b.iop("maxsi", b.iop("divsi", num, st), zero)
    return _DimIndex("s", offset=s0, size=length, step=step)


def _negative_slice(b: Block, n: str, start, stop, step) -> _DimIndex:
    m1 = b.index(-1)
    nm1 = b.iop("subi", n, b.index(1))
    s0 = nm1 if start is None else _clip(b, start, n, m1, nm1)
    s1 = m1 if stop is None else _clip(b, stop, n, m1, nm1)
    st = b.index(-step) if isinstance(step, int) else step
    span = b.iop("subi", s0, s1)
    num = b.iop("addi", span, b.iop("subi", st, b.index(1)))
    length = b.iop("maxsi", b.iop("divsi", num, st), b.index(0))
    return _DimIndex("s", offset=s0, size=length, step=step)


def _symbolic_step_slice(b: Block, n: str, start, stop, step: str, d: int, what: str) -> _DimIndex:
    zero = b.index(0)
    is_zero = b.icmp("eq", step, zero)
    b.check(is_zero, f"{what}: slice step cannot be zero (axis {d})", code=3)
    safe = b.select(is_zero, b.index(1), step, "index")
    pos = _positive_slice(b, n, start, stop, safe)
    neg_step = b.iop("subi", zero, safe)
    neg = _negative_slice(b, n, start, stop, neg_step)
    is_pos = b.icmp("sgt", safe, zero)
    offset = b.select(is_pos, pos.offset, neg.offset, "index")
    size = b.select(is_pos, pos.size, neg.size, "index")
    size = b.select(is_zero, zero, size, "index")
    return _DimIndex("s", offset=offset, size=size, step=safe)


def _mixed(b: Block, v) -> str:
    """An offset/size/stride operand: a literal for static ints, an SSA value otherwise."""
    return str(v) if isinstance(v, int) else v


def _as_ssa(b: Block, v) -> str:
    return b.index(v) if isinstance(v, int) else v


def _result_type(xt: TensorType, dims: list[_DimIndex]) -> TensorType:
    shape = []
    for di in dims:
        if di.kind == "i":
            continue
        shape.append(di.size if isinstance(di.size, int) else None)
    return TensorType(xt.dtype, tuple(shape))


def _positive_static(dims: list[_DimIndex]) -> bool:
    return all(di.kind == "i" or (isinstance(di.step, int) and di.step > 0) for di in dims)


def _slice_operands(b: Block, dims: list[_DimIndex]) -> tuple[str, str, str]:
    offs, sizes, strides = [], [], []
    for di in dims:
        if di.kind == "i":
            offs.append(di.index)
            sizes.append("1")
            strides.append("1")
        else:
            offs.append(_mixed(b, di.offset))
            sizes.append(_mixed(b, di.size))
            strides.append(_mixed(b, di.step))
    return ", ".join(offs), ", ".join(sizes), ", ".join(strides)


def _unreduced_groups(dims: list[_DimIndex], rt: TensorType) -> str | None:
    """The reassociation (``[[0, 1], [2]]``) folding the indexed dimensions of a
    slice into its kept ones, where a rank-reducing slice would be ambiguous, else None.

    A rank-reducing ``extract_slice``/``insert_slice`` drops every indexed
    dimension (size 1); when a kept dimension also has static size 1, which
    unit dimensions were dropped is a guess, and with non-unit strides the
    bufferized ``memref.subview`` fails to make it (an assertion in
    ``SubViewOp::getDroppedDims``). Those slices are taken at full rank and
    collapsed (read) or expanded (written) instead. Indexed dimensions join the
    following kept one; trailing ones the last.
    """
    if not any(di.kind == "i" for di in dims) or 1 not in rt.shape:
        return None
    groups: list[list[int]] = []
    pending: list[int] = []
    for d, di in enumerate(dims):
        pending.append(d)
        if di.kind != "i":
            groups.append(pending)
            pending = []
    groups[-1].extend(pending)
    return "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"


def _full_rank_type(xt: TensorType, dims: list[_DimIndex]) -> TensorType:
    """The type of a slice with its indexed dimensions kept (size 1)."""
    return TensorType(xt.dtype, tuple(1 if di.kind == "i" else (di.size if isinstance(di.size, int) else None)
                                      for di in dims))


def _extract_slice(b: Block, x_ssa: str, xt: TensorType, dims: list[_DimIndex], rt: TensorType) -> str:
    """``x[dims]`` of positive steps as a ``tensor.extract_slice`` of type `rt`."""
    offs, sizes, strides = _slice_operands(b, dims)
    groups = _unreduced_groups(dims, rt)
    if groups is None:
        return b.op(f"tensor.extract_slice {x_ssa}[{offs}] [{sizes}] [{strides}] : {xt.mlir} to {rt.mlir}", "sub")
    full = _full_rank_type(xt, dims)
    sub = b.op(f"tensor.extract_slice {x_ssa}[{offs}] [{sizes}] [{strides}] : {xt.mlir} to {full.mlir}", "sub")
    return b.op(f"tensor.collapse_shape {sub} {groups} : {full.mlir} into {rt.mlir}")


def _insert_slice(b: Block, val: str, x_ssa: str, xt: TensorType, dims: list[_DimIndex], rt: TensorType) -> str:
    """`val` (of type `rt`) written into ``x[dims]`` of positive steps, a ``tensor.insert_slice``."""
    offs, sizes, strides = _slice_operands(b, dims)
    groups = _unreduced_groups(dims, rt)
    if groups is not None:
        full = _full_rank_type(xt, dims)
        val = b.op(f"tensor.expand_shape {val} {groups} output_shape [{sizes}] : {rt.mlir} into {full.mlir}")
        rt = full
    return b.op(f"tensor.insert_slice {val} into {x_ssa}[{offs}] [{sizes}] [{strides}] : {rt.mlir} into {xt.mlir}",
                "set")


def _gather(b: Block, x_ssa: str, xt: TensorType, dims: list[_DimIndex], out: TensorType,
            reverse: dict[int, str] | None = None) -> str:
    """``out[j...] = x[offset + j * step ...]`` for any steps, as a ``linalg.generic``.

    With `reverse`, output dimension `p` reads ``size - 1 - j`` instead of
    ``j`` when the i1 ``reverse[p]`` is true (used to flip a slice).
    """
    out_dims = [_as_ssa(b, di.size) for di in dims if di.kind != "i"]
    empty = b.empty(out, out_dims)
    steps = {d: _as_ssa(b, di.step) for d, di in enumerate(dims) if di.kind != "i"}
    offsets = {d: _as_ssa(b, di.offset) for d, di in enumerate(dims) if di.kind != "i"}

    def body(bb: Block, args: list[str]) -> list[str]:
        idx = []
        p = 0
        for d, di in enumerate(dims):
            if di.kind == "i":
                idx.append(di.index)
                continue
            j = bb.op(f"linalg.index {p} : index")
            if reverse and p in reverse:
                last = bb.iop("subi", out_dims[p], bb.index(1))
                flipped = bb.iop("subi", last, j)
                j = bb.select(reverse[p], flipped, j, "index")
            src = bb.iop("addi", offsets[d], bb.iop("muli", j, steps[d]))
            idx.append(src)
            p += 1
        return [bb.op(f"tensor.extract {x_ssa}[{', '.join(idx)}] : {xt.mlir}")]

    ident = "(" + ", ".join(f"d{i}" for i in range(out.ndim)) + ")"
    return b.generic([], [(empty, out, ident)], ["parallel"] * out.ndim, body)[0]


class Subtensor(_IndexOp):
    """``x[idx_list]`` (basic indexing)."""

    def make_node(self, x: Variable, *syms: Variable) -> Apply:
        if len(syms) != self.n_symbolic():
            raise TypeError("Subtensor: wrong number of symbolic indices")
        if len(self.idx_list) > x.ndim:
            raise IndexError(f"too many indices for {x} of rank {x.ndim}")
        shape = _static_result_shape(self.idx_list, x.type.shape)
        return Apply(self, [x, *syms], [TensorType(x.dtype, shape)])

    def infer_shape(self, node, input_shapes):
        out = node.outputs[0]
        # Slices of unknown length: read the result's size at run time.
        dims = []
        k = 0
        xs = input_shapes[0]
        for d in range(node.inputs[0].ndim):
            if d < len(self.idx_list):
                entry = self.idx_list[d]
                if entry[0] == "i":
                    continue
                full = entry[1:] == (None, None, None)
                dims.append(xs[d] if full else (out.type.shape[k] if out.type.shape[k] is not None else Shape_i(k)(out)))
            else:
                dims.append(xs[d])
            k += 1
        return [tuple(dims)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        xt = x.type
        syms = [(s, v.dtype) for s, v in zip(inputs[1:], node.inputs[1:])]
        dims = _normalize(b, inputs[0], xt, self.idx_list, syms, "subtensor")
        out = node.outputs[0].type
        rt = _result_type(xt, dims)
        bad = _any_bad(b, dims)
        if all(di.kind == "i" for di in dims):
            idx = ", ".join(di.index for di in dims)

            def read(bb: Block) -> str:
                return bb.op(f"tensor.extract {inputs[0]}[{idx}] : {xt.mlir}")

            if bad is None:
                return [read(b)]
            return [b.if_else(bad, lambda bb: _zero(bb, xt.dtype), read, xt.mlir_elem)]

        def read_slice(bb: Block) -> str:
            if 0 in xt.shape:
                # A statically empty tensor has only empty slices (MLIR rejects any
                # extract_slice of it, even at offset 0).
                return bb.empty(rt, [_as_ssa(bb, di.size) for di in dims if di.kind != "i"])
            if _positive_static(dims):
                return _extract_slice(bb, inputs[0], xt, dims, rt)
            return _gather(bb, inputs[0], xt, dims, rt)

        if bad is None:
            r = read_slice(b)
        else:
            # An index out of bounds: zeros of the slice's shape, nothing is read.
            sizes = [_as_ssa(b, di.size) for di in dims if di.kind != "i"]
            r = b.if_else(bad, lambda bb: bb.filled(rt, sizes, _zero(bb, xt.dtype)), read_slice, rt.mlir)
        return [b.tensor_cast(r, rt, out)]

    def L_op(self, node, output_grads):
        return read_L_op(node, output_grads, IncSubtensor(self.idx_list, False))


class RowsReversed(Subtensor):
    """``x[::-1]`` as a view: a slice of stride -1 over the leading axis, not a copy.

    For operands that are only read, such as the stacked rows a scan's gradient
    pairs with the rows of its backward loop (which run backwards in time): the
    contraction reads them in place. Same value and gradient as ``x[::-1]``.
    """

    def __init__(self):
        super().__init__((("s", None, None, -1),))

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        xt = node.inputs[0].type
        if xt.ndim == 0 or 0 in xt.shape:
            return super().emit(b, node, inputs)
        out = node.outputs[0].type
        n = b.dim(inputs[0], xt, 0)
        # (the offset of an empty view is 0, not -1)
        last = b.iop("maxsi", b.iop("subi", n, b.index(1)), b.index(0))
        sizes = [str(d) if d is not None else b.dim(inputs[0], xt, i) for i, d in enumerate(xt.shape)]
        offs = ", ".join([last] + ["0"] * (xt.ndim - 1))
        strides = ", ".join(["-1"] + ["1"] * (xt.ndim - 1))
        rt = TensorType(xt.dtype, xt.shape)
        r = b.op(f"tensor.extract_slice {inputs[0]}[{offs}] [{', '.join(sizes)}] [{strides}] : "
                 f"{xt.mlir} to {rt.mlir}", "rev")
        return [b.tensor_cast(r, rt, out)]


class IncSubtensor(_IndexOp):
    """``set_subtensor(x[idx], y)`` / ``inc_subtensor(x[idx], y)``: a new `x`."""

    __props__ = ("idx_list", "set_instead_of_inc")

    def __init__(self, idx_list: tuple, set_instead_of_inc: bool):
        super().__init__(idx_list)
        self.set_instead_of_inc = set_instead_of_inc

    def __str__(self) -> str:
        kind = "Set" if self.set_instead_of_inc else "Inc"
        return f"IncSubtensor{{{kind}}}({', '.join(str(e) for e in self.idx_list)})"

    __repr__ = __str__

    def make_node(self, x: Variable, y: Variable, *syms: Variable) -> Apply:
        what = "set_subtensor" if self.set_instead_of_inc else "inc_subtensor"
        target = _static_result_shape(self.idx_list, x.type.shape)
        if y.ndim > len(target):
            raise ValueError(f"{what}: value of rank {y.ndim} does not fit a subtensor of rank {len(target)}")
        broadcast_shapes([y.type.shape, target], f"{what}: value and subtensor ")
        for i, d in enumerate(y.type.shape):
            t = target[len(target) - y.ndim + i]
            if d is not None and d != 1 and t is not None and d != t:
                raise ValueError(f"{what}: value of shape {y.type.shape} does not fit subtensor of shape {target}")
        if upcast(x.dtype, y.dtype) != x.dtype:
            raise TypeError(
                f"{what}: the value has dtype {y.dtype}, which cannot be stored in {x} ({x.dtype}) "
                f"without a downcast; cast it explicitly with .astype('{x.dtype}')"
            )
        return Apply(self, [x, y, *syms], [x.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x, y = node.inputs[:2]
        xt, yt = x.type, y.type
        xs, ys = inputs[:2]
        what = "set_subtensor" if self.set_instead_of_inc else "inc_subtensor"
        syms = [(s, v.dtype) for s, v in zip(inputs[2:], node.inputs[2:])]
        dims = _normalize(b, xs, xt, self.idx_list, syms, what)
        dt = xt.dtype
        t = DTYPES[dt]
        add = "ori" if dt == "bool" else ("addf" if is_float(dt) else "addi")

        # A failed check (an index out of bounds, a value of the wrong shape)
        # ends the call: past the checks, the write is in bounds.
        if all(di.kind == "i" for di in dims):
            idx = ", ".join(di.index for di in dims)
            if yt.ndim:
                zeros = ", ".join(b.index(0) for _ in range(yt.ndim))
                v = b.op(f"tensor.extract {ys}[{zeros}] : {yt.mlir}")
            else:
                v = ys
            v = b.cast(v, yt.dtype, dt)

            def write(bb: Block) -> str:
                w = v
                if not self.set_instead_of_inc:
                    old = bb.op(f"tensor.extract {xs}[{idx}] : {xt.mlir}")
                    w = bb.op(f"arith.{add} {old}, {v} : {t}")
                return bb.op(f"tensor.insert {w} into {xs}[{idx}] : {xt.mlir}", "set")

            return [write(b)]

        rt = _result_type(xt, dims)
        sizes = [_as_ssa(b, di.size) for di in dims if di.kind != "i"]
        for k, size in enumerate(yt.shape):
            if size == 1:
                continue
            p = k + rt.ndim - yt.ndim
            have = b.dim(ys, yt, k)
            bad = b.icmp("ne", have, sizes[p])
            b.check(bad, f"{what}: the value has size {{have}} along dimension {k} but the subtensor has {{need}}",
                    have, sizes[p])

        body_b = b
        # Positive strides for the write; flipped dimensions get a reversed value.
        pos_dims, reverse = [], {}
        p = 0
        for di in dims:
            if di.kind == "i":
                pos_dims.append(di)
                continue
            if isinstance(di.step, int) and di.step > 0:
                pos_dims.append(di)
            else:
                bb = body_b
                step = _as_ssa(bb, di.step)
                size = _as_ssa(bb, di.size)
                zero = bb.index(0)
                neg = bb.icmp("slt", step, zero)
                last = bb.iop("subi", size, bb.index(1))
                low = bb.iop("addi", _as_ssa(bb, di.offset), bb.iop("muli", last, step))
                empty_sel = bb.icmp("eq", size, zero)
                low = bb.select(empty_sel, _as_ssa(bb, di.offset), low, "index")
                offset = bb.select(neg, low, _as_ssa(bb, di.offset), "index")
                abs_step = bb.select(neg, bb.iop("subi", zero, step), step, "index")
                abs_step = bb.iop("maxsi", abs_step, bb.index(1))
                pos_dims.append(_DimIndex("s", offset=offset, size=di.size, step=abs_step))
                reverse[p] = neg
            p += 1

        # The value, broadcast to the subtensor's shape and cast to x's dtype.
        if yt.shape == rt.shape and yt.dtype == dt and not reverse:
            val = ys
        else:
            src = yt.dtype
            val = body_b.elementwise(rt, [(ys, yt)], lambda bb, args: bb.cast(args[0], src, dt), out_dims=sizes)
        if reverse:
            full = [_DimIndex("full", offset=0, size=s, step=1) for s in sizes]
            val = _gather(body_b, val, rt, full, rt, reverse=reverse)
        slice_t = _result_type(xt, pos_dims)
        val = body_b.tensor_cast(val, rt, slice_t)
        if not self.set_instead_of_inc:
            old = _extract_slice(body_b, xs, xt, pos_dims, slice_t)
            val = body_b.elementwise(slice_t, [(old, slice_t), (val, slice_t)],
                                     lambda bb, args: bb.op(f"arith.{add} {args[0]}, {args[1]} : {t}"))
        return [_insert_slice(b, val, xs, xt, pos_dims, slice_t)]

    def L_op(self, node, output_grads):
        return write_L_op(node, output_grads, Subtensor(self.idx_list),
                          IncSubtensor(self.idx_list, True) if self.set_instead_of_inc else None)


def read_L_op(node: Apply, output_grads: list, add_at: Op) -> list:
    """The gradient of a read ``x[idx]`` (inputs ``x, *idx``): zeros of x's shape
    with the gradient added at the indexed part by `add_at` (the matching inc op)."""
    (g,) = output_grads
    x, idx = node.inputs[0], node.inputs[1:]
    if g is None or not is_float(x.dtype):
        return [None] * len(node.inputs)
    return [add_at(_zeros_of(x), g, *idx)] + [None] * len(idx)


def write_L_op(node: Apply, output_grads: list, read: Op, overwrite: Op | None) -> list:
    """The gradient of a write ``x[idx] = y`` / ``x[idx] += y`` (inputs ``x, y, *idx``).

    `read` reads ``g[idx]`` (y's gradient: y was broadcast to the subtensor, the
    caller sums it back to y's shape); `overwrite` (``set`` only) zeroes the
    overwritten part of x's gradient, which has no influence.
    """
    (g,) = output_grads
    y, idx = node.inputs[1], node.inputs[2:]
    if g is None:
        return [None] * len(node.inputs)
    gx = g if overwrite is None else overwrite(g, Constant(np.asarray(0, g.dtype)), *idx)
    gy = read(g, *idx) if is_float(y.dtype) else None
    return [gx, gy] + [None] * len(idx)


def _zeros_of(x: Variable) -> Variable:
    """Zeros of `x`'s shape and dtype (a select on a false constant: no values of x are used)."""
    zero = Constant(np.asarray(0, x.dtype))
    return elemwise("switch", Constant(np.asarray(False)), x, zero)
