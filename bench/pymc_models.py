"""PyMC time-series models whose logp has a scan: the models of `bench/pymc.py`.

Each builder takes a seed and a length and returns a `pm.Model` with observed
synthetic data drawn from the model's own process (so the posterior is sane and
NUTS behaves as it would on real data). The models are written as PyMC's
documentation writes them; `test/python/test_pymc_models.py` checks that each
compiles whole in the mode (strict) and equals PyTensor's default mode on logp
and dlogp at random points.

- ``garch11``: PyMC's own `pm.GARCH11` distribution (its logp is a scan, its
  dlogp has the `Split` of a `concatenate`'s gradient);
- ``garch11_scan``: the same model as a `pytensor.scan` in a `pm.Potential`
  (the README's example);
- ``kalman``: a linear Gaussian state-space model (local linear trend seen by
  two noisy sensors) with a hand-written Kalman filter: matrices in the step,
  `solve` and `slogdet` of the innovation covariance;
- ``local_level``: the scalar local-level model's Kalman filter;
- ``ar2``: an AR(2) written generatively with `pytensor.scan` in `pm.CustomDist`
  (PyMC derives the logp of the scan: "Time Series Models Derived From a
  Generative Graph");
- ``stochastic_volatility``: PyMC's stochastic volatility example (a Gaussian random
  walk of log-volatilities, Student-t returns with a learned `nu`: its logp has `gammaln`
  of `nu`, its dlogp the digamma function `psi`);
- ``statespace``, ``statespace_univariate``, ``statespace_cholesky``: pymc-extras'
  structural local-level model with each of its Kalman filters (standard, univariate,
  Cholesky: a QR and an IfElse in the step), where pymc-extras installs.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.pytensorf import collect_default_updates

try:
    from pymc_extras.statespace import structural as _structural
except ImportError:  # optional: pymc-extras
    _structural = None


def _garch_returns(rng: np.random.Generator, n: int, omega=0.05, alpha=0.15, beta=0.8) -> np.ndarray:
    r = np.empty(n)
    s2 = omega / (1 - alpha - beta)
    for t in range(n):
        r[t] = np.sqrt(s2) * rng.standard_normal()
        s2 = omega + alpha * r[t] ** 2 + beta * s2
    return r


def garch11(seed: int = 0, n: int = 500) -> pm.Model:
    returns = _garch_returns(np.random.default_rng(seed), n)
    with pm.Model() as model:
        omega = pm.HalfNormal("omega", 0.2)
        alpha = pm.Beta("alpha", 2, 5)
        beta = pm.Beta("beta", 5, 2)
        pm.GARCH11("r", omega=omega, alpha_1=alpha, beta_1=beta, initial_vol=float(returns.std()),
                   observed=returns)
    return model


def garch11_scan(seed: int = 0, n: int = 500) -> pm.Model:
    returns = pt.as_tensor(_garch_returns(np.random.default_rng(seed), n))

    def step(r_tm1, s2_tm1, omega, alpha, beta):
        return omega + alpha * r_tm1 ** 2 + beta * s2_tm1

    with pm.Model() as model:
        omega = pm.HalfNormal("omega", 0.2)
        alpha = pm.Beta("alpha", 2, 5)
        beta = pm.Beta("beta", 5, 2)
        s2 = pytensor.scan(step, sequences=returns[:-1], outputs_info=pt.var(returns),
                           non_sequences=[omega, alpha, beta], return_updates=False)
        pm.Potential("garch", pm.logp(pm.Normal.dist(0.0, pt.sqrt(s2)), returns[1:]).sum())
    return model


def _kalman_loglik(y, Z, T, H, Q, a0, P0):
    """Sum over t of log N(y_t | Z a_t, Z P_t Z' + H), the filter as a scan."""

    def step(y_t, a, P, Z, T, H, Q):
        v = y_t - Z.dot(a)
        F = Z.dot(P).dot(Z.T) + H
        F_inv_v = pt.linalg.solve(F, v, assume_a="pos")
        _, logdet = pt.linalg.slogdet(F)
        ll = -0.5 * (v.shape[0] * np.log(2 * np.pi) + logdet + v.dot(F_inv_v))
        K = T.dot(P).dot(Z.T).dot(pt.linalg.inv(F))
        a_next = T.dot(a) + K.dot(v)
        P_next = T.dot(P).dot((T - K.dot(Z)).T) + Q
        return a_next, P_next, ll

    _, _, ll = pytensor.scan(step, sequences=y, outputs_info=[a0, P0, None],
                             non_sequences=[Z, T, H, Q], return_updates=False)
    return ll.sum()


def kalman(seed: int = 0, n: int = 200) -> pm.Model:
    rng = np.random.default_rng(seed)
    level, slope = 0.0, 0.1
    ys = np.empty((n, 2))
    for t in range(n):
        ys[t] = level + rng.normal(0, [0.5, 0.8])
        slope += rng.normal(0, 0.05)
        level += slope + rng.normal(0, 0.2)
    Z = np.array([[1.0, 0.0], [1.0, 0.0]])
    T = np.array([[1.0, 1.0], [0.0, 1.0]])
    with pm.Model() as model:
        sigma_obs = pm.HalfNormal("sigma_obs", 1.0, shape=2)
        sigma_level = pm.HalfNormal("sigma_level", 0.5)
        sigma_slope = pm.HalfNormal("sigma_slope", 0.2)
        H = pt.diag(sigma_obs ** 2)
        Q = pt.diag(pt.stack([sigma_level ** 2, sigma_slope ** 2]))
        pm.Potential("kalman", _kalman_loglik(pt.as_tensor(ys), pt.as_tensor(Z), pt.as_tensor(T), H, Q,
                                              pt.zeros(2), pt.eye(2) * 10.0))
    return model


def local_level(seed: int = 0, n: int = 500) -> pm.Model:
    rng = np.random.default_rng(seed)
    mu = np.cumsum(rng.normal(0, 0.3, n))
    ys = pt.as_tensor(mu + rng.normal(0, 1.0, n))

    def step(y_t, a, P, ll, s2_obs, s2_level):
        F = P + s2_obs
        v = y_t - a
        K = P / F
        return (a + K * v, P * (1 - K) + s2_level,
                ll - 0.5 * (np.log(2 * np.pi) + pt.log(F) + v ** 2 / F))

    with pm.Model() as model:
        sigma_obs = pm.HalfNormal("sigma_obs", 2.0)
        sigma_level = pm.HalfNormal("sigma_level", 1.0)
        start = [pt.as_tensor(np.float64(v)) for v in (0.0, 10.0, 0.0)]  # a, P, running log-likelihood
        _, _, ll = pytensor.scan(step, sequences=ys, outputs_info=start,
                                 non_sequences=[sigma_obs ** 2, sigma_level ** 2], return_updates=False)
        pm.Potential("kalman", ll[-1])
    return model


def _ar2_dist(n_steps: int) -> Callable:
    """The generative graph of `n_steps` AR(2) steps after `init` (a CustomDist's `dist`)."""

    def dist(init, rho, sigma, size):
        innov, _ = pytensor.scan(_ar2_step, outputs_info=[{"initial": init, "taps": [-2, -1]}],
                                 non_sequences=[rho, sigma], n_steps=n_steps, strict=True)
        return innov

    return dist


def _ar2_step(x_tm2, x_tm1, rho, sigma):
    x = pm.Normal.dist(mu=rho[0] * x_tm1 + rho[1] * x_tm2, sigma=sigma)
    return x, collect_default_updates([x])


def ar2(seed: int = 0, n: int = 500) -> pm.Model:
    """As PyMC's example "Time Series Models Derived From a Generative Graph" writes an AR(2)."""
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    for t in range(2, n):
        x[t] = 0.6 * x[t - 1] - 0.3 * x[t - 2] + rng.normal(0, 0.5)
    with pm.Model() as model:
        rho = pm.Normal("rho", 0.0, 0.5, shape=2)
        sigma = pm.HalfNormal("sigma", 1.0)
        init = pm.Normal("init", 0.0, 1.0, shape=2, observed=x[:2])
        pm.CustomDist("x", init, rho, sigma, dist=_ar2_dist(n - 2), observed=x[2:])
    return model


def stochastic_volatility(seed: int = 0, n: int = 400) -> pm.Model:
    """PyMC's "Stochastic Volatility model" example, on returns drawn from its own process."""
    rng = np.random.default_rng(seed)
    log_vol = np.cumsum(rng.normal(0.0, 0.1, n)) - 4.0
    returns = rng.standard_t(6.0, n) * np.exp(log_vol)
    with pm.Model() as model:
        step_size = pm.Exponential("step_size", 10)
        volatility = pm.GaussianRandomWalk("volatility", sigma=step_size, shape=n,
                                           init_dist=pm.Normal.dist(0, 100))
        nu = pm.Exponential("nu", 0.1)
        pm.StudentT("returns", nu=nu, lam=np.exp(-2 * volatility), observed=returns)
    return model


def statespace(seed: int = 0, n: int = 200, filter_type: str = "standard") -> pm.Model:
    """pymc-extras' structural local-level model (its Kalman filter is a scan), as its
    documentation builds one: priors on every parameter the model names, then
    `build_statespace_graph` on the data."""
    if _structural is None:
        raise ImportError("the statespace model needs pymc-extras (pip install pymc-extras)")
    rng = np.random.default_rng(seed)
    ys = np.cumsum(rng.normal(0, 0.3, n)) + rng.normal(0, 1.0, n)
    ss = (_structural.LevelTrendComponent(order=1, innovations_order=1)
          + _structural.MeasurementError(name="obs")).build(verbose=False, filter_type=filter_type)
    with pm.Model(coords=ss.coords) as model:
        for name in ss.param_names:
            dims = ss.param_dims.get(name)
            if name == "P0":
                pm.Deterministic("P0", pt.eye(ss.k_states) * 10.0, dims=dims)
            elif name.startswith("sigma_"):
                pm.HalfNormal(name, 1.0, dims=dims)
            else:
                pm.Normal(name, 0.0, 1.0, dims=dims)
        ss.build_statespace_graph(ys[:, None])
    return model


MODELS: dict[str, Callable[..., pm.Model]] = {
    "garch11": garch11,
    "garch11_scan": garch11_scan,
    "kalman": kalman,
    "local_level": local_level,
    "ar2": ar2,
    "stochastic_volatility": stochastic_volatility,
}
if _structural is not None:
    MODELS["statespace"] = statespace
    MODELS["statespace_univariate"] = functools.partial(statespace, filter_type="univariate")
    MODELS["statespace_cholesky"] = functools.partial(statespace, filter_type="cholesky")
