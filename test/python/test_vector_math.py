"""scan-call-vector-math: vector math ops computed by glibc's libmvec.

Each function the machine's libmvec has is compiled twice, with its AVX2
vector calls (the default) and with ``vector_math=False`` (libm, one element
at a time), and run on points spread over its domain, on its edges and on the
special values: the results agree within 5 ulp (libmvec is documented within
4 ulp, libm within 1), and exactly where a result is special (NaN, an
infinity, the sign of a zero). The vector loop and its scalar remainder both run
(the lengths are not multiples of the vector width).
"""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

import mlir_scan
from mlir_scan import _vector_math

AVAILABLE = _vector_math.functions() or ()

#: math op -> (libm name, how to draw arguments from a Generator for a dtype)
UNARY = {
    "exp": ("exp", lambda r, n: r.uniform(-750, 750, n)),
    "exp2": ("exp2", lambda r, n: r.uniform(-1100, 1100, n)),
    "log": ("log", lambda r, n: 10.0 ** r.uniform(-320, 308, n)),
    "log2": ("log2", lambda r, n: 10.0 ** r.uniform(-320, 308, n)),
    "log10": ("log10", lambda r, n: 10.0 ** r.uniform(-320, 308, n)),
    "sin": ("sin", lambda r, n: r.uniform(-1e4, 1e4, n)),
    "cos": ("cos", lambda r, n: r.uniform(-1e4, 1e4, n)),
    "tan": ("tan", lambda r, n: r.uniform(-1e3, 1e3, n)),
    "asin": ("asin", lambda r, n: r.uniform(-1, 1, n)),
    "acos": ("acos", lambda r, n: r.uniform(-1, 1, n)),
    "atan": ("atan", lambda r, n: r.standard_normal(n) * 10.0 ** r.uniform(-5, 10, n)),
    "sinh": ("sinh", lambda r, n: r.uniform(-720, 720, n)),
    "cosh": ("cosh", lambda r, n: r.uniform(-720, 720, n)),
    "asinh": ("asinh", lambda r, n: r.standard_normal(n) * 10.0 ** r.uniform(-5, 300, n)),
    "acosh": ("acosh", lambda r, n: 1 + 10.0 ** r.uniform(-10, 300, n)),
    "atanh": ("atanh", lambda r, n: r.uniform(-1, 1, n)),
    "erf": ("erf", lambda r, n: r.uniform(-7, 7, n)),
    "erfc": ("erfc", lambda r, n: r.uniform(-7, 30, n)),
    "cbrt": ("cbrt", lambda r, n: r.standard_normal(n) * 10.0 ** r.uniform(-300, 300, n)),
}
BINARY = {
    "powf": ("pow", lambda r, n: (np.concatenate([10.0 ** r.uniform(-5, 5, n // 2), -r.integers(1, 20, n - n // 2).astype(float)]),
                                  np.concatenate([r.uniform(-60, 60, n // 2), r.integers(-30, 30, n - n // 2).astype(float)]))),
    "atan2": ("atan2", lambda r, n: (r.standard_normal(n) * 10.0 ** r.uniform(-5, 5, n),
                                     r.standard_normal(n) * 10.0 ** r.uniform(-5, 5, n))),
}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 1e308, -1e308, 710.0, -750.0]

needs_libmvec = pytest.mark.skipif(not AVAILABLE, reason="no AVX2 libmvec on this machine (or MLIR_SCAN_VECTOR_MATH=0)")


def _type(dtype) -> str:
    return "f64" if dtype == np.float64 else "f32"


def _programs(op: str, arity: int, dtype):
    t = _type(dtype)
    params = ", ".join(f"%a{i}: tensor<?x{t}>" for i in range(arity))
    args = ", ".join(f"%a{i}" for i in range(arity))
    source = f"""
    func.func @f({params}) -> tensor<?x{t}> {{
      %y = math.{op} {args} : tensor<?x{t}>
      return %y : tensor<?x{t}>
    }}"""
    return mlir_scan.compile(source), mlir_scan.compile(source, vector_math=False)


def _assert_close(got: np.ndarray, libm: np.ndarray, where: str) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(libm), err_msg=f"{where}: NaNs")
    infinite = np.isinf(libm)
    np.testing.assert_array_equal(got[infinite], libm[infinite], err_msg=f"{where}: infinities")
    assert np.signbit(got[libm == 0]).tolist() == np.signbit(libm[libm == 0]).tolist(), where
    finite = np.isfinite(libm)
    # Results that underflow to subnormals (or to zero: erfcf(10.05) is the
    # smallest subnormal in libmvec, 0 in libm) lose relative precision in both.
    tiny = np.finfo(libm.dtype).tiny
    ulp = np.maximum(np.spacing(np.abs(libm[finite])), np.spacing(tiny)).astype(np.float64)
    error = np.abs(got[finite].astype(np.float64) - libm[finite].astype(np.float64)) / ulp
    worst = int(np.argmax(error)) if error.size else 0
    assert error.size == 0 or error.max() <= 5, f"{where}: {error.max():.1f} ulp at index {worst}"


def _arguments(op: str, dtype) -> list[np.ndarray]:
    """Points drawn over the function's domain, then the special values (every
    pair of them for a function of two arguments), as `dtype`."""
    rng = np.random.default_rng(zlib.crc32(op.encode()))
    with np.errstate(all="ignore"):
        if op in UNARY:
            return [np.concatenate([UNARY[op][1](rng, 100_003), SPECIAL]).astype(dtype)]
        grid = np.array([(s, t) for s in SPECIAL for t in SPECIAL]).T
        return [np.concatenate([drawn, special]).astype(dtype)
                for drawn, special in zip(BINARY[op][1](rng, 100_003), grid)]


@needs_libmvec
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("op", sorted(UNARY) + sorted(BINARY))
def test_functions_match_libm(op: str, dtype):
    name = (UNARY.get(op) or BINARY[op])[0]
    if name not in AVAILABLE:
        pytest.skip(f"this glibc's libmvec has no {name}")
    args = _arguments(op, dtype)
    vector, scalar = _programs(op, len(args), dtype)
    v = "v" * len(args)
    assert re.search(rf"@_ZGVdN(4|8){v}_{name}f?\b", vector.ir("llvm")), f"no libmvec call for math.{op}"
    assert "_ZGVdN" not in scalar.ir("llvm")
    _assert_close(vector.f(*args), scalar.f(*args), f"{op} {dtype.__name__}")


@needs_libmvec
def test_pow_agrees_with_numpy_on_the_scan_guides_polynomial():
    """The scan guide's polynomial, sum(c_i * x ** i), through the Theano API:
    its powers are one vector pow over all terms (scan-push-out-seq), and the
    sum matches NumPy's."""
    import mlir_scan as theano
    from mlir_scan import tensor as T

    coefficients = T.vector("coefficients")
    x = T.scalar("x")
    components, updates = theano.scan(fn=lambda c, power, free: c * (free ** power), outputs_info=None,
                                      sequences=[coefficients, T.arange(1000, dtype="float64")], non_sequences=x)
    f = theano.function([coefficients, x], components.sum(), updates=updates)
    c = np.random.default_rng(3).standard_normal(1000)
    expected = float(np.sum(c * 0.999 ** np.arange(1000.0)))
    np.testing.assert_allclose(f(c, 0.999), expected, rtol=1e-12)


def test_option_and_environment_turn_it_off(monkeypatch):
    """``vector_math=False`` leaves libm calls; without libmvec the option
    string asks for none; a bad ISA is the pass's error, not a crash."""
    assert _vector_math.pipeline_options(False) == "vector-math=none"
    source = """
    func.func @f(%x: tensor<?xf64>) -> tensor<?xf64> {
      %y = math.exp %x : tensor<?xf64>
      return %y : tensor<?xf64>
    }"""
    assert "_ZGVdN" not in mlir_scan.compile(source, vector_math=False).ir("llvm")
    with pytest.raises(TypeError, match="vector_math must be True or False"):
        mlir_scan.compile(source, vector_math="yes")
    monkeypatch.setenv("MLIR_SCAN_VECTOR_MATH", "0")
    _vector_math.functions.cache_clear()
    try:
        assert _vector_math.functions() is None
        assert _vector_math.pipeline_options() == "vector-math=none"
    finally:
        monkeypatch.delenv("MLIR_SCAN_VECTOR_MATH")
        _vector_math.functions.cache_clear()
