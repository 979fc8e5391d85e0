"""pymc-extras' state-space models compile whole in the PyTensor mode and equal PyTensor.

Each model's logp and gradient (the graph of ``logp_dlogp_function``, what NUTS calls: the
Kalman filter's scan, its gradient scan, and what builds the state-space matrices) is
compiled with ``get_mode(strict=True)``, so any op left to PyTensor is an error, and
compared at random points with PyTensor's own rewrites (``fast_run``) run by PyTensor's
Python linker: the default mode's graph without its C compile, which takes 40-140 s per
model on these machines. The models are built as pymc-extras' documentation builds them
(priors on every parameter the model names, then ``build_statespace_graph``).

What they need beyond the local-level model of ``test_pymc_models`` (which runs each
filter type, the Cholesky filter's QR and IfElse included): SARIMAX's stationary
initialization (``solve_discrete_lyapunov(method="bilinear")``, whose ``SolveSylvester``
is translated as one linear system, not through its Schur decompositions). One model
only: each costs ~20 s of PyTensor's own rewriting per mode (VARMAX, ETS and structural
models with more components compile whole too, and equal PyTensor to 1e-14, in every
filter type: checked by hand, left out for time).
The models are skipped without PyMC or pymc-extras; the ``SolveSylvester`` tests run on
any PyTensor.
"""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from pytensor.tensor.linalg import solve_discrete_lyapunov, solve_sylvester  # noqa: E402

import mlir_scan.pytensor as msp  # noqa: E402

try:
    import pymc as pm
    import pymc_extras.statespace as pss
except ImportError:  # the SolveSylvester tests still run
    pm = pss = None

needs_pymc_extras = pytest.mark.skipif(pss is None, reason="state-space models need PyMC and pymc-extras "
                                                           "(pip install pymc pymc-extras)")

#: PyTensor's default rewrites, run by its Python linker (no C compile).
REFERENCE = Mode(linker="py", optimizer="fast_run")

#: Time steps: enough for a real filter, few enough for the Python linker.
N_STEPS = 40


def _priors(ss) -> None:
    """A prior for every parameter `ss` names (positive-definite matrices as diag(d) + 0.1 d d^T)."""
    for name, info in ss.param_info.items():
        shape, dims = info["shape"], info["dims"]
        constraint = (info["constraints"] or "").lower()
        if "definite" in constraint:
            d = pm.HalfNormal(f"{name}_diag", 1.0, shape=(shape[-1],))
            pm.Deterministic(name, pt.diag(d) + 0.1 * pt.outer(d, d), dims=dims)
        elif "positive" in constraint:
            pm.HalfNormal(name, 1.0, shape=shape, dims=dims)
        else:
            pm.Normal(name, 0.0, 0.5, shape=shape, dims=dims)


def _model(ss, data: np.ndarray) -> pm.Model:
    with pm.Model(coords=ss.coords) as model:
        _priors(ss)
        ss.build_statespace_graph(data)
    return model


def _sarima(filter_type: str) -> pm.Model:
    """ARMA(1, 1) x seasonal (1, 0, 1, 4), stationary initialization (a discrete Lyapunov equation)."""
    ss = pss.BayesianSARIMAX(order=(1, 0, 1), seasonal_order=(1, 0, 1, 4), filter_type=filter_type,
                             verbose=False)
    return _model(ss, np.random.default_rng(0).normal(size=(N_STEPS, 1)))


def _varmax(filter_type: str) -> pm.Model:
    """VAR(1) of two series (its step compares ``alloc(0, n, 2)`` to zero with the Cholesky filter:
    PyTensor 2.38 rewrote that forever before the mode left ``local_elemwise_alloc`` out)."""
    ss = pss.BayesianVARMAX(order=(1, 0), endog_names=["y1", "y2"], filter_type=filter_type, verbose=False,
                            stationary_initialization=False)
    return _model(ss, np.random.default_rng(0).normal(size=(N_STEPS, 2)))


MODELS = {
    "sarima-standard": lambda: _sarima("standard"),
    "varmax-cholesky": lambda: _varmax("cholesky"),
}


def _logp_dlogp(model) -> tuple[list, list]:
    """The value variables and ``[logp, *dlogp]``: the graph of the function NUTS calls
    (``logp_dlogp_function`` is this graph with its inputs raveled into one vector), built
    once for both modes (PyMC's graph building and gradient are half of a compile)."""
    values = model.continuous_value_vars
    logp = model.logp()
    return values, [logp, *pytensor.grad(logp, values)]


@needs_pymc_extras
@pytest.mark.parametrize("name", list(MODELS))
def test_statespace_model_compiles_whole_and_equals_pytensor(name):
    model = MODELS[name]()
    values, outs = _logp_dlogp(model)
    ours = pytensor.function(values, outs, mode=msp.get_mode(strict=True))
    assert msp.left_to_pytensor(ours) == []
    assert ours.maker.linker.whole_graph
    ref = pytensor.function(values, outs, mode=REFERENCE)
    point = model.initial_point()
    rng = np.random.default_rng(7)
    for scale in (0.0, 0.3, 0.3, 0.6):
        q = [point[v.name] + rng.normal(0.0, scale, point[v.name].shape) for v in values]
        got, want = ours(*q), ref(*q)
        assert np.isfinite(want[0])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
        scale_g = max(np.abs(w).max() for w in want[1:])
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10 * scale_g)


# -- SolveSylvester (Lyapunov equations) ----------------------------------------------------------


def test_sylvester_and_lyapunov_equal_pytensor():
    """``solve_sylvester`` (m != n too) with its gradient, and ``solve_discrete_lyapunov(method="bilinear")``
    with a batch dimension (its gradient is in the SARIMAX model's): strict mode, PyTensor's values."""
    A, B, C = pt.dmatrix("A"), pt.dmatrix("B"), pt.dmatrix("C")
    As, Qs = pt.dtensor3("As"), pt.dtensor3("Qs")
    Y = solve_sylvester(A, B, C)
    outs = [Y, *pytensor.grad((Y * Y).sum(), [A, B, C]), solve_discrete_lyapunov(As, Qs, method="bilinear")]
    ours = pytensor.function([A, B, C, As, Qs], outs, mode=msp.get_mode(strict=True))
    ref = pytensor.function([A, B, C, As, Qs], outs, mode=REFERENCE)
    rng = np.random.default_rng(3)
    for m, n in ((1, 1), (2, 3), (4, 4)):
        args = (rng.normal(size=(m, m)), rng.normal(size=(n, n)), rng.normal(size=(m, n)),
                0.3 * rng.normal(size=(2, n, n)), rng.normal(size=(2, n, n)))
        for got, want in zip(ours(*args), ref(*args)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())


def test_singular_sylvester_gives_nan_not_a_crash():
    """``A`` and ``-B`` sharing an eigenvalue: no unique solution. PyTensor's ``trsyl``
    returns a perturbed solution (entries near 1e15); the mode's LU meets a zero pivot: NaN."""
    A, B, C = pt.dmatrix("A"), pt.dmatrix("B"), pt.dmatrix("C")
    ours = pytensor.function([A, B, C], solve_sylvester(A, B, C), mode=msp.get_mode(strict=True))
    got = ours(np.diag([1.0, 2.0]), -np.diag([1.0, 3.0]), np.ones((2, 2)))
    assert np.isnan(got).all()
