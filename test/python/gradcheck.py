"""Finite-difference checking of symbolic gradients (used by the gradient tests).

``check_grad(cost_fn, values)`` builds float64 placeholders for `values`,
computes ``cost = cost_fn(*placeholders)`` and its symbolic gradients with
``T.grad``, compiles one function returning the cost and the gradients, and
compares the gradients with central differences of the compiled cost. The
expected numbers come from the compiled *cost* only (never from the gradient
code), and the cost itself is checked against `reference` (a NumPy function)
when one is given.
"""

from __future__ import annotations

import numpy as np

import mlir_scan as theano
from mlir_scan import tensor as T

#: How many gradient comparisons ran (reported by the closing note).
COUNT = {"checks": 0}


def placeholder(value: np.ndarray, name: str):
    value = np.asarray(value)
    return T.tensor(value.dtype.name, tuple(1 if d == 1 else None for d in value.shape), name)


def numeric_grad(f, values: list[np.ndarray], i: int, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar ``f(*values)`` with respect to ``values[i]``."""
    x = np.array(values[i], dtype=np.float64)
    g = np.zeros_like(x)
    flat = x.reshape(-1)
    gflat = g.reshape(-1)
    for j in range(flat.size):
        old = flat[j]
        h = eps * max(1.0, abs(old))
        flat[j] = old + h
        plus = float(f(*values[:i], x.copy(), *values[i + 1:]))
        flat[j] = old - h
        minus = float(f(*values[:i], x.copy(), *values[i + 1:]))
        flat[j] = old
        gflat[j] = (plus - minus) / (2 * h)
    return g


def assert_close(got, want, rtol: float = 1e-6, atol: float = 1e-8, what: str = "") -> None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


def check_grad(cost_fn, values, wrt=None, reference=None, rtol: float = 1e-6, mode=None, extra=(),
               names=None):
    """Checks ``T.grad(cost_fn(*xs), xs[wrt])`` against central differences; returns the function."""
    values = [np.asarray(v) for v in values]
    names = names or [f"x{i}" for i in range(len(values))]
    xs = [placeholder(v, n) for v, n in zip(values, names)]
    cost = cost_fn(*xs)
    wrt = list(range(len(values))) if wrt is None else list(wrt)
    grads = T.grad(cost, [xs[i] for i in wrt])
    f = theano.function(xs, [cost] + list(grads), mode=mode, on_unused_input="ignore")
    out = f(*values)
    if reference is not None:
        assert_close(out[0], reference(*values), rtol=1e-10, what="cost")

    def cost_only(*vals):
        return f(*vals)[0]

    for k, i in enumerate(wrt):
        want = numeric_grad(cost_only, values, i)
        assert out[1 + k].dtype == values[i].dtype, f"gradient of {names[i]}: dtype {out[1 + k].dtype}"
        assert_close(out[1 + k], want, rtol=rtol, what=f"d cost / d {names[i]}")
        COUNT["checks"] += 1
    return f
