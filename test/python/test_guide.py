"""Every example of Theano's scan guide, run from examples/ and checked against NumPy.

Each example script is the guide's code with only the imports changed; these
tests run it, check what it prints and call the functions it compiled on more
inputs. Expected values are computed here with NumPy/Python.
"""

from __future__ import annotations

import pathlib
import re
import runpy

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, capsys) -> tuple[dict, str]:
    """Runs examples/<name>.py as __main__; returns its globals and its output."""
    namespace = runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    return namespace, capsys.readouterr().out


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?", text)]


def test_power(capsys):
    ns, out = run_example("guide_power", capsys)
    lines = out.strip().splitlines()
    assert lines[0] == str(np.arange(10.0) ** 2)
    assert numbers(" ".join(lines[1:])) == list(np.arange(10.0) ** 4)
    power = ns["power"]
    a = np.array([0.5, -2.0, 3.0])
    for k in (1, 2, 3, 7):
        np.testing.assert_allclose(power(a, k), a**k)
    with pytest.raises(IndexError):  # result[-1] of zero steps, as in Theano
        power(a, 0)
    with pytest.raises(ValueError, match="n_steps is -1"):
        power(a, -1)


def test_power_script_of_the_quickstart(capsys):
    runpy.run_path(str(EXAMPLES / "power.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "A**2 =" in out and "A**4 =" in out


def test_polynomial(capsys):
    ns, out = run_example("guide_polynomial", capsys)
    assert out.split() == ["19.0", "19.0"]
    poly = ns["calculate_polynomial"]
    coeffs = np.array([0.5, -1.0, 2.0, 3.0], dtype=np.float32)
    for x in (-2.0, 0.0, 1.5):
        expected = sum(float(c) * x**i for i, c in enumerate(coeffs))
        np.testing.assert_allclose(poly(coeffs, x), expected)
    assert poly(np.zeros(0, np.float32), 3.0) == 0.0


def test_triangular(capsys):
    ns, out = run_example("guide_triangular", capsys)
    lines = out.strip().splitlines()
    expected = [n * (n + 1) // 2 for n in range(15)]
    assert numbers(lines[0]) == expected
    assert lines[1] == str(expected)
    assert lines[2].startswith("TypeError:") and "int8" in lines[2] and "downcast" in lines[2]
    tri = ns["triangular_sequence"]
    result = tri(15)
    assert result.dtype == np.int64  # (Theano's arange of integer bounds is int64)
    np.testing.assert_array_equal(result, np.cumsum(np.arange(15)))
    assert tri(0).shape == (0,)


def test_set_value_at_position(capsys):
    ns, out = run_example("guide_set_value_at_position", capsys)
    expected = np.zeros((2, 5, 5))
    expected[0, 1, 1] = 42
    expected[1, 2, 3] = 50
    assert numbers(out) == list(expected.ravel())
    f = ns["assign_values_at_positions"]
    locs = np.array([[0, 2], [3, 1], [-1, -1]], dtype=np.int32)
    vals = np.array([1.5, -2.0, 7.0])
    got = f(locs, vals, np.ones((4, 3)))
    ref = np.zeros((3, 4, 3))
    for t, ((i, j), v) in enumerate(zip(locs, vals)):
        ref[t, i, j] = v
    np.testing.assert_array_equal(got, ref)
    with pytest.raises(IndexError, match="out of bounds"):
        f(np.array([[5, 0]], dtype=np.int32), np.ones(1), np.ones((4, 3)))


def test_gibbs(capsys):
    ns, out = run_example("guide_gibbs", capsys)
    rows = [numbers(line) for line in out.strip().splitlines()]
    assert len(rows) == 6 and all(len(r) == 8 for r in rows)
    assert all(v in (0.0, 1.0) for r in rows for v in r)
    # Same seed, same draws in the same order: both versions give the same chains.
    assert rows[:3] == rows[3:]
    gibbs10 = ns["gibbs10"]
    start = np.zeros(8)
    draws = [gibbs10(start) for _ in range(30)]
    assert all(d.shape == (8,) and d.dtype == np.float64 for d in draws)
    assert len({tuple(d) for d in draws}) > 1  # fresh numbers on every call


def _gibbs_chain(seed: int, calls: int) -> list[np.ndarray]:
    rng = np.random.RandomState(1)
    W = theano.shared(rng.normal(size=(6, 4)))
    bvis = theano.shared(np.zeros(6))
    bhid = theano.shared(np.zeros(4))
    trng = T.shared_randomstreams.RandomStreams(seed)

    def one_step(vsample, W, bvis, bhid):
        hmean = T.nnet.sigmoid(theano.dot(vsample, W) + bhid)
        hsample = trng.binomial(size=hmean.shape, n=1, p=hmean)
        vmean = T.nnet.sigmoid(theano.dot(hsample, W.T) + bvis)
        return trng.binomial(size=vsample.shape, n=1, p=vmean, dtype=theano.config.floatX)

    sample = T.vector()
    values, updates = theano.scan(one_step, outputs_info=sample, non_sequences=[W, bvis, bhid], n_steps=10)
    assert len(updates) == 2  # one random state per draw, threaded through the scan
    f = theano.function([sample], values, updates=updates)
    return [f(np.full(6, 0.5)) for _ in range(calls)]


def test_gibbs_seed_reproducibility():
    a, b, c = _gibbs_chain(1234, 3), _gibbs_chain(1234, 3), _gibbs_chain(99, 3)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert x.shape == (10, 6)
    assert any((x != z).any() for x, z in zip(a, c))
    assert (a[0] != a[1]).any() or (a[1] != a[2]).any()


def test_gibbs_without_updates_repeats_the_same_numbers():
    trng = T.shared_randomstreams.RandomStreams(7)
    v = T.vector()
    values, updates = theano.scan(lambda x: trng.uniform(size=x.shape), outputs_info=v, n_steps=4)
    with_updates = theano.function([v], values, updates=updates)
    without = theano.function([v], values, no_default_updates=True)
    first, second = without(np.zeros(3)), without(np.zeros(3))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(with_updates(np.zeros(3)), first)
    assert (with_updates(np.zeros(3)) != first).all()


def test_shared_updates(capsys):
    ns, out = run_example("guide_shared_updates", capsys)
    lines = out.strip().splitlines()
    assert lines[2] == "1"
    assert numbers(lines[3]) == [2, 12, 11]
    assert numbers(lines[4]) == [12, 22, 21]
    assert numbers(lines[5]) == [2, 12, 1] and numbers(lines[6]) == [2, 12, 1]


def test_shared_updates_direct():
    a = theano.shared(1)
    values, updates = theano.scan(lambda: {a: a + 1}, n_steps=10)
    assert values is None and list(updates) == [a]
    b = a + 1
    c = updates[a] + 1
    f = theano.function([], [b, c], updates=updates)
    assert [int(v) for v in f()] == [2, 12] and int(a.get_value()) == 11
    assert [int(v) for v in f()] == [12, 22] and int(a.get_value()) == 21
    g = theano.function([], [b, c])
    a.set_value(1)
    for _ in range(2):
        assert [int(v) for v in g()] == [2, 12] and int(a.get_value()) == 1


def test_strict(capsys):
    ns, out = run_example("guide_strict", capsys)
    lines = out.strip().splitlines()
    assert lines[0].startswith("MissingInputError:")
    assert all(v in (0.0, 1.0) for v in numbers(lines[1])) and len(numbers(lines[1])) == 6


def test_strict_raises_missing_input_error():
    W = theano.shared(np.eye(3))
    v = T.vector()
    with pytest.raises(theano.MissingInputError, match="not provided"):
        theano.scan(lambda x: T.dot(x, W.T), outputs_info=v, n_steps=2, strict=True)
    values, _ = theano.scan(lambda x, W: T.dot(x, W.T), outputs_info=v, non_sequences=[W], n_steps=2, strict=True)
    f = theano.function([v], values)
    np.testing.assert_array_equal(f([1.0, 2.0, 3.0]), [[1, 2, 3], [1, 2, 3]])


def numpy_rnn(u, x0, y0, W, W_in_1, W_in_2, W_feedback, W_out):
    xs, ys = list(x0), [y0]
    for t in range(4, len(u)):
        xs.append(np.tanh(xs[-1] @ W + u[t] @ W_in_1 + u[t - 4] @ W_in_2 + ys[-1] @ W_feedback))
        ys.append(xs[-4] @ W_out)
    return np.array(xs[3:]), np.array(ys[1:])


def test_rnn(capsys):
    ns, out = run_example("guide_rnn", capsys)
    assert float(out.strip().splitlines()[-1].split()[-1]) < 1e-12
    rnn = ns["rnn"]
    rng = np.random.RandomState(5)
    for length, n_in, n_x, n_y in ((9, 3, 5, 2), (20, 4, 7, 3), (4, 2, 2, 2)):
        args = [rng.normal(size=(length, n_in)), rng.normal(size=(3, n_x)), rng.normal(size=n_y),
                0.5 * rng.normal(size=(n_x, n_x)), rng.normal(size=(n_in, n_x)), rng.normal(size=(n_in, n_x)),
                rng.normal(size=(n_y, n_x)), rng.normal(size=(n_x, n_y))]
        x_run, y_run = rnn(*args)
        x_ref, y_ref = numpy_rnn(*args)
        assert x_run.shape == (length - 4, n_x) and y_run.shape == (length - 4, n_y)
        np.testing.assert_allclose(x_run, x_ref.reshape(x_run.shape), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(y_run, y_ref.reshape(y_run.shape), rtol=1e-12, atol=1e-12)
    bad = [rng.normal(size=(9, 3)), rng.normal(size=(2, 5)), rng.normal(size=2)] + [
        rng.normal(size=s) for s in ((5, 5), (3, 5), (3, 5), (2, 5), (5, 2))]
    with pytest.raises(ValueError, match="mitsot #0 init has 2 rows but its taps need 3"):
        rnn(*bad)


def test_until(capsys):
    ns, out = run_example("guide_until", capsys)
    assert numbers(out) == [2, 4, 8, 16, 32, 64]
    f = ns["f"]
    for max_value in (0.5, 45, 64, 1000.0):
        expected, p = [], 1.0
        while True:
            p *= 2
            expected.append(p)
            if p > max_value:
                break
        np.testing.assert_array_equal(f(max_value), expected)


def test_until_stops_at_n_steps():
    def step(prev, limit):
        return prev + 1, theano.scan_module.until(prev + 1 >= limit)

    limit = T.lscalar()
    values, _ = theano.scan(step, outputs_info=T.constant(np.int64(0)), non_sequences=limit, n_steps=5)
    f = theano.function([limit], values)
    np.testing.assert_array_equal(f(3), [1, 2, 3])
    np.testing.assert_array_equal(f(100), [1, 2, 3, 4, 5])


def test_aesara_guide(capsys):
    ns, out = run_example("aesara_guide", capsys)
    lines = out.strip().splitlines()
    assert lines[0] == str(np.arange(10.0) ** 2)
    assert numbers(lines[-1]) == [2, 4, 8, 16, 32, 64]
    assert theano.scan.utils.until is theano.scan_module.until


def test_scan_checkpoints(capsys):
    ns, out = run_example("guide_scan_checkpoints", capsys)
    lines = out.strip().splitlines()
    assert numbers(lines[0]) == [10, 36, 55] and numbers(lines[1]) == [55]
    f = ns["f"]
    values = np.random.RandomState(0).normal(size=12)
    chunks, last = f(values, 1.0)
    np.testing.assert_allclose(chunks, 1.0 + np.cumsum(values)[[3, 7, 11]])
    np.testing.assert_allclose(last, 1.0 + values.sum())


def test_readme_example(capsys):
    readme = (EXAMPLES.parent / "README.md").read_text()
    section = readme[readme.index("## Theano's API"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[: code.index("```")]
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.splitlines()[0] == str(np.arange(10.0) ** 2)
    assert "scan.scan" in out and "scf.for" in out


def test_gradients_tutorial(capsys):
    ns, out = run_example("guide_gradients", capsys)
    lines = out.strip().splitlines()
    assert numbers(lines[0]) == [8.0] and lines[1] == "True"
    logistic = 1 / (1 + np.exp(-np.array([[0.0, 1.0], [-1.0, -2.0]])))
    np.testing.assert_allclose(numbers(" ".join(lines[2:4])), (logistic * (1 - logistic)).ravel(), rtol=1e-7)
    assert numbers(" ".join(lines[4:6])) == [8.0, 0.0, 0.0, 8.0]  # Jacobian of x**2 at [4, 4]
    assert numbers(" ".join(lines[6:8])) == [2.0, 0.0, 0.0, 2.0]  # Hessian of sum(x**2)
    assert numbers(" ".join(lines[8:10])) == [2.0, 0.0, 0.0, 4.0]
    assert numbers(" ".join(lines[10:12])) == [6.0, 0.0, 0.0, 12.0]
    losses = numbers(lines[12])
    assert losses == sorted(losses, reverse=True) and losses[-1] < 0.5 * losses[0]
    assert lines[13] == "loss went down: True"


def test_readme_gradients_example(capsys):
    readme = (EXAMPLES.parent / "README.md").read_text()
    section = readme[readme.index("### Gradients"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[: code.index("```")]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "go_backwards" in out and "mitmot(" in out
    g, H = namespace["g"], namespace["H"]
    assert g.shape == (3,) and H.shape == (3, 3)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)
