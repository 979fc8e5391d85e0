"""The runnable examples in the builder's docstrings stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "config", "graph", "emitter", "ops_elemwise", "ops_shape", "ops_basic", "ops_subtensor", "scan_op",
    "scan_module", "sharedvar", "random", "function", "tensor",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"mlir_scan.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
