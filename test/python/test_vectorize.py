"""scan-vectorize-linalg-loops keeps results: each program compiled with and without it.

``mlir_scan.compile(..., vectorize=False)`` leaves the inner loops of linalg ops
to LLVM's loop vectorizer; the default writes them as vector loops
(``scan-vectorize-linalg-loops``). Both builds run on the same arguments and are
compared with each other and with a NumPy loop, for sizes on both sides of the
vector width (a remainder of every length, a size smaller than one vector) and
every element type the pass handles. Parallel inner loops must agree to the
last bit up to FMA contraction; vectorized reductions are reassociated, so they
agree within rounding.

The check that the pass fires at all: the LLVM-stage IR has vector types with
it and none without it (LLVM's own vectorizer runs later, on LLVM IR).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlir_scan
import mlir_scan.tensor as T
import mlir_scan as theano

SIZES = [1, 3, 4, 7, 8, 9, 16, 17, 33]


def _type(dtype) -> str:
    return {np.float64: "f64", np.float32: "f32", np.int64: "i64", np.int32: "i32"}[np.dtype(dtype).type]


def _tolerance(dtype) -> dict:
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == np.float64 else {"rtol": 2e-5, "atol": 1e-5}


def _both(source: str):
    return mlir_scan.compile(source), mlir_scan.compile(source, vectorize=False)


def _random(rng: np.random.Generator, shape: tuple, dtype) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 9, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _check_contraction(source: str, name: str, a: np.ndarray, b: np.ndarray, dtype) -> None:
    """Both builds equal `a @ b`: exactly for integers, within rounding for
    floats (vectorized reductions are reassociated)."""
    vectorized, scalar = _both(source)
    got, baseline = getattr(vectorized, name)(a, b), getattr(scalar, name)(a, b)
    expected = a @ b
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(baseline, expected)
    else:
        np.testing.assert_allclose(got, baseline, **_tolerance(dtype))
        np.testing.assert_allclose(got, expected, **_tolerance(dtype))


def rnn_source(h: int, i: int, t: str, contraction: str) -> str:
    """An Elman step h' = tanh(h W + x U + b) with `linalg.vecmat` (j innermost,
    a parallel vector loop) or `linalg.matvec` on W^T (a vector reduction)."""
    if contraction == "vecmat":
        wh = f"linalg.vecmat ins(%h, %w : tensor<{h}x{t}>, tensor<{h}x{h}x{t}>) outs(%f : tensor<{h}x{t}>) -> tensor<{h}x{t}>"
    else:
        wh = f"linalg.matvec ins(%w, %h : tensor<{h}x{h}x{t}>, tensor<{h}x{t}>) outs(%f : tensor<{h}x{t}>) -> tensor<{h}x{t}>"
    return f"""
    func.func @rnn(%xs: tensor<?x{i}x{t}>, %h0: tensor<{h}x{t}>, %W: tensor<{h}x{h}x{t}>,
                   %U: tensor<{i}x{h}x{t}>, %b: tensor<{h}x{t}>) -> tensor<?x{h}x{t}> {{
      %c0 = arith.constant 0 : index
      %n = tensor.dim %xs, %c0 : tensor<?x{i}x{t}>
      %r = scan.scan steps(%n) sequences(%xs : tensor<?x{i}x{t}>) sitsot(%h0 : tensor<{h}x{t}>)
          nonsequences(%W, %U, %b : tensor<{h}x{h}x{t}>, tensor<{i}x{h}x{t}>, tensor<{h}x{t}>) {{
      ^bb0(%x: tensor<{i}x{t}>, %h: tensor<{h}x{t}>, %w: tensor<{h}x{h}x{t}>,
           %u: tensor<{i}x{h}x{t}>, %bb: tensor<{h}x{t}>):
        %e = tensor.empty() : tensor<{h}x{t}>
        %z = arith.constant 0.0 : {t}
        %f = linalg.fill ins(%z : {t}) outs(%e : tensor<{h}x{t}>) -> tensor<{h}x{t}>
        %wh = {wh}
        %ux = linalg.vecmat ins(%x, %u : tensor<{i}x{t}>, tensor<{i}x{h}x{t}>) outs(%f : tensor<{h}x{t}>) -> tensor<{h}x{t}>
        %s = arith.addf %wh, %ux : tensor<{h}x{t}>
        %sb = arith.addf %s, %bb : tensor<{h}x{t}>
        %next = math.tanh %sb : tensor<{h}x{t}>
        scan.yield %next : tensor<{h}x{t}>
      }} -> (tensor<?x{h}x{t}>)
      return %r : tensor<?x{h}x{t}>
    }}"""


@pytest.mark.parametrize("contraction", ["vecmat", "matvec"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("hidden", SIZES)
def test_rnn_step(hidden, dtype, contraction):
    inputs, steps = 5, 6
    rng = np.random.default_rng(hidden)
    xs = rng.standard_normal((steps, inputs)).astype(dtype)
    h0 = rng.standard_normal(hidden).astype(dtype)
    W = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(dtype)
    U = rng.standard_normal((inputs, hidden)).astype(dtype)
    b = rng.standard_normal(hidden).astype(dtype)
    vectorized, scalar = _both(rnn_source(hidden, inputs, _type(dtype), contraction))
    got, baseline = vectorized.rnn(xs, h0, W, U, b), scalar.rnn(xs, h0, W, U, b)

    h, expected = h0.astype(np.float64), []
    Wt = W.astype(np.float64) if contraction == "vecmat" else W.astype(np.float64).T
    for x in xs.astype(np.float64):
        h = np.tanh(h @ Wt + x @ U + b)
        expected.append(h)
    np.testing.assert_allclose(got, baseline, **_tolerance(dtype))
    np.testing.assert_allclose(got, np.array(expected), **_tolerance(dtype))


def elementwise_source(t: str, n: int) -> str:
    """A cumulative recurrence whose body mixes arithmetic, a comparison and a
    select, a constant, a non-sequence scalar and (for integers) division."""
    is_float = t.startswith("f")
    zero = "0.0" if is_float else "0"
    add, mul, div, cmp = ("addf", "mulf", "divf", "cmpf ogt") if is_float else ("addi", "muli", "divsi", "cmpi sgt")
    return f"""
    func.func @f(%xs: tensor<?x{n}x{t}>, %a0: tensor<{n}x{t}>, %k: {t}, %d: tensor<{n}x{t}>) -> tensor<?x{n}x{t}> {{
      %c0 = arith.constant 0 : index
      %steps = tensor.dim %xs, %c0 : tensor<?x{n}x{t}>
      %r = scan.scan steps(%steps) sequences(%xs : tensor<?x{n}x{t}>) sitsot(%a0 : tensor<{n}x{t}>)
          nonsequences(%k, %d : {t}, tensor<{n}x{t}>) {{
      ^bb0(%x: tensor<{n}x{t}>, %a: tensor<{n}x{t}>, %kk: {t}, %dd: tensor<{n}x{t}>):
        %e = tensor.empty() : tensor<{n}x{t}>
        %y = linalg.generic {{indexing_maps = [affine_map<(j) -> (j)>, affine_map<(j) -> (j)>,
                                              affine_map<(j) -> (j)>, affine_map<(j) -> (j)>],
                              iterator_types = ["parallel"]}}
            ins(%x, %a, %dd : tensor<{n}x{t}>, tensor<{n}x{t}>, tensor<{n}x{t}>) outs(%e : tensor<{n}x{t}>) {{
        ^bb1(%xi: {t}, %ai: {t}, %di: {t}, %o: {t}):
          %z = arith.constant {zero} : {t}
          %p = arith.{cmp}, %xi, %z : {t}
          %m = arith.{mul} %xi, %kk : {t}
          %q = arith.{div} %m, %di : {t}
          %s = arith.select %p, %q, %xi : {t}
          %v = arith.{add} %ai, %s : {t}
          linalg.yield %v : {t}
        }} -> tensor<{n}x{t}>
        scan.yield %y : tensor<{n}x{t}>
      }} -> (tensor<?x{n}x{t}>)
      return %r : tensor<?x{n}x{t}>
    }}"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("n", SIZES)
def test_elementwise_body(n, dtype):
    rng = np.random.default_rng(n)
    steps = 7
    if np.issubdtype(dtype, np.integer):
        xs = rng.integers(-50, 50, (steps, n)).astype(dtype)
        a0 = rng.integers(-50, 50, n).astype(dtype)
        d = rng.choice([-3, -2, 1, 2, 5], n).astype(dtype)  # never zero
        k = dtype(3)
    else:
        xs = rng.standard_normal((steps, n)).astype(dtype)
        a0 = rng.standard_normal(n).astype(dtype)
        d = rng.uniform(0.5, 2.0, n).astype(dtype)
        k = dtype(1.5)
    vectorized, scalar = _both(elementwise_source(_type(dtype), n))
    got, baseline = vectorized.f(xs, a0, k, d), scalar.f(xs, a0, k, d)

    a, expected = a0.copy(), []
    for x in xs:
        if np.issubdtype(dtype, np.integer):
            q = np.trunc((x * k).astype(np.float64) / d).astype(dtype)  # divsi rounds toward zero
        else:
            q = (x * k) / d
        a = a + np.where(x > 0, q, x)
        expected.append(a)
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got, baseline)
        np.testing.assert_array_equal(got, np.array(expected))
    else:
        np.testing.assert_array_equal(got, baseline)  # no reduction: same ops per element
        np.testing.assert_allclose(got, np.array(expected), **_tolerance(dtype))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 70])
def test_dot_reduction(n, dtype):
    """Integer dot products are vectorized exactly; float ones within rounding."""
    t = _type(dtype)
    source = f"""
    func.func @dots(%xs: tensor<?x{n}x{t}>, %w: tensor<{n}x{t}>) -> tensor<?x{t}> {{
      %c0 = arith.constant 0 : index
      %steps = tensor.dim %xs, %c0 : tensor<?x{n}x{t}>
      %r = scan.scan steps(%steps) sequences(%xs : tensor<?x{n}x{t}>) nonsequences(%w : tensor<{n}x{t}>) {{
      ^bb0(%x: tensor<{n}x{t}>, %ww: tensor<{n}x{t}>):
        %e = tensor.empty() : tensor<{t}>
        %z = arith.constant {"0.0" if t.startswith("f") else "0"} : {t}
        %f = linalg.fill ins(%z : {t}) outs(%e : tensor<{t}>) -> tensor<{t}>
        %d = linalg.dot ins(%x, %ww : tensor<{n}x{t}>, tensor<{n}x{t}>) outs(%f : tensor<{t}>) -> tensor<{t}>
        %s = tensor.extract %d[] : tensor<{t}>
        scan.yield %s : {t}
      }} -> (tensor<?x{t}>)
      return %r : tensor<?x{t}>
    }}"""
    rng = np.random.default_rng(n)
    xs, w = _random(rng, (4, n), dtype), _random(rng, (n,), dtype)
    _check_contraction(source, "dots", xs, w, dtype)


def test_pass_fires_only_when_asked():
    vectorized, scalar = _both(rnn_source(16, 4, "f64", "vecmat"))
    assert "vector<" in vectorized.ir("llvm")
    assert "vector<" not in scalar.ir("llvm")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tanh_expansion_accuracy(dtype):
    """scan-expand-tanh: within 2 ulp of NumPy's tanh on 10^6 points spread over
    every branch (the polynomial near 0, exp elsewhere, saturation), plus the
    special values; the vector loop and the scalar remainder both run."""
    t = _type(dtype)
    prog = mlir_scan.compile(f"""
    func.func @act(%x: tensor<?x{t}>) -> tensor<?x{t}> {{
      %y = math.tanh %x : tensor<?x{t}>
      return %y : tensor<?x{t}>
    }}""")
    assert "math.tanh" in prog.ir("bufferized")
    # No libm call left (the run-time checks' messages may contain "exp").
    assert not re.search(r"@(tanh|exp)f?\b", prog.ir("llvm")), prog.ir("llvm")
    rng = np.random.default_rng(0)
    magnitudes = np.concatenate([rng.uniform(0, 1, 400_000), rng.uniform(0, 25, 400_000),
                                 10.0 ** rng.uniform(-300, 2, 200_001)])
    x = (magnitudes * rng.choice([-1, 1], magnitudes.size)).astype(dtype)
    special = np.array([0.0, -0.0, 0.625, -0.625, np.nextafter(0.625, 0), 19.0, 20.0, 1e300 if dtype == np.float64 else 1e30,
                        np.inf, -np.inf, np.nan, np.finfo(dtype).tiny, 5e-324 if dtype == np.float64 else 1e-45],
                       dtype=dtype)
    x = np.concatenate([x, special])
    got = prog.act(x)
    expected = np.tanh(x.astype(np.longdouble))
    finite = np.isfinite(x) & (x != 0)
    ulp = np.spacing(np.abs(expected.astype(dtype))).astype(np.longdouble)
    error_ulp = np.abs(got[finite].astype(np.longdouble) - expected[finite]) / ulp[finite]
    assert float(error_ulp.max()) <= 2.0, x[finite][np.argmax(error_ulp)]
    np.testing.assert_array_equal(got[~finite & ~np.isnan(x)], np.tanh(x[~finite & ~np.isnan(x)]))
    assert np.signbit(got[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()
    assert np.isnan(got[np.isnan(x)]).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["log1p", "expm1"])
def test_log1p_expm1_accuracy(name, dtype):
    """scan-expand-log1p-expm1: within 4 ulp of NumPy (2 measured) from 1e-30 to
    the overflow, where convert-math-to-llvm's log(1 + x) / exp(x) - 1 lose every
    digit below |x| ~ 1e-8 (f32) / 1e-16 (f64); special values as NumPy's."""
    t = _type(dtype)
    prog = mlir_scan.compile(f"""
    func.func @fn(%x: tensor<?x{t}>) -> tensor<?x{t}> {{
      %y = math.{name} %x : tensor<?x{t}>
      return %y : tensor<?x{t}>
    }}""")
    rng = np.random.default_rng(1)
    tiny = 10.0 ** rng.uniform(-30, 0, 200_000) * rng.choice([-1, 1], 200_000)
    wide = rng.uniform(-80, 80, 100_000) if name == "expm1" else 10.0 ** rng.uniform(-1, 30, 100_000)
    x = np.concatenate([tiny, wide, rng.uniform(-0.999, 1, 100_000)]).astype(dtype)
    special = np.array([0.0, -0.0, -1.0, -2.0, 1e-8, -1e-8, 700.0, -700.0, 1e30,
                        np.inf, -np.inf, np.nan], dtype=dtype)
    x = np.concatenate([x, special])
    with np.errstate(all="ignore"):
        got = prog.fn(x)
        expected = getattr(np, name)(x.astype(np.longdouble))
        rounded = expected.astype(dtype)
    finite = np.isfinite(rounded) & (rounded != 0)
    ulp = np.spacing(np.abs(rounded[finite])).astype(np.longdouble)
    error_ulp = np.abs(got[finite].astype(np.longdouble) - expected[finite]) / ulp
    assert float(error_ulp.max()) <= 4.0, x[finite][np.argmax(error_ulp)]
    rest = ~finite
    np.testing.assert_array_equal(got[rest], rounded[rest])
    assert np.signbit(got[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()


def test_softplus_of_very_negative_input_is_not_zero():
    """T.softplus(x) = log1p(exp(x)): exp(-30) ~ 9e-14 must survive log1p in f32."""
    x = T.fvector("x")
    f = theano.function([x], T.softplus(x))
    got = f(np.array([-30.0, -80.0, 0.0, 30.0], dtype=np.float32))
    np.testing.assert_allclose(got, np.log1p(np.exp(np.array([-30.0, -80.0, 0.0, 30.0]))), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 3, 5), (4, 4, 8), (5, 7, 17), (9, 4, 33), (8, 9, 16)])
def test_matmul_body_row_blocking(m, k, n, dtype):
    """C[i, j] += A[i, k] B[k, j] in a scan body: rows blocked by 4 sharing each
    vector of B, k unrolled by 4, j in vectors, with every remainder."""
    t = _type(dtype)
    zero = "0.0" if t.startswith("f") else "0"
    source = f"""
    func.func @mm(%as: tensor<?x{m}x{k}x{t}>, %b: tensor<{k}x{n}x{t}>) -> tensor<?x{m}x{n}x{t}> {{
      %c0 = arith.constant 0 : index
      %steps = tensor.dim %as, %c0 : tensor<?x{m}x{k}x{t}>
      %r = scan.scan steps(%steps) sequences(%as : tensor<?x{m}x{k}x{t}>) nonsequences(%b : tensor<{k}x{n}x{t}>) {{
      ^bb0(%a: tensor<{m}x{k}x{t}>, %bb: tensor<{k}x{n}x{t}>):
        %e = tensor.empty() : tensor<{m}x{n}x{t}>
        %z = arith.constant {zero} : {t}
        %f = linalg.fill ins(%z : {t}) outs(%e : tensor<{m}x{n}x{t}>) -> tensor<{m}x{n}x{t}>
        %c = linalg.matmul ins(%a, %bb : tensor<{m}x{k}x{t}>, tensor<{k}x{n}x{t}>) outs(%f : tensor<{m}x{n}x{t}>) -> tensor<{m}x{n}x{t}>
        scan.yield %c : tensor<{m}x{n}x{t}>
      }} -> (tensor<?x{m}x{n}x{t}>)
      return %r : tensor<?x{m}x{n}x{t}>
    }}"""
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a, b = _random(rng, (3, m, k), dtype), _random(rng, (k, n), dtype)
    _check_contraction(source, "mm", a, b, dtype)
