"""Random scans (the hypothesis generator of test_builder_properties): their gradients
against central finite differences of the plain-Python reference loop.

Every random scan mixes sequences with past and future taps, SITSOT, MITSOT
and NITSOT outputs, non-sequences, ``go_backwards`` and ``n_steps``; the cost
is a random weighting of all its outputs, and the gradient with respect to
every input (sequences, initial states, non-sequences) is compared with
central differences of the NumPy loop (float64, relative tolerance 1e-6).
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings

import mlir_scan as theano
from mlir_scan import tensor as T

from gradcheck import COUNT, assert_close, numeric_grad
from test_builder_properties import _reference, scan_specs

SETTINGS = settings(max_examples=int(os.environ.get("GRAD_EXAMPLES", "8")), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scan_specs())
def test_random_scan_gradients_against_finite_differences(spec):
    rng = np.random.RandomState(spec["seed"])
    seq_vars = [T.dmatrix(f"s{i}") for i in range(len(spec["seq_taps"]))]
    seq_vals = [rng.normal(size=(n, 2)) for n in spec["seq_lens"]]
    init_vars, init_vals, outputs_info = [], [], []
    for kind, taps in zip(spec["kinds"], spec["out_taps"]):
        if kind == "nitsot":
            outputs_info.append(None)
        elif kind == "sitsot":
            v = T.dvector("h0")
            init_vars.append(v)
            init_vals.append(rng.normal(size=2))
            outputs_info.append(v)
        else:
            v = T.dmatrix("x0")
            init_vars.append(v)
            init_vals.append(rng.normal(size=(-min(taps), 2)))
            outputs_info.append(dict(initial=v, taps=taps))
    non_vars = [T.dvector(f"w{i}") for i in range(spec["n_nonseqs"])]
    non_vals = [rng.normal(size=2) for _ in non_vars]
    n_args = sum(len(t) for t in spec["seq_taps"]) + sum(
        1 if k == "sitsot" else (len(t) if k == "mitsot" else 0) for k, t in zip(spec["kinds"], spec["out_taps"]))
    n_args += len(non_vars)
    coefs = [list(rng.uniform(-1, 1, size=n_args)) for _ in spec["kinds"]]
    weights = [rng.normal(size=2) for _ in spec["kinds"]]

    def fn(*args):
        return [T.tanh(sum((c * a for c, a in zip(cs, args)), T.zeros((2,))) + 0.1 * (i + 1))
                for i, cs in enumerate(coefs)]

    sequences = [dict(input=v, taps=t) for v, t in zip(seq_vars, spec["seq_taps"])]
    outs, _ = theano.scan(fn, sequences=sequences, outputs_info=outputs_info, non_sequences=non_vars,
                          n_steps=spec["n_steps"], go_backwards=spec["go_backwards"], return_list=True)
    cost = sum(((o * w) ** 2).sum() + (o * w).sum() for o, w in zip(outs, weights))
    inputs = seq_vars + init_vars + non_vars
    values = seq_vals + init_vals + non_vals
    grads = T.grad(cost, inputs, disconnected_inputs="ignore")
    f = theano.function(inputs, grads, on_unused_input="ignore")
    got = f(*values)

    n_seqs, n_inits = len(seq_vals), len(init_vals)

    def numpy_cost(*vals):
        seqs, inits_, nons = list(vals[:n_seqs]), list(vals[n_seqs:n_seqs + n_inits]), list(vals[n_seqs + n_inits:])
        it = iter(inits_)
        inits = [None if k == "nitsot" else next(it) for k in spec["kinds"]]
        ref = _reference(spec, seqs, inits, nons, coefs)
        return sum(((r * w) ** 2).sum() + (r * w).sum() for r, w in zip(ref, weights))

    for i, (g, v) in enumerate(zip(got, inputs)):
        want = numeric_grad(numpy_cost, values, i)
        assert_close(g, want, rtol=1e-6, what=f"d cost / d {v.name} ({spec})")
        COUNT["checks"] += 1
