"""Console entry points."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def scan_opt_path() -> Path:
    """The path of the ``scan-opt`` binary shipped inside the package."""
    return Path(__file__).resolve().parent / "_bin" / "scan-opt"


def scan_opt_main() -> None:
    """``scan-opt``: runs the packaged binary with the given arguments."""
    binary = scan_opt_path()
    if not binary.is_file():
        sys.exit(f"scan-opt: {binary} is missing; reinstall mlir-scan")
    os.execv(binary, [str(binary), *sys.argv[1:]])
