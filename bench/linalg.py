"""Linear algebra inside and outside a scan: mlir-scan against NumPy/SciPy and PyTensor (issue 25).

    python bench/linalg.py [--quick] [--json FILE]

For n = 4, 16 and 200 (the small matrices of state-space models, and a large one):

1. **Outside a scan**: one call computing ``solve(A, b)`` and ``det(A)``:
   mlir-scan's Theano API (``T.slinalg.solve``, ``T.nlinalg.det``), NumPy
   (``np.linalg.solve`` + ``np.linalg.det``: LAPACK's ``getrf``/``getrs``
   twice) and PyTensor's default mode (NUMBA) compiling ``pt.linalg.solve`` +
   ``pt.linalg.det``; and the MLIR_SCAN PyTensor mode on the same graph.
2. **Inside a scan**: a recurrence whose every step solves with a new
   matrix and takes its determinant (``x <- solve(A_t, x) / |.|``,
   ``acc <- acc + log|det(A_t)|``), per step: mlir-scan's scan, a Python
   loop over NumPy, PyTensor's scan in its default mode, and the MLIR_SCAN
   mode on PyTensor's graph.

BLAS/LAPACK run on one thread (``OPENBLAS_NUM_THREADS=1``, set before NumPy
loads) so that every contender uses one core; times are medians of
repeated runs; only the ratios within one run mean something on a shared
machine.
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

warnings.filterwarnings("ignore")


def _time(fn, args, budget: float = 0.4, repeat: int = 5) -> float:
    fn(*args)
    runs = []
    for _ in range(repeat):
        k, t0 = 0, time.perf_counter()
        while True:
            fn(*args)
            k += 1
            t = time.perf_counter() - t0
            if t > budget / repeat:
                break
        runs.append(t / k)
    return float(np.median(runs))


def _matrices(n: int, steps: int, rng) -> np.ndarray:
    return np.eye(n) + rng.normal(size=(steps, n, n)) / (2 * np.sqrt(n))


def outside(n: int, rng) -> dict:
    import pytensor
    import pytensor.tensor as pt

    import mlir_scan as ms
    import mlir_scan.pytensor as mp
    from mlir_scan import tensor as T

    a, b = _matrices(n, 1, rng)[0], rng.normal(size=n)
    A, B = T.dmatrix("A"), T.dvector("b")
    ours = ms.function([A, B], [T.slinalg.solve(A, B), T.nlinalg.det(A)])
    pA, pB = pt.dmatrix("A"), pt.dvector("b")
    outs = [pt.linalg.solve(pA, pB), pt.linalg.det(pA)]
    ref = pytensor.function([pA, pB], outs)
    mode = pytensor.function([pA, pB], outs, mode=mp.get_mode(strict=True))

    def numpy_fn(a, b):
        return np.linalg.solve(a, b), np.linalg.det(a)

    want = numpy_fn(a, b)
    for f in (ours, ref, mode):
        got = f(a, b)
        assert np.allclose(got[0], want[0], rtol=1e-8) and np.allclose(got[1], want[1], rtol=1e-8)
    t = {"mlir_scan": _time(ours, (a, b)), "numpy": _time(numpy_fn, (a, b)),
         "pytensor_numba": _time(ref, (a, b)), "pytensor_mlir_scan_mode": _time(mode, (a, b))}
    return t


def inside(n: int, steps: int, rng) -> dict:
    import pytensor
    import pytensor.tensor as pt

    import mlir_scan as ms
    import mlir_scan.pytensor as mp
    from mlir_scan import tensor as T

    As, x0 = _matrices(n, steps, rng), rng.normal(size=n)

    def step_b(A, x, acc):
        y = T.slinalg.solve(A, x)
        return y / T.sqrt((y ** 2).sum()), acc + T.log(abs(T.nlinalg.det(A)))

    S, X0 = T.dtensor3("As"), T.dvector("x0")
    (xs, accs), _ = ms.scan(step_b, sequences=S, outputs_info=[X0, T.constant(0.0)])
    ours = ms.function([S, X0], [xs[-1], accs[-1]])

    def step_p(A, x, acc):
        y = pt.linalg.solve(A, x)
        return y / pt.sqrt((y ** 2).sum()), acc + pt.log(pt.abs(pt.linalg.det(A)))

    pS, pX0 = pt.dtensor3("As"), pt.dvector("x0")
    pxs, paccs = pytensor.scan(step_p, sequences=pS, outputs_info=[pX0, pt.constant(0.0, dtype="float64")],
                               return_updates=False)
    ref = pytensor.function([pS, pX0], [pxs[-1], paccs[-1]])
    mode = pytensor.function([pS, pX0], [pxs[-1], paccs[-1]], mode=mp.get_mode(strict=True))

    def numpy_fn(As, x):
        acc = 0.0
        for A in As:
            y = np.linalg.solve(A, x)
            x = y / np.sqrt((y ** 2).sum())
            acc += np.log(abs(np.linalg.det(A)))
        return x, acc

    want = numpy_fn(As, x0)
    for f in (ours, ref, mode):
        got = f(As, x0)
        assert np.allclose(got[0], want[0], rtol=1e-6, atol=1e-9) and np.allclose(got[1], want[1], rtol=1e-8)
    t = {"mlir_scan": _time(ours, (As, x0)), "numpy_loop": _time(numpy_fn, (As, x0), repeat=3),
         "pytensor_numba": _time(ref, (As, x0)), "pytensor_mlir_scan_mode": _time(mode, (As, x0))}
    return {k: v / steps for k, v in t.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    results = {}
    for n, steps in ((4, 2000), (16, 1000), (200, 20)):
        if args.quick:
            steps = max(steps // 10, 5)
        o = outside(n, rng)
        i = inside(n, steps, rng)
        results[n] = {"outside": o, "inside": i}
        for where, t in (("outside a scan (per call)", o), (f"inside a scan ({steps} steps, per step)", i)):
            base = t["mlir_scan"]
            cells = ", ".join(f"{k} {v * 1e6:.2f} us ({v / base:.1f}x)" for k, v in t.items())
            print(f"n={n:3d} {where}: {cells}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
