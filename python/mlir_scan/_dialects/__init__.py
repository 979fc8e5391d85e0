"""Dialect modules found by the MLIR bindings' search prefix ``mlir_scan._dialects``."""
