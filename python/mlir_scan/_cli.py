"""Console entry points."""

from __future__ import annotations

import importlib.resources
import os
import sys
from pathlib import Path


def package_file(*parts: str) -> Path:
    """A file the build put inside the package (``_bin/``, ``_lib/``).

    Found through ``importlib.resources`` rather than next to ``__file__``,
    so an editable install (sources here, built files in site-packages)
    finds them too.
    """
    return Path(str(importlib.resources.files(__package__).joinpath(*parts)))


def scan_opt_path() -> Path:
    """The path of the ``scan-opt`` binary shipped inside the package."""
    return package_file("_bin", "scan-opt")


def scan_opt_main() -> None:
    """``scan-opt``: runs the packaged binary with the given arguments."""
    binary = scan_opt_path()
    if not binary.is_file():
        sys.exit(f"scan-opt: {binary} is missing; reinstall mlir-scan")
    os.execv(binary, [str(binary), *sys.argv[1:]])
