"""PyMC time-series models: PyTensor's C and NUMBA modes against mlir-scan's mode.

For every model of `pymc_models.py` (GARCH(1,1) as `pm.GARCH11` and as a scan in a
`pm.Potential`, a Kalman filter with matrices, the scalar local-level filter, an AR(2)
written generatively in `pm.CustomDist`, and pymc-extras' structural model where
pymc-extras installs) and every mode, it measures:

- **compile**: building `model.logp_dlogp_function` (the function NUTS calls) and its
  first call, with every cache cold (a fresh process; PyTensor's compile directory and
  numba's cache in a fresh temporary folder; mlir-scan's compile cache off);
- **eval**: the steady-state time of one logp+dlogp evaluation (median over repeats; mlir-scan
  on its optimized code, once the background compile of its tiers is done);
- **sample (first)**: `pm.sample(chains=2, cores=2)` in a fresh process, compile included;
- **sample**: a second `pm.sample` in the same process (caches warm);
- with `--share`: one chain sampled in one process, its time split into the setup
  (graph, gradient, rewrites, compiles), the draws, and the compiled function's calls
  in them; "floor" is what a function taking no time would leave, over NUMBA's chain.

Every mode's logp and dlogp at the same points are compared with the C mode's (the
`agree` column: the largest relative difference). mlir-scan's mode is strict: a
model that does not compile whole is an error, not a slow fallback.

    pip install ".[bench]" pymc          # PyMC 5.x (PyTensor 2.38)
    python bench/pymc.py --quick         # 200 draws, fewer repeats
    python bench/pymc.py --json docs/bench/pymc.json
    python bench/pymc.py --models garch11,kalman --modes NUMBA,MLIR_SCAN
    python bench/pymc.py --no-sample --share --modes NUMBA,MLIR_SCAN

Skipped (exit 0 with a message) when PyMC is not installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("C", "NUMBA", "MLIR_SCAN")

if __name__ != "__main__":
    # This file's name is PyMC's: with bench/ on sys.path, `import pymc` must not find it.
    raise ModuleNotFoundError("bench/pymc.py is the PyMC benchmark script, not the pymc package", name="pymc")
# (Python puts this script's folder first on sys.path: `import pymc` below means PyMC.)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def _bench_module(name: str):
    """bench/`name`.py, loaded by path (bench/ is not on sys.path, see above)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mode(name: str):
    if name == "C":
        return "FAST_RUN"
    if name == "NUMBA":
        return "NUMBA"
    import mlir_scan.pytensor  # noqa: PLC0415 - only in the worker process that measures it

    return mlir_scan.pytensor.get_mode(strict=True)


def _worker(model_name: str, mode_name: str, task: str, draws: int, repeats: int) -> dict:
    """Runs in a fresh process: one measurement, as a JSON-able dict."""
    run = _bench_module("run")
    run.use_cold_caches()  # (before PyTensor or numba is imported)
    warnings.simplefilter("ignore")
    import numpy as np  # noqa: PLC0415
    import pymc as pm  # noqa: PLC0415
    from pymc.blocking import DictToArrayBijection  # noqa: PLC0415

    model = _bench_module("pymc_models").MODELS[model_name]()
    mode = _mode(mode_name)
    if task == "sample":
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            pm.sample(draws, tune=draws, chains=2, cores=2, progressbar=False, random_seed=1,
                      compile_kwargs={"mode": mode}, model=model)
            times.append(time.perf_counter() - t0)
        return {"sample_first_s": times[0], "sample_s": times[1]}
    if task == "share":
        return _sampler_share(pm, model, mode, draws)
    q0 = DictToArrayBijection.map(model.initial_point()).data
    t0 = time.perf_counter()
    f = model.logp_dlogp_function(ravel_inputs=True, mode=mode)
    f.set_extra_values({})
    f(q0)
    compile_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    points = [q0 + rng.normal(0.0, 0.3, q0.shape) for _ in range(3)]
    values = [[float(v) for v in np.concatenate([[lp], g])] for lp, g in map(f, points)]
    if mode_name == "MLIR_SCAN":
        # The steady state: the optimized code, not the quick tier's -O0 code that the first
        # calls run while LLVM optimizes in the background (bench/run.py does the same).
        import mlir_scan.runtime  # noqa: PLC0415

        mlir_scan.runtime.wait_optimized()
    eval_s = run._steady_time(f, (q0,), min_repeats=repeats, budget_s=1.0)
    return {"compile_s": compile_s, "eval_s": eval_s, "values": values}


def _sampler_share(pm, model, mode, draws: int) -> dict:
    """Where `pm.sample`'s time goes: inside the compiled logp+dlogp function, or around it.

    One chain on one core (so that every call is in this process), sampled twice; the second
    run is timed with the function NUTS calls per leapfrog step (what PyMC's
    `CpuLeapfrogIntegrator` keeps of the compiled function) wrapped to count its calls and
    add up their time. What is not in the function is PyMC's own work per step (NUTS' tree
    building, the trace), and, before the draws, its setup (the model's graph and gradient,
    PyTensor's rewrites, the compiles): a floor that no faster function lowers. The draws'
    loop (PyMC's `_sample_many`) is timed too, to tell the setup from the per-draw work.
    """
    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415
    from pymc.step_methods.hmc.integration import CpuLeapfrogIntegrator  # noqa: PLC0415

    init = CpuLeapfrogIntegrator.__init__
    spent = {"s": 0.0, "calls": 0}

    def timed_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        inner = self._logp_dlogp_func

        def timed(*call_args):
            t0 = time.perf_counter()
            try:
                return inner(*call_args)
            finally:
                spent["s"] += time.perf_counter() - t0
                spent["calls"] += 1

        self._logp_dlogp_func = timed

    sample_many = mcmc._sample_many

    def timed_sample_many(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return sample_many(*args, **kwargs)
        finally:
            spent["loop_s"] = time.perf_counter() - t0

    kwargs = dict(tune=draws, chains=1, cores=1, progressbar=False, random_seed=1,
                  compile_kwargs={"mode": mode}, model=model)
    pm.sample(draws, **kwargs)
    CpuLeapfrogIntegrator.__init__ = timed_init
    mcmc._sample_many = timed_sample_many
    try:
        t0 = time.perf_counter()
        pm.sample(draws, **kwargs)
        total = time.perf_counter() - t0
    finally:
        CpuLeapfrogIntegrator.__init__ = init
        mcmc._sample_many = sample_many
    # NUTS evaluates the function at least once per draw: fewer calls, or no draws' loop, means
    # PyMC no longer calls what is wrapped here (it sidestepped ValueGradFunction.__call__ once).
    if spent["calls"] < draws or "loop_s" not in spent:
        raise RuntimeError(f"bench/pymc.py --share: saw {spent['calls']} calls of the compiled function for "
                           f"{draws} draws and {'a' if 'loop_s' in spent else 'no'} draws' loop: this PyMC samples "
                           "through other functions than CpuLeapfrogIntegrator's and _sample_many")
    return {"chain_s": total, "in_function_s": spent["s"], "calls": spent["calls"],
            "draws_loop_s": spent.get("loop_s")}


def _measure(model_name: str, mode_name: str, task: str, draws: int, repeats: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", model_name, mode_name, task, str(draws), str(repeats)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1e6:.0f} µs" if x < 1e-3 else (f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.2f} s")


def _agree(values, ref) -> float | None:
    if values is None or ref is None:
        return None
    worst = 0.0
    for a, b in zip(values, ref):
        for x, y in zip(a, b):
            worst = max(worst, abs(x - y) / max(1.0, abs(y)))
    return worst


def table(records: list[dict]) -> str:
    """The Markdown table of `records` (one per model and mode), with ratios to NUMBA."""
    by = {(r["model"], r["mode"]): r for r in records}
    models = list(dict.fromkeys(r["model"] for r in records))
    modes = [m for m in MODES if any(r["mode"] == m for r in records)]
    lines = ["| model | mode | compile (cold) | eval | sample (first) | sample | agree | eval / NUMBA | sample / NUMBA | first sample / NUMBA |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        numba = by.get((m, "NUMBA"), {})
        ref = by.get((m, "C"), {}).get("values")
        for mode in modes:
            r = by.get((m, mode))
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {m} | {mode} | failed: {r['error'][:120]} |  |  |  |  |  |  |  |")
                continue

            def ratio(key: str) -> str:
                if mode == "NUMBA" or not numba.get(key) or r.get(key) is None:
                    return "-"
                return f"{r[key] / numba[key]:.2f}"

            agree = _agree(r.get("values"), ref)
            lines.append(f"| {m} | {mode} | {_fmt_s(r.get('compile_s'))} | {_fmt_s(r.get('eval_s'))} | "
                         f"{_fmt_s(r.get('sample_first_s'))} | {_fmt_s(r.get('sample_s'))} | "
                         f"{'-' if agree is None else f'{agree:.0e}'} | {ratio('eval_s')} | {ratio('sample_s')} | "
                         f"{ratio('sample_first_s')} |")
    return "\n".join(lines)


def share_table(records: list[dict]) -> str:
    """Where one chain's `pm.sample` time goes (`--share`): the setup before the draws (graph,
    gradient, rewrites, compiles), the draws' loop, and in it the compiled function's calls;
    and the best `sample / NUMBA` ratio a mode could reach with a function that took no time."""
    by = {(r["model"], r["mode"]): r for r in records}
    lines = ["| model | mode | one chain | setup | draws | in the function | calls | PyMC per call "
             "| floor / NUMBA's chain |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if "chain_s" not in r:
            continue
        loop = r.get("draws_loop_s") or r["chain_s"]
        numba = by.get((r["model"], "NUMBA"), {}).get("chain_s")
        outside = r["chain_s"] - r["in_function_s"]
        floor = "-" if not numba or r["mode"] == "NUMBA" else f"{outside / numba:.2f}"
        lines.append(f"| {r['model']} | {r['mode']} | {_fmt_s(r['chain_s'])} | {_fmt_s(r['chain_s'] - loop)} | "
                     f"{_fmt_s(loop)} | {_fmt_s(r['in_function_s'])} ({r['in_function_s'] / r['chain_s']:.0%}) | "
                     f"{r['calls']} | {_fmt_s((loop - r['in_function_s']) / max(1, r['calls']))} | {floor} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="200 draws and tuning steps, fewer repeats")
    parser.add_argument("--models", help="comma-separated model names (default: all of pymc_models.MODELS)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: C, NUMBA, MLIR_SCAN")
    parser.add_argument("--no-sample", action="store_true", help="only compile and eval (no pm.sample)")
    parser.add_argument("--sample-modes", help="modes that also run pm.sample (default: every mode)")
    parser.add_argument("--draws", type=int, help="draws and tuning steps per chain (default 1000; --quick: 200)")
    parser.add_argument("--share", action="store_true",
                        help="also sample one chain in one process and time the calls of the compiled function in it")
    parser.add_argument("--json", help="write the records to this file")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        model_name, mode_name, task, draws, repeats = args.worker
        print(json.dumps(_worker(model_name, mode_name, task, int(draws), int(repeats))))
        return 0
    try:
        import pymc  # noqa: F401, PLC0415
    except ImportError:
        print("bench/pymc.py: PyMC is not installed (pip install pymc): nothing to measure")
        return 0
    models = args.models.split(",") if args.models else list(_bench_module("pymc_models").MODELS)
    modes = args.modes.split(",")
    draws, repeats = (200, 5) if args.quick else (1000, 15)
    draws = args.draws or draws
    records = []
    for m in models:
        for mode in modes:
            rec = {"model": m, "mode": mode, "draws": draws}
            rec.update(_measure(m, mode, "eval", draws, repeats))
            sample_modes = args.sample_modes.split(",") if args.sample_modes else modes
            if not args.no_sample and mode in sample_modes and "error" not in rec:
                got = _measure(m, mode, "sample", draws, repeats)
                rec.update({k: v for k, v in got.items() if k != "error"})
                if "error" in got:
                    rec["sample_error"] = got["error"]
            if args.share and mode in sample_modes and "error" not in rec:
                got = _measure(m, mode, "share", draws, repeats)
                rec.update({k: v for k, v in got.items() if k != "error"})
                if "error" in got:
                    rec["share_error"] = got["error"]
            print(f"{m:14s} {mode:10s} " + " ".join(
                f"{k}={_fmt_s(v)}" for k, v in rec.items() if k.endswith("_s")) + (
                f" ERROR {rec['error']}" if "error" in rec else ""), flush=True)
            records.append(rec)
    print()
    print(table(records))
    if args.share:
        print()
        print(share_table(records))
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
