"""Random draws: a counter-based generator emitted as IR (the ``RandomDraw`` op).

Each draw (``binomial``, ``uniform``, ``normal``, ``multinomial``) reads an int64 state and
returns the next state and the samples; ``RandomStreams``
(:mod:`~mlir_scan.builder.tensor.shared_randomstreams`) keeps the state in a
shared variable whose ``default_update`` is the next state, so a function (or a
scan, which threads the state through its steps) that uses the draw advances
it: repeated calls give fresh numbers, and the same seed gives the same
numbers. Element ``j`` of a draw from state ``s`` is
``mix(s + (j + 1) * G)`` with ``G`` the golden-ratio increment and ``mix`` the
SplitMix64 finalizer, computed with wrapping ``i64`` arithmetic; the next state
is ``mix(s ^ K)``. Uniform floats use the top 53 (f64) or 24 (f32) bits; normal
samples use Box-Muller on two such uniforms. A multinomial row (the last
dimension holds the categories) counts, for each category, the trials whose
uniform falls in the category's interval ``[lo, hi)`` of the cumulative
probabilities; every category of a row sees the same trials (counters taken
from the row's index).
"""

from __future__ import annotations

import numpy as np

from ..emitter import Block, signed64
from ..graph import DTYPES, Apply, Op, TensorType, Variable, is_float
from .elemwise import broadcast_shapes

__all__ = ["RandomDraw", "mix64", "initial_state"]

_GOLDEN = 0x9E3779B97F4A7C15
_STATE_KEY = 0xD1B54A32D192ED03
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_MASK = (1 << 64) - 1


def mix64(z: int) -> int:
    """SplitMix64's finalizer on an unsigned 64-bit int (the Python reference).

    >>> hex(mix64(0)), hex(mix64(1))
    ('0x0', '0x5692161d100b05e5')
    """
    z &= _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def initial_state(seed: int, index: int) -> np.ndarray:
    """The int64 state of draw number `index` of streams seeded with `seed`."""
    z = mix64(mix64((seed & _MASK) ^ 0x5851F42D4C957F2D) + (index + 1) * _GOLDEN)
    return np.asarray(signed64(z), dtype=np.int64)


def _emit_mix(b: Block, z: str) -> str:
    """The finalizer on an i64 SSA value (wrapping arithmetic, logical shifts)."""
    for shift, mult in ((30, _M1), (27, _M2), (31, None)):
        s = b.op(f"arith.shrui {z}, {b.i64(shift)} : i64")
        z = b.op(f"arith.xori {z}, {s} : i64")
        if mult is not None:
            z = b.op(f"arith.muli {z}, {b.i64(mult)} : i64")
    return z


def _uniform01(b: Block, bits: str, dtype: str) -> str:
    """A float in [0, 1) from 64 random bits."""
    t = DTYPES[dtype]
    keep = 53 if dtype == "float64" else 24
    top = b.op(f"arith.shrui {bits}, {b.i64(64 - keep)} : i64")
    f = b.op(f"arith.sitofp {top} : i64 to {t}")
    return b.op(f"arith.mulf {f}, {b.const(2.0 ** -keep, dtype)} : {t}")


class RandomDraw(Op):
    """Samples of `dist` with `shape` from an int64 state: outputs (next state, samples).

    Inputs: the state, the symbolic dimensions (int64 scalars, one per
    ``None`` in `shape`), then the distribution's parameters (broadcast to
    the sample shape).
    """

    __props__ = ("dist", "dtype", "shape", "n")

    def __init__(self, dist: str, dtype: str, shape: tuple, n: int = 1):
        self.dist, self.dtype, self.shape, self.n = dist, dtype, tuple(shape), n

    def make_node(self, state: Variable, *rest: Variable) -> Apply:
        n_dyn = sum(1 for d in self.shape if d is None)
        params = rest[n_dyn:]
        if state.type != TensorType("int64", ()):
            raise TypeError(f"{self.dist}: the random state must be an int64 scalar")
        for p in params:
            broadcast_shapes([p.type.shape, self.shape], f"{self.dist}: parameter {p} and size ")
            if p.ndim > len(self.shape):
                raise ValueError(f"{self.dist}: parameter {p} has rank {p.ndim} but size has rank {len(self.shape)}")
        return Apply(self, [state, *rest], [TensorType("int64", ()), TensorType(self.dtype, self.shape)])

    def infer_shape(self, node, input_shapes):
        it = iter(node.inputs[1:])
        return [(), tuple(d if d is not None else next(it) for d in self.shape)]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        state = inputs[0]
        n_dyn = sum(1 for d in self.shape if d is None)
        dyn_vars = node.inputs[1:1 + n_dyn]
        params = list(zip(inputs[1 + n_dyn:], [v.type for v in node.inputs[1 + n_dyn:]]))
        dyn = iter(b.index_dims(inputs[1:1 + n_dyn], [v.dtype for v in dyn_vars], self.dist))
        dims = [b.index(d) if d is not None else next(dyn) for d in self.shape]
        out = node.outputs[1].type
        nxt = _emit_mix(b, b.op(f"arith.xori {state}, {b.i64(_STATE_KEY)} : i64"))

        dist, dtype, trials = self.dist, self.dtype, self.n
        rank = out.ndim
        # Multinomial: one counter per row of categories (the last dimension).
        counted = rank - 1 if dist == "multinomial" else rank

        # The flat element index j, computed from linalg.index (row-major).
        def flat_index(bb: Block) -> str:
            if counted == 0:
                return bb.i64(0)
            j = bb.from_index(bb.op("linalg.index 0 : index"))
            for d in range(1, counted):
                size = bb.from_index(dims[d])
                j = bb.op(f"arith.muli {j}, {size} : i64")
                j = bb.op(f"arith.addi {j}, {bb.from_index(bb.op(f'linalg.index {d} : index'))} : i64")
            return j

        def bits(bb: Block, counter: str) -> str:
            c1 = bb.op(f"arith.addi {counter}, {bb.i64(1)} : i64")
            z = bb.op(f"arith.muli {c1}, {bb.i64(_GOLDEN)} : i64")
            z = bb.op(f"arith.addi {state}, {z} : i64")
            return _emit_mix(bb, z)

        def body(bb: Block, args: list[str]) -> str:
            j = flat_index(bb)
            pvals = [bb.cast(a, t.dtype, self._param_dtype()) for a, (_, t) in zip(args, params)]
            fdt = self._param_dtype()
            ft = DTYPES[fdt]
            if dist == "uniform":
                u = _uniform01(bb, bits(bb, j), fdt)
                low, high = pvals
                span = bb.op(f"arith.subf {high}, {low} : {ft}")
                v = bb.op(f"arith.mulf {u}, {span} : {ft}")
                v = bb.op(f"arith.addf {low}, {v} : {ft}")
                return bb.cast(v, fdt, dtype)
            if dist == "normal":
                j2 = bb.op(f"arith.muli {j}, {bb.i64(2)} : i64")
                j3 = bb.op(f"arith.addi {j2}, {bb.i64(1)} : i64")
                u1 = _uniform01(bb, bits(bb, j2), fdt)
                u1 = bb.op(f"arith.subf {bb.const(1.0, fdt)}, {u1} : {ft}")  # (0, 1]
                u2 = _uniform01(bb, bits(bb, j3), fdt)
                lg = bb.op(f"math.log {u1} : {ft}")
                r = bb.op(f"arith.mulf {lg}, {bb.const(-2.0, fdt)} : {ft}")
                r = bb.op(f"math.sqrt {r} : {ft}")
                ang = bb.op(f"arith.mulf {u2}, {bb.const(2 * np.pi, fdt)} : {ft}")
                c = bb.op(f"math.cos {ang} : {ft}")
                z = bb.op(f"arith.mulf {r}, {c} : {ft}")
                avg, std = pvals
                v = bb.op(f"arith.mulf {z}, {std} : {ft}")
                v = bb.op(f"arith.addf {avg}, {v} : {ft}")
                return bb.cast(v, fdt, dtype)
            if dist == "multinomial":
                # The trials whose uniform falls in this category's [lo, hi).
                lo, hi = pvals
                count = bb.i64(0)
                base = bb.op(f"arith.muli {j}, {bb.i64(trials)} : i64")
                for k in range(trials):
                    ctr = bb.op(f"arith.addi {base}, {bb.i64(k)} : i64")
                    u = _uniform01(bb, bits(bb, ctr), fdt)
                    above = bb.op(f"arith.cmpf oge, {u}, {lo} : {ft}")
                    below = bb.op(f"arith.cmpf olt, {u}, {hi} : {ft}")
                    hit = bb.op(f"arith.andi {above}, {below} : i1")
                    inc = bb.op(f"arith.extui {hit} : i1 to i64")
                    count = bb.op(f"arith.addi {count}, {inc} : i64")
                return bb.cast(count, "int64", dtype)
            # binomial: the number of successes in `trials` Bernoulli(p) trials.
            (p,) = pvals
            count = bb.i64(0)
            base = bb.op(f"arith.muli {j}, {bb.i64(trials)} : i64")
            for k in range(trials):
                ctr = bb.op(f"arith.addi {base}, {bb.i64(k)} : i64")
                u = _uniform01(bb, bits(bb, ctr), fdt)
                hit = bb.op(f"arith.cmpf olt, {u}, {p} : {ft}")
                inc = bb.op(f"arith.extui {hit} : i1 to i64")
                count = bb.op(f"arith.addi {count}, {inc} : i64")
            return bb.cast(count, "int64", dtype)

        if rank == 0:
            sample = body(b, [a for a, _ in params])
        else:
            sample = b.elementwise(out, params, body, out_dims=dims)
        return [nxt, sample]

    def _param_dtype(self) -> str:
        if is_float(self.dtype):
            return self.dtype
        return "float64"
