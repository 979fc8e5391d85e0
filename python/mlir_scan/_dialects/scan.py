"""The ``scan`` dialect module the MLIR bindings load by namespace."""

from mlir_scan.dialect import *  # noqa: F401,F403
