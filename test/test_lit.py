"""Runs the lit suite (every *.mlir under test/) as one pytest test.

lit runs in this interpreter's environment, so it uses the installed mlir-scan
package and the wheels next to it (see lit.cfg.py). lit 23 has no `__main__`,
so `python -m lit` does not work; its `main()` is called instead.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent


def test_lit_suite() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from lit.main import main; sys.argv[0] = 'lit'; main()",
         "-v", str(TEST_DIR)],
        capture_output=True, text=True, timeout=600,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"lit failed (exit {proc.returncode}):\n{output}"
    passed = re.search(r"^\s*Passed\s*:\s*(\d+)", output, re.MULTILINE)
    assert passed and int(passed.group(1)) > 0, f"lit ran no test:\n{output}"
