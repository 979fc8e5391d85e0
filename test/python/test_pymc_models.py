"""PyMC time-series models (bench/pymc_models.py) compile whole in the PyTensor
mode and equal PyTensor on logp and dlogp.

Each model's ``logp_dlogp_function`` (the function NUTS calls) is compiled with
``get_mode(strict=True)``, so any op left to PyTensor is an error, and compared
at random points with PyTensor's own rewrites (``fast_run``) run by PyTensor's
Python linker (the default mode's graph, without its C compile: the
benchmark, bench/pymc.py, compares with the C and NUMBA modes themselves).
Skipped without PyMC (CI's second stage installs it).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pm = pytest.importorskip("pymc", reason="PyMC models need PyMC (pip install pymc)")

import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from pymc.blocking import DictToArrayBijection  # noqa: E402
from pymc.logprob.utils import ParameterValueError  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402

import mlir_scan.pytensor as msp  # noqa: E402

# (by path: bench/ also holds the benchmark script pymc.py, which must not shadow PyMC)
_spec = importlib.util.spec_from_file_location(
    "pymc_models", Path(__file__).resolve().parents[2] / "bench" / "pymc_models.py")
pymc_models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pymc_models)

#: Lengths small enough for PyTensor's Python linker, long enough for a real filter.
LENGTHS = {"garch11": 120, "garch11_scan": 120, "kalman": 40, "local_level": 120, "ar2": 120,
           "stochastic_volatility": 120, "statespace": 40, "statespace_univariate": 40, "statespace_cholesky": 40}


def _logp_dlogp(model, mode):
    f = model.logp_dlogp_function(ravel_inputs=True, mode=mode)
    f.set_extra_values({})
    return f


@pytest.mark.parametrize("name", sorted(pymc_models.MODELS))
def test_pymc_model_compiles_whole_and_equals_pytensor(name):
    model = pymc_models.MODELS[name](seed=3, n=LENGTHS[name])
    ours = _logp_dlogp(model, msp.get_mode(strict=True))
    assert msp.left_to_pytensor(ours._pytensor_function) == []
    ref = _logp_dlogp(model, Mode(linker="py", optimizer="fast_run"))
    q0 = DictToArrayBijection.map(model.initial_point()).data
    rng = np.random.default_rng(7)
    for scale in (0.0, 0.3, 1.0):
        q = q0 + rng.normal(0.0, scale, q0.shape)
        logp, dlogp = ours(q)
        want_logp, want_dlogp = ref(q)
        np.testing.assert_allclose(logp, want_logp, rtol=1e-10)
        np.testing.assert_allclose(dlogp, want_dlogp, rtol=1e-8, atol=1e-10 * np.abs(want_dlogp).max())


def test_parameter_checks_as_pytensor():
    """PyMC's parameter checks: a raw logp raises ParameterValueError out of support,
    in a model (checks made -inf switches by PyMC) the point gets logp = -inf."""
    r = np.random.default_rng(0).standard_normal(30)
    omega = pt.dscalar("omega")
    logp = pm.logp(pm.GARCH11.dist(omega=omega, alpha_1=0.1, beta_1=0.8, initial_vol=1.0, steps=29), r).sum()
    ours = pytensor.function([omega], logp, mode=msp.get_mode(strict=True))
    ref = pytensor.function([omega], logp, mode=Mode(linker="py", optimizer="fast_run"))
    np.testing.assert_allclose(ours(0.3), ref(0.3), rtol=1e-12)
    for f in (ours, ref):
        with pytest.raises(ParameterValueError):
            f(-0.3)

    with pm.Model() as model:
        w = pm.Normal("omega", 0.2, 1.0)  # no transform: its value can leave omega's support
        pm.GARCH11("r", omega=w, alpha_1=0.1, beta_1=0.8, initial_vol=1.0, observed=r)
    ours = _logp_dlogp(model, msp.get_mode(strict=True))
    ref = _logp_dlogp(model, Mode(linker="py", optimizer="fast_run"))
    for q in (np.array([0.3]), np.array([-0.3])):
        np.testing.assert_allclose(ours(q)[0], ref(q)[0], rtol=1e-12)
    assert ours(np.array([-0.3]))[0] == -np.inf
