"""``python -m mlir_scan``: where the tools and libraries of an installation are.

To run IR lowered by ``scan-opt --scan-to-llvm`` with MLIR's ``mlir-runner``,
load the run-time library of compiled programs (allocation, run-time check
failures) and MLIR's runner utilities (``printMemref*``)::

    scan-opt model.mlir --scan-to-llvm | \\
      $(python -m mlir_scan --mlir-runner) -e main -entry-point-result=void \\
      $(python -m mlir_scan --shared-libs)
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from ._cli import package_file, scan_opt_path


def _mlir_dir() -> Path:
    return Path(list(importlib.util.find_spec("mlir").submodule_search_locations)[0])


def runtime_library_path() -> Path:
    """The run-time library compiled programs call (python/runtime/)."""
    return package_file("_lib", "libMLIRScanRuntime.so")


def shared_libs() -> list[Path]:
    """What ``mlir-runner -shared-libs=`` needs for lowered scan programs."""
    lib = _mlir_dir() / "lib"
    return [runtime_library_path(), lib / "libmlir_runner_utils.so", lib / "libmlir_c_runner_utils.so"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlir_scan", description=__doc__.splitlines()[0])
    parser.add_argument("--mlir-runner", action="store_true", help="print the path of mlir-runner")
    parser.add_argument("--shared-libs", action="store_true",
                        help="print the -shared-libs=... argument mlir-runner needs")
    parser.add_argument("--scan-opt", action="store_true", help="print the path of the scan-opt binary")
    args = parser.parse_args(argv)
    if not (args.mlir_runner or args.shared_libs or args.scan_opt):
        parser.print_help()
        return 0
    if args.scan_opt:
        print(scan_opt_path())
    if args.mlir_runner:
        print(_mlir_dir() / "bin" / "mlir-runner")
    if args.shared_libs:
        print("-shared-libs=" + ",".join(str(p) for p in shared_libs()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
