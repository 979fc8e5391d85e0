"""First calls of chosen workload variants in a warm process, against JAX's.

``bench/run.py`` times every first call after the workloads before it have
run, so the process has loaded and initialized everything (LLVM, MLIR's
context, JAX's backend). This script does the same for a few variants, fast
enough to repeat: it runs W1 and W2 first (untimed), then times each named
variant's first call (build + first call, compile caches off) for each
implementation, and prints the time, the part spent building (the compile,
for mlir-scan), how many calls of the process restarted in optimized code,
and the ratio to JAX's first call.

    python bench/first_calls.py W5-float64-H512 W8-float64 [--impls mlir-scan,jax] [--repeat 3]

With ``--repeat``, each repeat is a fresh process, and the median ratio is
printed too: single first calls on a shared machine vary by tens of percent.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # noqa: E402
import workloads  # noqa: E402


def _variants(names: set[str]) -> list[workloads.Workload]:
    out = []
    for dtype in (np.float64, np.float32):
        for make in workloads.ALL:
            sizes = {workloads.w5_rnn: (128, 512, 1024), workloads.w6_rnn_grad: (128, 512)}.get(make)
            for kwargs in ([{"hidden": h} for h in sizes] if sizes else [{}]):
                w = make(dtype, False, **kwargs)
                if w.name in names:
                    out.append(w)
    return out


def _restarts() -> int | None:
    """Calls of this process that restarted in optimized code (None before
    mlir-scan is loaded)."""
    if "mlir_scan" not in sys.modules:
        return None
    from mlir_scan import _registration

    return _registration.runtime_library().mlirScanRestarts()


def measure(names: list[str], impls: list[str]) -> list[dict]:
    """One process: the first calls of `names` (in the benchmark's order)."""
    run.use_cold_caches()
    for make in (workloads.w1_power, workloads.w2_cumsum):
        with contextlib.redirect_stderr(io.StringIO()):
            run.run_workload(make(np.float64, True), impls, True)
    records = []
    for w in _variants(set(names)):
        expected = None
        for impl in impls:
            if impl not in w.builders:
                continue
            before = _restarts()
            t0 = time.perf_counter()
            fn = w.builders[impl]()
            t1 = time.perf_counter()
            result = fn(*w.inputs)
            t2 = time.perf_counter()
            if expected is None:  # after the first call, as bench/run.py
                expected = w.numpy_loop(*w.inputs)
            if "mlir_scan.runtime" in sys.modules:
                sys.modules["mlir_scan.runtime"].wait_optimized()
            restarts = None if before is None else _restarts() - before
            records.append({"workload": w.name, "impl": impl, "first_s": t2 - t0, "build_s": t1 - t0,
                            "restarts": restarts, "correct": run._matches(result, expected, w.rtol)})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="+", help="variant names, as bench/run.py prints them")
    parser.add_argument("--impls", default="mlir-scan,jax")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    impls = args.impls.split(",")
    if args.child:
        print(json.dumps(measure(args.variants, impls)))
        return
    ratios: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        done = subprocess.run([sys.executable, __file__, "--child", "--impls", args.impls, *args.variants],
                              capture_output=True, text=True, check=True)
        records = json.loads(done.stdout.strip().splitlines()[-1])
        by = {(r["workload"], r["impl"]): r for r in records}
        for r in records:
            jax = by.get((r["workload"], "jax"))
            ratio = r["first_s"] / jax["first_s"] if jax and r["impl"] != "jax" else None
            if ratio is not None:
                ratios.setdefault(r["workload"] + " " + r["impl"], []).append(ratio)
            print(f"{r['workload']:18s} {r['impl']:14s} first {r['first_s']:.3f} s  build {r['build_s']:.3f} s"
                  f"  restarts {r['restarts']}" + (f"  / JAX {ratio:.2f}" if ratio is not None else "")
                  + ("" if r["correct"] else "  WRONG"))
    if args.repeat > 1:
        for key, values in ratios.items():
            print(f"median ratio to JAX, {key}: {statistics.median(values):.2f} ({len(values)} processes)")


if __name__ == "__main__":
    main()
