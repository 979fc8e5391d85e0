"""The JIT of CPU programs (python/capi/ScanJIT.cpp).

A large module is split into parts that LLVM optimizes and compiles on
several threads at once (``MLIR_SCAN_NUM_THREADS`` of them); the parts are
linked in one JIT. How many parts there were must not change any result.
The thread count is read once per process, so each count runs in a child.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import mlir_scan

# The RNN and its gradient (d/dW of the sum of the states), large enough to be
# split: the forward and backward loops, their pushed-out matmuls.
_CHILD = textwrap.dedent("""
    import json
    import numpy as np
    import mlir_scan as theano
    from mlir_scan import tensor as T

    xs, h0 = T.dmatrix("xs"), T.dvector("h0")
    W, U, b = T.dmatrix("W"), T.dmatrix("U"), T.dvector("b")
    hs, _ = theano.scan(lambda x, h, W, U, b: T.tanh(T.dot(h, W) + T.dot(x, U) + b),
                        sequences=xs, outputs_info=h0, non_sequences=[W, U, b])
    cost = hs.sum()
    fn = theano.function([xs, h0, W, U, b], [hs, T.grad(cost, W)])
    rng = np.random.default_rng(7)
    args = (rng.standard_normal((37, 11)), rng.standard_normal(13),
            rng.standard_normal((13, 13)) / 4, rng.standard_normal((11, 13)) / 4,
            rng.standard_normal(13) / 4)
    states, grad = fn(*args)
    print(json.dumps({"parts": fn.program._engine.parts, "states": states.tolist(),
                      "grad": grad.tolist(), "args": [a.tolist() for a in args]}))
""")


def _run_child(threads: int) -> dict:
    env = dict(os.environ, MLIR_SCAN_NUM_THREADS=str(threads))
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _bptt(xs, h0, W, U, b):
    """States and d/dW sum(states) of the RNN, in NumPy."""
    hs = []
    h = h0
    for x in xs:
        h = np.tanh(h @ W + x @ U + b)
        hs.append(h)
    grad = np.zeros_like(W)
    carry = np.zeros_like(h0)
    for t in reversed(range(len(xs))):
        delta = (1.0 + carry) * (1.0 - hs[t] ** 2)
        grad += np.outer(hs[t - 1] if t > 0 else h0, delta)
        carry = delta @ W.T
    return np.array(hs), grad


def test_a_program_compiled_in_parts_gives_the_results_of_one_part():
    one, two = _run_child(1), _run_child(2)
    assert one["parts"] == 1
    assert two["parts"] == 2
    np.testing.assert_allclose(two["states"], one["states"], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(two["grad"], one["grad"], rtol=1e-12, atol=1e-14)
    states, grad = _bptt(*(np.array(a) for a in one["args"]))
    np.testing.assert_allclose(one["states"], states, rtol=1e-10)
    np.testing.assert_allclose(one["grad"], grad, rtol=1e-9)


def test_a_small_program_is_one_part():
    program = mlir_scan.compile(textwrap.dedent("""
        func.func @twice(%x: f64) -> f64 {
          %y = arith.addf %x, %x : f64
          return %y : f64
        }"""))
    assert program._engine.parts == 1
    assert program.twice(1.5) == 3.0
