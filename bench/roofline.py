"""The machine's roofline: streaming bandwidth and peak FLOP rate, measured once.

``bench/run.py --roofline`` runs :func:`measure` (a probe in a fresh process,
on one thread and on every core) and :func:`annotate` (for every record, the
fraction of its binding roofline the steady state reaches).

The probe (numba-compiled loops, ``fastmath`` so the sums vectorize; each
measurement is the best of several repeats):

- **DRAM, STREAM triad** ``a[i] = b[i] + s * c[i]`` on three arrays of 2^25
  float64 (256 MiB each, far larger than any L3), counted as STREAM counts it:
  24 bytes per element (the write-allocate read of ``a`` is not counted). On
  several threads each thread owns one contiguous slice of the arrays.
- **Read bandwidth of L1, L2, L3 and DRAM**: a vectorized sum over a slice per
  thread, repeated so the slice stays in the level being measured: half of L1
  or L2 per thread, a quarter of L3 in all (on a shared VM the whole L3 is not
  ours), and 512 MiB for DRAM.
- **Peak FLOP rate**: a 2048 x 2048 ``matmul`` in float64 and float32 through
  NumPy's BLAS (2 n^3 flops), which is as close to the FMA units' peak as a
  library gets.

The roofline of a workload (its ``flops``, ``bytes`` and ``footprint`` per call,
analytic formulas in bench/workloads.py) is ``max(flops / peak, bytes /
bandwidth)``, with the bandwidth of the level its footprint fits in: L1, L2,
L3 (at most half of L3) or DRAM (the triad). The machine's roof takes, for
each number, the better of one thread and all threads (on a shared VM the
other cores may be busy while the probe runs). The column is that
time divided by the measured steady-state time: 1 is the roof, 0.01 means
the workload is latency-bound (a scalar recurrence runs one dependent
operation per step and cannot use the machine's width).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

_PROBE = r'''
import json, os, sys, time
import numpy as np
from numba import njit, prange

threads = int(sys.argv[1])
l1, l2, l3 = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

# The loops themselves are serial functions (numba vectorizes those; inside a
# prange body it did not), called on one slice per thread.
@njit(fastmath=True, cache=False)
def triad_slice(a, b, c, s, reps):
    for r in range(reps):
        for i in range(a.shape[0]):
            a[i] = b[i] + s * c[i]

@njit(fastmath=True, cache=False)
def sum_slice(a, reps):
    t = 0.0
    for r in range(reps):
        for i in range(a.shape[0]):
            t += a[i]
    return t

@njit(parallel=True, cache=False)
def triad(a, b, c, s, parts, reps):
    n = a.shape[0]
    for p in prange(parts):
        lo, hi = n * p // parts, n * (p + 1) // parts
        triad_slice(a[lo:hi], b[lo:hi], c[lo:hi], s, reps)

@njit(parallel=True, cache=False)
def read(a, parts, reps, out):
    n = a.shape[0]
    for p in prange(parts):
        lo, hi = n * p // parts, n * (p + 1) // parts
        out[p] = sum_slice(a[lo:hi], reps)

def best(fn, args, repeats=7):
    fn(*args)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times)

out = np.zeros(threads)
result = {"threads": threads}
n = 1 << 25
a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
result["triad_dram_gbs"] = 24 * n / best(triad, (a, b, c, 3.0, threads, 1), 10) / 1e9
del a, c
big = np.ones(1 << 26)
result["read_dram_gbs"] = 8 * big.size / best(read, (big, threads, 1, out), 10) / 1e9
del big
for level, size in (("l1", l1 // 2 * threads), ("l2", l2 // 2 * threads), ("l3", l3 // 4)):
    x = np.ones(size // 8)
    reps = max(1, (1 << 31) // size)  # ~2 GiB read per measurement
    result[f"read_{level}_gbs"] = reps * 8 * x.size / best(read, (x, threads, reps, out), 9) / 1e9
for dtype in (np.float64, np.float32):
    m = np.random.default_rng(0).random((2048, 2048)).astype(dtype)
    result[f"peak_{np.dtype(dtype).name}_gflops"] = 2 * 2048 ** 3 / best(np.matmul, (m, m), 5) / 1e9
print(json.dumps(result))
'''


def cache_sizes() -> tuple[int, int, int]:
    """L1 data and L2 (per core) and L3 sizes in bytes, from sysfs (defaults if absent)."""
    sizes = {}
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in root.glob("index*"):
        try:
            level = int((index / "level").read_text())
            if (index / "type").read_text().strip() == "Instruction":
                continue
            text = (index / "size").read_text().strip()
            factor = {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1)
            sizes[level] = int(text.rstrip("KM")) * factor
        except (OSError, ValueError):
            continue
    return sizes.get(1, 32 << 10), sizes.get(2, 512 << 10), sizes.get(3, 16 << 20)


def measure(cores: int | None = None) -> dict:
    """The probe on one thread and on every core, each in a fresh process
    (BLAS and numba take their thread counts from the environment at start)."""
    if importlib.util.find_spec("numba") is None:
        raise SystemExit("--roofline: the probe needs numba (pip install '.[bench]')")
    cores = cores or os.cpu_count() or 1
    l1, l2, l3 = cache_sizes()
    result = {"l1_bytes": l1, "l2_bytes": l2, "l3_bytes": l3}
    for label, threads in (("one_core", 1), ("all_cores", cores)):
        env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
                   OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        proc = subprocess.run([sys.executable, "-c", _PROBE, str(threads), str(l1), str(l2), str(l3)],
                              capture_output=True, text=True, check=True, env=env)
        result[label] = json.loads(proc.stdout.strip().splitlines()[-1])
    # The machine's roof on every core is at least what one core reaches (on a
    # shared VM the second core may have been busy while the probe ran).
    result["machine"] = {key: max(result["one_core"][key], result["all_cores"][key])
                         for key in result["one_core"] if key != "threads"}
    result["machine"]["threads"] = cores
    return result


def describe(machine: dict) -> str:
    lines = [f"roofline probe (L1d {machine['l1_bytes'] >> 10} KiB and L2 {machine['l2_bytes'] >> 10} KiB per core, "
             f"L3 {machine['l3_bytes'] >> 20} MiB):"]
    for label in ("one_core", "all_cores", "machine"):
        m = machine[label]
        name = "roof (best of both)" if label == "machine" else f"{m['threads']} thread(s)"
        lines.append(f"  {name}: triad (DRAM) {m['triad_dram_gbs']:.1f} GB/s, read DRAM "
                     f"{m['read_dram_gbs']:.1f}, L3 {m['read_l3_gbs']:.1f}, L2 {m['read_l2_gbs']:.1f}, "
                     f"L1 {m['read_l1_gbs']:.1f} GB/s; "
                     f"peak {m['peak_float64_gflops']:.1f} GFLOP/s f64, {m['peak_float32_gflops']:.1f} f32")
    return "\n".join(lines)


def roof(machine: dict, label: str, flops: float, nbytes: float, footprint: float,
         dtype_name: str) -> tuple[float, str]:
    """The roofline time of a call, and what binds it ("compute", "L2", "L3", "DRAM")."""
    m = machine[label]
    if footprint <= machine["l1_bytes"]:
        level, bandwidth = "L1", m["read_l1_gbs"]
    elif footprint <= machine["l2_bytes"]:
        level, bandwidth = "L2", m["read_l2_gbs"]
    elif footprint <= machine["l3_bytes"] // 2:
        level, bandwidth = "L3", m["read_l3_gbs"]
    else:
        level, bandwidth = "DRAM", m["triad_dram_gbs"]
    peak = m["peak_float32_gflops" if dtype_name == "float32" else "peak_float64_gflops"]
    compute_s, memory_s = flops / (peak * 1e9), nbytes / (bandwidth * 1e9)
    return (compute_s, "compute") if compute_s >= memory_s else (memory_s, level)


def annotate(records: list[dict], workloads_by_name: dict, machine: dict) -> None:
    """Adds the roofline fields to every record that has a steady-state time."""
    for r in records:
        w = workloads_by_name.get(r["workload"])
        if w is None or not w.bytes or not r.get("run_s"):
            continue
        dtype_name = "float32" if "float32" in w.name else "float64"
        for label, key in (("machine", ""), ("one_core", "_1core")):
            roof_s, bound = roof(machine, label, w.flops, w.bytes, w.footprint, dtype_name)
            r[f"roofline_s{key}"] = roof_s
            r[f"roofline_fraction{key}"] = roof_s / r["run_s"]
            r[f"roofline_bound{key}"] = bound
        r.update(flops=w.flops, bytes=w.bytes, footprint=w.footprint)
