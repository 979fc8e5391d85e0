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
