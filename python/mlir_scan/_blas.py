"""The BLAS that compiled programs' large matrix products run through.

``scan-call-blas`` guards each large f32/f64 matrix product behind a call of
the run-time library (python/runtime/ScanBlas.cpp), which computes it with
the ``cblas_?gemm`` handed to it here:
OpenBLAS from the ``scipy-openblas32`` package (a dependency; the same
OpenBLAS NumPy and SciPy are built with, under its own symbol names, so it
never clashes with NumPy's copy). Without it the programs run their own
loops, with the same results up to rounding.

>>> from mlir_scan import _blas, _registration
>>> _blas.load(_registration.runtime_library()) in (True, False)
True
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from functools import lru_cache

from . import _registration

__all__ = ["load", "available", "calls"]

# OpenBLAS's symbol names in the scipy-openblas packages.
_PREFIX = "scipy_"


@lru_cache(maxsize=None)
def load(runtime: ctypes.CDLL) -> bool:
    """Hands scipy-openblas32's CBLAS functions to `runtime`; False (BLAS off)
    if the package is not installed or its library does not load.

    OpenBLAS itself runs on one thread: the run-time library splits large
    products across its own pool (``MLIR_SCAN_NUM_THREADS``), which the
    programs' parallel loops share, so no two thread pools compete for the
    cores."""
    runtime.mlirScanSetBlas.argtypes = [ctypes.c_void_p] * 2
    runtime.mlirScanSetBlas.restype = None
    if os.environ.get("MLIR_SCAN_BLAS", "1") == "0":
        return False
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or spec.origin is None:
        return False
    folder = os.path.join(os.path.dirname(spec.origin), "lib")
    # OpenBLAS reads its thread count when it loads and starts that many
    # threads, which spin for a while: with one, it starts none. Only for this
    # load (NumPy's OpenBLAS has loaded already; child processes keep the
    # user's setting).
    saved = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        names = [n for n in os.listdir(folder) if n.startswith("libscipy_openblas") and ".so" in n]
        library = ctypes.CDLL(os.path.join(folder, sorted(names)[0]))
        functions = [library[_PREFIX + name] for name in ("cblas_dgemm", "cblas_sgemm")]
        set_threads = library[_PREFIX + "openblas_set_num_threads"]
    except (OSError, IndexError, AttributeError):
        return False
    finally:
        if saved is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = saved
    set_threads.argtypes = [ctypes.c_int]
    set_threads(1)
    runtime._blas_library = library  # keeps it loaded while the runtime is
    runtime.mlirScanSetBlas(*[ctypes.cast(f, ctypes.c_void_p) for f in functions])
    return True


def available() -> bool:
    """Whether compiled programs' large products run through BLAS.

    >>> isinstance(available(), bool)
    True
    """
    return load(_registration.runtime_library())


def calls() -> int:
    """How many matrix products BLAS has computed in this process (the rest
    ran as the programs' own loops).

    >>> calls() >= 0
    True
    """
    lib = _registration.runtime_library()
    lib.mlirScanBlasCalls.restype = ctypes.c_int64
    return int(lib.mlirScanBlasCalls())
