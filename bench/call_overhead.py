"""The cost of a call, measured alone (issue 12).

    python bench/call_overhead.py [--json FILE]

1. **A call with a few small arrays**: three 4-element float64 arrays added,
   through the raw IR's function (`mlir_scan.compile`) and the Theano API's
   (`theano.function`), against numba's dispatcher on the same work. The
   compiled body takes nanoseconds: what is measured is the call.
2. **Many results**: a scan with 32 scalar states over 50 steps returning all
   32 output rows (the issue's case: 250-310 µs a call through ctypes), against
   `jax.jit` of the same `lax.scan`.
3. **Threads**: a call with about a millisecond of native work (a scalar
   recurrence over 10^6 steps, compute-bound), 40 calls from one thread against
   20 from each of two threads at once: with the GIL released during the call,
   two threads take about half the time on two cores.

Times are medians of repeated runs; only the ratios within one run mean
something on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import timeit

import numpy as np


def _per_call(fn, args, number: int = 20000, repeat: int = 7) -> float:
    fn(*args)
    return float(np.median(timeit.repeat(lambda: fn(*args), number=number, repeat=repeat))) / number


def small_arrays() -> dict:
    import numba

    import mlir_scan
    import mlir_scan as theano
    from mlir_scan import tensor as T

    raw = mlir_scan.compile("""
    func.func @add3(%a: tensor<4xf64>, %b: tensor<4xf64>, %c: tensor<4xf64>) -> tensor<4xf64> {
      %s = arith.addf %a, %b : tensor<4xf64>
      %t = arith.addf %s, %c : tensor<4xf64>
      return %t : tensor<4xf64>
    }""").add3
    a, b, c = T.dvector("a"), T.dvector("b"), T.dvector("c")
    api = theano.function([a, b, c], a + b + c)

    @numba.njit
    def add3(a, b, c):
        return a + b + c

    args = tuple(np.arange(4.0) + k for k in range(3))
    for fn in (raw, api, add3):
        np.testing.assert_array_equal(fn(*args), args[0] + args[1] + args[2])
    return {"raw IR": _per_call(raw, args), "Theano API": _per_call(api, args),
            "numba": _per_call(add3, args)}


def many_results() -> dict:
    import mlir_scan as theano
    from mlir_scan import tensor as T

    k = 32
    inits = [T.dscalar(f"s{i}") for i in range(k)]
    outs, _ = theano.scan(lambda *s: [v * 0.5 + 1.0 for v in s], outputs_info=inits, n_steps=50)
    api = theano.function(inits, outs)
    args = tuple(float(i) for i in range(k))
    result = {"Theano API": _per_call(api, args, number=2000)}
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)

        def scan(*s):
            def body(carry, _):
                carry = tuple(v * 0.5 + 1.0 for v in carry)
                return carry, carry
            _, ys = jax.lax.scan(body, tuple(jnp.asarray(v) for v in s), None, length=50)
            return ys

        jitted = jax.jit(scan)

        def run(*s):
            return [np.asarray(y) for y in jitted(*s)]

        ours, theirs = api(*args), run(*args)
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o, t, rtol=1e-15)
        result["jax"] = _per_call(run, args, number=2000)
    except ImportError:
        pass
    return result


def two_threads() -> dict:
    import mlir_scan as theano
    from mlir_scan import tensor as T

    # A scalar recurrence over 10^6 steps, only its last value kept
    # (scan-save-mem): compute-bound, so two cores can run two calls at once.
    x0, n = T.dscalar("x0"), T.iscalar("n")
    ys, _ = theano.scan(lambda a: a * 0.999 + 1.0, outputs_info=x0, n_steps=n)
    fn = theano.function([x0, n], ys[-1])
    args = (0.0, 1_000_000)
    fn(*args)
    calls = 40

    def work(count: int) -> None:
        for _ in range(count):
            fn(*args)

    def timed(threads: int) -> float:
        workers = [threading.Thread(target=work, args=(calls // threads,)) for _ in range(threads)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return time.perf_counter() - start

    one = float(np.median([timed(1) for _ in range(5)]))
    two = float(np.median([timed(2) for _ in range(5)]))
    return {"one thread": one, "two threads": two, "calls": calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    small, many, threads = small_arrays(), many_results(), two_threads()
    print("1. a call with three 4-element arrays (the compiled work takes nanoseconds)")
    for name, t in small.items():
        print(f"   {name:12s} {t * 1e6:6.2f} us")
    print("2. a scan with 32 scalar states over 50 steps, returning the 32 output rows")
    for name, t in many.items():
        print(f"   {name:12s} {t * 1e6:6.1f} us")
    print(f"3. {threads['calls']} calls of ~1 ms of native work (a scalar recurrence over 10^6 steps)")
    print(f"   one thread   {threads['one thread'] * 1e3:6.1f} ms")
    print(f"   two threads  {threads['two threads'] * 1e3:6.1f} ms "
          f"({threads['one thread'] / threads['two threads']:.2f}x faster)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"small_arrays_s": small, "many_results_s": many, "threads_s": threads}, f, indent=1)


if __name__ == "__main__":
    main()
