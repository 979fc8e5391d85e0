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

A draw with a symbolic (or large) number of trials (``n`` is then the first
parameter, ``RandomDraw(..., n=None)``) loops over the trials (``scf.for``)
instead of unrolling them; trial ``k`` of element ``j`` uses counter
``j * 2**32 + k``. A binomial of more than 64 trials is sampled instead: by
inversion where ``n min(p, 1 - p) < 10``, else by Hormann's transformed
rejection with squeeze (BTRS); a multinomial still counts its trials
(``O(n)``). The other distributions: ``integers`` (``low + floor(u *
(high - low))``), ``exponential`` (``-log(1 - u) * scale``), ``poisson``
(Knuth's product of uniforms below a rate of 10, Hormann's PTRS above; the
rejection samplers use ``lgamma`` by Stirling's series), ``gamma`` (Marsaglia and Tsang's
rejection, boosted by ``u ** (1 / shape)`` below shape 1), ``categorical``
(the first category whose cumulative probability exceeds a uniform, the
last open-ended) and ``permutation`` (Fisher-Yates shuffles of the rows of
an ``(m, n)`` result). :class:`Take` gathers rows by index (``choice``,
``permutation`` of a tensor).
"""

from __future__ import annotations

import numpy as np

from ..emitter import Block, signed64
from ..graph import DTYPES, Apply, Op, TensorType, Variable, is_float
from .elemwise import broadcast_shapes

__all__ = ["RandomDraw", "Take", "mix64", "initial_state"]

#: Distributions whose samples are counts (int64 inside the loop), and those
#: whose parameters are not broadcast element-wise (a whole vector: categorical).
_COUNTS = ("binomial", "multinomial", "integers", "poisson", "categorical", "permutation")

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


def _uniform_below(b: Block, u: str, span: str) -> str:
    """An int64 uniform in [0, `span`) from `u` uniform in [0, 1) (0 when `span` <= 0)."""
    fspan = b.op(f"arith.sitofp {span} : i64 to f64")
    k = b.op(f"arith.fptosi {b.op(f'arith.mulf {u}, {fspan} : f64')} : f64 to i64")
    k = b.op(f"arith.minsi {k}, {b.op(f'arith.subi {span}, {b.i64(1)} : i64')} : i64")
    return b.op(f"arith.maxsi {k}, {b.i64(0)} : i64")


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
        if self.dist == "categorical":
            if len(params) != 1 or params[0].ndim != 1:
                raise TypeError("categorical: one parameter, the vector of cumulative probabilities")
            params = ()
        if self.dist == "permutation" and (params or len(self.shape) != 2):
            raise TypeError("permutation: no parameters, and a (rows, n) shape")
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
        whole = None
        if self.dist == "categorical":
            whole, params = params[0], []
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

        if dist == "permutation":
            return [nxt, _emit_permutation(b, out, dims, bits)]

        def body(bb: Block, args: list[str]) -> str:
            j = flat_index(bb)
            fdt = self._param_dtype()
            ft = DTYPES[fdt]
            if trials is None or dist in ("integers", "poisson", "categorical"):
                return _emit_loop_dist(bb, dist, dtype, fdt, j, args, [t.dtype for _, t in params], whole, bits)
            pvals = [bb.cast(a, t.dtype, self._param_dtype()) for a, (_, t) in zip(args, params)]
            if dist == "exponential":
                u = _uniform01(bb, bits(bb, j), fdt)
                (scale,) = pvals
                one_minus = bb.op(f"arith.subf {bb.const(1.0, fdt)}, {u} : {ft}")
                v = bb.op(f"math.log {one_minus} : {ft}")
                v = bb.op(f"arith.mulf {v}, {scale} : {ft}")
                v = bb.op(f"arith.negf {v} : {ft}")
                return bb.cast(v, fdt, dtype)
            if dist == "gamma":
                return _emit_gamma(bb, dtype, fdt, j, pvals, bits)
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

    def L_op(self, node, output_grads):
        return Op.L_op(self, node, output_grads)


_TWO32 = 1 << 32
#: A binomial with a symbolic or large count counts its trials up to this many; more are sampled
#: (inversion for n min(p, 1 - p) < 10, BTRS above: a bounded cost whatever n).
_UNROLLED_TRIALS = 64


def _counter(bb: Block, j: str, k: str) -> str:
    """Counter ``j * 2**32 + k`` (i64) of draw `k` of element `j` (loops over trials or attempts)."""
    hi = bb.op(f"arith.shli {j}, {bb.i64(32)} : i64")
    return bb.op(f"arith.addi {hi}, {k} : i64")


def _for_count(bb: Block, n_i64: str, step_fn) -> str:
    """``sum(step_fn(body, k) for k in range(n))`` (i64 increments) as an ``scf.for``; n < 0 counts 0."""
    n = bb.op(f"arith.maxsi {n_i64}, {bb.i64(0)} : i64")
    n_idx = bb.op(f"arith.index_cast {n} : i64 to index")
    k, acc = bb.module.fresh("k"), bb.module.fresh("cnt")
    loop = bb.child(inherit=True)
    kk = loop.op(f"arith.index_cast {k} : index to i64")
    inc = step_fn(loop, kk)
    loop.stmt(f"scf.yield {loop.op(f'arith.addi {acc}, {inc} : i64')} : i64")
    res = bb.module.fresh("count")
    bb.stmt(f"{res} = scf.for {k} = {bb.index(0)} to {n_idx} step {bb.index(1)} iter_args({acc} = {bb.i64(0)}) "
            "-> (i64) {")
    bb.lines.extend(loop.lines)
    bb.stmt("}")
    return res


def _while(bb: Block, init: list[tuple[str, str]], step_fn) -> list[str]:
    """An ``scf.while`` over state `init` ((ssa, type) pairs, the last an ``i1`` "continue" flag):
    `step_fn(body, state)` returns the next state; the result is the final state."""
    names = [bb.module.fresh("w") for _ in init]
    inner = [bb.module.fresh("w") for _ in init]
    types = ", ".join(t for _, t in init)
    after = bb.child(inherit=True)
    nxt = step_fn(after, inner)
    after.stmt(f"scf.yield {', '.join(nxt)} : {types}")
    res = bb.module.fresh("while")
    args = ", ".join(f"{n} = {v}" for n, (v, _) in zip(names, init))
    decl = ", ".join(f"{n}: {t}" for n, (_, t) in zip(inner, init))
    bb.stmt(f"{res}:{len(init)} = scf.while ({args}) : ({types}) -> ({types}) {{")
    bb.stmt(f"  scf.condition({names[-1]}) {', '.join(names)} : {types}")
    bb.stmt("} do {")
    bb.stmt(f"^bb0({decl}):")
    bb.lines.extend(after.lines)
    bb.stmt("}")
    return [f"{res}#{i}" for i in range(len(init))]


class _F64:
    """f64 scalar arithmetic emitted into a block, so the samplers' formulas read as formulas."""

    def __init__(self, bb: Block):
        self.bb = bb

    def c(self, v: float) -> str:
        return self.bb.const(float(v), "float64")

    def _bin(self, op: str, a: str, b: str) -> str:
        return self.bb.op(f"arith.{op} {a}, {b} : f64")

    def add(self, a: str, b: str) -> str:
        return self._bin("addf", a, b)

    def sub(self, a: str, b: str) -> str:
        return self._bin("subf", a, b)

    def mul(self, a: str, b: str) -> str:
        return self._bin("mulf", a, b)

    def div(self, a: str, b: str) -> str:
        return self._bin("divf", a, b)

    def fn(self, name: str, a: str) -> str:
        return self.bb.op(f"math.{name} {a} : f64")

    def cmp(self, pred: str, a: str, b: str) -> str:
        return self.bb.op(f"arith.cmpf {pred}, {a}, {b} : f64")

    def all(self, *conds: str) -> str:
        out = conds[0]
        for c in conds[1:]:
            out = self.bb.op(f"arith.andi {out}, {c} : i1")
        return out

    def any(self, *conds: str) -> str:
        out = conds[0]
        for c in conds[1:]:
            out = self.bb.op(f"arith.ori {out}, {c} : i1")
        return out

    def not_(self, cond: str) -> str:
        return self.bb.not_(cond)

    def select(self, cond: str, a: str, b: str) -> str:
        return self.bb.select(cond, a, b, "f64")


def _log_factorial(f: _F64, k: str) -> str:
    """``lgamma(k + 1)`` for a float `k` >= 0: Stirling's series at ``k + 1`` (at ``k + 11``,
    less the logs of the ten factors between, below 10), accurate to about 1e-12."""
    x = f.add(k, f.c(1.0))
    small = f.cmp("olt", x, f.c(10.0))
    y = f.select(small, f.add(x, f.c(10.0)), x)
    inv = f.div(f.c(1.0), y)
    inv2 = f.mul(inv, inv)
    # 1/(12y) - 1/(360y^3) + 1/(1260y^5) - 1/(1680y^7), in Horner form
    series = f.mul(inv, f.sub(f.c(1 / 12), f.mul(inv2, f.sub(f.c(1 / 360), f.mul(
        inv2, f.sub(f.c(1 / 1260), f.mul(inv2, f.c(1 / 1680))))))))
    lg = f.add(f.sub(f.mul(f.sub(y, f.c(0.5)), f.fn("log", y)), y), f.add(f.c(0.5 * np.log(2 * np.pi)), series))
    prod = x
    for i in range(1, 10):
        prod = f.mul(prod, f.add(x, f.c(float(i))))
    return f.select(small, f.sub(lg, f.fn("log", prod)), lg)


def _rejection_loop(bb: Block, j: str, bits, attempt) -> str:
    """The first accepted candidate of a rejection sampler, an ``scf.while``: attempt ``t``
    draws two uniforms (counters ``2t``, ``2t + 1`` of element `j`) and `attempt(sb, u, v)`
    returns (candidate f64, accepted i1)."""

    def step(sb: Block, st: list[str]) -> list[str]:
        t, _res, _go = st
        t2 = sb.op(f"arith.muli {t}, {sb.i64(2)} : i64")
        u = _uniform01(sb, bits(sb, _counter(sb, j, t2)), "float64")
        v = _uniform01(sb, bits(sb, _counter(sb, j, sb.op(f"arith.addi {t2}, {sb.i64(1)} : i64"))), "float64")
        cand, ok = attempt(sb, u, v)
        return [sb.op(f"arith.addi {t}, {sb.i64(1)} : i64"), cand, _F64(sb).not_(ok)]

    final = _while(bb, [(bb.i64(0), "i64"), (bb.const(0.0, "float64"), "f64"), (bb.const(True, "bool"), "i1")], step)
    return final[1]


def _poisson_ptrs(bb: Block, lam: str, j: str, bits) -> str:
    """A Poisson(`lam`) sample for ``lam >= 10`` (f64): Hormann's transformed rejection with
    squeeze (PTRS, 1993), about 1.1 attempts of two uniforms each, whatever the rate."""
    f = _F64(bb)
    slam, loglam = f.fn("sqrt", lam), f.fn("log", lam)
    b = f.add(f.c(0.931), f.mul(f.c(2.53), slam))
    a = f.add(f.c(-0.059), f.mul(f.c(0.02483), b))
    log_invalpha = f.fn("log", f.add(f.c(1.1239), f.div(f.c(1.1328), f.sub(b, f.c(3.4)))))
    vr = f.sub(f.c(0.9277), f.div(f.c(3.6224), f.sub(b, f.c(2.0))))

    def attempt(sb: Block, u1: str, v: str) -> tuple[str, str]:
        g = _F64(sb)
        u = g.sub(u1, g.c(0.5))
        us = g.sub(g.c(0.5), g.fn("absf", u))
        k = g.fn("floor", g.add(g.mul(g.add(g.div(g.mul(g.c(2.0), a), us), b), u), g.add(lam, g.c(0.43))))
        # (us == 0 makes k infinite: rejected with the negative ones)
        valid = g.all(g.cmp("ogt", us, g.c(0.0)), g.cmp("oge", k, g.c(0.0)), g.cmp("olt", k, g.c(2.0 ** 63)))
        squeeze = g.all(g.cmp("oge", us, g.c(0.07)), g.cmp("ole", v, vr))
        tail = g.all(g.cmp("olt", us, g.c(0.013)), g.cmp("ogt", v, us))
        safe_k = g.select(valid, k, g.c(0.0))
        lhs = g.sub(g.add(g.fn("log", v), log_invalpha), g.fn("log", g.add(g.div(a, g.mul(us, us)), b)))
        rhs = g.sub(g.sub(g.mul(safe_k, loglam), lam), _log_factorial(g, safe_k))
        ok = g.all(valid, g.any(squeeze, g.all(g.not_(tail), g.cmp("ole", lhs, rhs))))
        return safe_k, ok

    return _rejection_loop(bb, j, bits, attempt)


def _binomial_btrs(bb: Block, n: str, q: str, j: str, bits) -> str:
    """A Binomial(`n`, `q`) sample (f64 `n`, ``q <= 0.5``, ``n q >= 10``): Hormann's transformed
    rejection with squeeze (BTRS, 1993), a bounded number of attempts whatever `n`."""
    f = _F64(bb)
    one_q = f.sub(f.c(1.0), q)
    spq = f.fn("sqrt", f.mul(f.mul(n, q), one_q))
    b = f.add(f.c(1.15), f.mul(f.c(2.53), spq))
    a = f.add(f.add(f.c(-0.0873), f.mul(f.c(0.0248), b)), f.mul(f.c(0.01), q))
    c = f.add(f.mul(n, q), f.c(0.5))
    vr = f.sub(f.c(0.92), f.div(f.c(4.2), b))
    alpha = f.mul(f.add(f.c(2.83), f.div(f.c(5.1), b)), spq)
    lpq = f.fn("log", f.div(q, one_q))
    m = f.fn("floor", f.mul(f.add(n, f.c(1.0)), q))
    h = f.add(_log_factorial(f, m), _log_factorial(f, f.sub(n, m)))

    def attempt(sb: Block, u1: str, v: str) -> tuple[str, str]:
        g = _F64(sb)
        u = g.sub(u1, g.c(0.5))
        us = g.sub(g.c(0.5), g.fn("absf", u))
        k = g.fn("floor", g.add(g.mul(g.add(g.div(g.mul(g.c(2.0), a), us), b), u), c))
        valid = g.all(g.cmp("ogt", us, g.c(0.0)), g.cmp("oge", k, g.c(0.0)), g.cmp("ole", k, n))
        safe_k = g.select(valid, k, g.c(0.0))
        squeeze = g.all(g.cmp("oge", us, g.c(0.07)), g.cmp("ole", v, vr))
        lhs = g.fn("log", g.div(g.mul(v, alpha), g.add(g.div(a, g.mul(us, us)), b)))
        rhs = g.add(g.sub(g.sub(h, _log_factorial(g, safe_k)), _log_factorial(g, g.sub(n, safe_k))),
                    g.mul(g.sub(safe_k, m), lpq))
        ok = g.all(valid, g.any(squeeze, g.cmp("ole", lhs, rhs)))
        return safe_k, ok

    return _rejection_loop(bb, j, bits, attempt)


def _binomial_inversion(bb: Block, n: str, q: str, j: str, bits) -> str:
    """A Binomial(`n`, `q`) sample (f64 `n`, ``q <= 0.5``, ``n q < 10``) by inversion: walk the
    probabilities from 0 until the uniform is used up, about ``n q + 1`` steps; a walk past
    ``n q + 10 sqrt(n q (1 - q) + 1)`` (a lost tail of rounding) starts over with a new uniform."""
    f = _F64(bb)
    one_q = f.sub(f.c(1.0), q)
    p0 = f.fn("exp", f.mul(n, f.fn("log1p", f.sub(f.c(0.0), q))))  # (1 - q) ** n
    s = f.div(q, one_q)
    a = f.mul(f.add(n, f.c(1.0)), s)
    nq = f.mul(n, q)
    bound = f.fn("floor", f.add(nq, f.mul(f.c(10.0), f.fn("sqrt", f.add(f.mul(nq, one_q), f.c(1.0))))))
    bound = f.bb.op(f"arith.minimumf {bound}, {n} : f64")

    def step(sb: Block, st: list[str]) -> list[str]:
        t, x, u, px, _go = st
        g = _F64(sb)
        done = g.cmp("ole", u, px)
        x1 = g.add(x, g.c(1.0))
        restart = g.all(g.not_(done), g.cmp("ogt", x1, bound))
        # a restart draws the next uniform of element j
        t1 = sb.op(f"arith.addi {t}, {sb.i64(1)} : i64")
        fresh = _uniform01(sb, bits(sb, _counter(sb, j, t1)), "float64")
        nx = g.select(done, x, g.select(restart, g.c(0.0), x1))
        nu = g.select(done, u, g.select(restart, fresh, g.sub(u, px)))
        npx = g.select(done, px, g.select(restart, p0, g.mul(px, g.sub(g.div(a, x1), s))))
        nt = sb.select(restart, t1, t, "i64")
        return [nt, nx, nu, npx, g.not_(done)]

    u0 = _uniform01(bb, bits(bb, _counter(bb, j, bb.i64(0))), "float64")
    final = _while(bb, [(bb.i64(0), "i64"), (f.c(0.0), "f64"), (u0, "f64"), (p0, "f64"),
                        (bb.const(True, "bool"), "i1")], step)
    return final[1]


def _emit_loop_dist(bb: Block, dist: str, dtype: str, fdt: str, j: str, args: list[str], dtypes: list[str],
                    whole, bits) -> str:
    """The samples drawn with loops: binomial/multinomial with a symbolic `n`, integers, poisson, categorical."""
    if dist == "binomial":
        n = bb.cast(args[0], dtypes[0], "int64")
        few = bb.op(f"arith.cmpi sle, {n}, {bb.i64(_UNROLLED_TRIALS)} : i64")
        p = args[1]

        def trials(tb: Block) -> str:
            return _binomial_trials(tb, n, tb.cast(p, dtypes[1], fdt), fdt, j, bits)

        def sampled(sb: Block) -> str:
            # The samplers take q = min(p, 1 - p) and give n - k for p > 1/2.
            f = _F64(sb)
            p64 = sb.cast(p, dtypes[1], "float64")
            flip = f.cmp("ogt", p64, f.c(0.5))
            q = f.select(flip, f.sub(f.c(1.0), p64), p64)
            nf = sb.cast(n, "int64", "float64")
            small = f.cmp("olt", f.mul(nf, q), f.c(10.0))
            k = sb.if_else(small, lambda ib: _binomial_inversion(ib, nf, q, j, bits),
                           lambda rb: _binomial_btrs(rb, nf, q, j, bits), "f64")
            return sb.cast(f.select(flip, f.sub(nf, k), k), "float64", "int64")

        return bb.cast(bb.if_else(few, trials, sampled, "i64"), "int64", dtype)
    if dist == "multinomial":
        n = bb.cast(args[0], dtypes[0], "int64")
        ps = [bb.cast(a, d, fdt) for a, d in zip(args[1:], dtypes[1:])]

        def trial(lb: Block, k: str) -> str:
            u = _uniform01(lb, bits(lb, _counter(lb, j, k)), fdt)
            above = lb.op(f"arith.cmpf oge, {u}, {ps[0]} : {DTYPES[fdt]}")
            below = lb.op(f"arith.cmpf olt, {u}, {ps[1]} : {DTYPES[fdt]}")
            hit = lb.op(f"arith.andi {above}, {below} : i1")
            return lb.op(f"arith.extui {hit} : i1 to i64")

        return bb.cast(_for_count(bb, n, trial), "int64", dtype)
    if dist == "integers":
        low, high = (bb.cast(a, d, "int64") for a, d in zip(args, dtypes))
        u = _uniform01(bb, bits(bb, j), "float64")
        off = _uniform_below(bb, u, bb.op(f"arith.subi {high}, {low} : i64"))
        return bb.cast(bb.op(f"arith.addi {low}, {off} : i64"), "int64", dtype)
    if dist == "categorical":
        hi_ssa, hi_t = whole
        u = _uniform01(bb, bits(bb, j), hi_t.dtype)
        k = bb.from_index(bb.dim(hi_ssa, hi_t, 0))
        last = bb.op(f"arith.subi {k}, {bb.i64(1)} : i64")
        c_idx, acc = bb.module.fresh("c"), bb.module.fresh("cat")
        loop = bb.child(inherit=True)
        h = loop.op(f"tensor.extract {hi_ssa}[{c_idx}] : {hi_t.mlir}")
        c = loop.op(f"arith.index_cast {c_idx} : index to i64")
        below = loop.op(f"arith.cmpf olt, {u}, {h} : {DTYPES[hi_t.dtype]}")
        earlier = loop.op(f"arith.cmpi slt, {c}, {acc} : i64")
        take = loop.op(f"arith.andi {below}, {earlier} : i1")
        loop.stmt(f"scf.yield {loop.select(take, c, acc, 'i64')} : i64")
        res = bb.module.fresh("category")
        n_idx = bb.dim(hi_ssa, hi_t, 0)
        bb.stmt(f"{res} = scf.for {c_idx} = {bb.index(0)} to {n_idx} step {bb.index(1)} iter_args({acc} = {last}) "
                "-> (i64) {")
        bb.lines.extend(loop.lines)
        bb.stmt("}")
        return bb.cast(res, "int64", dtype)
    # poisson: Knuth's method below a rate of 10, PTRS from there.
    lam = bb.cast(args[0], dtypes[0], "float64")
    large = bb.op(f"arith.cmpf oge, {lam}, {bb.const(10.0, 'float64')} : f64")
    k = bb.if_else(large, lambda rb: rb.op(f"arith.fptosi {_poisson_ptrs(rb, lam, j, bits)} : f64 to i64"),
                   lambda kb: _poisson_knuth(kb, lam, j, bits), "i64")
    return bb.cast(k, "int64", dtype)


def _binomial_trials(bb: Block, n: str, p: str, fdt: str, j: str, bits) -> str:
    """Binomial(`n`, `p`) as the count of `n` Bernoulli trials (i64 `n`, small: one uniform each)."""

    def trial(lb: Block, k: str) -> str:
        u = _uniform01(lb, bits(lb, _counter(lb, j, k)), fdt)
        return lb.op(f"arith.extui {lb.op(f'arith.cmpf olt, {u}, {p} : {DTYPES[fdt]}')} : i1 to i64")

    return _for_count(bb, n, trial)


def _poisson_knuth(bb: Block, lam: str, j: str, bits) -> str:
    """Poisson(`lam`) by Knuth's method (multiply uniforms until the product falls below
    exp(-lam)), the rate taken in chunks of at most 500 so exp(-chunk) stays normal: i64."""
    chunk0 = bb.op(f"arith.minimumf {lam}, {bb.const(500.0, 'float64')} : f64")
    neg = bb.op(f"arith.negf {chunk0} : f64")
    big_l = bb.op(f"math.exp {neg} : f64")
    rem0 = bb.op(f"arith.subf {lam}, {chunk0} : f64")
    go0 = bb.op(f"arith.cmpf ogt, {lam}, {bb.const(0.0, 'float64')} : f64")

    def step(sb: Block, st: list[str]) -> list[str]:
        tot, p, lim, rem, t, _go = st
        u = _uniform01(sb, bits(sb, _counter(sb, j, t)), "float64")
        p1 = sb.op(f"arith.mulf {p}, {u} : f64")
        inside = sb.op(f"arith.cmpf ogt, {p1}, {lim} : f64")
        tot1 = sb.select(inside, sb.op(f"arith.addi {tot}, {sb.i64(1)} : i64"), tot, "i64")
        more = sb.op(f"arith.cmpf ogt, {rem}, {sb.const(0.0, 'float64')} : f64")
        chunk = sb.op(f"arith.minimumf {rem}, {sb.const(500.0, 'float64')} : f64")
        lim_new = sb.op(f"math.exp {sb.op(f'arith.negf {chunk} : f64')} : f64")
        lim2 = sb.select(inside, lim, lim_new, "f64")
        rem2 = sb.select(inside, rem, sb.op(f"arith.subf {rem}, {chunk} : f64"), "f64")
        p2 = sb.select(inside, p1, sb.const(1.0, "float64"), "f64")
        go2 = sb.op(f"arith.ori {inside}, {more} : i1")
        return [tot1, p2, lim2, rem2, sb.op(f"arith.addi {t}, {sb.i64(1)} : i64"), go2]

    final = _while(bb, [(bb.i64(0), "i64"), (bb.const(1.0, "float64"), "f64"), (big_l, "f64"), (rem0, "f64"),
                        (bb.i64(0), "i64"), (go0, "i1")], step)
    return final[0]


def _emit_gamma(bb: Block, dtype: str, fdt: str, j: str, pvals: list[str], bits) -> str:
    """Marsaglia and Tsang's gamma(shape) * scale; shapes below 1 are boosted by ``u ** (1 / shape)``."""
    ft = DTYPES[fdt]
    shape, scale = pvals

    def c(v: float) -> str:
        return bb.const(v, fdt)

    small = bb.op(f"arith.cmpf olt, {shape}, {c(1.0)} : {ft}")
    a = bb.select(small, bb.op(f"arith.addf {shape}, {c(1.0)} : {ft}"), shape, ft)
    d = bb.op(f"arith.subf {a}, {c(1.0 / 3.0)} : {ft}")
    nine_d = bb.op(f"arith.mulf {d}, {c(9.0)} : {ft}")
    cc = bb.op(f"arith.divf {c(1.0)}, {bb.op(f'math.sqrt {nine_d} : {ft}')} : {ft}")

    def step(sb: Block, st: list[str]) -> list[str]:
        t, _res, _go = st
        t3 = sb.op(f"arith.muli {t}, {sb.i64(3)} : i64")
        us = []
        for k in range(3):
            ctr = _counter(sb, j, sb.op(f"arith.addi {t3}, {sb.i64(k)} : i64"))
            u = _uniform01(sb, bits(sb, ctr), fdt)
            us.append(sb.op(f"arith.subf {sb.const(1.0, fdt)}, {u} : {ft}"))  # (0, 1]
        lg = sb.op(f"math.log {us[0]} : {ft}")
        r = sb.op(f"math.sqrt {sb.op(f'arith.mulf {lg}, {sb.const(-2.0, fdt)} : {ft}')} : {ft}")
        ang = sb.op(f"arith.mulf {us[1]}, {sb.const(2 * np.pi, fdt)} : {ft}")
        z = sb.op(f"arith.mulf {r}, {sb.op(f'math.cos {ang} : {ft}')} : {ft}")
        v0 = sb.op(f"arith.addf {sb.const(1.0, fdt)}, {sb.op(f'arith.mulf {cc}, {z} : {ft}')} : {ft}")
        v = sb.op(f"arith.mulf {v0}, {sb.op(f'arith.mulf {v0}, {v0} : {ft}')} : {ft}")
        pos = sb.op(f"arith.cmpf ogt, {v0}, {sb.const(0.0, fdt)} : {ft}")
        # log(u) < z^2 / 2 + d - d v + d log(v)
        lhs = sb.op(f"math.log {us[2]} : {ft}")
        half_z2 = sb.op(f"arith.mulf {sb.op(f'arith.mulf {z}, {z} : {ft}')}, {sb.const(0.5, fdt)} : {ft}")
        dv = sb.op(f"arith.mulf {d}, {v} : {ft}")
        safe_v = sb.select(pos, v, sb.const(1.0, fdt), ft)
        dlogv = sb.op(f"arith.mulf {d}, {sb.op(f'math.log {safe_v} : {ft}')} : {ft}")
        rhs = sb.op(f"arith.addf {half_z2}, {d} : {ft}")
        rhs = sb.op(f"arith.subf {rhs}, {dv} : {ft}")
        rhs = sb.op(f"arith.addf {rhs}, {dlogv} : {ft}")
        ok = sb.op(f"arith.cmpf olt, {lhs}, {rhs} : {ft}")
        ok = sb.op(f"arith.andi {ok}, {pos} : i1")
        # A shape that is not a positive number (0, NaN) stops at once.
        valid = sb.op(f"arith.cmpf ogt, {d}, {sb.const(0.0, fdt)} : {ft}")
        done = sb.op(f"arith.ori {ok}, {sb.not_(valid)} : i1")
        go = sb.not_(done)
        return [sb.op(f"arith.addi {t}, {sb.i64(1)} : i64"), dv, go]

    final = _while(bb, [(bb.i64(0), "i64"), (c(0.0), ft), (bb.const(True, "bool"), "i1")], step)
    g = final[1]
    # Boost: gamma(shape) = gamma(shape + 1) * u ** (1 / shape), u in (0, 1].
    u = _uniform01(bb, bits(bb, _counter(bb, j, bb.i64(_TWO32 - 1))), fdt)
    u = bb.op(f"arith.subf {c(1.0)}, {u} : {ft}")
    inv = bb.op(f"arith.divf {c(1.0)}, {shape} : {ft}")
    boost = bb.op(f"math.powf {u}, {inv} : {ft}")
    g = bb.select(small, bb.op(f"arith.mulf {g}, {boost} : {ft}"), g, ft)
    zero = bb.op(f"arith.cmpf oeq, {shape}, {c(0.0)} : {ft}")
    g = bb.select(zero, c(0.0), g, ft)
    return bb.cast(bb.op(f"arith.mulf {g}, {scale} : {ft}"), fdt, dtype)


def _emit_permutation(b: Block, out: TensorType, dims: list[str], bits) -> str:
    """Each row of an (m, n) int tensor: a Fisher-Yates shuffle of ``arange(n)``."""
    empty = b.empty(out, dims)
    base = b.generic([], [(empty, out, "(d0, d1)")], ["parallel", "parallel"],
                     lambda bb, args: [bb.cast(bb.from_index(bb.op("linalg.index 1 : index")), "int64", out.dtype)])[0]
    m, n = dims
    r, acc = b.module.fresh("r"), b.module.fresh("perm")
    rows = b.child(inherit=True)
    i_t, acc2 = rows.module.fresh("t"), rows.module.fresh("perm")
    swaps = rows.child(inherit=True)
    # i = n - 1 - t swaps with j uniform in [0, i].
    i = swaps.iop("subi", swaps.iop("subi", n, swaps.index(1)), i_t)
    row64 = swaps.op(f"arith.index_cast {r} : index to i64")
    i64 = swaps.op(f"arith.index_cast {i} : index to i64")
    ctr = _counter(swaps, row64, i64)
    u = _uniform01(swaps, bits(swaps, ctr), "float64")
    jj = _uniform_below(swaps, u, swaps.op(f"arith.addi {i64}, {swaps.i64(1)} : i64"))
    j_idx = swaps.op(f"arith.index_cast {jj} : i64 to index")
    vi = swaps.op(f"tensor.extract {acc2}[{r}, {i}] : {out.mlir}")
    vj = swaps.op(f"tensor.extract {acc2}[{r}, {j_idx}] : {out.mlir}")
    w = swaps.op(f"tensor.insert {vj} into {acc2}[{r}, {i}] : {out.mlir}")
    w = swaps.op(f"tensor.insert {vi} into {w}[{r}, {j_idx}] : {out.mlir}")
    swaps.stmt(f"scf.yield {w} : {out.mlir}")
    steps = rows.iop("maxsi", rows.iop("subi", n, rows.index(1)), rows.index(0))
    inner = rows.module.fresh("shuffled")
    rows.stmt(f"{inner} = scf.for {i_t} = {rows.index(0)} to {steps} step {rows.index(1)} iter_args({acc2} = {acc}) "
              f"-> ({out.mlir}) {{")
    rows.lines.extend(swaps.lines)
    rows.stmt("}")
    rows.stmt(f"scf.yield {inner} : {out.mlir}")
    res = b.module.fresh("perms")
    b.stmt(f"{res} = scf.for {r} = {b.index(0)} to {m} step {b.index(1)} iter_args({acc} = {base}) -> ({out.mlir}) {{")
    b.lines.extend(rows.lines)
    b.stmt("}")
    return res


class Take(Op):
    """``x[idx]`` along the first dimension, for an integer tensor `idx` of indices in range.

    The draws that pick elements use it (``choice``, ``permutation`` of a
    tensor): their indices are in ``[0, len(x))`` by construction, and are
    clamped to it so no read is out of bounds. The result has shape
    ``idx.shape + x.shape[1:]``.
    """

    def make_node(self, x: Variable, idx: Variable) -> Apply:
        if x.ndim == 0:
            raise TypeError("Take: x must have at least one dimension")
        if idx.dtype not in ("int8", "int16", "int32", "int64"):
            raise TypeError(f"Take: indices must be integers, got {idx.dtype}")
        return Apply(self, [x, idx], [TensorType(x.dtype, idx.type.shape + x.type.shape[1:])])

    def infer_shape(self, node, input_shapes):
        return [tuple(input_shapes[1]) + tuple(input_shapes[0][1:])]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        x, idx = node.inputs
        out = node.outputs[0].type
        xs, ids = inputs
        length = b.dim(xs, x.type, 0)
        last = b.iop("maxsi", b.iop("subi", length, b.index(1)), b.index(0))
        dims = [b.dim(ids, idx.type, d) for d in range(idx.ndim)] + [b.dim(xs, x.type, d) for d in range(1, x.ndim)]
        if out.ndim == 0:
            k = b.to_index(ids, idx.dtype)
            k = b.iop("minsi", b.iop("maxsi", k, b.index(0)), last)
            return [b.op(f"tensor.extract {xs}[{k}] : {x.type.mlir}")]
        empty = b.empty(out, dims)
        r = idx.ndim
        ident = "(" + ", ".join(f"d{i}" for i in range(out.ndim)) + ")"
        ins = [] if r == 0 else [(ids, idx.type, "(" + ", ".join(f"d{i}" for i in range(r)) + ")")]

        def body(bb: Block, args: list[str]) -> list[str]:
            k = bb.to_index(args[0] if r else ids, idx.dtype)
            k = bb.iop("minsi", bb.iop("maxsi", k, bb.index(0)), last)
            rest = [bb.op(f"linalg.index {r + d} : index") for d in range(x.ndim - 1)]
            return [bb.op(f"tensor.extract {xs}[{', '.join([k] + rest)}] : {x.type.mlir}")]

        return b.generic(ins, [(empty, out, ident)], ["parallel"] * out.ndim, body)
