"""The benchmark's mlir-scan programs (bench/workloads.py) compile and agree with
their NumPy loops, at small sizes: a broken workload fails here, not in the
middle of a benchmark run. Peers (JAX, numba, PyTensor) are optional and not
exercised here; the harness's own checks (`_matches`, the table) are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # (appended: bench/pymc.py must not shadow PyMC)
import run  # noqa: E402
import workloads  # noqa: E402

SMALL = {
    "w1_power": dict(length=37, k=50),
    "w2_cumsum": dict(length=1000),
    "w3_polynomial": dict(length=1000),
    "w4_fibonacci": dict(steps=300),
    "w5_rnn": dict(hidden=19, inputs=7, steps=25),
    "w6_rnn_grad": dict(hidden=19, inputs=7, steps=25),
    "w7_until": {},
    "w8_batched_dot_grad": dict(steps=5, batch=3, inputs=7, outputs=9),
    "w9_lstm_tutorial": dict(n_words=50, dim=6, batch=3, maxlen=7),
    "overhead_probe": dict(steps=1000),
}


def test_every_workload_has_a_small_size():
    assert {make.__name__ for make in workloads.ALL} == set(SMALL)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("make", workloads.ALL, ids=lambda m: m.__name__)
def test_mlir_scan_matches_numpy_loop(make, dtype):
    w = make(dtype, True, **SMALL[make.__name__])
    # (workloads built with the Theano API, such as W6, have no "nochecks" build;
    # "mlir-scan-api" is the workload written with the Theano API, as a user would)
    impls = ["mlir-scan"] + [i for i in ("mlir-scan-api", "mlir-scan-nochecks") if i in w.builders] + ["numpy-loop"]
    records = run.run_workload(w, impls, quick=True)
    assert [r["impl"] for r in records] == impls, records
    assert all(r["correct"] for r in records), records
    assert all(r["run_s"] > 0 and r["compile_s"] > 0 for r in records)


def test_every_hand_written_workload_has_an_api_build():
    for make in workloads.ALL:
        w = make(np.float64, True, **SMALL[make.__name__])
        if "mlir-scan-nochecks" in w.builders:  # hand-written IR
            assert "mlir-scan-api" in w.builders, w.name


def test_matches_rejects_a_wrong_result():
    assert run._matches(np.array([1.0, 2.0]), np.array([1.0, 2.0]), 1e-9)
    assert not run._matches(np.array([1.0, 2.1]), np.array([1.0, 2.0]), 1e-9)
    assert not run._matches(np.array([1.0]), np.array([1.0, 2.0]), 1e-9)


def test_table_prints_ratios(capsys):
    records = [{"workload": "W", "impl": "mlir-scan", "compile_s": 0.1, "run_s": 1e-3, "correct": True},
               {"workload": "W", "impl": "jax", "compile_s": 0.2, "run_s": 2e-3, "correct": True}]
    run.print_table(records)
    out = capsys.readouterr().out
    assert "2.000ms (0.50)" in out and "1.000ms" in out


def test_first_calls_are_cold_for_every_compiler():
    """`bench/run.py` without `--warm-caches` points mlir-scan's, PyTensor's and
    numba's caches away from the ones earlier runs filled, and removes the
    temporary folder at exit (run in a child: it sets environment variables)."""
    code = f"""
import os, sys
sys.path.insert(0, {str(BENCH)!r})
os.environ["PYTENSOR_FLAGS"] = "floatX=float64"
import run
run.use_cold_caches()
assert "pytensor" not in sys.modules and "numba" not in sys.modules
flags = os.environ["PYTENSOR_FLAGS"]
folder = flags.split("base_compiledir=")[1].rsplit("/pytensor", 1)[0]
assert flags.startswith("floatX=float64,"), flags
assert os.environ["MLIR_SCAN_CACHE"] == "0"
assert os.environ["NUMBA_CACHE_DIR"] == folder + "/numba"
assert os.path.isdir(folder)
print(folder)
"""
    env = {k: v for k, v in os.environ.items() if k != "MLIR_SCAN_CACHE"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert not Path(out.stdout.strip()).exists()  # removed at exit


def test_every_workload_has_a_roofline_model():
    """bench/run.py --roofline needs each workload's flops, bytes and footprint per call."""
    for make in workloads.ALL:
        for dtype in (np.float64, np.float32):
            w = make(dtype, True, **SMALL[make.__name__])
            assert w.flops > 0 and w.bytes > 0 and w.footprint > 0, w.name


def test_roofline_annotates_records_with_the_binding_roof():
    import roofline

    level = dict(read_l1_gbs=200.0, read_l2_gbs=100.0, read_l3_gbs=50.0, triad_dram_gbs=10.0,
                 read_dram_gbs=12.0, peak_float64_gflops=100.0, peak_float32_gflops=200.0)
    machine = {"l1_bytes": 32 << 10, "l2_bytes": 512 << 10, "l3_bytes": 32 << 20,
               "one_core": dict(level, threads=1), "machine": dict(level, threads=2)}
    w = workloads.w5_rnn(np.float64, True, hidden=1024, inputs=7, steps=3)  # W (8 MiB) in L3
    records = [{"workload": w.name, "impl": "mlir-scan", "run_s": 2 * w.bytes / 50e9}]
    roofline.annotate(records, {w.name: w}, machine)
    r = records[0]
    assert r["roofline_bound"] == "L3" and abs(r["roofline_fraction"] - 0.5) < 1e-12
    small = workloads.w5_rnn(np.float64, True, hidden=19, inputs=7, steps=3)
    assert roofline.roof(machine, "machine", small.flops, small.bytes, small.footprint, "float64")[1] == "L1"
    # compute-bound when the flops per byte exceed peak / bandwidth
    assert roofline.roof(machine, "machine", 1e9, 1e6, 1 << 30, "float64") == (0.01, "compute")


def test_contention_script_times_every_phase():
    """`bench/contention.py`'s child (one fresh process) times W5 in every
    phase, beside the processes it starts and stops (a small W5: this checks
    the script, not the times)."""
    import json

    out = subprocess.run([sys.executable, str(BENCH / "contention.py"), "--child", "--hidden", "64",
                          "--calls", "2"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    times = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(times) == {"quiet", "hiccups", "nice19", "busy", "after"}
    assert all(t > 0 for t in times.values())
