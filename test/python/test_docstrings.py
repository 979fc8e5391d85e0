"""The runnable examples in the builder's docstrings stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "builder.config", "builder.graph", "builder.emitter", "builder.ops.elemwise", "builder.ops.shape",
    "builder.ops.basic", "builder.ops.subtensor", "builder.ops.random", "builder.ops.scan",
    "builder.scan_module", "builder.sharedvar", "builder.function", "builder.tensor", "builder.tensor.basic",
    "builder.tensor.nnet", "builder.tensor.shared_randomstreams", "builder.ops.misc", "builder.ops.disconnected",
    "builder.tensor.extra", "builder.tensor.opt", "builder.tensor.random.utils", "builder.sandbox.rng_mrg",
    "builder.ops.extra", "builder.ops.ifelse", "builder.ifelse", "builder.tensor.extra_ops", "builder.gradient",
    "builder.rop", "builder.ops.advanced_subtensor", "builder.ops.linalg", "builder.tensor.nlinalg",
    "builder.tensor.slinalg",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"mlir_scan.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
