"""Large non-sequences are read from a private copy (convert-scan-to-scf):
1 MiB to 64 MiB, decided at compile time for static sizes and at run time for
dynamic ones (the Theano API's inputs). The copy must never change a result,
never write into the caller's array, and be skipped outside that range.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T


def _rnn():
    xs, h0 = T.dmatrix("xs"), T.dvector("h0")
    W, b = T.dmatrix("W"), T.dvector("b")
    hs, _ = theano.scan(lambda x, h, W, b: T.tanh(T.dot(h, W) + x + b),
                        sequences=xs, outputs_info=h0, non_sequences=[W, b])
    return theano.function([xs, h0, W, b], hs)


def _numpy(xs, h0, W, b):
    out, h = [], h0
    for x in xs:
        h = np.tanh(h @ W + x + b)
        out.append(h)
    return np.array(out)


@pytest.mark.parametrize("hidden", [64, 362, 363, 1024])  # 32 KiB; just below 1 MiB; just above; 8 MiB
def test_results_do_not_depend_on_the_copy(hidden):
    fn = _rnn()
    rng = np.random.default_rng(hidden)
    args = (rng.standard_normal((5, hidden)), rng.standard_normal(hidden),
            rng.standard_normal((hidden, hidden)) / np.sqrt(hidden), rng.standard_normal(hidden))
    W_before = args[2].copy()
    np.testing.assert_allclose(fn(*args), _numpy(*args), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(args[2], W_before)


def test_the_copy_is_taken_by_size_at_run_time():
    ir = _rnn().program.ir("scf")
    # An scf.if for W, the one non-sequence left in the loop (scan-optimize
    # computes `x + b` for all steps before it), with the range it copies.
    assert ir.count("bufferization.alloc_tensor() copy(") == 1
    assert "1048576" in ir and "67108864" in ir
