# lit configuration of the mlir-scan regression suite (*.mlir under test/).
#
# The tools come from the Python environment running lit (`python -m lit`):
# the installed mlir-scan package (scan-opt), the PyPI `filecheck` (as
# FileCheck), and the LLVM/MLIR wheels (not, mlir-runner, runtime libraries).
# Run it with `python -m lit -v test/`, or through pytest (test/test_lit.py).

import importlib.util
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import lit.formats

config.name = "mlir-scan"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
# pytest tests live in python/; lit's scratch files in Output/.
config.excludes = ["python", "Output"]


def wheel_dir(package):
    """Folder of an installed (possibly namespace) package such as `mlir`."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        lit_config.fatal(f"Python package '{package}' is not installed in {sys.executable}")
    return Path(list(spec.submodule_search_locations)[0])


def existing(path):
    if not Path(path).is_file():
        lit_config.fatal(f"missing tool: {path}")
    return str(path)


import mlir_scan._cli  # noqa: E402  (the installed package, never the source tree)

llvm_bin = wheel_dir("llvm") / "bin"
mlir_dir = wheel_dir("mlir")
filecheck = Path(sys.executable).parent / "filecheck"
if not filecheck.is_file():
    filecheck = shutil.which("filecheck") or filecheck

tools = {
    "scan-opt": existing(mlir_scan._cli.scan_opt_path()),
    "FileCheck": existing(filecheck),  # PyPI filecheck: no --implicit-check-not, no [[#N]]
    "not": existing(llvm_bin / "not"),
    "mlir-runner": existing(mlir_dir / "bin" / "mlir-runner"),
    "mlir-translate": existing(mlir_dir / "bin" / "mlir-translate"),
}
# A tool name is substituted only as a whole command word, never inside a path
# or another name (`not` in `/notes/`, `scan-opt` in `my-scan-opt`).
for name, path in tools.items():
    config.substitutions.append(
        (r"(?<![\w./-])" + re.escape(name) + r"(?![\w./-])", shlex.quote(path)))
config.substitutions.append(("%mlir_lib_dir", shlex.quote(str(mlir_dir / "lib"))))
# The run-time library of compiled programs (allocation, failures): what
# `mlir-runner -shared-libs=` needs besides MLIR's runner utilities.
import mlir_scan.__main__  # noqa: E402

config.substitutions.append(
    ("%scan_runtime_lib", shlex.quote(existing(mlir_scan.__main__.runtime_library_path()))))
