"""W5's steady state beside other processes: does the thread pool still pay?

    python bench/contention.py [--dtype float64] [--hidden 1024] [--calls 15] [--repeat 3]

mlir-scan splits a large op of every step across the cores
(python/runtime/ScanParallel.cpp). Beside another busy process a split loop
may wait for a worker that the scheduler runs a time slice at a time; the
pool then runs loops on the calling thread for a while, and probes again.
This script times the hand-written W5 (bench/workloads.py) in fresh
processes, each phase after the other in one process:

- ``quiet``: nothing else runs;
- ``hiccups``: a process that busy-loops 300 us out of every millisecond;
- ``nice19``: a `nice -n 19` busy loop (the worker should keep its core);
- ``busy``: a busy loop at normal priority (one thread is what pays);
- ``after``: the busy loop has ended.

Each cell is the median call time (ms) over the repeats' medians, and its
ratio to the same phase with ``MLIR_SCAN_NUM_THREADS=1`` in the same run
(< 1: the split pays). The machine is shared: compare rows of one run only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PHASES = ("quiet", "hiccups", "nice19", "busy", "after")

# A process that busy-loops `spin` seconds every `spin + gap` seconds, for `length`.
_HICCUPS = """
import sys, time
spin, gap, end = float(sys.argv[1]), float(sys.argv[2]), time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    until = time.monotonic() + spin
    while time.monotonic() < until:
        pass
    time.sleep(gap)
"""
_BUSY = "while True: pass"


def _child(dtype: str, hidden: int, calls: int) -> None:
    """Runs in a fresh process: the phases, printed as one JSON line."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy as np
    import workloads

    from mlir_scan import runtime

    w = workloads.w5_rnn(np.dtype(dtype).type, False, hidden=hidden)
    fn = w.builders["mlir-scan"]()
    runtime.wait_optimized()
    fn(*w.inputs)

    def median_ms(n: int) -> float:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            fn(*w.inputs)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    def beside(args: list[str]) -> float:
        other = subprocess.Popen(args)
        try:
            time.sleep(0.1)
            return median_ms(calls)
        finally:
            other.kill()
            other.wait()

    result = {"quiet": median_ms(calls)}
    result["hiccups"] = beside([sys.executable, "-c", _HICCUPS, "0.0003", "0.0007", "60"])
    result["nice19"] = beside(["nice", "-n", "19", sys.executable, "-c", _BUSY])
    result["busy"] = beside([sys.executable, "-c", _BUSY])
    result["after"] = median_ms(calls)
    print(json.dumps(result))


def _run(args: argparse.Namespace, threads: str | None) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("MLIR_SCAN_NUM_THREADS", None)
    if threads:
        env["MLIR_SCAN_NUM_THREADS"] = threads
    out = subprocess.run([sys.executable, __file__, "--child", "--dtype", args.dtype,
                          "--hidden", str(args.hidden), "--calls", str(args.calls)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args.dtype, args.hidden, args.calls)

    runs: dict[str, list[dict[str, float]]] = {"pool": [], "one thread": []}
    for _ in range(args.repeat):  # interleaved: the machine's phases hit both
        runs["pool"].append(_run(args, None))
        runs["one thread"].append(_run(args, "1"))
    medians = {name: {p: statistics.median(r[p] for r in rs) for p in PHASES}
               for name, rs in runs.items()}
    print(f"W5-{args.dtype}-H{args.hidden}, median ms per call ({args.repeat} processes each)")
    print(f"{'':12s}" + "".join(f"{p:>16s}" for p in PHASES))
    for name, row in medians.items():
        print(f"{name:12s}" + "".join(f"{row[p]:16.1f}" for p in PHASES))
    ratios = [medians["pool"][p] / medians["one thread"][p] for p in PHASES]
    print(f"{'ratio':12s}" + "".join(f"{r:16.2f}" for r in ratios))


if __name__ == "__main__":
    main()
