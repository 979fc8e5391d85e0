"""The README's code runs and prints what the README says it prints.

Each ```python block runs in a child process from the repository root; the
values the README states in comments (``# ... [0.5 1.5 3.5 6.5]``) must appear
in its output. The scan-opt commands and the mlir-runner command of the scan-opt
section run too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def test_readme_has_python_examples():
    assert len(PYTHON_BLOCKS) >= 2


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.splitlines()[0][:40])
def test_python_block_runs(block):
    if block.startswith("import pymc"):
        # PyMC is not a dependency of the test extra (it pins PyTensor 2.38): .ci/run's
        # second stage installs it and runs this block.
        pytest.importorskip("pymc", reason="the PyMC example needs PyMC (pip install pymc)")
    proc = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # "print(...)  # ... [values]": the bracketed values are printed.
    for promised in re.findall(r"print\(.*#.*?(\[[-0-9. ]+\])", block):
        assert promised in proc.stdout, f"README promises {promised}; printed:\n{proc.stdout}"


def test_mlir_runner_command_runs():
    block = re.search(r"```sh\n(scan-opt examples/cumsum_main\.mlir --scan-to-llvm.*?)```", README, re.S).group(1)
    command = block.split("#")[0].replace("python -m", f"{sys.executable} -m")
    bindir = str(Path(sys.executable).parent)
    proc = subprocess.run(["bash", "-c", f'PATH="{bindir}:$PATH"; {command}'], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[1,  3,  6,  10]" in proc.stdout, proc.stdout


SCAN_OPT_LINES = re.findall(r"^(scan-opt examples/cumsum\.mlir.*?)\s+#", README, re.M)


def test_readme_lists_scan_opt_commands():
    assert len(SCAN_OPT_LINES) >= 8


@pytest.mark.parametrize("command", SCAN_OPT_LINES)
def test_scan_opt_command_runs(command):
    bindir = str(Path(sys.executable).parent)
    proc = subprocess.run(["bash", "-c", f'PATH="{bindir}:$PATH"; {command}'], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "func.func" in proc.stdout or "llvm.func" in proc.stdout
