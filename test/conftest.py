"""Test-session settings.

The compile cache (``MLIR_SCAN_CACHE_DIR``) goes to a folder of this session,
removed at its end: the suite compiles over a thousand programs, which would
otherwise stay in the user's cache.
"""

from __future__ import annotations

import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="mlir-scan-test-cache-")
os.environ["MLIR_SCAN_CACHE_DIR"] = _CACHE


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHE, ignore_errors=True)


# MLIR_SCAN_THREEWAY=<file>: every theano.function of the run is also checked
# three ways on its first call (test/python/threeway.py: the function's own
# program, its IR compiled with every optional lowering feature off, and the
# reference interpreter); each disagreement or failure of one of the ways is
# appended to <file> as a JSON line, and the tests themselves run as usual.
# How the existing suite's programs were swept (issue 23's closing note).
if os.environ.get("MLIR_SCAN_THREEWAY"):
    import json
    import sys
    import traceback

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "python"))
    import mlir_scan  # noqa: E402
    import importlib

    _function_module = importlib.import_module("mlir_scan.builder.function")

    import threeway  # noqa: E402

    _LOG = os.environ["MLIR_SCAN_THREEWAY"]
    _real_function = _function_module.function

    def _record(entry: dict) -> None:
        with open(_LOG, "a") as log:
            log.write(json.dumps(entry) + "\n")

    class _ThreeWayChecked:
        """A compiled function whose first positional call is also run three ways."""

        def __init__(self, f):
            self.__dict__["_f"] = f
            self.__dict__["_checked"] = False

        def __getattr__(self, name):
            if name.startswith("__") or name in ("_f", "_checked"):
                raise AttributeError(name)  # (copy.copy of a proxy: no __dict__ yet)
            return getattr(self.__dict__["_f"], name)

        def __setattr__(self, name, value):
            setattr(self._f, name, value)

        def __call__(self, *args, **kwargs):
            f = self._f
            check = not self._checked and not kwargs and len(args) == len(f.inputs) and f.program is not None
            if check:
                self.__dict__["_checked"] = True
                try:
                    ir_args = threeway.ir_arguments(f, args)
                except Exception:  # an argument the function itself rejects
                    check = False
            result = f(*args, **kwargs)
            if check:
                test = os.environ.get("PYTEST_CURRENT_TEST", "")
                try:
                    threeway.check_three_ways(f, ir_args, variants={"plain": threeway.PLAIN},
                                              rtol=1e-5 if "f32" in f.ir else 1e-9,
                                              atol=1e-6 if "f32" in f.ir else 1e-11, what=test)
                    _record({"test": test, "kind": "agree"})
                except AssertionError as e:
                    _record({"test": test, "kind": "disagree", "message": str(e)[:2000]})
                except Exception as e:  # noqa: BLE001
                    _record({"test": test, "kind": type(e).__name__, "message": traceback.format_exc()[-2000:]})
            return result

    def _checked_function(*args, **kwargs):
        f = _real_function(*args, **kwargs)
        if getattr(f, "program", None) is None or kwargs.get("target", "cpu") != "cpu":
            return f
        return _ThreeWayChecked(f)

    _function_module.function = _checked_function
    mlir_scan.function = _checked_function
