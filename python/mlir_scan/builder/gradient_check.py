"""``verify_grad``: Theano's finite-difference check of a symbolic gradient
(``theano.gradient.verify_grad``, also ``T.verify_grad``).

The check works as Theano's: the output of ``fun`` is projected on a fixed
random tensor to a scalar cost; its symbolic gradient (compiled) is compared
with one-sided finite differences of the compiled cost, element by element;
an element fails when both its absolute and its relative error exceed their
tolerances, and the first failing input raises :class:`GradientError`
(``verify_grad.E_grad``).

Example::

    >>> import numpy as np
    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> theano.gradient.verify_grad(lambda x: T.tanh(x) * x, [np.array([0.5, -1.0, 2.0])],
    ...                             rng=np.random.RandomState(0))
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import tensor as T
from .function import function
from .gradient import grad
from .graph import Variable
from .sharedvar import shared

__all__ = ["verify_grad", "GradientError", "numeric_grad"]

#: The finite-difference step per dtype (Theano's ``numeric_grad.type_eps``).
_TYPE_EPS = {"float64": 1e-7, "float32": 3e-4, "float16": 1e-1}
#: The default tolerances per dtype (Theano's ``_type_tol``).
_TYPE_TOL = {"float64": 1e-4, "float32": 1e-2, "float16": 5e-2}


class GradientError(Exception):
    """A symbolic gradient that disagrees with finite differences
    (``verify_grad.E_grad``): which input, where, both values and the errors."""

    def __init__(self, arg: int, err_pos: int, shape: tuple, val1: float, val2: float, abs_err: float,
                 rel_err: float, abs_tol: float, rel_tol: float):
        super().__init__(arg, err_pos, shape, val1, val2, abs_err, rel_err, abs_tol, rel_tol)
        self.arg, self.err_pos, self.shape = arg, err_pos, shape
        self.val1, self.val2 = val1, val2
        self.abs_err, self.rel_err = abs_err, rel_err
        self.abs_tol, self.rel_tol = abs_tol, rel_tol

    def __str__(self) -> str:
        return (f"GradientError: numeric gradient and analytic gradient exceed tolerance:\n"
                f"        At position {self.err_pos} of argument {self.arg} with shape {self.shape},\n"
                f"            val1 = {self.val1:f}      ,  val2 = {self.val2:f}\n"
                f"            abs. error = {self.abs_err:f},  abs. tolerance = {self.abs_tol:f}\n"
                f"            rel. error = {self.rel_err:f},  rel. tolerance = {self.rel_tol:f}")


def numeric_grad(f: Callable[..., Any], pt: Sequence[np.ndarray], eps: float | None = None) -> list[np.ndarray]:
    """One-sided finite differences ``(f(x + eps e_i) - f(x)) / eps`` of the
    scalar `f` at `pt`, for every element of every input (Theano's
    ``numeric_grad``; `eps` defaults to the widest input dtype's step)."""
    pt = [np.array(p) for p in pt]
    if eps is None:
        eps = max(_TYPE_EPS.get(p.dtype.name, 1e-7) for p in pt)
    f_x = float(f(*pt))
    grads = []
    for i, p in enumerate(pt):
        g = np.zeros(p.shape, dtype=np.float64)
        flat, gflat = p.reshape(-1), g.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            gflat[j] = (float(f(*pt)) - f_x) / eps
            flat[j] = old
        grads.append(g)
    return grads


def _errors(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Absolute and relative errors (``|a - b| / (|a| + |b|)``, 0 where both are 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    abs_err = np.abs(a - b)
    denominator = np.abs(a) + np.abs(b)
    rel_err = np.divide(abs_err, denominator, out=np.zeros_like(abs_err), where=denominator > 0)
    return abs_err, rel_err


def verify_grad(fun: Callable[..., Any], pt: Sequence[Any], n_tests: int = 2, rng: Any = None,
                eps: float | None = None, out_type: str | None = None, abs_tol: float | None = None,
                rel_tol: float | None = None, mode: Any = None, cast_to_output_type: bool = False,
                no_debug_ref: bool = True) -> None:
    """Checks the gradient of ``fun(*inputs)`` at `pt` against finite differences
    (Theano's ``verify_grad``); raises :class:`GradientError` if they disagree.

    `pt` holds one NumPy array (or number) per input of `fun`, which gets
    symbolic inputs of the same dtypes and ranks. `fun` must return one
    variable. Its output is projected on a random tensor drawn from `rng`
    (a ``numpy.random.RandomState``, required as in Theano) for each of
    `n_tests` checks. `eps` is the difference step; `abs_tol` and `rel_tol`
    default to Theano's per-dtype tolerances (1e-4 for float64, 1e-2 for
    float32). `mode` is passed to :func:`function`; `out_type`,
    `cast_to_output_type` and `no_debug_ref` are accepted for compatibility.
    """
    del out_type, cast_to_output_type, no_debug_ref  # Theano's options with nothing to do here
    if not isinstance(pt, (list, tuple)):
        raise TypeError("verify_grad: pt must be a list or tuple of NumPy arrays")
    if rng is None:
        raise TypeError("verify_grad: rng must be given (a numpy.random.RandomState), as in Theano: "
                        "a gradient check needs a reproducible random projection")
    pt = [np.array(p) for p in pt]
    for i, p in enumerate(pt):
        if p.dtype.kind != "f":
            raise TypeError(f"verify_grad: argument {i} has dtype {p.dtype.name}; the gradient check needs floats")
    if abs_tol is None:
        abs_tol = max(_TYPE_TOL.get(p.dtype.name, 1e-4) for p in pt)
    if rel_tol is None:
        rel_tol = max(_TYPE_TOL.get(p.dtype.name, 1e-4) for p in pt)

    inputs = [T.tensor(p.dtype.name, tuple(1 if d == 1 else None for d in p.shape), f"input {i}") for i, p in enumerate(pt)]
    output = fun(*inputs)
    if isinstance(output, (list, tuple)):
        raise ValueError("verify_grad: fun must return one variable (it returned a list or tuple)")
    if not isinstance(output, Variable):
        output = T.as_tensor_variable(output)
    output_value = np.asarray(function(inputs, output, mode=mode)(*pt))

    # Theano's projection: uniform in [0.5, 1.5), so that no element of the output is left out.
    projection = shared(np.asarray(rng.rand(*output_value.shape) + 0.5, dtype=output.dtype), name="projection")
    cost = T.sum(projection * output)
    cost_fn = function(inputs, cost, mode=mode)
    grad_fn = function(inputs, grad(cost, inputs, disconnected_inputs="ignore"), mode=mode)
    for test in range(n_tests):
        if test:
            projection.set_value(np.asarray(rng.rand(*output_value.shape) + 0.5, dtype=output.dtype))
        numeric = numeric_grad(cost_fn, pt, eps)
        analytic = [np.asarray(g) for g in grad_fn(*pt)]
        for i, (a, n) in enumerate(zip(analytic, numeric)):
            if a.shape != n.shape:
                raise ValueError(f"verify_grad: the gradient of argument {i} has shape {a.shape}, "
                                 f"the argument {n.shape}")
            abs_err, rel_err = _errors(a, n)
            scaled = np.minimum(abs_err / abs_tol, rel_err / rel_tol).reshape(-1)
            if scaled.size and scaled.max() > 1.0:
                pos = int(scaled.argmax())
                raise GradientError(i, pos, n.shape, float(a.reshape(-1)[pos]), float(n.reshape(-1)[pos]),
                                    float(abs_err.reshape(-1)[pos]), float(rel_err.reshape(-1)[pos]),
                                    abs_tol, rel_tol)


verify_grad.E_grad = GradientError  # type: ignore[attr-defined]  # Theano's name for the error
