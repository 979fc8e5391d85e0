"""The builder's functions are called through the native call path (issue 12:
W7 through the Theano API cost 0.5 us more per call than the hand-written IR,
the Python of ``Function.__call__``). What must not change: Theano's calling
conventions, which the native path keeps or hands to ``_call_python``.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T
from mlir_scan.builder.function import Function


def _no_python(*args, **kwargs):
    raise AssertionError("went through Function._call_python")


def test_exact_arguments_never_run_python(monkeypatch):
    # The native part keeps the bound `_call_python` it was given when the
    # function was made: patch the class first.
    monkeypatch.setattr(Function, "_call_python", _no_python)
    x, n = T.dvector("x"), T.dscalar("n")
    f = theano.function([x, n], x * n)
    a = np.arange(4.0)
    np.testing.assert_array_equal(f(a, 2.0), a * 2.0)
    np.testing.assert_array_equal(f(a, np.float64(3.0)), a * 3.0)
    np.testing.assert_array_equal(f(a[::-1], 1), a[::-1])  # converted, still native
    with pytest.raises(AssertionError, match="_call_python"):
        f(x=a, n=2.0)  # keywords: Python


def test_calls_the_native_path_does_not_take_go_to_python():
    x = T.dvector("x")
    y = T.dscalar("y")
    f = theano.function([x, theano.In(y, value=2.0)], x + y)
    a = np.arange(3.0)
    np.testing.assert_array_equal(f(a), a + 2.0)          # a default
    np.testing.assert_array_equal(f(x=a, y=1.0), a + 1.0)  # keywords
    with pytest.raises(TypeError, match="argument"):
        f()


def test_results_keep_theanos_shapes():
    i = T.iscalar("i")
    one = theano.function([i], i + 1)
    listed = theano.function([i], [i + 1])
    two = theano.function([i], [i + 1, i * 2])
    r = one(3)
    assert isinstance(r, np.ndarray) and r.shape == () and r == 4
    r = listed(3)
    assert isinstance(r, list) and len(r) == 1 and isinstance(r[0], np.ndarray) and r[0] == 4
    r = two(3)
    assert isinstance(r, list) and [int(v) for v in r] == [4, 6]
    assert all(isinstance(v, np.ndarray) and v.shape == () for v in r)


def test_conversions_and_errors_are_the_builders():
    x = T.fvector("x")
    f = theano.function([x], x * 2)
    # float64 data for a float32 input: Theano's rule (no silent downcast).
    with pytest.raises(TypeError):
        f(np.arange(3.0))
    g = theano.function([x], x * 2, allow_input_downcast=True)
    np.testing.assert_array_equal(g(np.arange(3.0)), np.arange(3.0, dtype=np.float32) * 2)
    # A non-contiguous array is copied, never misread.
    a = np.arange(8, dtype=np.float32)[::2]
    np.testing.assert_array_equal(f(a), a * 2)
    # A failed check of the builder raises the builder's message.
    u, v = T.dvector("u"), T.dvector("v")
    h = theano.function([u, v], u + v)
    with pytest.raises(ValueError) as info:
        h(np.ones(3), np.ones(4))
    assert "run-time check" not in str(info.value)


def test_functions_with_shared_variables_and_updates_still_work():
    s = theano.shared(np.float64(0.0), name="s")
    x = T.dscalar("x")
    f = theano.function([x], s + x, updates=[(s, s + x)])
    assert f(1.0) == 0.0 + 1.0
    assert f(2.0) == 1.0 + 2.0
    assert s.get_value() == 3.0


def test_two_threads_call_one_function():
    x = T.dvector("x")
    ys, _ = theano.scan(lambda v, acc: acc + v * v, sequences=x, outputs_info=T.constant(0.0))
    f = theano.function([x], ys[-1])
    data = [np.random.default_rng(k).standard_normal(5000) for k in range(2)]
    expected = [float(np.sum(d * d)) for d in data]
    results = [None, None]

    def work(k):
        for _ in range(50):
            results[k] = float(f(data[k]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(results, expected, rtol=1e-12)


def test_a_copy_calls_like_the_original():
    x = T.dvector("x")
    y = T.dscalar("y")
    f = theano.function([x, theano.In(y, value=2.0)], x * y)
    g = copy.copy(f)
    a = np.arange(3.0)
    np.testing.assert_array_equal(g(a), f(a))
    np.testing.assert_array_equal(g(a, 3.0), a * 3.0)
    assert g.program is f.program


def test_nothing_is_printed_at_exit_while_results_are_alive():
    # The issue's report: "Exception ignored in _OwnedAllocation.__del__ ...
    # 'NoneType' object is not callable" at exit, seen with numba loaded.
    pytest.importorskip("numba")
    script = textwrap.dedent("""
        import numba, numpy as np
        import mlir_scan, mlir_scan as theano
        from mlir_scan import tensor as T
        x = T.dvector("x")
        ys, _ = theano.scan(lambda v, a: a + v, sequences=x, outputs_info=T.constant(0.0))
        f = theano.function([x], [ys, ys * 2])
        KEEP = f(np.arange(5.0))
        p = mlir_scan.compile("func.func @id(%a: tensor<?xf64>) -> tensor<?xf64> { return %a : tensor<?xf64> }")
        KEEP2 = p.id(np.arange(3.0))
        KEEP3 = numba.njit(lambda a: a + 1)(np.arange(3.0))
        print("done")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert done.stderr == ""
