"""The benchmark workloads: one NumPy reference loop and one implementation per peer.

Each workload is a function ``make(dtype, quick)`` returning a :class:`Workload`:
its inputs, the NumPy loop (the correctness oracle and the "numpy-loop"
baseline) and builders for every implementation. A builder returns a callable
taking the inputs, or raises ``Unavailable`` when the peer is not installed.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import mlir_scan


class Unavailable(Exception):
    """The implementation cannot run here (a peer library is not installed)."""


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise Unavailable(f"{module} is not installed (pip install '.[bench]')")


@dataclass
class Workload:
    name: str
    inputs: tuple
    numpy_loop: Callable[..., Any]
    builders: dict[str, Callable[[], Callable[..., Any]]] = field(default_factory=dict)
    source: str = ""  # the mlir-scan program, where the harness needs it
    rtol: float = 1e-9
    # The roofline (bench/run.py --roofline): analytic estimates, per call, of
    # the floating-point operations and of the bytes that must move between
    # the core and the memory level holding the data (each operand read or
    # written as often as the computation requires, not as often as one
    # implementation happens to), and the footprint, which decides that level
    # (L2, L3 or DRAM): what every step re-reads (an RNN's W), or all the
    # call touches when the steps share nothing (the repeated calls re-read it).
    flops: float = 0.0
    bytes: float = 0.0
    footprint: float = 0.0


def _mlir_scan(source: str, entry: str, wrap: Callable | None = None) -> dict[str, Callable]:
    """Builders of the compiled program's function `entry`: "mlir-scan" as a
    user gets it, and "mlir-scan-nochecks" without the run-time verification
    of the program's ops (compile(checks=False)), which shows what the checks
    cost."""

    def build(checks: bool = True) -> Callable:
        fn = getattr(mlir_scan.compile(source, checks=checks), entry)
        return wrap(fn) if wrap else fn

    return {"mlir-scan": build, "mlir-scan-nochecks": lambda: build(checks=False)}


def _mlir_type(dtype) -> str:
    return {np.float64: "f64", np.float32: "f32"}[np.dtype(dtype).type]


def _api(build: Callable[[Any, Any], Any], wrap: Callable | None = None) -> dict[str, Callable]:
    """The builder of "mlir-scan-api": the workload written with the
    Theano-compatible API as a user writes it (``theano.scan``, ``T.dot``,
    dynamic-shape inputs, ``theano.function``). `build(theano, T)` returns the
    compiled function."""

    def builder() -> Callable:
        import mlir_scan as theano
        from mlir_scan import tensor as T

        fn = build(theano, T)
        return wrap(fn) if wrap else fn

    return {"mlir-scan-api": builder}


# ---------------------------------------------------------------------------
# PyTensor, JAX and numba builders share these helpers.
# ---------------------------------------------------------------------------

def _pytensor_modes():
    _require("pytensor")
    from pytensor.compile.mode import Mode

    return {
        "pytensor-c": Mode(linker="cvm", optimizer="fast_run"),
        "pytensor-numba": "NUMBA",
        "pytensor-jax": "JAX",
        # mlir-scan's PyTensor mode (mlir_scan.pytensor): the same PyTensor graph.
        "pytensor-mlir": "MLIR_SCAN",
    }


#: The PyTensor modes, as implementation names.
PYTENSOR_IMPLS = ("pytensor-c", "pytensor-numba", "pytensor-jax", "pytensor-mlir")


def _materialize(result):
    if isinstance(result, (list, tuple)):
        return type(result)(np.asarray(r) for r in result)
    return np.asarray(result)


def _pytensor_builders(build_graph: Callable[[Any], Callable]) -> dict[str, Callable]:
    """One builder per PyTensor mode; `build_graph(mode)` compiles a function."""

    def builder(mode_name: str) -> Callable[[], Callable]:
        def build() -> Callable:
            modes = _pytensor_modes()
            if mode_name in ("pytensor-numba", "pytensor-jax"):
                _require("numba" if mode_name == "pytensor-numba" else "jax")
            if mode_name == "pytensor-mlir":
                import mlir_scan.pytensor  # noqa: F401  (registers the MLIR_SCAN mode)
            fn = build_graph(modes[mode_name])
            # The JAX mode returns JAX arrays, computed asynchronously: wait
            # for the values, as every other implementation does.
            return lambda *args: _materialize(fn(*args))

        return build

    return {name: builder(name) for name in PYTENSOR_IMPLS}


def _jax():
    _require("jax")
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def _numba_jit(fn: Callable) -> Callable:
    _require("numba")
    import numba

    return numba.njit(cache=False)(fn)


# ---------------------------------------------------------------------------
# W1: A**k by repeated multiplication, last value only.
# ---------------------------------------------------------------------------

def w1_power(dtype, quick: bool, length: int = 1000, k: int = 1000) -> Workload:
    t = _mlir_type(dtype)
    A = np.random.default_rng(1).uniform(0.999, 1.001, length).astype(dtype)

    def numpy_loop(A, k):
        result = np.ones_like(A)
        for _ in range(k):
            result = result * A
        return result

    source = f"""
    func.func @power(%A: tensor<?x{t}>, %k: index) -> tensor<?x{t}> {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %len = tensor.dim %A, %c0 : tensor<?x{t}>
      %one = arith.constant 1.0 : {t}
      %empty = tensor.empty(%len) : tensor<?x{t}>
      %ones = linalg.fill ins(%one : {t}) outs(%empty : tensor<?x{t}>) -> tensor<?x{t}>
      %all = scan.scan steps(%k) sitsot(%ones : tensor<?x{t}>) nonsequences(%A : tensor<?x{t}>) {{
      ^bb0(%prior: tensor<?x{t}>, %a: tensor<?x{t}>):
        %next = arith.mulf %prior, %a : tensor<?x{t}>
        scan.yield %next : tensor<?x{t}>
      }} -> (tensor<?x?x{t}>)
      %rows = tensor.dim %all, %c0 : tensor<?x?x{t}>
      %last = arith.subi %rows, %c1 : index
      %r = tensor.extract_slice %all[%last, 0] [1, %len] [1, 1] : tensor<?x?x{t}> to tensor<?x{t}>
      return %r : tensor<?x{t}>
    }}"""

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt

        kv = pt.iscalar("k")
        Av = pt.vector("A", dtype=np.dtype(dtype).name)
        res = pytensor.scan(lambda p, a: p * a, outputs_info=pt.ones_like(Av),
                            non_sequences=Av, n_steps=kv, return_updates=False)
        return pytensor.function([Av, kv], res[-1], mode=mode)

    def jax_impl():
        jax = _jax()
        import jax.numpy as jnp

        def power(A, k):  # k is static: lax.scan needs a concrete length
            def body(carry, _):
                return carry * A, None
            out, _ = jax.lax.scan(body, jnp.ones_like(A), None, length=k)
            return out

        jitted = jax.jit(power, static_argnums=1)
        return lambda A, k: np.asarray(jitted(A, k))

    def numba_impl():
        @_numba_jit
        def power(A, k):
            result = np.ones_like(A)
            for _ in range(k):
                result = result * A
            return result

        return power

    def api(theano, T):
        # The scan guide's "Computing A**k".
        kv = T.iscalar("k")
        Av = T.vector("A", dtype=np.dtype(dtype).name)
        result, updates = theano.scan(fn=lambda prior_result, A: prior_result * A,
                                      outputs_info=T.ones_like(Av), non_sequences=Av, n_steps=kv)
        return theano.function(inputs=[Av, kv], outputs=result[-1], updates=updates)

    w = Workload(f"W1-{np.dtype(dtype).name}", (A, k), numpy_loop,
                 rtol=1e-9 if dtype == np.float64 else 1e-4)
    w.source = source
    w.builders = {**_mlir_scan(source, "power"), **_api(api), "jax": jax_impl, "numba": numba_impl,
                  **_pytensor_builders(pytensor_graph)}
    # k steps, each reading the running product and A, writing the product: L values of each.
    e = np.dtype(dtype).itemsize
    w.flops, w.bytes, w.footprint = k * length, 3 * k * length * e, 2 * length * e
    return w


# ---------------------------------------------------------------------------
# W2: cumulative sum of 100,000 scalars (a scalar SITSOT).
# ---------------------------------------------------------------------------

def w2_cumsum(dtype, quick: bool, length: int = 100_000) -> Workload:
    t = _mlir_type(dtype)
    xs = np.random.default_rng(2).standard_normal(length).astype(dtype)

    def numpy_loop(xs):
        out = np.empty_like(xs)
        acc = xs.dtype.type(0)
        for i, x in enumerate(xs):
            acc = acc + x
            out[i] = acc
        return out

    source = f"""
    func.func @cumsum(%xs: tensor<?x{t}>) -> tensor<?x{t}> {{
      %c0 = arith.constant 0 : index
      %n = tensor.dim %xs, %c0 : tensor<?x{t}>
      %zero = arith.constant 0.0 : {t}
      %r = scan.scan steps(%n) sequences(%xs : tensor<?x{t}>) sitsot(%zero : {t}) {{
      ^bb0(%x: {t}, %acc: {t}):
        %s = arith.addf %acc, %x : {t}
        scan.yield %s : {t}
      }} -> (tensor<?x{t}>)
      return %r : tensor<?x{t}>
    }}"""

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt

        x = pt.vector("xs", dtype=np.dtype(dtype).name)
        res = pytensor.scan(lambda v, acc: acc + v, sequences=x,
                            outputs_info=pt.zeros((), dtype=x.dtype), return_updates=False)
        return pytensor.function([x], res, mode=mode)

    def jax_impl():
        jax = _jax()

        def cumsum(xs):
            def body(acc, x):
                acc = acc + x
                return acc, acc
            _, out = jax.lax.scan(body, xs.dtype.type(0), xs)
            return out

        jitted = jax.jit(cumsum)
        return lambda xs: np.asarray(jitted(xs))

    def numba_impl():
        return _numba_jit(numpy_loop)

    def api(theano, T):
        x = T.vector("xs", dtype=np.dtype(dtype).name)
        result, updates = theano.scan(lambda v, acc: acc + v, sequences=x,
                                      outputs_info=T.constant(dtype(0)))
        return theano.function([x], result, updates=updates)

    w = Workload(f"W2-{np.dtype(dtype).name}", (xs,), numpy_loop,
                 rtol=1e-9 if dtype == np.float64 else 1e-3)
    w.source = source
    w.builders = {**_mlir_scan(source, "cumsum"), **_api(api),
                  "jax": jax_impl, "numba": numba_impl, **_pytensor_builders(pytensor_graph)}
    # One pass: read xs, write out; one add per element.
    e = np.dtype(dtype).itemsize
    w.flops, w.bytes, w.footprint = length, 2 * length * e, 2 * length * e
    return w


# ---------------------------------------------------------------------------
# W3: polynomial sum(c_i * x**i) over 100,000 coefficients.
# ---------------------------------------------------------------------------

def w3_polynomial(dtype, quick: bool, length: int = 100_000) -> Workload:
    t = _mlir_type(dtype)
    coefficients = np.random.default_rng(3).standard_normal(length).astype(dtype)
    x = dtype(0.9999)

    def numpy_loop(c, x):
        total = c.dtype.type(0)
        for i, ci in enumerate(c):
            total = total + ci * x ** i
        return np.asarray(total)

    source = f"""
    func.func @poly(%c: tensor<?x{t}>, %x: {t}) -> {t} {{
      %c0 = arith.constant 0 : index
      %n = tensor.dim %c, %c0 : tensor<?x{t}>
      %powers = tensor.generate %n {{
      ^bb0(%i: index):
        %ii = arith.index_cast %i : index to i64
        tensor.yield %ii : i64
      }} : tensor<?xi64>
      %components = scan.scan steps(%n) sequences(%c : tensor<?x{t}>, %powers : tensor<?xi64>)
          nonsequences(%x : {t}) {{
      ^bb0(%ci: {t}, %p: i64, %xx: {t}):
        %pf = arith.sitofp %p : i64 to {t}
        %xp = math.powf %xx, %pf : {t}
        %term = arith.mulf %ci, %xp : {t}
        scan.yield %term : {t}
      }} -> (tensor<?x{t}>)
      %zero = arith.constant 0.0 : {t}
      %init = tensor.from_elements %zero : tensor<1x{t}>
      %acc = tensor.collapse_shape %init [] : tensor<1x{t}> into tensor<{t}>
      %sum = linalg.reduce ins(%components : tensor<?x{t}>) outs(%acc : tensor<{t}>) dimensions = [0]
        (%in: {t}, %out: {t}) {{
          %s = arith.addf %in, %out : {t}
          linalg.yield %s : {t}
        }}
      %r = tensor.extract %sum[] : tensor<{t}>
      return %r : {t}
    }}"""

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt

        # The powers in the coefficients' dtype, as in every other build: with
        # `pt.arange(length)` (int64), PyTensor's upcasting computes a float32
        # variant's `xx ** p` in float64, in all of its modes and in ours.
        name = np.dtype(dtype).name
        c = pt.vector("c", dtype=name)
        xv = pt.scalar("x", dtype=name)
        comps = pytensor.scan(lambda ci, p, xx: ci * xx ** p, outputs_info=None,
                              sequences=[c, pt.arange(length, dtype=name)], non_sequences=xv,
                              return_updates=False)
        return pytensor.function([c, xv], comps.sum(), mode=mode)

    def jax_impl():
        jax = _jax()
        import jax.numpy as jnp

        def poly(c, x):
            def body(_, inputs):
                ci, p = inputs
                return None, ci * x ** p
            _, comps = jax.lax.scan(body, None, (c, jnp.arange(c.shape[0], dtype=c.dtype)))
            return comps.sum()

        jitted = jax.jit(poly)
        return lambda c, x: np.asarray(jitted(c, x))

    def numba_impl():
        @_numba_jit
        def poly(c, x):
            total = c.dtype.type(0)
            for i in range(c.shape[0]):
                total += c[i] * x ** i
            return total

        return lambda c, x: np.asarray(poly(c, x))

    def api(theano, T):
        # The scan guide's polynomial, with the powers in the coefficients' dtype.
        name = np.dtype(dtype).name
        c = T.vector("coefficients", dtype=name)
        xv = T.scalar("x", dtype=name)
        components, updates = theano.scan(
            fn=lambda coefficient, power, free_variable: coefficient * (free_variable ** power),
            outputs_info=None, sequences=[c, T.arange(length, dtype=name)], non_sequences=xv)
        return theano.function(inputs=[c, xv], outputs=components.sum(), updates=updates)

    w = Workload(f"W3-{np.dtype(dtype).name}", (coefficients, x), numpy_loop,
                 rtol=1e-7 if dtype == np.float64 else 1e-2)
    w.source = source
    w.builders = {**_mlir_scan(source, "poly"), **_api(api),
                  "jax": jax_impl, "numba": numba_impl, **_pytensor_builders(pytensor_graph)}
    # One pass over c: x**i by one multiplication per step, c_i * that, the sum.
    e = np.dtype(dtype).itemsize
    w.flops, w.bytes, w.footprint = 3 * length, length * e, length * e
    return w


# ---------------------------------------------------------------------------
# W4: a Fibonacci-like MITSOT, taps [-2, -1], 10,000 steps.
# ---------------------------------------------------------------------------

def w4_fibonacci(dtype, quick: bool, steps: int = 10_000) -> Workload:
    t = _mlir_type(dtype)
    init = np.array([0.0, 1.0], dtype=dtype)
    a, b = dtype(0.6), dtype(0.4)  # x_t = 0.6 x_{t-1} + 0.4 x_{t-2}: bounded

    def numpy_loop(init, n):
        out = np.empty(n, dtype=init.dtype)
        x2, x1 = init
        for i in range(n):
            x = a * x1 + b * x2
            out[i] = x
            x2, x1 = x1, x
        return out

    source = f"""
    func.func @fib(%init: tensor<2x{t}>, %n: index) -> tensor<?x{t}> {{
      %r = scan.scan steps(%n) mitsot(%init[-2, -1] : tensor<2x{t}>) {{
      ^bb0(%x2: {t}, %x1: {t}):
        %a = arith.constant {float(a)} : {t}
        %b = arith.constant {float(b)} : {t}
        %p = arith.mulf %a, %x1 : {t}
        %q = arith.mulf %b, %x2 : {t}
        %x = arith.addf %p, %q : {t}
        scan.yield %x : {t}
      }} -> (tensor<?x{t}>)
      return %r : tensor<?x{t}>
    }}"""

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt

        iv = pt.vector("init", dtype=np.dtype(dtype).name)
        nv = pt.iscalar("n")
        res = pytensor.scan(lambda x2, x1: a * x1 + b * x2,
                            outputs_info=dict(initial=iv, taps=[-2, -1]), n_steps=nv,
                            return_updates=False)
        return pytensor.function([iv, nv], res, mode=mode)

    def jax_impl():
        jax = _jax()

        def fib(init, n):
            def body(carry, _):
                x2, x1 = carry
                x = a * x1 + b * x2
                return (x1, x), x
            _, out = jax.lax.scan(body, (init[0], init[1]), None, length=n)
            return out

        jitted = jax.jit(fib, static_argnums=1)
        return lambda init, n: np.asarray(jitted(init, n))

    def api(theano, T):
        iv = T.vector("init", dtype=np.dtype(dtype).name)
        nv = T.iscalar("n")
        result, updates = theano.scan(lambda x2, x1: a * x1 + b * x2,
                                      outputs_info=dict(initial=iv, taps=[-2, -1]), n_steps=nv)
        return theano.function([iv, nv], result, updates=updates)

    w = Workload(f"W4-{np.dtype(dtype).name}", (init, steps), numpy_loop,
                 rtol=1e-9 if dtype == np.float64 else 1e-4)
    w.source = source
    w.builders = {**_mlir_scan(source, "fib"), **_api(api), "jax": jax_impl,
                  "numba": lambda: _numba_jit(numpy_loop), **_pytensor_builders(pytensor_graph)}
    # Two multiplications and an add per step, one value written.
    e = np.dtype(dtype).itemsize
    w.flops, w.bytes, w.footprint = 3 * steps, steps * e, steps * e
    return w


# ---------------------------------------------------------------------------
# W5: Elman RNN h_t = tanh(W h_{t-1} + U x_t + b), all h_t.
# ---------------------------------------------------------------------------

def w5_rnn(dtype, quick: bool, hidden: int = 128, inputs: int = 64, steps: int = 1000) -> Workload:
    t = _mlir_type(dtype)
    rng = np.random.default_rng(5)
    H, I = hidden, inputs
    xs = rng.standard_normal((steps, I)).astype(dtype)
    h0 = np.zeros(H, dtype)
    W = (rng.standard_normal((H, H)) / np.sqrt(H)).astype(dtype)
    U = (rng.standard_normal((I, H)) / np.sqrt(I)).astype(dtype)
    bias = (rng.standard_normal(H) * 0.1).astype(dtype)

    def numpy_loop(xs, h0, W, U, bias):
        out = np.empty((xs.shape[0], h0.shape[0]), dtype=h0.dtype)
        h = h0
        for i in range(xs.shape[0]):
            h = np.tanh(h @ W + xs[i] @ U + bias)
            out[i] = h
        return out

    source = f"""
    func.func @rnn(%xs: tensor<?x{I}x{t}>, %h0: tensor<{H}x{t}>, %W: tensor<{H}x{H}x{t}>,
                   %U: tensor<{I}x{H}x{t}>, %b: tensor<{H}x{t}>) -> tensor<?x{H}x{t}> {{
      %c0 = arith.constant 0 : index
      %n = tensor.dim %xs, %c0 : tensor<?x{I}x{t}>
      %r = scan.scan steps(%n) sequences(%xs : tensor<?x{I}x{t}>) sitsot(%h0 : tensor<{H}x{t}>)
          nonsequences(%W, %U, %b : tensor<{H}x{H}x{t}>, tensor<{I}x{H}x{t}>, tensor<{H}x{t}>) {{
      ^bb0(%x: tensor<{I}x{t}>, %h: tensor<{H}x{t}>, %w: tensor<{H}x{H}x{t}>,
           %u: tensor<{I}x{H}x{t}>, %bb: tensor<{H}x{t}>):
        %e = tensor.empty() : tensor<{H}x{t}>
        %z = arith.constant 0.0 : {t}
        %f = linalg.fill ins(%z : {t}) outs(%e : tensor<{H}x{t}>) -> tensor<{H}x{t}>
        %wh = linalg.vecmat ins(%h, %w : tensor<{H}x{t}>, tensor<{H}x{H}x{t}>) outs(%f : tensor<{H}x{t}>) -> tensor<{H}x{t}>
        %ux = linalg.vecmat ins(%x, %u : tensor<{I}x{t}>, tensor<{I}x{H}x{t}>) outs(%f : tensor<{H}x{t}>) -> tensor<{H}x{t}>
        %s = arith.addf %wh, %ux : tensor<{H}x{t}>
        %sb = arith.addf %s, %bb : tensor<{H}x{t}>
        %next = math.tanh %sb : tensor<{H}x{t}>
        scan.yield %next : tensor<{H}x{t}>
      }} -> (tensor<?x{H}x{t}>)
      return %r : tensor<?x{H}x{t}>
    }}"""

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt

        name = np.dtype(dtype).name
        xv, hv = pt.matrix("xs", dtype=name), pt.vector("h0", dtype=name)
        Wv, Uv, bv = pt.matrix("W", dtype=name), pt.matrix("U", dtype=name), pt.vector("b", dtype=name)
        res = pytensor.scan(lambda x, h, W, U, b: pt.tanh(pt.dot(h, W) + pt.dot(x, U) + b),
                            sequences=xv, outputs_info=hv, non_sequences=[Wv, Uv, bv],
                            return_updates=False)
        return pytensor.function([xv, hv, Wv, Uv, bv], res, mode=mode)

    def jax_impl():
        jax = _jax()
        import jax.numpy as jnp

        def rnn(xs, h0, W, U, bias):
            def body(h, x):
                h = jnp.tanh(h @ W + x @ U + bias)
                return h, h
            _, out = jax.lax.scan(body, h0, xs)
            return out

        jitted = jax.jit(rnn)
        return lambda *args: np.asarray(jitted(*args))

    def numba_impl():
        @_numba_jit
        def rnn(xs, h0, W, U, bias):
            out = np.empty((xs.shape[0], h0.shape[0]), dtype=h0.dtype)
            h = h0.copy()
            for i in range(xs.shape[0]):
                h = np.tanh(h @ W + xs[i] @ U + bias)
                out[i] = h
            return out

        return rnn

    def api(theano, T):
        # The scan guide's Elman RNN (h W, as the NumPy loop computes it).
        name = np.dtype(dtype).name
        xv, hv = T.matrix("xs", dtype=name), T.vector("h0", dtype=name)
        Wv, Uv, bv = T.matrix("W", dtype=name), T.matrix("U", dtype=name), T.vector("b", dtype=name)
        hs, updates = theano.scan(lambda x, h, W, U, b: T.tanh(T.dot(h, W) + T.dot(x, U) + b),
                                  sequences=xv, outputs_info=hv, non_sequences=[Wv, Uv, bv])
        return theano.function([xv, hv, Wv, Uv, bv], hs, updates=updates)

    w = Workload(f"W5-{np.dtype(dtype).name}-H{H}", (xs, h0, W, U, bias), numpy_loop,
                 rtol=1e-8 if dtype == np.float64 else 2e-3)
    w.source = source
    w.builders = {**_mlir_scan(source, "rnn"), **_api(api), "jax": jax_impl,
                  "numba": numba_impl, **_pytensor_builders(pytensor_graph)}
    # Each of the T steps streams W (H*H) and does 2*H*H flops for h W; x_t U
    # (2*I*H), + b and tanh (counted as 2*H); U is read once (scan-optimize
    # pushes x_t U out of the loop), xs read and every h_t written once.
    e, T_ = np.dtype(dtype).itemsize, steps
    w.flops = T_ * (2 * H * H + 2 * I * H + 2 * H)
    w.bytes = (T_ * H * H + I * H + T_ * I + T_ * H) * e
    w.footprint = (H * H + I * H + 2 * H) * e  # what every step re-reads
    return w


# ---------------------------------------------------------------------------
# W6: the gradient of W5, d/dW sum_t sum(h_t), built through the Theano API (T.grad).
# ---------------------------------------------------------------------------

def w6_mlir_function(dtype, save_every_N: int | None = None, last_only: bool = False):
    """W6 through the Theano-compatible API: ``T.grad`` of the W5 graph (or of its
    ``scan_checkpoints`` form, which keeps every N-th state and recomputes the rest)."""
    import mlir_scan as theano
    from mlir_scan import tensor as T

    name = np.dtype(dtype).name
    xv, hv = T.matrix("xs", dtype=name), T.vector("h0", dtype=name)
    Wv, Uv, bv = T.matrix("W", dtype=name), T.matrix("U", dtype=name), T.vector("b", dtype=name)

    def step(x, h, W, U, b):
        return T.tanh(T.dot(h, W) + T.dot(x, U) + b)

    if save_every_N is None:
        hs, _ = theano.scan(step, sequences=xv, outputs_info=hv, non_sequences=[Wv, Uv, bv])
        cost = hs[-1].sum() if last_only else hs.sum()
    else:
        # (the checkpointed scan returns the state after each segment: its gradient is
        # that of the last state's sum)
        hs, _ = theano.scan_checkpoints(step, sequences=[xv], outputs_info=[hv], non_sequences=[Wv, Uv, bv],
                                        save_every_N=save_every_N)
        cost = hs[-1].sum()
    return theano.function([xv, hv, Wv, Uv, bv], T.grad(cost, Wv))


def w6_rnn_grad(dtype, quick: bool, hidden: int = 128, inputs: int = 64, steps: int = 1000) -> Workload:
    rng = np.random.default_rng(6)
    H, I = hidden, inputs
    xs = rng.standard_normal((steps, I)).astype(dtype)
    h0 = np.zeros(H, dtype)
    W = (rng.standard_normal((H, H)) / np.sqrt(H)).astype(dtype)
    U = (rng.standard_normal((I, H)) / np.sqrt(I)).astype(dtype)
    bias = (rng.standard_normal(H) * 0.1).astype(dtype)
    name = np.dtype(dtype).name

    def numpy_loop(xs, h0, W, U, bias):
        # Backpropagation through time by hand (the oracle).
        hs = np.empty((xs.shape[0], h0.shape[0]), dtype=h0.dtype)
        h = h0
        for i in range(xs.shape[0]):
            h = np.tanh(h @ W + xs[i] @ U + bias)
            hs[i] = h
        dW = np.zeros_like(W)
        carry = np.zeros_like(h0)
        for i in range(xs.shape[0] - 1, -1, -1):
            da = (1 + carry) * (1 - hs[i] * hs[i])
            prev = hs[i - 1] if i > 0 else h0
            dW += np.outer(prev, da)
            carry = da @ W.T
        return dW

    def mlir():
        return w6_mlir_function(dtype)

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt

        xv, hv = pt.matrix("xs", dtype=name), pt.vector("h0", dtype=name)
        Wv, Uv, bv = pt.matrix("W", dtype=name), pt.matrix("U", dtype=name), pt.vector("b", dtype=name)
        res = pytensor.scan(lambda x, h, W, U, b: pt.tanh(pt.dot(h, W) + pt.dot(x, U) + b),
                            sequences=xv, outputs_info=hv, non_sequences=[Wv, Uv, bv],
                            return_updates=False)
        gW = pytensor.grad(res.sum(), Wv)
        return pytensor.function([xv, hv, Wv, Uv, bv], gW, mode=mode)

    def jax_impl():
        jax = _jax()
        import jax.numpy as jnp

        def loss(W, xs, h0, U, bias):
            def body(h, x):
                h = jnp.tanh(h @ W + x @ U + bias)
                return h, h
            _, out = jax.lax.scan(body, h0, xs)
            return out.sum()

        jitted = jax.jit(jax.grad(loss))
        return lambda xs, h0, W, U, bias: np.asarray(jitted(W, xs, h0, U, bias))

    def numba_impl():
        @_numba_jit
        def bptt(xs, h0, W, U, bias):
            n, H = xs.shape[0], h0.shape[0]
            hs = np.empty((n, H), dtype=h0.dtype)
            h = h0.copy()
            for i in range(n):
                h = np.tanh(h @ W + xs[i] @ U + bias)
                hs[i] = h
            dW = np.zeros_like(W)
            carry = np.zeros_like(h0)
            WT = np.ascontiguousarray(W.T)
            for i in range(n - 1, -1, -1):
                da = (1 + carry) * (1 - hs[i] * hs[i])
                prev = hs[i - 1] if i > 0 else h0
                dW += np.outer(prev, da)
                carry = da @ WT
            return dW

        return bptt

    w = Workload(f"W6-{name}-H{H}", (xs, h0, W, U, bias), numpy_loop,
                 rtol=1e-8 if dtype == np.float64 else 5e-3)
    w.builders = {"mlir-scan": mlir, "jax": jax_impl, "numba": numba_impl, **_pytensor_builders(pytensor_graph)}
    # The forward step (h W: H*H streamed, 2*H*H flops), the backward step's
    # dh W^T (the same again) and dW += h^T dh (2*H*H flops; accumulated in
    # registers/cache, so not counted as traffic per step), the forward
    # states written and read back once, dW written once.
    e, T_ = np.dtype(dtype).itemsize, steps
    w.flops = T_ * (6 * H * H + 4 * I * H + 6 * H)
    w.bytes = (2 * T_ * H * H + H * H + I * H + T_ * I + 2 * T_ * H) * e
    w.footprint = (2 * H * H + I * H + 2 * H) * e  # W and dW, re-read every step
    return w


# ---------------------------------------------------------------------------
# W7: until: doubling until the value exceeds a maximum, at most 1024 steps.
# ---------------------------------------------------------------------------

def w7_until(dtype, quick: bool, maximum: float = 1e300) -> Workload:
    t = _mlir_type(dtype)
    limit = dtype(maximum if dtype == np.float64 else 1e37)

    def numpy_loop(limit):
        values, x = [], dtype(1)
        for _ in range(1024):
            x = x * dtype(2)
            values.append(x)
            if x > limit:
                break
        return np.array(values, dtype=dtype)

    source = f"""
    func.func @double(%max: {t}) -> tensor<?x{t}> {{
      %c1024 = arith.constant 1024 : index
      %one = arith.constant 1.0 : {t}
      %r = scan.scan steps(%c1024) until sitsot(%one : {t}) nonsequences(%max : {t}) {{
      ^bb0(%p: {t}, %m: {t}):
        %two = arith.constant 2.0 : {t}
        %x = arith.mulf %p, %two : {t}
        %stop = arith.cmpf ogt, %x, %m : {t}
        scan.yield %x, %stop : {t}, i1
      }} -> (tensor<?x{t}>)
      return %r : tensor<?x{t}>
    }}"""

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt
        from pytensor.scan.utils import until

        m = pt.scalar("max", dtype=np.dtype(dtype).name)

        def step(p, m):
            x = p * 2
            return x, until(x > m)

        res = pytensor.scan(step, outputs_info=pt.constant(dtype(1)), non_sequences=m,
                            n_steps=1024, return_updates=False)
        return pytensor.function([m], res, mode=mode)

    def jax_impl():
        jax = _jax()
        import jax.numpy as jnp

        def double(m):
            # JAX has no early exit in scan: a while_loop filling a buffer.
            def cond(state):
                i, x, _ = state
                return (i < 1024) & ((i == 0) | (x <= m))

            def body(state):
                i, x, buf = state
                x = x * 2
                return i + 1, x, buf.at[i].set(x)

            i, _, buf = jax.lax.while_loop(cond, body, (0, jnp.asarray(1, m.dtype),
                                                        jnp.zeros(1024, m.dtype)))
            return buf, i

        jitted = jax.jit(double)

        def run(m):
            buf, i = jitted(m)
            return np.asarray(buf)[: int(i)]

        return run

    def api(theano, T):
        # The scan guide's "Conditional ending of Scan".
        def power_of_2(previous_power, max_value):
            return previous_power * 2, theano.scan_module.until(previous_power * 2 > max_value)

        max_value = T.scalar("max", dtype=np.dtype(dtype).name)
        values, updates = theano.scan(power_of_2, outputs_info=T.constant(dtype(1)),
                                      non_sequences=max_value, n_steps=1024)
        return theano.function([max_value], values, updates=updates)

    w = Workload(f"W7-{np.dtype(dtype).name}", (limit,), numpy_loop, rtol=0)
    w.source = source
    w.builders = {**_mlir_scan(source, "double"), **_api(api), "jax": jax_impl,
                  "numba": lambda: _numba_jit(numpy_loop), **_pytensor_builders(pytensor_graph)}
    # One multiplication and a comparison per step, until 2**n exceeds the limit.
    e, n = np.dtype(dtype).itemsize, len(numpy_loop(limit))
    w.flops, w.bytes, w.footprint = 2 * n, n * e, n * e
    return w


# ---------------------------------------------------------------------------
# Per-step overhead: a trivial scalar body, 10^6 steps.
# ---------------------------------------------------------------------------

def overhead_probe(dtype, quick: bool, steps: int = 1_000_000) -> Workload:
    t = _mlir_type(dtype)
    xs = np.random.default_rng(7).standard_normal(steps).astype(dtype)

    def numpy_loop(xs):
        # A recurrence LLVM cannot collapse: x_t = x_{t-1} * 0.5 + seq_t.
        acc = xs.dtype.type(0)
        for x in xs:
            acc = acc * xs.dtype.type(0.5) + x
        return np.asarray(acc)

    source = f"""
    func.func @probe(%xs: tensor<?x{t}>) -> {t} {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = tensor.dim %xs, %c0 : tensor<?x{t}>
      %zero = arith.constant 0.0 : {t}
      %r = scan.scan steps(%n) sequences(%xs : tensor<?x{t}>) sitsot(%zero : {t}) {{
      ^bb0(%x: {t}, %acc: {t}):
        %half = arith.constant 0.5 : {t}
        %h = arith.mulf %acc, %half : {t}
        %s = arith.addf %h, %x : {t}
        scan.yield %s : {t}
      }} -> (tensor<?x{t}>)
      %last = arith.subi %n, %c1 : index
      %v = tensor.extract %r[%last] : tensor<?x{t}>
      return %v : {t}
    }}"""

    def numba_impl():
        @_numba_jit
        def probe(xs):
            acc = xs.dtype.type(0)
            for i in range(xs.shape[0]):
                acc = acc * xs.dtype.type(0.5) + xs[i]
            return acc

        return lambda xs: np.asarray(probe(xs))

    def jax_impl():
        jax = _jax()

        def probe(xs):
            def body(acc, x):
                return acc * 0.5 + x, None
            acc, _ = jax.lax.scan(body, xs.dtype.type(0), xs)
            return acc

        jitted = jax.jit(probe)
        return lambda xs: np.asarray(jitted(xs))

    def api(theano, T):
        x = T.vector("xs", dtype=np.dtype(dtype).name)
        acc, updates = theano.scan(lambda v, a: a * dtype(0.5) + v, sequences=x,
                                   outputs_info=T.constant(dtype(0)))
        return theano.function([x], acc[-1], updates=updates)

    w = Workload(f"overhead-{np.dtype(dtype).name}", (xs,), numpy_loop,
                 rtol=1e-9 if dtype == np.float64 else 1e-3)
    w.source = source
    w.builders = {**_mlir_scan(source, "probe", wrap=lambda f: lambda xs: np.asarray(f(xs))), **_api(api),
                  "numba": numba_impl, "jax": jax_impl}
    # x = 0.5 x + s_t: two flops per step, one value read.
    e = np.dtype(dtype).itemsize
    w.flops, w.bytes, w.footprint = 2 * steps, steps * e, steps * e
    return w


# ---------------------------------------------------------------------------
# W8: the gradient of a batched dot, as the LSTM tutorial's input projection
# `dot(state_below, W)` with state_below of shape (T, B, D): d/dW and d/dx of
# sum(dot(x, W) ** 2), both (PyTensor builds each as one matrix product).
# ---------------------------------------------------------------------------

def _flat_results(fn: Callable) -> Callable:
    """`fn`'s results as one vector (the harness compares one array)."""
    return lambda *args: np.concatenate([np.ravel(np.asarray(r)) for r in fn(*args)])


def w8_batched_dot_grad(dtype, quick: bool, steps: int = 99, batch: int = 16, inputs: int = 128,
                        outputs: int = 512) -> Workload:
    rng = np.random.default_rng(8)
    xs = rng.standard_normal((steps, batch, inputs)).astype(dtype)
    W = (rng.standard_normal((inputs, outputs)) * 0.01).astype(dtype)
    name = np.dtype(dtype).name

    def numpy_loop(xs, W):
        y = xs @ W
        dy = 2 * y
        return np.concatenate([(xs.reshape(-1, xs.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])).ravel(),
                               (dy @ W.T).ravel()])

    def api(theano, T):
        x, w = T.tensor3("x", dtype=name), T.matrix("W", dtype=name)
        cost = (T.dot(x, w) ** 2).sum()
        return theano.function([x, w], T.grad(cost, [w, x]))

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt

        x, w = pt.tensor3("x", dtype=name), pt.matrix("W", dtype=name)
        cost = (pt.dot(x, w) ** 2).sum()
        return pytensor.function([x, w], pytensor.grad(cost, [w, x]), mode=mode)

    def jax_impl():
        jax = _jax()
        import jax.numpy as jnp

        jitted = jax.jit(jax.grad(lambda w, x: (jnp.dot(x, w) ** 2).sum(), argnums=(0, 1)))
        return _flat_results(lambda x, w: [np.asarray(r) for r in jitted(w, x)])

    def numba_impl():
        @_numba_jit
        def grads(x, w):
            x2 = x.reshape(-1, x.shape[-1])
            dy = 2 * (x2 @ w)
            return x2.T @ dy, (dy @ w.T).reshape(x.shape)

        return _flat_results(grads)

    w = Workload(f"W8-{name}", (xs, W), numpy_loop, rtol=1e-9 if dtype == np.float64 else 1e-4)
    pytensor_builders = {k: (lambda b=b: _flat_results(b())) for k, b in _pytensor_builders(pytensor_graph).items()}
    w.builders = {"mlir-scan": _api(api, wrap=_flat_results)["mlir-scan-api"], "jax": jax_impl,
                  "numba": numba_impl, **pytensor_builders}
    # y = x W, d/dW = x^T 2y, d/dx = 2y W^T: three products of 2*N*I*O flops
    # (N = steps * batch rows); x read, W read, y/dy written and read, the two
    # gradients written.
    e, N = np.dtype(dtype).itemsize, steps * batch
    w.flops = 6 * N * inputs * outputs + 2 * N * outputs
    w.bytes = (2 * N * inputs + 2 * inputs * outputs + 2 * N * outputs) * e
    w.footprint = w.bytes
    return w


# ---------------------------------------------------------------------------
# W9: one training step of the LSTM tutorial (DeepLearningTutorials' lstm.py):
# embedding lookup, masked LSTM scan, mean pooling, softmax, the
# p[arange(n), y] cost, and adadelta's two functions (f_grad_shared, f_update).
# ---------------------------------------------------------------------------

def _lstm_params(rng, n_words: int, dim: int, classes: int, dtype) -> dict[str, np.ndarray]:
    def ortho():
        u, _, _ = np.linalg.svd(rng.standard_normal((dim, dim)))
        return u

    return {
        "Wemb": (0.01 * rng.random((n_words, dim))).astype(dtype),
        "lstm_W": np.concatenate([ortho() for _ in range(4)], axis=1).astype(dtype),
        "lstm_U": np.concatenate([ortho() for _ in range(4)], axis=1).astype(dtype),
        "lstm_b": np.zeros(4 * dim, dtype),
        "U": (0.01 * rng.standard_normal((dim, classes))).astype(dtype),
        "b": np.zeros(classes, dtype),
    }


def _lstm_tutorial_step(theano, T, sigmoid, softmax, params: dict, dtype):
    """The tutorial's build_model + adadelta, written as lstm.py writes them,
    for any Theano-like module (mlir_scan, pytensor); returns step(x, mask, y)."""
    floatX = np.dtype(dtype).name
    tparams = {k: theano.shared(v.copy(), name=k) for k, v in params.items()}
    dim = params["lstm_U"].shape[0]
    x = T.matrix("x", dtype="int64")
    mask = T.matrix("mask", dtype=floatX)
    y = T.vector("y", dtype="int64")
    n_timesteps, n_samples = x.shape[0], x.shape[1]
    emb = tparams["Wemb"][x.flatten()].reshape([n_timesteps, n_samples, dim])

    def _slice(_x, n):
        return _x[:, n * dim:(n + 1) * dim]

    def _step(m_, x_, h_, c_):
        preact = T.dot(h_, tparams["lstm_U"])
        preact += x_
        i = sigmoid(_slice(preact, 0))
        f = sigmoid(_slice(preact, 1))
        o = sigmoid(_slice(preact, 2))
        c = T.tanh(_slice(preact, 3))
        c = f * c_ + i * c
        c = m_[:, None] * c + (1. - m_)[:, None] * c_
        h = o * T.tanh(c)
        h = m_[:, None] * h + (1. - m_)[:, None] * h_
        return h, c

    state_below = T.dot(emb, tparams["lstm_W"]) + tparams["lstm_b"]
    zero = np.asarray(0., dtype=floatX)
    rval, _ = theano.scan(_step, sequences=[mask, state_below],
                          outputs_info=[T.alloc(zero, n_samples, dim), T.alloc(zero, n_samples, dim)],
                          n_steps=n_timesteps)
    proj = (rval[0] * mask[:, :, None]).sum(axis=0)
    proj = proj / mask.sum(axis=0)[:, None]
    pred = softmax(T.dot(proj, tparams["U"]) + tparams["b"])
    cost = -T.log(pred[T.arange(n_samples), y] + 1e-8).mean()
    grads = T.grad(cost, wrt=list(tparams.values()))

    zipped_grads = [theano.shared(p.get_value() * zero, name=f"{k}_grad") for k, p in tparams.items()]
    running_up2 = [theano.shared(p.get_value() * zero, name=f"{k}_rup2") for k, p in tparams.items()]
    running_grads2 = [theano.shared(p.get_value() * zero, name=f"{k}_rgrad2") for k, p in tparams.items()]
    zgup = [(zg, g) for zg, g in zip(zipped_grads, grads)]
    rg2up = [(rg2, 0.95 * rg2 + 0.05 * (g ** 2)) for rg2, g in zip(running_grads2, grads)]
    f_grad_shared = theano.function([x, mask, y], cost, updates=zgup + rg2up)
    updir = [-T.sqrt(ru2 + 1e-6) / T.sqrt(rg2 + 1e-6) * zg
             for zg, ru2, rg2 in zip(zipped_grads, running_up2, running_grads2)]
    ru2up = [(ru2, 0.95 * ru2 + 0.05 * (ud ** 2)) for ru2, ud in zip(running_up2, updir)]
    param_up = [(p, p + ud) for p, ud in zip(tparams.values(), updir)]
    lr = T.scalar("lr", dtype=floatX)
    f_update = theano.function([lr], [], updates=ru2up + param_up, on_unused_input="ignore")

    def step(xv, maskv, yv):
        cost_value = f_grad_shared(xv, maskv, yv)
        f_update(np.asarray(0.0001, floatX))
        return np.concatenate([np.ravel(cost_value)] + [p.get_value(borrow=True).ravel() for p in tparams.values()])

    return step


def _lstm_numpy_step(params: dict, x, mask, y, state: dict) -> np.ndarray:
    """The same step by hand: forward, backpropagation through time, adadelta."""
    P = params
    dim = P["lstm_U"].shape[0]
    T_, N = x.shape
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    emb = P["Wemb"][x.ravel()].reshape(T_, N, dim)
    sb = emb @ P["lstm_W"] + P["lstm_b"]
    h, c = np.zeros((N, dim), sb.dtype), np.zeros((N, dim), sb.dtype)
    tape = []
    hs = np.empty((T_, N, dim), sb.dtype)
    for t in range(T_):
        m = mask[t][:, None]
        pre = h @ P["lstm_U"] + sb[t]
        i, f, o = sig(pre[:, :dim]), sig(pre[:, dim:2 * dim]), sig(pre[:, 2 * dim:3 * dim])
        ct = np.tanh(pre[:, 3 * dim:])
        c_new = m * (f * c + i * ct) + (1 - m) * c
        tc = np.tanh(c_new)
        h_new = m * (o * tc) + (1 - m) * h
        tape.append((h, c, i, f, o, ct, tc, m))
        h, c = h_new, c_new
        hs[t] = h
    msum = mask.sum(axis=0)[:, None]
    proj = (hs * mask[:, :, None]).sum(axis=0) / msum
    z = proj @ P["U"] + P["b"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    pred = e / e.sum(axis=1, keepdims=True)
    picked = pred[np.arange(N), y]
    cost = -np.log(picked + 1e-8).mean()
    dpred = np.zeros_like(pred)
    dpred[np.arange(N), y] = -1.0 / N / (picked + 1e-8)
    dz = pred * (dpred - (dpred * pred).sum(axis=1, keepdims=True))
    g = {"U": proj.T @ dz, "b": dz.sum(axis=0)}
    dproj = dz @ P["U"].T / msum
    dU_l = np.zeros_like(P["lstm_U"])
    dsb = np.empty_like(sb)
    dh_next, dc_next = np.zeros((N, dim), sb.dtype), np.zeros((N, dim), sb.dtype)
    for t in reversed(range(T_)):
        h_prev, c_prev, i, f, o, ct, tc, m = tape[t]
        dh = dproj * mask[t][:, None] + dh_next
        dhraw = m * dh
        do = dhraw * tc
        dc = dc_next + dhraw * o * (1 - tc ** 2)
        dcraw = m * dc
        dpre = np.concatenate([dcraw * ct * i * (1 - i), dcraw * c_prev * f * (1 - f), do * o * (1 - o),
                               dcraw * i * (1 - ct ** 2)], axis=1)
        dsb[t] = dpre
        dU_l += h_prev.T @ dpre
        dh_next = (1 - m) * dh + dpre @ P["lstm_U"].T
        dc_next = (1 - m) * dc + dcraw * f
    g["lstm_U"] = dU_l
    g["lstm_W"] = emb.reshape(-1, dim).T @ dsb.reshape(-1, 4 * dim)
    g["lstm_b"] = dsb.sum(axis=(0, 1))
    dWemb = np.zeros_like(P["Wemb"])
    np.add.at(dWemb, x.ravel(), (dsb @ P["lstm_W"].T).reshape(-1, dim))
    g["Wemb"] = dWemb
    out = [np.ravel(cost)]
    for k in P:
        rg2 = state.setdefault(("rg2", k), np.zeros_like(P[k]))
        ru2 = state.setdefault(("ru2", k), np.zeros_like(P[k]))
        rg2[...] = 0.95 * rg2 + 0.05 * g[k] ** 2
        ud = -np.sqrt(ru2 + 1e-6) / np.sqrt(rg2 + 1e-6) * g[k]
        ru2[...] = 0.95 * ru2 + 0.05 * ud ** 2
        P[k] = P[k] + ud
        out.append(P[k].ravel())
    return np.concatenate(out).astype(sb.dtype)


def w9_lstm_tutorial(dtype, quick: bool, n_words: int = 10_000, dim: int = 128, batch: int = 16,
                     maxlen: int = 100) -> Workload:
    if quick:
        n_words, maxlen = min(n_words, 2000), min(maxlen, 30)
    rng = np.random.default_rng(9)
    params = _lstm_params(rng, n_words, dim, 2, dtype)
    lengths = rng.integers(max(1, maxlen // 3), maxlen + 1, size=batch)
    x = np.zeros((maxlen, batch), np.int64)
    mask = np.zeros((maxlen, batch), dtype)
    for j, n in enumerate(lengths):
        x[:n, j] = rng.integers(1, n_words, size=n)
        mask[:n, j] = 1
    y = rng.integers(0, 2, size=batch).astype(np.int64)
    name = np.dtype(dtype).name

    def numpy_loop(xv, maskv, yv):
        # A fresh model per call, as every implementation's first call starts from one.
        return _lstm_numpy_step({k: v.copy() for k, v in params.items()}, xv, maskv, yv, {})

    def api(theano, T):
        return _lstm_tutorial_step(theano, T, T.nnet.sigmoid, T.nnet.softmax, params, dtype)

    def pytensor_graph(mode):
        import pytensor
        import pytensor.tensor as pt
        from pytensor.compile.mode import get_mode

        class _Theano:  # pytensor under the tutorial's names, compiling in `mode`
            shared = staticmethod(pytensor.shared)

            @staticmethod
            def scan(*args, **kwargs):
                return pytensor.scan(*args, return_updates=True, **kwargs)

            @staticmethod
            def function(*args, **kwargs):
                return pytensor.function(*args, mode=get_mode(mode), **kwargs)

        # (Theano's T.nnet.softmax is row-wise; PyTensor's default axis is all of them. The
        # tutorial's constants are config.floatX's: float32 programs need floatX=float32.)
        with pytensor.config.change_flags(floatX=name):
            return _lstm_tutorial_step(_Theano, pt, pt.sigmoid, lambda v: pt.special.softmax(v, axis=-1),
                                       params, dtype)

    def jax_impl():
        jax = _jax()
        import jax.numpy as jnp

        def cost_fn(P, xv, maskv, yv):
            T_, N = xv.shape
            emb = P["Wemb"][xv.ravel()].reshape(T_, N, dim)
            sb = emb @ P["lstm_W"] + P["lstm_b"]

            def body(carry, inp):
                h_, c_ = carry
                m_, x_ = inp
                pre = h_ @ P["lstm_U"] + x_
                i, f, o = (jax.nn.sigmoid(pre[:, k * dim:(k + 1) * dim]) for k in range(3))
                c = m_[:, None] * (f * c_ + i * jnp.tanh(pre[:, 3 * dim:])) + (1 - m_)[:, None] * c_
                h = m_[:, None] * (o * jnp.tanh(c)) + (1 - m_)[:, None] * h_
                return (h, c), h

            zeros = jnp.zeros((N, dim), sb.dtype)
            _, hs = jax.lax.scan(body, (zeros, zeros), (maskv, sb))
            proj = (hs * maskv[:, :, None]).sum(axis=0) / maskv.sum(axis=0)[:, None]
            pred = jax.nn.softmax(proj @ P["U"] + P["b"], axis=1)
            return -jnp.log(pred[jnp.arange(N), yv] + 1e-8).mean()

        @jax.jit
        def train_step(P, rg2, ru2, xv, maskv, yv):
            cost, g = jax.value_and_grad(cost_fn)(P, xv, maskv, yv)
            rg2 = {k: 0.95 * rg2[k] + 0.05 * g[k] ** 2 for k in P}
            ud = {k: -jnp.sqrt(ru2[k] + 1e-6) / jnp.sqrt(rg2[k] + 1e-6) * g[k] for k in P}
            ru2 = {k: 0.95 * ru2[k] + 0.05 * ud[k] ** 2 for k in P}
            return cost, {k: P[k] + ud[k] for k in P}, rg2, ru2

        state = [dict(params), {k: np.zeros_like(v) for k, v in params.items()},
                 {k: np.zeros_like(v) for k, v in params.items()}]

        def step(xv, maskv, yv):
            cost, state[0], state[1], state[2] = train_step(*state, xv, maskv, yv)
            return np.concatenate([np.ravel(np.asarray(cost))] + [np.asarray(state[0][k]).ravel() for k in params])

        return step

    w = Workload(f"W9-{name}", (x, mask, y), numpy_loop, rtol=1e-9 if dtype == np.float64 else 2e-4)
    w.builders = {"mlir-scan": _api(api)["mlir-scan-api"], "jax": jax_impl, **_pytensor_builders(pytensor_graph)}
    # Forward: per step h_{t-1} U (batch x dim x 4dim); before the loop
    # emb W (the same size per step); the backward pass twice the forward's
    # flops. adadelta touches every parameter P: the gradient written, two
    # running averages read and written, the parameter read and written, the
    # dense gradient of Wemb zeroed and filled: about 10*P values.
    e, P = np.dtype(dtype).itemsize, sum(v.size for v in params.values())
    w.flops = 3 * maxlen * 2 * (2 * batch * dim * 4 * dim) + 10 * P
    w.bytes = 10 * P * e + 3 * maxlen * batch * 4 * dim * 4 * e
    w.footprint = 4 * P * e
    return w


ALL = [w1_power, w2_cumsum, w3_polynomial, w4_fibonacci, w5_rnn, w6_rnn_grad, w7_until, w8_batched_dot_grad,
       w9_lstm_tutorial, overhead_probe]
