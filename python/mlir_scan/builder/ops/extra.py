"""Index-returning reductions and cumulative ops: ``ArgReduce`` (argmax/argmin), ``CumOp`` (cumsum/cumprod).

* :class:`ArgReduce` (``T.argmax``, ``T.argmin``, ``T.max_and_argmax``): the
  int64 position of the extremum over some axes, the first one on ties and
  the first NaN if there is one (NumPy's rule); an empty reduction fails the
  call with ``ValueError``;
* :class:`CumOp` (``T.cumsum``, ``T.cumprod``, Theano's
  ``theano.tensor.extra_ops.CumOp``): running sums or products along one
  axis, an ``scf.for`` over that axis. Integer and boolean inputs give int64
  (NumPy's rule).

Example::

    >>> import numpy as np
    >>> from mlir_scan import tensor as T
    >>> x = T.matrix("x")
    >>> T.argmax(x, axis=1).owner.op, T.cumsum(x, axis=0).owner.op
    (ArgReduce(max, (1,)), CumOp(0, add))
    >>> T.cumsum(x, axis=1).eval({x: np.array([[1.0, 2.0], [3.0, 4.0]])}).tolist()
    [[1.0, 3.0], [3.0, 7.0]]
"""

from __future__ import annotations

import numpy as np

from ..emitter import Block
from ..graph import DTYPES, Apply, Op, TensorType, Variable, is_float
from .basic import _cast_tensor, _Rank0, reduce_dtype
from .elemwise import elemwise
from .subtensor import Subtensor

__all__ = ["ArgReduce", "CumOp"]


class ArgReduce(Op):
    """The int64 index of the maximum (`kind` "max") or minimum ("min") over `axes`.

    With several axes, the index is the position in the reduced axes
    flattened in row-major order (Theano's ``argmax(x, axis=[0, 1])``).
    """

    __props__ = ("kind", "axes")

    def __init__(self, kind: str, axes: tuple[int, ...]):
        if kind not in ("max", "min"):
            raise ValueError(f"ArgReduce: kind must be 'max' or 'min', got {kind!r}")
        self.kind, self.axes = kind, tuple(sorted(axes))

    def make_node(self, x: Variable) -> Apply:
        for a in self.axes:
            if not 0 <= a < x.ndim:
                raise ValueError(f"arg{self.kind}: axis {a} is out of bounds for rank {x.ndim}")
        shape = tuple(s for d, s in enumerate(x.type.shape) if d not in self.axes)
        return Apply(self, [x], [TensorType("int64", shape)])

    def infer_shape(self, node, input_shapes):
        return [tuple(s for d, s in enumerate(input_shapes[0]) if d not in self.axes)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        xt = x.type
        out = node.outputs[0].type
        vdt = "int8" if x.dtype == "bool" else x.dtype
        vt = DTYPES[vdt]
        # An empty reduction has no extremum (NumPy: "attempt to get argmax of an empty sequence").
        count = b.index(1)
        for d in self.axes:
            count = b.iop("muli", count, b.dim(inputs[0], xt, d))
        if self.axes:
            b.check(b.icmp("eq", count, b.index(0)),
                    f"arg{self.kind}: attempt to get arg{self.kind} of an empty sequence")
        if is_float(vdt):
            start = -np.inf if self.kind == "max" else np.inf
        else:
            info = np.iinfo(vdt)
            start = int(info.min) if self.kind == "max" else int(info.max)
        keep = [d for d in range(x.ndim) if d not in self.axes]
        sizes = {d: b.dim(inputs[0], xt, d) for d in self.axes}
        if out.ndim == 0:
            v_t, i_t = _Rank0(vdt, ()), _Rank0("int64", ())
            v_init = b.op(f"tensor.empty() : {v_t.mlir}")
            v_init = b.op(f"linalg.fill ins({b.const(start, vdt)} : {vt}) outs({v_init} : {v_t.mlir}) -> {v_t.mlir}")
            i_init = b.op(f"tensor.empty() : {i_t.mlir}")
            i_init = b.op(f"linalg.fill ins({b.i64(np.iinfo(np.int64).max)} : i64) outs({i_init} : {i_t.mlir}) "
                          f"-> {i_t.mlir}")
        else:
            dims = [b.dim(inputs[0], xt, d) for d in keep]
            v_t, i_t = TensorType(vdt, out.shape), out
            v_init = b.filled(v_t, dims, b.const(start, vdt))
            i_init = b.filled(i_t, dims, b.i64(np.iinfo(np.int64).max))
        kind, axes, src = self.kind, self.axes, x.dtype

        def body(bb: Block, args: list[str]) -> list[str]:
            v = bb.cast(args[0], src, vdt)
            acc, acc_i = args[1], args[2]
            # The position in the reduced axes, row-major.
            lin = bb.index(0)
            for d in axes:
                lin = bb.iop("muli", lin, sizes[d])
                lin = bb.iop("addi", lin, bb.op(f"linalg.index {d} : index"))
            i = bb.from_index(lin)
            earlier = bb.op(f"arith.cmpi slt, {i}, {acc_i} : i64")
            # Order-independent: a better value, or an equal one seen at an
            # earlier position, wins; a NaN beats every number, and the
            # first NaN every other NaN.
            if is_float(vdt):
                better = bb.op(f"arith.cmpf {'ogt' if kind == 'max' else 'olt'}, {v}, {acc} : {vt}")
                same = bb.op(f"arith.cmpf oeq, {v}, {acc} : {vt}")
                v_nan = bb.op(f"arith.cmpf uno, {v}, {v} : {vt}")
                acc_nan = bb.op(f"arith.cmpf uno, {acc}, {acc} : {vt}")
                acc_num = bb.not_(acc_nan)
                nan_wins = bb.op(f"arith.andi {v_nan}, {acc_num} : i1")
                both_nan = bb.op(f"arith.andi {v_nan}, {acc_nan} : i1")
                same = bb.op(f"arith.ori {same}, {both_nan} : i1")
                better = bb.op(f"arith.andi {better}, {acc_num} : i1")
                better = bb.op(f"arith.ori {better}, {nan_wins} : i1")
            else:
                better = bb.op(f"arith.cmpi {'sgt' if kind == 'max' else 'slt'}, {v}, {acc} : {vt}")
                same = bb.op(f"arith.cmpi eq, {v}, {acc} : {vt}")
            tie = bb.op(f"arith.andi {same}, {earlier} : i1")
            take = bb.op(f"arith.ori {better}, {tie} : i1")
            return [bb.select(take, v, acc, vt), bb.select(take, i, acc_i, "i64")]

        in_map = "(" + ", ".join(f"d{i}" for i in range(x.ndim)) + ")"
        out_map = "(" + ", ".join(f"d{i}" for i in keep) + ")"
        iters = ["reduction" if d in self.axes else "parallel" for d in range(x.ndim)]
        if x.ndim == 0:
            return [b.i64(0)]
        res = b.generic([(inputs[0], xt, in_map)], [(v_init, v_t, out_map), (i_init, i_t, out_map)], iters, body)
        if out.ndim == 0:
            return [b.op(f"tensor.extract {res[1]}[] : {i_t.mlir}")]
        return [res[1]]

    def L_op(self, node, output_grads):
        return [None]  # an index: no gradient (Theano's argmax is not differentiable)


class CumOp(Op):
    """Running sums (`mode` "add") or products ("mul") along `axis` (NumPy's ``cumsum``/``cumprod``)."""

    __props__ = ("axis", "mode")

    def __init__(self, axis: int, mode: str = "add"):
        if mode not in ("add", "mul"):
            raise ValueError(f"CumOp: mode must be 'add' or 'mul', got {mode!r}")
        self.axis, self.mode = int(axis), mode

    def make_node(self, x: Variable) -> Apply:
        if not 0 <= self.axis < max(x.ndim, 1) or x.ndim == 0:
            raise ValueError(f"cum{'sum' if self.mode == 'add' else 'prod'}: axis {self.axis} is out of bounds "
                             f"for rank {x.ndim}")
        dtype = reduce_dtype("sum", x.dtype)
        return Apply(self, [x], [TensorType(dtype, x.type.shape)])

    def infer_shape(self, node, input_shapes):
        return [tuple(input_shapes[0])]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x = node.inputs[0]
        out = node.outputs[0].type
        dt = out.dtype
        t = DTYPES[dt]
        src = inputs[0] if x.dtype == dt else _cast_tensor(b, inputs[0], x.type, dt)
        opname = ("addf" if self.mode == "add" else "mulf") if is_float(dt) else (
            "addi" if self.mode == "add" else "muli")
        ax = self.axis
        n = b.dim(src, out, ax)
        acc = b.module.fresh("acc")
        i = b.module.fresh("i")
        loop = b.child(inherit=True)
        prev = loop.iop("subi", i, loop.index(1))
        if out.ndim == 1:
            a = loop.op(f"tensor.extract {acc}[{prev}] : {out.mlir}")
            c = loop.op(f"tensor.extract {acc}[{i}] : {out.mlir}")
            s = loop.op(f"arith.{opname} {a}, {c} : {t}")
            new = loop.op(f"tensor.insert {s} into {acc}[{i}] : {out.mlir}")
        else:
            slab = TensorType(dt, tuple(1 if d == ax else s for d, s in enumerate(out.shape)))
            dims = [loop.index(1) if d == ax else b.dim(src, out, d) for d in range(out.ndim)]
            sizes = ", ".join("1" if d == ax else (str(s) if s is not None else dims[d])
                              for d, s in enumerate(out.shape))
            ones = ", ".join(["1"] * out.ndim)

            def offsets(at: str) -> str:
                return ", ".join(at if d == ax else "0" for d in range(out.ndim))

            a = loop.op(f"tensor.extract_slice {acc}[{offsets(prev)}] [{sizes}] [{ones}] : {out.mlir} to {slab.mlir}")
            c = loop.op(f"tensor.extract_slice {acc}[{offsets(i)}] [{sizes}] [{ones}] : {out.mlir} to {slab.mlir}")
            empty = loop.empty(slab, dims)
            ident = "(" + ", ".join(f"d{d}" for d in range(out.ndim)) + ")"
            s = loop.generic([(a, slab, ident), (c, slab, ident)], [(empty, slab, ident)], ["parallel"] * out.ndim,
                             lambda bb, args: [bb.op(f"arith.{opname} {args[0]}, {args[1]} : {t}")])[0]
            new = loop.op(f"tensor.insert_slice {s} into {acc}[{offsets(i)}] [{sizes}] [{ones}] : "
                          f"{slab.mlir} into {out.mlir}")
        loop.stmt(f"scf.yield {new} : {out.mlir}")
        res = b.module.fresh("cum")
        b.stmt(f"{res} = scf.for {i} = {b.index(1)} to {n} step {b.index(1)} iter_args({acc} = {src}) "
               f"-> ({out.mlir}) {{")
        b.lines.extend(loop.lines)
        b.stmt("}")
        return [res]

    def L_op(self, node, output_grads):
        (g,) = output_grads
        x = node.inputs[0]
        out = node.outputs[0]
        if g is None or not is_float(out.dtype):
            return [None]
        flip = Subtensor((("s", None, None, None),) * self.axis + (("s", None, None, -1),))
        if self.mode == "add":
            # d out[j] / d x[i] = 1 for j >= i: the reversed running sum of g.
            return [flip(CumOp(self.axis, "add")(flip(g)))]
        # Theano's rule: the reversed running sum of out * g, divided by x.
        rev = flip(CumOp(self.axis, "add")(flip(elemwise("mul", out, g))))
        return [elemwise("true_div", rev, x)]
