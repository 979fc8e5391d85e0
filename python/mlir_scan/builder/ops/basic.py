"""Structural tensor ops: alloc, arange, dot, reductions, dimshuffle, join, reshape.

Example::

    >>> from mlir_scan import tensor as T
    >>> A, x = T.matrix("A"), T.vector("x")
    >>> T.dot(A, x).owner.op, T.dot(x, A).type, T.dot(x, x).type
    (Dot, TensorType(float64, (None,)), TensorType(float64, ()))
    >>> A.sum(axis=0).owner.op
    Reduce(sum, (0,))
"""

from __future__ import annotations

import numpy as np

from ..emitter import Block
from ..graph import DTYPES, Apply, Constant, Op, TensorType, Variable, is_float, upcast
from .elemwise import _nobool, broadcast_shapes, cast, elemwise
from .shape import sizes_read_from_value, symbolic_shape
from .subtensor import Subtensor

__all__ = ["Alloc", "Arange", "Dot", "AddDotT", "Reduce", "DimShuffle", "Join", "Reshape", "Copy"]


class Alloc(Op):
    """A tensor of `shape` filled with (a broadcast of) a value.

    `shape` holds ints and ``None`` for the dimensions given as inputs.
    """

    __props__ = ("dtype", "shape")

    def __init__(self, dtype: str, shape: tuple):
        self.dtype, self.shape = dtype, tuple(shape)

    def make_node(self, value: Variable, *dims: Variable) -> Apply:
        if len(dims) != sum(d is None for d in self.shape):
            raise TypeError("Alloc: one input per symbolic dimension")
        if value.ndim > len(self.shape):
            raise ValueError(f"alloc: value of rank {value.ndim} does not fit shape of rank {len(self.shape)}")
        broadcast_shapes([value.type.shape, self.shape], "alloc: ")
        for i, d in enumerate(value.type.shape):
            target = self.shape[len(self.shape) - value.ndim + i]
            if d is not None and d != 1 and target is not None and d != target:
                raise ValueError(f"alloc: value of shape {value.type.shape} cannot fill shape {self.shape}")
        return Apply(self, [value, *dims], [TensorType(self.dtype, self.shape)])

    def infer_shape(self, node, input_shapes):
        it = iter(node.inputs[1:])
        return [tuple(s if s is not None else next(it) for s in self.shape)]

    #: A negative size fails the call: a shape query keeps that check.
    checks_shape = True
    infer_checked_shape = staticmethod(lambda node, input_shapes: sizes_read_from_value(node))
    #: An element-wise consumer may read the value broadcast instead of the
    #: filled tensor (Elemwise.emit; PyTensor's ``local_elemwise_alloc``).
    fills_by_broadcast = True

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        value = node.inputs[0]
        dyn = b.index_dims(inputs[1:], [v.dtype for v in node.inputs[1:]], "alloc")
        it = iter(dyn)
        dims = [b.index(s) if s is not None else next(it) for s in self.shape]
        out = node.outputs[0].type
        if out.ndim == 0:
            return [b.cast(inputs[0], value.dtype, self.dtype)]
        if value.ndim == 0:
            return [b.filled(out, dims, b.cast(inputs[0], value.dtype, self.dtype))]
        src = value.dtype

        def body(bb: Block, args: list[str]) -> str:
            return bb.cast(args[0], src, out.dtype)

        return [b.elementwise(out, [(inputs[0], value.type)], body, out_dims=dims, what="alloc")]

    def L_op(self, node, output_grads):
        # The broadcast value gets the sum over the broadcast dimensions (done by conform).
        (g,) = output_grads
        return [g] + [None] * (len(node.inputs) - 1)


class Arange(Op):
    """``arange(start, stop, step)`` of `dtype`."""

    __props__ = ("dtype",)

    def __init__(self, dtype: str):
        self.dtype = dtype

    def make_node(self, start: Variable, stop: Variable, step: Variable) -> Apply:
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if v.ndim != 0:
                raise TypeError(f"arange: {name} must be a scalar, got {v.type}")
        length = None
        if all(isinstance(v, Constant) for v in (start, stop, step)):
            if step.data == 0:
                raise ValueError("arange: step must not be zero")
            length = len(np.arange(start.data, stop.data, step.data))
        return Apply(self, [start, stop, step], [TensorType(self.dtype, (length,))])

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        dt = self.dtype
        start, stop, step = (b.cast(s, v.dtype, dt) for s, v in zip(inputs, node.inputs))
        t = DTYPES[dt]
        out = node.outputs[0].type
        if out.shape[0] is not None:
            length = b.index(out.shape[0])
        elif is_float(dt):
            zero = b.const(0.0, dt)
            span = b.op(f"arith.subf {stop}, {start} : {t}")
            q = b.op(f"arith.divf {span}, {step} : {t}")
            c = b.op(f"math.ceil {q} : {t}")
            # NumPy's error for a length that is NaN or infinite (a NaN or infinite bound or
            # step, or an infinite span): the length is not a number.
            inf = b.const(float("inf"), dt)
            no_length = b.op(f"arith.cmpf ueq, {b.op(f'math.absf {c} : {t}')}, {inf} : {t}")
            c = b.op(f"arith.maximumf {c}, {zero} : {t}")
            is_zero = b.op(f"arith.cmpf oeq, {step}, {zero} : {t}")
            c = b.select(is_zero, zero, c, t)
            c = b.select(no_length, zero, c, t)
            n = b.op(f"arith.fptosi {c} : {t} to i64")
            length = b.to_index(n, "int64")
            b.check(is_zero, "arange: step must not be zero")
            b.check(b.op(f"arith.andi {no_length}, {b.not_(is_zero)} : i1"),
                    "arange: cannot compute length (a bound or the step is NaN or infinite)")
        else:
            s0, s1, st = (b.cast(s, dt, "int64") for s in (start, stop, step))
            z, one = b.i64(0), b.i64(1)
            pos = b.op(f"arith.cmpi sgt, {st}, {z} : i64")
            is_zero = b.op(f"arith.cmpi eq, {st}, {z} : i64")
            # step > 0: ceil((stop - start) / step); step < 0: ceil((start - stop) / -step)
            span_p = b.op(f"arith.subi {s1}, {s0} : i64")
            span_n = b.op(f"arith.subi {s0}, {s1} : i64")
            span = b.select(pos, span_p, span_n, "i64")
            neg_st = b.op(f"arith.subi {z}, {st} : i64")
            den = b.select(pos, st, neg_st, "i64")
            den = b.select(is_zero, one, den, "i64")
            num = b.op(f"arith.addi {span}, {den} : i64")
            num = b.op(f"arith.subi {num}, {one} : i64")
            n = b.op(f"arith.divsi {num}, {den} : i64")
            n = b.op(f"arith.maxsi {n}, {z} : i64")
            n = b.select(is_zero, z, n, "i64")
            length = b.to_index(n, "int64")
            b.check(is_zero, "arange: step must not be zero")

        def body(bb: Block, args: list[str]) -> list[str]:
            i = bb.op("linalg.index 0 : index")
            if is_float(dt):
                i64 = bb.from_index(i)
                fi = bb.op(f"arith.sitofp {i64} : i64 to {t}")
                prod = bb.op(f"arith.mulf {fi}, {step} : {t}")
                return [bb.op(f"arith.addf {start}, {prod} : {t}")]
            ii = bb.from_index(i, dt)
            prod = bb.op(f"arith.muli {ii}, {step} : {t}")
            return [bb.op(f"arith.addi {start}, {prod} : {t}")]

        empty = b.empty(out, [length])
        return b.generic([], [(empty, out, "(d0)")], ["parallel"], body)

    def L_op(self, node, output_grads):
        # out[i] = start + i * step
        (g,) = output_grads
        if g is None or not is_float(self.dtype):
            return [None, None, None]
        out = node.outputs[0]
        zero, one = Constant(np.asarray(0, "int64")), Constant(np.asarray(1, "int64"))
        n = symbolic_shape(out)[0]
        n = Constant(np.asarray(n, "int64")) if isinstance(n, int) else n
        i = cast(Arange("int64")(zero, n, one), self.dtype)
        return [Reduce("sum", (0,))(g), None, Reduce("sum", (0,))(elemwise("mul", g, i))]


class Dot(Op):
    """NumPy's ``dot`` for operands of rank 1 or 2 (and N-D x 1-D/2-D)."""

    def make_node(self, x: Variable, y: Variable) -> Apply:
        if x.ndim == 0 or y.ndim == 0:
            raise TypeError("Dot: use element-wise multiplication for scalars")
        kx = x.type.shape[-1]
        ky = y.type.shape[0] if y.ndim == 1 else y.type.shape[-2]
        if kx is not None and ky is not None and kx != ky:
            raise ValueError(
                f"dot: shapes {x.type.shape} and {y.type.shape} not aligned: "
                f"{kx} (dim {x.ndim - 1}) != {ky} (dim {max(y.ndim - 2, 0)})"
            )
        dtype = _nobool(upcast(x.dtype, y.dtype))
        if y.ndim == 1:
            shape = x.type.shape[:-1]
        else:
            shape = x.type.shape[:-1] + y.type.shape[:-2] + y.type.shape[-1:]
        return Apply(self, [x, y], [TensorType(dtype, shape)])

    def infer_shape(self, node, input_shapes):
        sx, sy = input_shapes
        y = node.inputs[1]
        if y.ndim == 1:
            return [tuple(sx[:-1])]
        return [tuple(sx[:-1]) + tuple(sy[:-2]) + tuple(sy[-1:])]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x, y = node.inputs
        out = node.outputs[0].type
        dt = out.dtype
        xs, ys = inputs
        xt, yt = x.type, y.type
        if x.dtype != dt:
            xs, xt = _cast_tensor(b, xs, xt, dt), xt.with_dtype(dt)
        if y.dtype != dt:
            ys, yt = _cast_tensor(b, ys, yt, dt), yt.with_dtype(dt)
        zero = b.const(0, dt) if not is_float(dt) else b.const(0.0, dt)
        # The contracted dimensions must agree at run time: a mismatch ends
        # the call (scan.check) before the contraction could read out of bounds.
        kx = b.dim(xs, xt, xt.ndim - 1)
        ky = b.dim(ys, yt, 0 if yt.ndim == 1 else yt.ndim - 2)
        bad = b.icmp("ne", kx, ky)
        b.check(bad, "dot: shapes not aligned: {have} (last dim of the first operand) != {need}", kx, ky)
        dims = []
        for d in range(xt.ndim - 1):
            dims.append(b.dim(xs, xt, d))
        if yt.ndim >= 2:
            for d in range(yt.ndim - 2):
                dims.append(b.dim(ys, yt, d))
            dims.append(b.dim(ys, yt, yt.ndim - 1))
        if out.ndim == 0:
            acc_t = f"tensor<{DTYPES[dt]}>"
            empty = b.op(f"tensor.empty() : {acc_t}")
            init = b.op(f"linalg.fill ins({zero} : {DTYPES[dt]}) outs({empty} : {acc_t}) -> {acc_t}")
        else:
            init = b.filled(out, dims, zero)
            acc_t = out.mlir
        if xt.ndim == 1 and yt.ndim == 1:
            r = b.op(f"linalg.dot ins({xs}, {ys} : {xt.mlir}, {yt.mlir}) outs({init} : {acc_t}) -> {acc_t}")
        elif xt.ndim == 2 and yt.ndim == 1:
            r = b.op(f"linalg.matvec ins({xs}, {ys} : {xt.mlir}, {yt.mlir}) outs({init} : {acc_t}) -> {acc_t}")
        elif xt.ndim == 1 and yt.ndim == 2:
            r = b.op(f"linalg.vecmat ins({xs}, {ys} : {xt.mlir}, {yt.mlir}) outs({init} : {acc_t}) -> {acc_t}")
        elif xt.ndim == 2 and yt.ndim == 2 and _transposed_source(b, x, dt) is not None:
            # x.T @ y: a contraction reading x's source in place (no transposed copy).
            src, src_t = _transposed_source(b, x, dt)
            r = b.generic([(src, src_t, "(d2, d0)"), (ys, yt, "(d2, d1)")], [(init, out, "(d0, d1)")],
                          ["parallel", "parallel", "reduction"], _mul_add_body(dt))[0]
        elif yt.ndim == 2 and _transposed_source(b, y, dt) is not None:
            # x @ y.T (the gradient of a product with respect to its first
            # operand): reading y's source in place.
            src, src_t = _transposed_source(b, y, dt)
            r = _generic_dot(b, xs, xt, src, src_t, init, out, y_transposed=True)
        elif xt.ndim == 2 and yt.ndim == 2:
            r = b.op(f"linalg.matmul ins({xs}, {ys} : {xt.mlir}, {yt.mlir}) outs({init} : {acc_t}) -> {acc_t}")
        else:
            r = _generic_dot(b, xs, xt, ys, yt, init, out)
        if out.ndim == 0:
            return [b.op(f"tensor.extract {r}[] : {acc_t}")]
        return [r]

    def L_op(self, node, output_grads):
        (g,) = output_grads
        x, y = node.inputs
        if g is None or not is_float(node.outputs[0].dtype):
            return [None, None]
        nx, ny = x.ndim, y.ndim
        if nx == 1 and ny == 1:
            return [elemwise("mul", g, y), elemwise("mul", g, x)]
        if nx == 2 and ny == 1:
            return [_outer(g, y), Dot()(g, x)]
        if nx == 1 and ny == 2:
            return [Dot()(y, g), _outer(x, g)]
        if nx == 2 and ny == 2:
            return [Dot()(g, _transpose(y)), Dot()(_transpose(x), g)]
        if ny == 2:
            # out[a..., m] = sum_k x[a..., k] y[k, m] (an N-D input times a
            # weight matrix, as in `dot(state_below, W)`): PyTensor's two
            # matrix products, the leading dimensions of x and g as rows.
            # (Summing broadcast products of shape (a..., k, m) allocated
            # and wrote k times the elements of the result.)
            rows_x, rows_g = CollapseLeading()(x), CollapseLeading()(g)
            return [Dot()(g, _transpose(y)), Dot()(_transpose(rows_x), rows_g)]
        if ny == 1:
            # out[a..., ] = sum_k x[a..., k] y[k]
            ge = DimShuffle(g.ndim, tuple(range(g.ndim)) + ("x",))(g)
            gx = elemwise("mul", ge, y)
            gy = Reduce("sum", tuple(range(nx - 1)))(elemwise("mul", x, ge))
            return [gx, gy]
        # out[a..., b..., m] = sum_k x[a..., k] y[b..., k, m]: products broadcast over
        # (a..., b..., k, m), then summed.
        na, nb = nx - 1, ny - 2
        a_dims, b_dims = list(range(na)), list(range(na, na + nb))
        md = na + nb + 1  # the m dimension of the products
        g_pat = [d for d in a_dims + b_dims] + ["x", na + nb]
        g_full = DimShuffle(g.ndim, tuple(g_pat))(g)
        y_pat = ["x"] * na + list(range(ny))
        y_full = DimShuffle(ny, tuple(y_pat))(y)
        x_pat = list(range(na)) + ["x"] * nb + [na, "x"]
        x_full = DimShuffle(nx, tuple(x_pat))(x)
        gx = Reduce("sum", tuple(b_dims) + (md,))(elemwise("mul", g_full, y_full))
        gy = Reduce("sum", tuple(a_dims))(elemwise("mul", g_full, x_full))
        return [gx, gy]


class AddDotT(Op):
    """``c + a.T @ b`` for matrices, computed into `c` (no other ``c``-sized buffer).

    The gradient of a scan sums outer products of stacked rows in pieces
    (``scan_grad.py``): each piece's product accumulates into the previous one.
    """

    def make_node(self, c: Variable, a: Variable, b: Variable) -> Apply:
        if not (c.ndim == a.ndim == b.ndim == 2) or not (c.dtype == a.dtype == b.dtype) or not is_float(c.dtype):
            raise TypeError("AddDotT: three float matrices of one dtype")
        for x, y, what in ((a.type.shape[0], b.type.shape[0], "rows of a and b"),
                           (a.type.shape[1], c.type.shape[0], "columns of a and rows of c"),
                           (b.type.shape[1], c.type.shape[1], "columns of b and c")):
            if x is not None and y is not None and x != y:
                raise ValueError(f"AddDotT: {what} differ: {x} != {y}")
        return Apply(self, [c, a, b], [c.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        c, a, y = node.inputs
        cs, as_, ys = inputs
        ct, at, yt = c.type, a.type, y.type
        # Mismatched sizes would read out of bounds: the call fails instead.
        for (x_ssa, x_t, xd), (y_ssa, y_t, yd) in (((as_, at, 0), (ys, yt, 0)), ((as_, at, 1), (cs, ct, 0)),
                                                   ((ys, yt, 1), (cs, ct, 1))):
            have, need = b.dim(x_ssa, x_t, xd), b.dim(y_ssa, y_t, yd)
            b.check(b.icmp("ne", have, need), "dot: shapes not aligned: {have} != {need}", have, need)
        return [b.generic([(as_, at, "(d2, d0)"), (ys, yt, "(d2, d1)")], [(cs, ct, "(d0, d1)")],
                          ["parallel", "parallel", "reduction"], _mul_add_body(c.dtype))[0]]

    def L_op(self, node, output_grads):
        (g,) = output_grads
        c, a, y = node.inputs
        if g is None:
            return [None, None, None]
        return [g, Dot()(y, _transpose(g)), Dot()(a, g)]


def _transposed_source(b: Block, x: Variable, dtype: str):
    """(SSA, type) of `y` when `x` is ``y.T`` of a matrix `y` already computed in this scope.

    Only a DimShuffle of a *matrix*: pattern ``(1, 0)`` on a rank-3 input drops
    its broadcastable last axis too, and reading that source as a matrix would
    give the contraction an operand of the wrong rank.
    """
    node = x.owner
    if (node is None or not isinstance(node.op, DimShuffle) or node.op.input_ndim != 2
            or node.op.new_order != (1, 0)):
        return None
    src = node.inputs[0]
    ssa = b.lookup(src)
    if ssa is None or src.dtype != dtype:
        return None
    return ssa, src.type


def _mul_add_body(dt: str):
    t = DTYPES[dt]

    def body(bb: Block, args: list[str]) -> list[str]:
        a, c, acc = args
        if is_float(dt):
            m = bb.op(f"arith.mulf {a}, {c} : {t}")
            return [bb.op(f"arith.addf {acc}, {m} : {t}")]
        m = bb.op(f"arith.muli {a}, {c} : {t}")
        return [bb.op(f"arith.addi {acc}, {m} : {t}")]

    return body


def _transpose(x: Variable) -> Variable:
    return DimShuffle(2, (1, 0))(x)


def _outer(a: Variable, c: Variable) -> Variable:
    return elemwise("mul", DimShuffle(1, (0, "x"))(a), DimShuffle(1, ("x", 0))(c))


def _expand_axes(v: Variable, axes: tuple[int, ...], ndim: int) -> Variable:
    """`v` (the result of a reduction over `axes`) with those axes put back as size 1."""
    pattern, k = [], 0
    for d in range(ndim):
        if d in axes:
            pattern.append("x")
        else:
            pattern.append(k)
            k += 1
    if tuple(pattern) == tuple(range(v.ndim)):
        return v
    return DimShuffle(v.ndim, tuple(pattern))(v)


def _generic_dot(b: Block, xs: str, xt: TensorType, ys: str, yt: TensorType, init: str, out: TensorType,
                 y_transposed: bool = False) -> str:
    """N-D dot as a ``linalg.generic`` contraction (NumPy's rule); with
    `y_transposed`, `ys` is the matrix whose transpose is dot's second operand."""
    nx = xt.ndim - 1  # free dims of x
    ny = yt.ndim - 1  # free dims of y (all but the contracted one)
    k = f"d{nx + ny}"
    x_map = "(" + ", ".join([f"d{i}" for i in range(nx)] + [k]) + ")"
    if yt.ndim == 1:
        y_map = f"({k})"
    elif y_transposed:
        y_map = f"(d{nx}, {k})"
    else:
        ys_dims = [f"d{nx + i}" for i in range(ny - 1)] + [k, f"d{nx + ny - 1}"]
        y_map = "(" + ", ".join(ys_dims) + ")"
    o_map = "(" + ", ".join(f"d{i}" for i in range(nx + ny)) + ")"
    iters = ["parallel"] * (nx + ny) + ["reduction"]
    dt = out.dtype
    t = DTYPES[dt]

    def body(bb: Block, args: list[str]) -> list[str]:
        a, c, acc = args
        if is_float(dt):
            m = bb.op(f"arith.mulf {a}, {c} : {t}")
            return [bb.op(f"arith.addf {acc}, {m} : {t}")]
        m = bb.op(f"arith.muli {a}, {c} : {t}")
        return [bb.op(f"arith.addi {acc}, {m} : {t}")]

    return b.generic([(xs, xt, x_map), (ys, yt, y_map)], [(init, out, o_map)], iters, body)[0]


def _cast_tensor(b: Block, ssa: str, t: TensorType, dtype: str) -> str:
    out = t.with_dtype(dtype)
    return b.elementwise(out, [(ssa, t)], lambda bb, args: bb.cast(args[0], t.dtype, dtype))


_REDUCE_OPS = {
    "sum": ("addf", "addi", "ori"),
    "prod": ("mulf", "muli", "andi"),
    "max": ("maximumf", "maxsi", "ori"),
    "min": ("minimumf", "minsi", "andi"),
}


def reduce_dtype(kind: str, dtype: str) -> str:
    """NumPy's result dtype: sums and products of ints/bools are int64."""
    if kind in ("sum", "prod") and not is_float(dtype):
        return "int64"
    return dtype


def _identity(kind: str, dtype: str):
    if kind == "sum":
        return False if dtype == "bool" else (0.0 if is_float(dtype) else 0)
    if kind == "prod":
        return True if dtype == "bool" else (1.0 if is_float(dtype) else 1)
    if dtype == "bool":
        return kind == "min"
    if is_float(dtype):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dtype)
    return int(info.min) if kind == "max" else int(info.max)


class Reduce(Op):
    """``sum``/``prod``/``max``/``min`` over `axes` (sorted, non-negative)."""

    __props__ = ("kind", "axes")

    def __init__(self, kind: str, axes: tuple[int, ...]):
        self.kind, self.axes = kind, tuple(axes)

    def make_node(self, x: Variable) -> Apply:
        dtype = reduce_dtype(self.kind, x.dtype)
        shape = tuple(s for d, s in enumerate(x.type.shape) if d not in self.axes)
        return Apply(self, [x], [TensorType(dtype, shape)])

    def infer_shape(self, node, input_shapes):
        return [tuple(s for d, s in enumerate(input_shapes[0]) if d not in self.axes)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        out = node.outputs[0].type
        if not self.axes:
            return [_cast_tensor(b, inputs[0], x.type, out.dtype) if x.dtype != out.dtype else inputs[0]]
        dt = out.dtype
        init_value = b.const(_identity(self.kind, dt), dt)
        keep = [d for d in range(x.ndim) if d not in self.axes]
        if out.ndim == 0:
            acc_t = TensorType(dt, ())
            acc_mlir = f"tensor<{DTYPES[dt]}>"
            empty = b.op(f"tensor.empty() : {acc_mlir}")
            init = b.op(f"linalg.fill ins({init_value} : {DTYPES[dt]}) outs({empty} : {acc_mlir}) -> {acc_mlir}")
        else:
            dims = [b.dim(inputs[0], x.type, d) for d in keep]
            init = b.filled(out, dims, init_value)
            acc_t = out
        fop, iop, bop = _REDUCE_OPS[self.kind]
        opname = bop if dt == "bool" else (fop if is_float(dt) else iop)
        src = x.dtype

        def body(bb: Block, args: list[str]) -> list[str]:
            v = bb.cast(args[0], src, dt)
            return [bb.op(f"arith.{opname} {args[1]}, {v} : {DTYPES[dt]}")]

        in_map = "(" + ", ".join(f"d{i}" for i in range(x.ndim)) + ")"
        out_map = "(" + ", ".join(f"d{i}" for i in keep) + ")"
        iters = ["reduction" if d in self.axes else "parallel" for d in range(x.ndim)]
        if out.ndim == 0:
            # generic() needs a TensorType for the output; a rank-0 one prints as the scalar.
            res = _rank0_generic(b, inputs[0], x.type, init, dt, in_map, iters, body)
            return [b.op(f"tensor.extract {res}[] : tensor<{DTYPES[dt]}>")]
        return b.generic([(inputs[0], x.type, in_map)], [(init, acc_t, out_map)], iters, body)

    def L_op(self, node, output_grads):
        (g,) = output_grads
        x = node.inputs[0]
        out = node.outputs[0]
        if g is None or not is_float(out.dtype):
            return [None]
        ge = _expand_axes(g, self.axes, x.ndim)
        dt = out.dtype
        if self.kind == "sum":
            dims = symbolic_shape(x)
            static = tuple(d if isinstance(d, int) else None for d in dims)
            sym = [d for d in dims if not isinstance(d, int)]
            return [Alloc(g.dtype, static)(ge, *sym)]
        oe = _expand_axes(out, self.axes, x.ndim)
        if self.kind in ("max", "min"):
            # Every element equal to the extremum gets the gradient (Theano's rule).
            return [elemwise("mul", ge, elemwise("eq", x, oe))]
        # prod: the product of the other elements, also where x has zeros.
        zero = Constant(np.asarray(0, dt))
        one = Constant(np.asarray(1, dt))
        is_zero = elemwise("eq", x, zero)
        nonzero = elemwise("switch", is_zero, one, x)
        prod_nz = _expand_axes(Reduce("prod", self.axes)(nonzero), self.axes, x.ndim)
        n_zeros = _expand_axes(Reduce("sum", self.axes)(cast(is_zero, "int64")), self.axes, x.ndim)
        none = elemwise("eq", n_zeros, Constant(np.asarray(0, "int64")))
        single = elemwise("and", elemwise("eq", n_zeros, Constant(np.asarray(1, "int64"))), is_zero)
        others = elemwise("switch", none, elemwise("true_div", prod_nz, nonzero),
                          elemwise("switch", single, prod_nz, zero))
        return [elemwise("mul", ge, others)]


class _Rank0(TensorType):
    """A rank-0 tensor type (``tensor<f64>``); only used inside emitters."""

    @property
    def mlir(self) -> str:  # type: ignore[override]
        return f"tensor<{self.mlir_elem}>"


def _rank0_generic(b, x, xt, init, dt, in_map, iters, body):
    return b.generic([(x, xt, in_map)], [(init, _Rank0(dt, ()), "()")], iters, body)[0]


class DimShuffle(Op):
    """Theano's ``dimshuffle``: permute dimensions, add (``'x'``) or drop broadcastable ones."""

    __props__ = ("input_ndim", "new_order")

    def __init__(self, input_ndim: int, new_order: tuple):
        self.input_ndim, self.new_order = input_ndim, tuple(new_order)

    def make_node(self, x: Variable) -> Apply:
        if x.ndim != self.input_ndim:
            raise TypeError(f"dimshuffle: expected rank {self.input_ndim}, got {x.ndim}")
        used = [d for d in self.new_order if d != "x"]
        if len(set(used)) != len(used) or any(not 0 <= d < x.ndim for d in used):
            raise ValueError(f"dimshuffle: bad pattern {self.new_order} for rank {x.ndim}")
        for d in range(x.ndim):
            if d not in used and x.type.shape[d] != 1:
                raise ValueError(
                    f"dimshuffle: cannot drop dimension {d} of {x} (shape {x.type.shape}): "
                    "only dimensions of static size 1 can be dropped"
                )
        shape = tuple(1 if d == "x" else x.type.shape[d] for d in self.new_order)
        return Apply(self, [x], [TensorType(x.dtype, shape)])

    def infer_shape(self, node, input_shapes):
        return [tuple(1 if d == "x" else input_shapes[0][d] for d in self.new_order)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        out = node.outputs[0].type
        if list(self.new_order) == list(range(x.ndim)):
            return [inputs[0]]
        if x.ndim == 0:
            return [b.op(f"tensor.from_elements {inputs[0]} : {out.mlir}")]
        if out.ndim == 0:
            zeros = ", ".join(b.index(0) for _ in range(x.ndim))
            return [b.op(f"tensor.extract {inputs[0]}[{zeros}] : {x.type.mlir}")]
        pos = {d: i for i, d in enumerate(self.new_order) if d != "x"}
        in_map = "(" + ", ".join(f"d{pos[d]}" if d in pos else "0" for d in range(x.ndim)) + ")"
        out_map = "(" + ", ".join(f"d{i}" for i in range(out.ndim)) + ")"
        dims = [b.index(1) if d == "x" else b.dim(inputs[0], x.type, d) for d in self.new_order]
        empty = b.empty(out, dims)
        return b.generic([(inputs[0], x.type, in_map)], [(empty, out, out_map)], ["parallel"] * out.ndim,
                         lambda bb, args: [args[0]])

    def L_op(self, node, output_grads):
        (g,) = output_grads
        if g is None:
            return [None]
        kept = [i for i, d in enumerate(self.new_order) if d != "x"]
        if len(kept) != g.ndim:
            g1 = DimShuffle(g.ndim, tuple(kept))(g)
        else:
            g1 = g
        dims_of_g1 = [self.new_order[i] for i in kept]
        pattern = tuple(dims_of_g1.index(d) if d in dims_of_g1 else "x" for d in range(self.input_ndim))
        if pattern == tuple(range(g1.ndim)):
            return [g1]
        return [DimShuffle(g1.ndim, pattern)(g1)]


class Join(Op):
    """``concatenate`` along `axis`; inputs share dtype and rank."""

    __props__ = ("axis",)

    def __init__(self, axis: int):
        self.axis = axis

    def make_node(self, *tensors: Variable) -> Apply:
        if not tensors:
            raise ValueError("concatenate: needs at least one tensor")
        nd = tensors[0].ndim
        if nd == 0:
            raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated (use stack)")
        for i, t in enumerate(tensors):
            if t.ndim != nd:
                raise ValueError(f"concatenate: tensor #{i} has rank {t.ndim}, tensor #0 has rank {nd}")
        if not 0 <= self.axis < nd:
            raise ValueError(f"concatenate: axis {self.axis} out of range for rank {nd}")
        dtype = upcast(*[t.dtype for t in tensors])
        shape = []
        for d in range(nd):
            sizes = [t.type.shape[d] for t in tensors]
            if d == self.axis:
                shape.append(None if None in sizes else sum(sizes))
            else:
                static = {s for s in sizes if s is not None}
                if len(static) > 1:
                    raise ValueError(
                        f"concatenate: all dimensions but axis {self.axis} must match, got sizes "
                        f"{sizes} along dimension {d}"
                    )
                shape.append(static.pop() if static else None)
        return Apply(self, list(tensors), [TensorType(dtype, tuple(shape))])

    #: Sizes that do not match (or overflow) fail the call: a shape query keeps that check.
    checks_shape = True
    infer_checked_shape = staticmethod(lambda node, input_shapes: sizes_read_from_value(node))

    def infer_shape(self, node, input_shapes):
        out = []
        for d in range(node.outputs[0].ndim):
            if d == self.axis:
                total = input_shapes[0][d]
                for s in input_shapes[1:]:
                    total = _add_dims(total, s[d])
                out.append(total)
            else:
                out.append(input_shapes[0][d])
        return [tuple(out)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        out = node.outputs[0].type
        pieces = []
        for s, v in zip(inputs, node.inputs):
            if v.dtype != out.dtype:
                s = _cast_tensor(b, s, v.type, out.dtype)
            pieces.append((s, v.type.with_dtype(out.dtype)))
        offsets = [b.index(0)]
        for k, (s, t) in enumerate(pieces):
            offsets.append(b.iop("addi", offsets[-1], b.dim(s, t, self.axis)))
            if k and t.shape[self.axis] is None:
                # Sizes are not negative: a sum below its first term wrapped around.
                b.check(b.icmp("slt", offsets[-1], offsets[-2]),
                        f"concatenate: the result's size along dimension {self.axis} does not fit in 64 bits")
        first_s, first_t = pieces[0]
        dims = []
        for d in range(out.ndim):
            if d == self.axis:
                dims.append(offsets[-1])
            elif out.shape[d] is not None:
                dims.append(b.index(out.shape[d]))
            else:
                dims.append(b.dim(first_s, first_t, d))
        acc = b.empty(out, dims)
        for k, (s, t) in enumerate(pieces):
            sizes = []
            for d in range(out.ndim):
                if t.shape[d] is not None:
                    # Static sizes are literals: they make the slice's type.
                    sizes.append(str(t.shape[d]))
                    if d == self.axis or out.shape[d] is not None:
                        continue
                    have = b.index(t.shape[d])
                elif d == self.axis:
                    sizes.append(b.dim(s, t, d))
                    continue
                else:
                    have = b.dim(s, t, d)
                    sizes.append(have)
                bad = b.icmp("ne", have, dims[d])
                b.check(bad, f"concatenate: tensor #{k} has size {{have}} along dimension {d}, expected {{need}}",
                        have, dims[d])
            offs = [offsets[k] if d == self.axis else b.index(0) for d in range(out.ndim)]
            ones = [b.index(1)] * out.ndim
            insert = (f"tensor.insert_slice {s} into {acc}[{', '.join(offs)}] [{', '.join(sizes)}] "
                      f"[{', '.join(ones)}] : {t.mlir} into {out.mlir}")
            # (a size mismatch has ended the call above)
            acc = b.op(insert, "cat")
        return [acc]

    def L_op(self, node, output_grads):
        (g,) = output_grads
        if g is None:
            return [None] * len(node.inputs)
        grads = []
        start = 0
        for piece in node.inputs:
            size = symbolic_shape(piece)[self.axis]
            stop = _add_dims(start, size)
            bounds, syms = [], []
            for v in (start, stop):
                if isinstance(v, int):
                    bounds.append(v)
                else:
                    bounds.append("v")
                    syms.append(cast(v, "int64"))
            idx = (("s", None, None, None),) * self.axis + (("s", bounds[0], bounds[1], None),)
            grads.append(Subtensor(idx)(g, *syms) if is_float(piece.dtype) else None)
            start = stop
        return grads


def _add_dims(a, c):
    """The sum of two dimensions (ints or int scalar variables), an int64 scalar if symbolic."""
    if isinstance(a, int) and isinstance(c, int):
        return a + c
    return elemwise("add", _int64_dim(a), _int64_dim(c))


def _int64_dim(d) -> Variable:
    if isinstance(d, Variable):
        return cast(d, "int64")
    return Constant(np.asarray(d, dtype="int64"))


class CollapseLeading(Op):
    """`x` (rank >= 2) as a matrix: its leading dimensions as one, its last
    kept (``x.reshape((-1, x.shape[-1]))`` without a reshape's checks: the
    sizes always agree). A ``tensor.collapse_shape``, a view where `x` is
    contiguous (bufferization copies it otherwise).
    """

    def make_node(self, x: Variable) -> Apply:
        if x.ndim < 2:
            raise TypeError(f"CollapseLeading: a tensor of rank >= 2, got rank {x.ndim}")
        lead = x.type.shape[:-1]
        rows = None if None in lead else int(np.prod(lead))
        return Apply(self, [x], [TensorType(x.dtype, (rows, x.type.shape[-1]))])

    def infer_shape(self, node, input_shapes):
        (shape,) = input_shapes
        rows = shape[0]
        for d in shape[1:-1]:
            rows = rows * d if isinstance(rows, int) and isinstance(d, int) else \
                elemwise("mul", _int64_dim(rows), _int64_dim(d))
        return [(rows, shape[-1])]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        n = x.ndim
        groups = "[[" + ", ".join(str(i) for i in range(n - 1)) + f"], [{n - 1}]]"
        return [b.op(f"tensor.collapse_shape {inputs[0]} {groups} : {x.type.mlir} into "
                     f"{node.outputs[0].type.mlir}")]

    def L_op(self, node, output_grads):
        (g,) = output_grads
        if g is None:
            return [None]
        x = node.inputs[0]
        shape = symbolic_shape(x)
        static = tuple(d if isinstance(d, int) else None for d in shape)
        return [Reshape(static)(g, *[_int64_dim(d) for d in shape if not isinstance(d, int)])]


class Reshape(Op):
    """Reshape to `shape` (ints and ``None`` for dimensions given as inputs)."""

    __props__ = ("shape",)

    def __init__(self, shape: tuple):
        self.shape = tuple(shape)

    def make_node(self, x: Variable, *dims: Variable) -> Apply:
        if len(dims) != sum(d is None for d in self.shape):
            raise TypeError("Reshape: one input per symbolic dimension")
        if None not in self.shape and None not in x.type.shape:
            if int(np.prod(self.shape)) != int(np.prod(x.type.shape)):
                raise ValueError(f"reshape: cannot reshape {x.type.shape} into {self.shape}")
        return Apply(self, [x, *dims], [TensorType(x.dtype, self.shape)])

    #: Negative sizes, or sizes whose product is not the input's, fail the
    #: call: a shape query keeps that check.
    checks_shape = True
    infer_checked_shape = staticmethod(lambda node, input_shapes: sizes_read_from_value(node))

    def infer_shape(self, node, input_shapes):
        syms = node.inputs[1:]
        if not syms:
            return [tuple(self.shape)]
        # A symbolic size may be -1 at run time: the size the others leave.
        total = _int64_dim(1)
        for d in input_shapes[0]:
            total = elemwise("mul", total, _int64_dim(d))
        known = _int64_dim(int(np.prod([s for s in self.shape if s is not None])))
        minus1 = _int64_dim(-1)
        for v in syms:
            v = _int64_dim(v)
            known = elemwise("mul", known, elemwise("switch", elemwise("eq", v, minus1), _int64_dim(1), v))
        left = elemwise("int_div", total, known)
        it = iter(syms)
        dims = []
        for s in self.shape:
            if s is not None:
                dims.append(s)
                continue
            v = _int64_dim(next(it))
            dims.append(elemwise("switch", elemwise("eq", v, minus1), left, v))
        return [tuple(dims)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        out = node.outputs[0].type
        src = inputs[0]
        total_in = b.index(1)
        for d in range(x.ndim):
            total_in = b.iop("muli", total_in, b.dim(src, x.type, d))
        # Symbolic sizes: at most one may be -1 (the size the others leave,
        # as in NumPy and Theano); none may be smaller.
        raw = [b.to_index(ssa, v.dtype) for ssa, v in zip(inputs[1:], node.inputs[1:])]
        dyn = raw
        if raw:
            zero, one, minus1 = b.index(0), b.index(1), b.index(-1)
            unknown = zero
            known = b.index(int(np.prod([s for s in self.shape if s is not None])))
            flags = []
            for i, d in enumerate(raw):
                b.check(b.icmp("slt", d, minus1), f"reshape: dimension #{i} is negative ({{have}})", have=d)
                is_m1 = b.icmp("eq", d, minus1)
                flags.append(is_m1)
                unknown = b.iop("addi", unknown, b.select(is_m1, one, zero, "index"))
                known = b.iop("muli", known, b.select(is_m1, one, d, "index"))
            b.check(b.icmp("sgt", unknown, one), "reshape: can only specify one unknown dimension (-1)")
            none_known = b.icmp("eq", known, zero)
            # (NumPy: the size of -1 is undefined when the others multiply to 0)
            b.check(b.op(f"arith.andi {b.icmp('eq', unknown, one)}, {none_known} : i1"),
                    "reshape: cannot infer the unknown dimension (-1) when the other dimensions "
                    "multiply to 0")
            left = b.op(f"arith.divsi {total_in}, {b.select(none_known, one, known, 'index')} : index")
            left = b.select(none_known, zero, left, "index")
            dyn = [b.select(f, left, d, "index") for f, d in zip(flags, raw)]
        it = iter(dyn)
        dims = [b.index(s) if s is not None else next(it) for s in self.shape]
        # The element counts must agree; on a mismatch the result is zeros.
        total_out = b.index(1)
        for d in dims:
            total_out = b.iop("muli", total_out, d)
        bad = b.icmp("ne", total_in, total_out)
        b.check(bad, "reshape: cannot reshape {have} elements into a shape of {need} elements", total_in, total_out)
        if x.ndim == 0:
            flat_t = TensorType(x.dtype, (1,))
            flat = b.op(f"tensor.from_elements {src} : {flat_t.mlir}")
        elif x.ndim == 1:
            flat_t, flat = x.type, src
        else:
            n = None if None in x.type.shape else int(np.prod(x.type.shape))
            flat_t = TensorType(x.dtype, (n,))
            groups = "[[" + ", ".join(str(i) for i in range(x.ndim)) + "]]"
            flat = b.op(f"tensor.collapse_shape {src} {groups} : {x.type.mlir} into {flat_t.mlir}")
        if out.ndim == 0:
            return [b.op(f"tensor.extract {flat}[{b.index(0)}] : {flat_t.mlir}")]
        res = b.module.fresh("reshape")
        zero = b.const(0.0 if is_float(x.dtype) else (False if x.dtype == "bool" else 0), x.dtype)
        bad_b = b.child(inherit=True)
        z = bad_b.filled(out, dims, zero)
        bad_b.stmt(f"scf.yield {z} : {out.mlir}")
        good = b.child(inherit=True)
        if out.ndim == 1:
            r = good.tensor_cast(flat, flat_t, out)
        elif 0 in self.shape:
            # No element (the counts agree): expand_shape beside a static 0
            # makes the LLVM 22 lowering divide by 0.
            r = good.filled(out, dims, zero)
        elif sum(1 for s in self.shape if s is None) > 1:
            # expand_shape with several dynamic sizes in one group trips an
            # assertion in expand-strided-metadata (LLVM 22): read the
            # elements by their linear index instead.
            r = _reshape_gather(good, flat, flat_t, out, dims)
        else:
            groups = "[[" + ", ".join(str(i) for i in range(out.ndim)) + "]]"
            # Static sizes must be literals (they are part of the result type),
            # and the collapsed size is static exactly when all sizes are.
            want_flat = TensorType(x.dtype, (int(np.prod(self.shape)) if None not in self.shape else None,))
            flat = good.tensor_cast(flat, flat_t, want_flat)
            flat_t = want_flat
            mixed = [str(s) if s is not None else d for s, d in zip(self.shape, dims)]
            r = good.op(
                f"tensor.expand_shape {flat} {groups} output_shape [{', '.join(mixed)}] : "
                f"{flat_t.mlir} into {out.mlir}"
            )
        good.stmt(f"scf.yield {r} : {out.mlir}")
        b.stmt(f"{res} = scf.if {bad} -> ({out.mlir}) {{")
        b.lines.extend(bad_b.lines)
        b.stmt("} else {")
        b.lines.extend(good.lines)
        b.stmt("}")
        return [res]

    def L_op(self, node, output_grads):
        (g,) = output_grads
        if g is None:
            return [None] * len(node.inputs)
        x = node.inputs[0]
        dims = symbolic_shape(x)
        static = tuple(d if isinstance(d, int) else None for d in dims)
        sym = [d for d in dims if not isinstance(d, int)]
        return [Reshape(static)(g, *sym)] + [None] * (len(node.inputs) - 1)


def _reshape_gather(b: Block, flat: str, flat_t: TensorType, out: TensorType, dims: list[str]) -> str:
    """``out[i, j, ...] = flat[linear index of (i, j, ...)]`` as a ``linalg.generic``."""
    empty = b.empty(out, dims)

    def body(bb: Block, args: list[str]) -> list[str]:
        lin = bb.op("linalg.index 0 : index")
        for d in range(1, out.ndim):
            lin = bb.iop("muli", lin, dims[d])
            lin = bb.iop("addi", lin, bb.op(f"linalg.index {d} : index"))
        return [bb.op(f"tensor.extract {flat}[{lin}] : {flat_t.mlir}")]

    ident = "(" + ", ".join(f"d{i}" for i in range(out.ndim)) + ")"
    return b.generic([], [(empty, out, ident)], ["parallel"] * out.ndim, body)[0]


class Copy(Op):
    """An explicit copy (used where a function would return one of its inputs)."""

    def make_node(self, x: Variable) -> Apply:
        return Apply(self, [x], [x.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        if x.ndim == 0:
            return [inputs[0]]
        return [b.elementwise(x.type, [(inputs[0], x.type)], lambda bb, args: args[0])]

    def L_op(self, node, output_grads):
        return list(output_grads)

