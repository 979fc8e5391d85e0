"""Benchmarks mlir-scan against PyTensor, JAX, numba and a NumPy loop, in one run.

    python bench/run.py [--quick] [--json FILE] [--plot FILE.png] [--only W5] [--roofline]

For every workload variant and implementation: the first-call time (compile +
first run), the steady-state time per call (median of repeats after warm-up),
whether the result matches the NumPy loop, and the ratio of mlir-scan's time to
each peer's, in one table. Peers that are not installed are skipped (install
them with ``pip install '.[bench]'``). Ratios are only meaningful within one run:
this machine is shared and noisy.

First calls are cold for every implementation, so that the first-call table
compares compilers with compilers: mlir-scan's compile cache is off
(``MLIR_SCAN_CACHE=0``), as JAX's persistent cache is off by default, and
PyTensor (its C modules, its NUMBA mode's cache) and numba's own cache compile
into a fresh temporary folder instead of the ones earlier runs filled.
``--warm-caches`` keeps every cache where the user's would be (mlir-scan's
``~/.cache/mlir-scan``, PyTensor's ``~/.pytensor``): run twice, and the second
run's first calls are what a user sees once the caches hold the programs.
``mlir-scan-onetier`` is mlir-scan with ``MLIR_SCAN_TIERED=0``: every compile waits
for LLVM's -O3 code instead of starting on -O0 code (mlir_scan.compile's
``tiered``), for comparing first calls. Steady states are always the
optimized code's: the harness waits for it (``mlir_scan.runtime.wait_optimized``)
before timing them.
``--roofline`` measures the machine's bandwidth and peak FLOP rate first
(bench/roofline.py) and adds the fraction of its roofline each steady state
reaches.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parent))  # (appended: bench/pymc.py must not shadow PyMC)
import roofline  # noqa: E402
import workloads  # noqa: E402

IMPLEMENTATIONS = ["mlir-scan", "mlir-scan-onetier", "mlir-scan-api", "mlir-scan-nochecks", "jax", "numba", "pytensor-c",
                   "pytensor-numba", "pytensor-jax", "pytensor-mlir", "numpy-loop"]


def _steady_time(fn, args, min_repeats: int, budget_s: float) -> float:
    """Median seconds per call, after one warm-up call."""
    fn(*args)
    times = []
    start = time.perf_counter()
    while len(times) < min_repeats or (time.perf_counter() - start < budget_s and len(times) < 200):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _matches(result, expected, rtol: float) -> bool:
    result, expected = np.asarray(result), np.asarray(expected)
    if result.shape != expected.shape:
        return False
    if rtol == 0:
        return bool(np.array_equal(result, expected))
    scale = max(float(np.max(np.abs(expected))) if expected.size else 0.0, 1e-30)
    return bool(np.max(np.abs(result - expected)) <= rtol * scale) if expected.size else True


def use_cold_caches() -> None:
    """Every compiler starts with an empty cache (see the module's docstring).
    Must run before PyTensor or numba are imported."""
    assert "pytensor" not in sys.modules and "numba" not in sys.modules
    os.environ["MLIR_SCAN_CACHE"] = "0"
    folder = tempfile.mkdtemp(prefix="bench-cold-caches-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    os.environ["PYTENSOR_FLAGS"] = ",".join(
        f for f in (flags, f"base_compiledir={folder}/pytensor") if f)
    os.environ["NUMBA_CACHE_DIR"] = f"{folder}/numba"


def _one_tier(build):
    """`build` with every compile waiting for the optimized code
    (``MLIR_SCAN_TIERED=0``, mlir_scan.compile's ``tiered``): the first call
    as it was before tiers, for comparison in the same run."""
    def one_tier_build():
        os.environ["MLIR_SCAN_TIERED"] = "0"
        try:
            return build()
        finally:
            del os.environ["MLIR_SCAN_TIERED"]
    return one_tier_build


def run_workload(w: workloads.Workload, impls: list[str], quick: bool) -> list[dict]:
    records = []
    # The reference result is computed after the first implementation's
    # first call, not before it: NumPy's OpenBLAS threads spin for about a
    # tenth of a second after a product (W5, W6, W8, W9's loops make them),
    # and they took the cores from the first call timed right after (the W8
    # gradient's: 38% of the samples in that call went to NumPy's
    # `blas_thread_server`). Every later first call comes after a
    # steady-state measurement, with the threads long asleep.
    expected = None
    for impl in impls:
        if impl == "numpy-loop":
            build = lambda: w.numpy_loop  # noqa: E731
        elif impl == "mlir-scan-onetier" and "mlir-scan" in w.builders:
            build = _one_tier(w.builders["mlir-scan"])
        elif impl in w.builders:
            build = w.builders[impl]
        else:
            continue
        gc.collect()
        try:
            t0 = time.perf_counter()
            fn = build()
            result = fn(*w.inputs)
            compile_s = time.perf_counter() - t0
        except workloads.Unavailable as e:
            print(f"  {impl:15s} skipped: {e}", file=sys.stderr)
            continue
        except Exception as e:  # a peer failing on a workload is a result too
            print(f"  {impl:15s} failed: {type(e).__name__}: {e}", file=sys.stderr)
            records.append({"workload": w.name, "impl": impl, "compile_s": None,
                            "run_s": None, "correct": False, "error": str(e)[:200]})
            continue
        if expected is None:
            expected = w.numpy_loop(*w.inputs)
        correct = _matches(result, expected, w.rtol)
        if "mlir_scan.runtime" in sys.modules:
            # A large program's first call ran its quick code (compiled at
            # -O0, mlir_scan.compile's `tiered`): the steady state is the
            # optimized code's, which a background thread is compiling.
            sys.modules["mlir_scan.runtime"].wait_optimized()
        run_s = _steady_time(fn, w.inputs, min_repeats=3 if quick else 7,
                             budget_s=0.3 if quick else 1.5)
        records.append({"workload": w.name, "impl": impl, "compile_s": compile_s,
                        "run_s": run_s, "correct": correct})
        print(f"  {impl:15s} compile {compile_s * 1e3:9.1f} ms  run {run_s * 1e6:12.1f} us"
              f"  {'ok' if correct else 'WRONG'}", file=sys.stderr)
    return records


def print_table(records: list[dict]) -> None:
    by_workload: dict[str, dict[str, dict]] = {}
    for r in records:
        by_workload.setdefault(r["workload"], {})[r["impl"]] = r
    impls = [i for i in IMPLEMENTATIONS if any(i in v for v in by_workload.values())]
    header = f"{'workload':18s}" + "".join(f"{i:>16s}" for i in impls)
    print("\nsteady-state time per call (ratio = mlir-scan time / peer time; < 1 means mlir-scan is faster)")
    print(header)
    for name, row in by_workload.items():
        ours = row.get("mlir-scan", {}).get("run_s")
        cells = []
        for impl in impls:
            r = row.get(impl)
            if not r or r["run_s"] is None:
                cells.append(f"{'-':>16s}")
                continue
            t = r["run_s"]
            text = f"{t * 1e3:.3f}ms" if t >= 1e-3 else f"{t * 1e6:.1f}us"
            if impl != "mlir-scan" and ours:
                text += f" ({ours / t:.2f})"
            if not r["correct"]:
                text += "!"
            cells.append(f"{text:>16s}")
        print(f"{name:18s}" + "".join(cells))
    print("\nfirst call (compile + run)")
    print(header)
    for name, row in by_workload.items():
        cells = []
        for impl in impls:
            r = row.get(impl)
            c = r and r["compile_s"]
            cells.append(f"{(f'{c:.3f}s' if c is not None else '-'):>16s}")
        print(f"{name:18s}" + "".join(cells))
    print("('!' marks a result that does not match the NumPy loop)")


def print_roofline(records: list[dict], machine: dict) -> None:
    """The fraction of its binding roofline each steady state reaches (bench/roofline.py)."""
    by_workload: dict[str, dict[str, dict]] = {}
    for r in records:
        if "roofline_fraction" in r:
            by_workload.setdefault(r["workload"], {})[r["impl"]] = r
    if not by_workload:
        return
    impls = [i for i in IMPLEMENTATIONS if any(i in v for v in by_workload.values())]
    print("\n" + roofline.describe(machine))
    print("fraction of the roofline reached (the machine's roofline time / steady-state time; 1 = the roof);")
    print("'bound' is what binds the roof (a memory level, by the footprint, or compute), 'roof' its time,")
    print("'mlir 1 core' mlir-scan's fraction of the one-core roofline")
    header = (f"{'workload':18s}{'flop/B':>8s}{'bound':>9s}{'roof':>11s}{'mlir 1 core':>12s}"
              + "".join(f"{i:>16s}" for i in impls))
    print(header)
    for name, row in by_workload.items():
        any_r = next(iter(row.values()))
        roof_s = any_r["roofline_s"]
        ours = row.get("mlir-scan", {}).get("roofline_fraction_1core")
        cells = [f"{row[i]['roofline_fraction']:16.3f}" if i in row else f"{'-':>16s}" for i in impls]
        roof_text = (f"{roof_s * 1e3:.3f}ms" if roof_s >= 1e-3 else f"{roof_s * 1e6:.1f}us" if roof_s >= 1e-6
                     else f"{roof_s * 1e9:.0f}ns")
        print(f"{name:18s}{any_r['flops'] / any_r['bytes']:8.2f}{any_r['roofline_bound']:>9s}{roof_text:>11s}"
              f"{(f'{ours:.3f}' if ours is not None else '-'):>12s}" + "".join(cells))


# Both probes turn transparent huge pages off for their process first: with
# them, the resident set grows in 2 MiB steps, and a call's growth was rounded
# to a multiple of 2 MiB (up or down, depending on what the step filled).
_NO_HUGE_PAGES = """
import ctypes
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
"""

_PEAK_PROBE = _NO_HUGE_PAGES + """
import numpy as np, sys
sys.path.insert(0, {bench!r})
import workloads, mlir_scan

def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

w = workloads.w1_power(np.float64, True, length=1000, k={k})
f = mlir_scan.compile(w.source, optimize={optimize}).power
f(w.inputs[0], 1)  # compiled and warm: only the call's own memory counts below
mlir_scan.runtime.wait_optimized()  # (not LLVM's, compiling the optimized tier)
with open("/proc/self/clear_refs", "w") as c:
    c.write("5")  # resets the peak resident set size (VmHWM) to the current one
before = status("VmRSS")
f(*w.inputs)
print(before, status("VmHWM"))
"""


def peak_memory_w1(k_values: list[int], optimize: bool = True) -> list[dict]:
    """Peak resident memory of W1 (A**k, last value only) during one call, for
    growing k, each in a fresh process: flat in k when scan-save-mem keeps one
    row (`optimize=True`); `optimize=False` shows the measurement sees growth."""
    out = []
    for k in k_values:
        code = _PEAK_PROBE.format(bench=str(Path(__file__).resolve().parent), k=k, optimize=optimize)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        before, peak = map(int, proc.stdout.split())
        out.append({"k": k, "optimize": optimize, "rss_kib_before_call": before,
                    "peak_rss_kib_during_call": peak, "growth_kib": peak - before})
        print(f"  W1 k={k:>8d} optimize={optimize!s:5s}: peak RSS during the call "
              f"{peak - before:+d} KiB over the RSS before it", file=sys.stderr)
    return out


_PEAK_PROBE_W6 = _NO_HUGE_PAGES + """
import numpy as np, sys
sys.path.insert(0, {bench!r})
import workloads

def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

w = workloads.w6_rnn_grad(np.float64, True, hidden={hidden}, steps={steps})
f = workloads.w6_mlir_function(np.float64, save_every_N={every}, last_only={last_only})
xs, *rest = w.inputs
f(xs[:2], *rest)  # compiled, on 2 steps: the call below allocates its own buffers
import mlir_scan
mlir_scan.runtime.wait_optimized()  # (LLVM compiling the optimized tier is not the call's memory)
if {release}:
    # ... all of them: what the 2 steps freed goes back to the system too
    import mlir_scan
    mlir_scan.release_cached_memory()
with open("/proc/self/clear_refs", "w") as c:
    c.write("5")
before = status("VmRSS")
f(*w.inputs)
print(before, status("VmHWM"))
"""


def peak_memory_w6(hidden: int = 512, steps: int = 1000) -> list[dict]:
    """Peak resident memory of one W6 call (the gradient of the RNN), each case in a
    fresh process, against the forward states (T x H) and the parameters' size.

    Two measures, after a first call on 2 steps (which compiles): ``growth_kib``,
    what the call adds to that warm process (buffers the first call freed stay in
    the run-time allocator's cache and are reused: mostly what grows with T), and
    ``all_buffers_kib``, with that cache given back to the system first
    (:func:`mlir_scan.release_cached_memory`): every buffer the call uses."""
    out = []
    item = 8
    states_kib = steps * hidden * item / 1024
    params_kib = (hidden * hidden + 64 * hidden + hidden) * item / 1024
    for label, every, last_only in (("W6 (d/dW sum_t sum h_t)", None, False),
                                    ("d/dW sum(h_T), scan", None, True),
                                    ("d/dW sum(h_T), scan_checkpoints N=16", 16, True)):
        growth = {}
        for release in (False, True):
            code = _PEAK_PROBE_W6.format(bench=str(Path(__file__).resolve().parent), hidden=hidden, steps=steps,
                                         every=every, last_only=last_only, release=release)
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            before, peak = map(int, proc.stdout.split())
            growth[release] = peak - before
        out.append({"case": label, "hidden": hidden, "steps": steps, "growth_kib": growth[False],
                    "all_buffers_kib": growth[True], "states_kib": states_kib, "params_kib": params_kib})
        print(f"  {label:40s} H={hidden}: peak RSS during the call {growth[False]:+d} KiB "
              f"(all its buffers: {growth[True]:+d} KiB; states T x H = {states_kib:.0f} KiB, "
              f"parameters {params_kib:.0f} KiB)", file=sys.stderr)
    return out


def plot(records: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({r["workload"] for r in records})
    impls = [i for i in IMPLEMENTATIONS if any(r["impl"] == i for r in records)]
    fig, ax = plt.subplots(figsize=(max(8, len(names) * 1.1), 5))
    width = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        ys = []
        for n in names:
            r = next((r for r in records if r["workload"] == n and r["impl"] == impl), None)
            ys.append(r["run_s"] if r and r["run_s"] else np.nan)
        ax.bar(np.arange(len(names)) + j * width, ys, width, label=impl)
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
    ax.set_xticklabels(names, rotation=45, ha="right")
    ax.set_ylabel("seconds per call (log)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="float64 only, fewer repeats (< 2 minutes)")
    parser.add_argument("--json", help="write the records to this file")
    parser.add_argument("--plot", help="write a bar chart to this PNG file")
    parser.add_argument("--only", help="run only workloads whose name contains this")
    parser.add_argument("--skip", help="skip workloads whose name contains this")
    parser.add_argument("--impls", help="comma-separated implementations (default: all)")
    parser.add_argument("--memory", action="store_true", help="also measure peak memory: W1 for k up to 10^6, W6 (plain and scan_checkpoints)")
    parser.add_argument("--roofline", action="store_true",
                        help="measure the machine's bandwidth and peak FLOP rate (bench/roofline.py) and report "
                             "the fraction of its roofline every steady state reaches")
    parser.add_argument("--warm-caches", action="store_true",
                        help="keep every compile cache where the user's would be (default: all cold)")
    args = parser.parse_args()
    if not args.warm_caches:
        use_cold_caches()

    impls = args.impls.split(",") if args.impls else IMPLEMENTATIONS
    dtypes = [np.float64] if args.quick else [np.float64, np.float32]
    variants = []
    for dtype in dtypes:
        for make in workloads.ALL:
            if make is workloads.w5_rnn:
                variants += [make(dtype, args.quick, hidden=h) for h in (128, 512, 1024)]
            elif make is workloads.w6_rnn_grad:
                variants += [make(dtype, args.quick, hidden=h) for h in (128, 512)]
            else:
                variants.append(make(dtype, args.quick))
    if args.only:
        variants = [w for w in variants if args.only in w.name]
    if args.skip:
        variants = [w for w in variants if args.skip not in w.name]

    print(f"machine: {os.cpu_count()} cores, numpy {np.__version__}", file=sys.stderr)
    machine = None
    if args.roofline:  # first, alone: the probe needs the cores to itself
        machine = roofline.measure()
        print(roofline.describe(machine), file=sys.stderr)
    records = []
    for w in variants:
        print(f"{w.name}:", file=sys.stderr)
        records += run_workload(w, impls, args.quick)
    if machine:
        roofline.annotate(records, {w.name: w for w in variants}, machine)
    print_table(records)
    if machine:
        print_roofline(records, machine)
    memory = None
    if args.memory:
        memory = peak_memory_w1([10**4, 10**5, 10**6]) + peak_memory_w1([10**4, 10**5], optimize=False)
        memory += peak_memory_w6(512) + peak_memory_w6(128)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
        if memory:
            Path(args.json).with_suffix(".memory.json").write_text(json.dumps(memory, indent=1))
        if machine:
            Path(args.json).with_suffix(".roofline.json").write_text(json.dumps(machine, indent=1))
    if args.plot:
        plot(records, args.plot)


if __name__ == "__main__":
    main()
