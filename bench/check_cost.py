"""What the run-time verification of a program's ops costs, in instructions.

    python bench/check_cost.py [--calls N] [--only W5]

Each workload of bench/run.py is compiled twice, as users get it
(``checks=True``, the default) and with ``checks=False``, and called N times
in a fresh process under ``valgrind --tool=callgrind``, counting only the
instructions executed inside compiled calls (``--toggle-collect`` on the
run-time library's ``mlirScanInvoke``): a count that does not depend on what
else the machine is doing, unlike seconds on this shared 2-core machine. The
table gives instructions per call and their ratio; bench/run.py shows the
same comparison in seconds (``mlir-scan-nochecks``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent

# Valgrind runs the child without instrumentation (the compile would take
# minutes instrumented); the child switches it on once the program is compiled.
_CHILD = """
import os, subprocess, sys
sys.path.insert(0, {bench!r})
import numpy as np, workloads
make = getattr(workloads, {make!r})
w = make(np.{dtype}, True, **{sizes!r})
fn = w.builders[{impl!r}]()
fn(*w.inputs)
subprocess.run(["callgrind_control", "--instr=on", str(os.getpid())], check=True, capture_output=True)
for _ in range({calls}):
    fn(*w.inputs)
"""

#: Workload sizes for counting: small enough to run under valgrind quickly,
#: large enough that the loops dominate the call.
SIZES = {
    "w1_power": dict(length=1000, k=200),
    "w2_cumsum": dict(length=20_000),
    "w3_polynomial": dict(length=20_000),
    "w4_fibonacci": dict(steps=10_000),
    "w5_rnn": dict(hidden=128, inputs=64, steps=100),
    "w7_until": {},
    "overhead_probe": dict(steps=100_000),
}


def count(make: str, dtype: str, impl: str, calls: int) -> int:
    """Instructions executed inside `calls` compiled calls of `impl`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        code = _CHILD.format(bench=str(BENCH), make=make, dtype=dtype, sizes=SIZES[make], impl=impl,
                             calls=calls)
        # One thread: the parts of a large op that the pool's workers would
        # run are not inside mlirScanInvoke's frame and would go uncounted.
        env = dict(os.environ, MLIR_SCAN_NUM_THREADS="1")
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                        "--toggle-collect=mlirScanInvoke", f"--callgrind-out-file={out}",
                        sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
        summary = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
        return int(summary.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--only", help="run only workloads whose function name contains this")
    args = parser.parse_args()
    if not (shutil.which("valgrind") and shutil.which("callgrind_control")):
        sys.exit("valgrind and callgrind_control are needed (apt install valgrind)")
    print(f"{'workload':28s}{'checks':>16s}{'no checks':>16s}{'ratio':>8s}   (instructions per call)")
    for make in SIZES:
        if args.only and args.only not in make:
            continue
        for dtype in ("float64", "float32"):
            checked = count(make, dtype, "mlir-scan", args.calls) / args.calls
            unchecked = count(make, dtype, "mlir-scan-nochecks", args.calls) / args.calls
            print(f"{make + '-' + dtype:28s}{checked:16.0f}{unchecked:16.0f}{checked / unchecked:8.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
