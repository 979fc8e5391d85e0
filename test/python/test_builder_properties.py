"""Property tests of the builder: random scans and random indexing against plain Python/NumPy.

The references here implement Theano's rules directly (a Python loop over the
steps; NumPy's indexing), independently of the code under test.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlir_scan as theano
from mlir_scan import tensor as T

SETTINGS = settings(max_examples=int(__import__("os").environ.get("BUILDER_EXAMPLES", "20")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scan_specs(draw):
    n_seqs = draw(st.integers(0, 2))
    seq_taps = [draw(st.lists(st.integers(-2, 2), min_size=1, max_size=3, unique=True)) for _ in range(n_seqs)]
    seq_lens = [max(0, max(t)) - min(0, min(t)) + draw(st.integers(0, 6)) for t in seq_taps]
    kinds = draw(st.lists(st.sampled_from(["nitsot", "sitsot", "mitsot"]), min_size=1, max_size=3))
    # (taps [-1] in a dict is a sitsot: its initial value has the output's shape)
    out_taps = [draw(st.lists(st.integers(-3, -1), min_size=1, max_size=3, unique=True).filter(lambda t: t != [-1]))
                if k == "mitsot" else None for k in kinds]
    n_nonseqs = draw(st.integers(0, 1))
    go_backwards = draw(st.booleans())
    avail = [n - (max(0, max(t)) - min(0, min(t))) for n, t in zip(seq_lens, seq_taps)]
    if n_seqs and draw(st.booleans()):
        n_steps = None
    else:
        n_steps = draw(st.integers(0, min(avail) if avail else 6))
    seed = draw(st.integers(0, 2**16))
    return dict(seq_taps=seq_taps, seq_lens=seq_lens, kinds=kinds, out_taps=out_taps, n_nonseqs=n_nonseqs,
                go_backwards=go_backwards, n_steps=n_steps, seed=seed)


def _reference(spec, seqs, inits, nonseqs, coefs):
    """Theano's scan semantics as a Python loop: each tap k of a sequence reads
    its own slice ``s[k - lo : len(s) - (hi - k)]`` (lo/hi the taps' extremes
    with 0), reversed when going backwards, at row t."""
    slices = []
    for s, taps in zip(seqs, spec["seq_taps"]):
        lo, hi = min(0, min(taps)), max(0, max(taps))
        cut = [s[k - lo:len(s) - (hi - k)] for k in taps]
        slices.append([c[::-1] for c in cut] if spec["go_backwards"] else cut)
    n = spec["n_steps"]
    if n is None:
        n = min(len(c[0]) for c in slices)
    hist = []
    for kind, init, taps in zip(spec["kinds"], inits, spec["out_taps"]):
        hist.append(list(init) if kind == "mitsot" else ([init] if kind == "sitsot" else []))
    results = [[] for _ in spec["kinds"]]
    for t in range(n):
        args = []
        for cut in slices:
            args += [c[t] for c in cut]
        for kind, h, taps in zip(spec["kinds"], hist, spec["out_taps"]):
            if kind == "sitsot":
                args.append(h[-1])
            elif kind == "mitsot":
                args += [h[len(h) + k] for k in taps]
        args += nonseqs
        outs = [np.tanh(sum((c * a for c, a in zip(cs, args)), np.zeros(2)) + 0.1 * (i + 1))
                for i, cs in enumerate(coefs)]
        for i, (kind, o) in enumerate(zip(spec["kinds"], outs)):
            results[i].append(o)
            if kind != "nitsot":
                hist[i].append(o)
    return [np.array(r).reshape((n, 2)) for r in results]


@SETTINGS
@given(scan_specs())
def test_random_scans_against_a_python_loop(spec):
    rng = np.random.RandomState(spec["seed"])
    seq_vars = [T.dmatrix(f"s{i}") for i in range(len(spec["seq_taps"]))]
    seq_vals = [rng.normal(size=(n, 2)) for n in spec["seq_lens"]]
    init_vars, init_vals, outputs_info = [], [], []
    for kind, taps in zip(spec["kinds"], spec["out_taps"]):
        if kind == "nitsot":
            outputs_info.append(None)
        elif kind == "sitsot":
            v = T.dvector()
            init_vars.append(v)
            init_vals.append(rng.normal(size=2))
            outputs_info.append(v)
        else:
            v = T.dmatrix()
            init_vars.append(v)
            init_vals.append(rng.normal(size=(-min(taps), 2)))
            outputs_info.append(dict(initial=v, taps=taps))
    non_vars = [T.dvector(f"w{i}") for i in range(spec["n_nonseqs"])]
    non_vals = [rng.normal(size=2) for _ in non_vars]
    n_args = sum(len(t) for t in spec["seq_taps"]) + sum(
        1 if k == "sitsot" else (len(t) if k == "mitsot" else 0) for k, t in zip(spec["kinds"], spec["out_taps"]))
    n_args += len(non_vars)
    coefs = [list(rng.uniform(-1, 1, size=n_args)) for _ in spec["kinds"]]

    def fn(*args):
        assert len(args) == n_args
        return [T.tanh(sum((c * a for c, a in zip(cs, args)), T.zeros((2,))) + 0.1 * (i + 1))
                for i, cs in enumerate(coefs)]

    sequences = [dict(input=v, taps=t) for v, t in zip(seq_vars, spec["seq_taps"])]
    outs, _ = theano.scan(fn, sequences=sequences, outputs_info=outputs_info, non_sequences=non_vars,
                          n_steps=spec["n_steps"], go_backwards=spec["go_backwards"], return_list=True)
    f = theano.function(seq_vars + init_vars + non_vars, outs)
    got = f(*seq_vals, *init_vals, *non_vals)
    init_iter = iter(init_vals)
    inits = [None if k == "nitsot" else next(init_iter) for k in spec["kinds"]]
    ref = _reference(spec, seq_vals, inits, non_vals, coefs)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)


def _bound(draw, allow_none=True):
    return draw(st.one_of(st.none(), st.integers(-7, 7)) if allow_none else st.integers(-7, 7))


@st.composite
def index_keys(draw):
    key = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["int", "slice", "slice", "newaxis"]))
        if kind == "int":
            key.append(draw(st.integers(-4, 3)))
        elif kind == "slice":
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0)))
            key.append(slice(_bound(draw), _bound(draw), step))
        else:
            key.append(None)
    return tuple(key)


@SETTINGS
@given(st.lists(index_keys(), min_size=1, max_size=8), st.booleans())
def test_random_static_indexing_against_numpy(keys, symbolic):
    """Static keys, and the same keys with every int passed as a symbolic scalar."""
    x = T.dtensor3("x")
    xv = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6)
    ints, outs = [], []
    for key in keys:
        if symbolic:
            sym_key = []
            for k in key:
                if isinstance(k, int):
                    v = T.lscalar()
                    ints.append((v, k))
                    sym_key.append(v)
                elif isinstance(k, slice):
                    parts = []
                    for p in (k.start, k.stop, k.step):
                        if p is None:
                            parts.append(None)
                        else:
                            v = T.lscalar()
                            ints.append((v, p))
                            parts.append(v)
                    sym_key.append(slice(*parts))
                else:
                    sym_key.append(k)
            outs.append(x[tuple(sym_key)])
        else:
            outs.append(x[key])
    f = theano.function([x] + [v for v, _ in ints], outs)
    got = f(xv, *[k for _, k in ints])
    for key, g in zip(keys, got):
        np.testing.assert_array_equal(g, xv[key], err_msg=str(key))


@SETTINGS
@given(st.lists(index_keys(), min_size=1, max_size=6))
def test_random_set_subtensor_against_numpy(keys):
    x, v = T.dtensor3("x"), T.dscalar("v")
    xv = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6)
    keys = [tuple(k for k in key if k is not None) for key in keys]
    keys = [k for k in keys if k]
    if not keys:
        return
    f = theano.function([x, v], [T.set_subtensor(x[k], v) for k in keys] + [T.inc_subtensor(x[k], v) for k in keys])
    got = f(xv, -1.5)
    for i, key in enumerate(keys):
        ref = xv.copy()
        ref[key] = -1.5
        np.testing.assert_array_equal(got[i], ref, err_msg=f"set {key}")
        ref = xv.copy()
        ref[key] += -1.5
        np.testing.assert_array_equal(got[len(keys) + i], ref, err_msg=f"inc {key}")
