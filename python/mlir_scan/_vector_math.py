"""glibc's vector math library (libmvec), for the vector math of compiled programs.

LLVM has no vector ``pow``, ``exp`` or ``log``: without this, a vectorized
``c * x ** p`` calls libm's scalar ``pow`` once per element. ``scan-call-vector-math``
calls libmvec's AVX2 functions on whole registers instead (``_ZGVdN4vv_pow``:
four ``pow`` at once, within 4 ulp). They are used when the machine has AVX2
and FMA and ``libmvec.so.1`` loads (glibc >= 2.22 on x86-64 Linux: ``sin``,
``cos``, ``exp``, ``log``, ``pow``; glibc >= 2.35 has the others), and not with
``MLIR_SCAN_VECTOR_MATH=0`` or ``mlir_scan.compile(..., vector_math=False)``.
The library is loaded into the process with its symbols global, where the
JIT resolves the programs' calls.

>>> from mlir_scan import _vector_math
>>> _vector_math.functions() is None or "exp" in _vector_math.functions()
True
"""

from __future__ import annotations

import ctypes
import os
import platform
from functools import lru_cache

__all__ = ["functions", "pipeline_options"]

#: The functions scan-call-vector-math knows, by libm name; those of two
#: arguments have a second ``v`` in their vector ABI name.
KNOWN = ("pow", "atan2", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "asin",
         "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "cbrt")
_BINARY = {"pow", "atan2"}


def _cpu_has(*flags: str) -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    present = set(line.split(":", 1)[1].split())
                    return all(flag in present for flag in flags)
    except OSError:
        pass
    return False


@lru_cache(maxsize=None)
def functions() -> tuple[str, ...] | None:
    """The functions compiled programs may call libmvec for (both the f64 and
    the f32 version resolve), or None: not x86-64 Linux with AVX2 and FMA,
    no libmvec, or ``MLIR_SCAN_VECTOR_MATH=0``."""
    if os.environ.get("MLIR_SCAN_VECTOR_MATH", "1") == "0":
        return None
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    if not _cpu_has("avx2", "fma"):
        return None
    try:
        library = ctypes.CDLL("libmvec.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None

    def has(name: str) -> bool:
        v = "vv" if name in _BINARY else "v"
        return all(hasattr(library, symbol) for symbol in (f"_ZGVdN4{v}_{name}", f"_ZGVdN8{v}_{name}f"))

    found = tuple(name for name in KNOWN if has(name))
    return found or None


def pipeline_options(enabled: bool = True) -> str:
    """The ``scan-buffers-to-llvm`` options that turn the libmvec calls on
    (``vector-math=avx2 vector-math-functions=...``), or ``vector-math=none``.

    >>> pipeline_options(False)
    'vector-math=none'
    """
    available = functions() if enabled else None
    if not available:
        return "vector-math=none"
    return f"vector-math=avx2 vector-math-functions={','.join(available)}"
