"""The ODS helpers the generated ``_scan_ops_gen.py`` imports, from upstream."""

from mlir.dialects._ods_common import *  # noqa: F401,F403
from mlir.dialects._ods_common import _cext  # noqa: F401
