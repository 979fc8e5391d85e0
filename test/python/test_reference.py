"""Tests of the pure-NumPy reference interpreter (``mlir_scan.reference``).

Every expected value is computed independently, by plain NumPy/Python loops
written in the test, never by the interpreter itself.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlir_scan import reference
from mlir_scan.reference import run


def wrap(value: int, bits: int) -> int:
    """Python int -> signed two's complement of `bits` bits."""
    value %= 2**bits
    return value - 2**bits if value >= 2 ** (bits - 1) else value


def test_module_docstring_example_runs():
    result = doctest.testmod(reference, verbose=False)
    assert result.attempted >= 1 and result.failed == 0


# --------------------------------------------------------------------------- #
# scan: each kind of variable
# --------------------------------------------------------------------------- #

CUMSUM = """
func.func @f(%n: index, %xs: tensor<?xf64>, %s0: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%s0 : f64) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
"""


def test_sitsot_cumulative_sum():
    xs = np.array([1.5, -2.0, 4.25, 8.0, 0.5])
    acc, expected = 3.0, []
    for x in xs[:4]:
        acc += x
        expected.append(acc)
    out = run(CUMSUM, "f", 4, xs, 3.0)
    assert out.dtype == np.float64 and out.shape == (4,)
    np.testing.assert_array_equal(out, expected)


def test_n_steps_zero_gives_empty_results():
    out = run(CUMSUM, "f", 0, np.array([], dtype=np.float64), 3.0)
    assert out.shape == (0,) and out.dtype == np.float64


SQUARES = """
func.func @f(%n: index, %v: tensor<?xf64>) -> tensor<?xf64> {
  %sq = scan.scan steps(%n) GO sequences(%v : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.mulf %x, %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %sq : tensor<?xf64>
}
"""


def test_nitsot_map():
    v = np.array([1.0, -2.0, 3.0, 0.5])
    np.testing.assert_array_equal(run(SQUARES.replace("GO", ""), "f", 4, v), [x * x for x in v])


def test_nitsot_go_backwards_reverses_sequences_only():
    v = np.array([1.0, -2.0, 3.0, 0.5, 7.0])
    # Reverse first, then take the first n rows; outputs in step order.
    rev = list(reversed(v))
    expected = [rev[t] ** 2 for t in range(3)]
    np.testing.assert_array_equal(run(SQUARES.replace("GO", "go_backwards"), "f", 3, v), expected)


TAPS = """
func.func @f(%n: index, %s: tensor<?xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) GO sequences(%s[TAPS] : tensor<?xi64>) {
  ^bb0(ARGS):
    BODY
    scan.yield %y : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}
"""


def taps_program(taps: list[int], go_backwards: bool = False) -> str:
    """y_t = sum_j (10**j) * s_tap_j: a weighted sum that identifies each tap."""
    args = ", ".join(f"%a{j}: i64" for j in range(len(taps)))
    body = ["%y0 = arith.constant 0 : i64"]
    for j in range(len(taps)):
        body.append(f"%w{j} = arith.constant {10 ** j} : i64")
        body.append(f"%m{j} = arith.muli %a{j}, %w{j} : i64")
        body.append(f"%y{j + 1} = arith.addi %y{j}, %m{j} : i64")
    body.append(f"%y = arith.addi %y{len(taps)}, %y0 : i64")
    return (TAPS.replace("TAPS", ", ".join(map(str, taps))).replace("ARGS", args)
            .replace("BODY", "\n    ".join(body))
            .replace("GO", "go_backwards" if go_backwards else ""))


def expected_taps(s: list[int], taps: list[int], n: int) -> list[int]:
    lo, out = min(0, min(taps)), []
    for t in range(n):
        out.append(sum(10**j * s[t + k - lo] for j, k in enumerate(taps)))
    return out


@pytest.mark.parametrize("taps", [[0], [-2, 0], [-3, -1], [1, 3], [-2, 0, 1], [2], [-1]])
def test_sequence_taps_of_each_sign(taps):
    s = list(range(1, 11))
    n = len(s) - (max(0, max(taps)) - min(0, min(taps)))
    out = run(taps_program(taps), "f", n, np.array(s, dtype=np.int64))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, expected_taps(s, taps, n))


def test_sequence_taps_explicit_values():
    # taps [-1, 1]: lo = -1, so tap -1 reads s[t] and tap 1 reads s[t + 2].
    s = np.array([3, 5, 7, 11, 13], dtype=np.int64)
    np.testing.assert_array_equal(run(taps_program([-1, 1]), "f", 3, s),
                                  [3 + 10 * 7, 5 + 10 * 11, 7 + 10 * 13])


@pytest.mark.parametrize("taps", [[0], [-2, 0], [1, 3]])
def test_go_backwards_with_taps(taps):
    s = list(range(1, 9))
    n = 4
    out = run(taps_program(taps, go_backwards=True), "f", n, np.array(s, dtype=np.int64))
    np.testing.assert_array_equal(out, expected_taps(s[::-1], taps, n))


@settings(max_examples=25, deadline=None)
@given(taps=st.lists(st.integers(-4, 4), min_size=1, max_size=3, unique=True).map(sorted),
       n=st.integers(0, 6), extra=st.integers(0, 3), go_backwards=st.booleans())
def test_sequence_taps_property(taps, n, extra, go_backwards):
    length = n + max(0, max(taps)) - min(0, min(taps)) + extra
    s = [(7 * i + 3) % 10 for i in range(length)]
    out = run(taps_program(taps, go_backwards), "f", n, np.array(s, dtype=np.int64))
    np.testing.assert_array_equal(out, expected_taps(s[::-1] if go_backwards else s, taps, n))


FIB = """
func.func @f(%n: index, %init: tensor<2xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) mitsot(%init[-2, -1] : tensor<2xi64>) {
  ^bb0(%a: i64, %b: i64):
    %c = arith.addi %a, %b : i64
    scan.yield %c : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}
"""


def test_mitsot_fibonacci():
    fib = [0, 1]
    for _ in range(20):
        fib.append(fib[-1] + fib[-2])
    out = run(FIB, "f", 20, np.array([0, 1], dtype=np.int64))
    np.testing.assert_array_equal(out, fib[2:])


MITSOT_TENSOR = """
func.func @f(%n: index, %u: tensor<?x8xf32>, %x0: tensor<3x2xf32>, %y0: tensor<2xf32>)
    -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %xs, %ys = scan.scan steps(%n)
      sequences(%u[-4, 0] : tensor<?x8xf32>)
      mitsot(%x0[-3, -1] : tensor<3x2xf32>)
      sitsot(%y0 : tensor<2xf32>) {
  ^bb0(%u_tm4: tensor<8xf32>, %u_t: tensor<8xf32>, %x_tm3: tensor<2xf32>,
       %x_tm1: tensor<2xf32>, %y_tm1: tensor<2xf32>):
    %a = arith.addf %x_tm3, %x_tm1 : tensor<2xf32>
    %s = tensor.extract_slice %u_t[0] [2] [1] : tensor<8xf32> to tensor<2xf32>
    %s4 = tensor.extract_slice %u_tm4[2] [2] [1] : tensor<8xf32> to tensor<2xf32>
    %b = arith.addf %a, %s : tensor<2xf32>
    %x = arith.addf %b, %s4 : tensor<2xf32>
    %y = arith.mulf %y_tm1, %x : tensor<2xf32>
    scan.yield %x, %y : tensor<2xf32>, tensor<2xf32>
  } -> (tensor<?x2xf32>, tensor<?x2xf32>)
  return %xs, %ys : tensor<?x2xf32>, tensor<?x2xf32>
}
"""


def test_mitsot_and_sitsot_with_tensor_rows():
    rng = np.random.default_rng(0)
    n = 5
    u = rng.standard_normal((n + 4, 8)).astype(np.float32)
    x0 = rng.standard_normal((3, 2)).astype(np.float32)
    y0 = np.ones(2, np.float32)
    hist = [x0[0], x0[1], x0[2]]  # x[-3], x[-2], x[-1]
    y, xs, ys = y0, [], []
    for t in range(n):
        x = ((hist[t] + hist[t + 2]) + u[t + 4][0:2]) + u[t][2:4]
        hist.append(x)
        y = y * x
        xs.append(x)
        ys.append(y)
    out_x, out_y = run(MITSOT_TENSOR, "f", n, u, x0, y0)
    assert out_x.dtype == np.float32 and out_x.shape == (n, 2)
    np.testing.assert_array_equal(out_x, np.array(xs))
    np.testing.assert_array_equal(out_y, np.array(ys))


MITMOT = """
func.func @f(%n: index, %x: tensor<?xf64>, %buf: tensor<?xf64>) -> tensor<?xf64> {
  %g = scan.scan steps(%n)
      sequences(%x : tensor<?xf64>)
      mitmot(%buf[0, 1] -> [1] : tensor<?xf64>) {
  ^bb0(%xt: f64, %g0: f64, %g1: f64):
    %p = arith.mulf %g0, %xt : f64
    %s = arith.addf %g1, %p : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %g : tensor<?xf64>
}
"""


def test_mitmot_reads_current_rows_and_overwrites_out_rows():
    x = np.array([2.0, 3.0, 0.5, -1.0])
    buf = np.array([1.0, 10.0, 100.0, 1000.0, 5.0, 7.0])
    expected = buf.copy()
    for t in range(4):
        expected[t + 1] = expected[t + 1] + expected[t] * x[t]  # reads row t+1 after step t-1 wrote it
    original = buf.copy()
    out = run(MITMOT, "f", 4, x, buf)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(buf, original)  # the input buffer is untouched


MITMOT_GRAD = """
func.func @f(%n: index, %x: tensor<?x4xf32>, %gbuf: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %g = scan.scan steps(%n) go_backwards
      sequences(%x : tensor<?x4xf32>)
      mitmot(%gbuf[0] -> [-1, 0] : tensor<?x4xf32>) {
  ^bb0(%xt: tensor<4xf32>, %gt: tensor<4xf32>):
    %s = arith.addf %gt, %xt : tensor<4xf32>
    %h = arith.mulf %gt, %xt : tensor<4xf32>
    scan.yield %h, %s : tensor<4xf32>, tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return %g : tensor<?x4xf32>
}
"""


def test_mitmot_with_negative_out_tap_and_go_backwards():
    rng = np.random.default_rng(1)
    n = 3
    x = rng.standard_normal((n, 4)).astype(np.float32)
    gbuf = rng.standard_normal((n + 2, 4)).astype(np.float32)
    xr = x[::-1]  # sequences are reversed; the mitmot buffer is not
    buf = gbuf.copy()
    lo = -1
    for t in range(n):
        gt = buf[t + 0 - lo].copy()
        buf[t + 0 - lo] = gt + xr[t]
        buf[t - 1 - lo] = gt * xr[t]
    np.testing.assert_array_equal(run(MITMOT_GRAD, "f", n, x, gbuf), buf)


def test_mitmot_buffer_too_short():
    with pytest.raises(ValueError, match=r"mitmot #0 buffer has 4 rows.*needs at least 5"):
        run(MITMOT, "f", 4, np.ones(4), np.ones(4))


NONSEQ = """
func.func @f(%n: index, %x0: f32, %a: f32, %b: f32) -> tensor<?xf32> {
  %r = scan.scan steps(%n) sitsot(%x0 : f32) nonsequences(%a, %b : f32, f32) {
  ^bb0(%x: f32, %aa: f32, %bb: f32):
    %m = arith.mulf %x, %aa : f32
    %y = arith.addf %m, %bb : f32
    scan.yield %y : f32
  } -> (tensor<?xf32>)
  return %r : tensor<?xf32>
}
"""


def test_non_sequences_and_f32_precision():
    a, b = np.float32(1.1), np.float32(0.1)
    x, expected = np.float32(0.3), []
    for _ in range(30):
        x = np.float32(x * a) + b
        expected.append(x)
    out = run(NONSEQ, "f", 30, 0.3, 1.1, 0.1)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.array(expected, np.float32))
    # The same recurrence in float64 gives different bits: f32 math really is f32.
    x64, ref64 = 0.3, []
    for _ in range(30):
        x64 = x64 * 1.1 + 0.1
        ref64.append(x64)
    assert not np.array_equal(out.astype(np.float64), np.array(ref64))
    out64 = run(NONSEQ.replace("f32", "f64"), "f", 30, 0.3, 1.1, 0.1)
    assert out64.dtype == np.float64
    np.testing.assert_array_equal(out64, ref64)


INT_WRAP = """
func.func @f(%n: index, %x0: T) -> tensor<?xT> {
  %r = scan.scan steps(%n) sitsot(%x0 : T) {
  ^bb0(%x: T):
    %c = arith.constant 3 : T
    %d = arith.constant 7 : T
    %m = arith.muli %x, %c : T
    %y = arith.addi %m, %d : T
    scan.yield %y : T
  } -> (tensor<?xT>)
  return %r : tensor<?xT>
}
"""


@pytest.mark.parametrize("ty,bits,dtype", [("i8", 8, np.int8), ("i32", 32, np.int32),
                                            ("i64", 64, np.int64)])
def test_integer_wraparound(ty, bits, dtype):
    x, expected = 5, []
    for _ in range(50):
        x = wrap(x * 3 + 7, bits)
        expected.append(x)
    out = run(INT_WRAP.replace("T", ty), "f", 50, 5)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, np.array(expected, dtype))


# --------------------------------------------------------------------------- #
# until and keep
# --------------------------------------------------------------------------- #

POWERS = """
func.func @f(%max: i64) -> (tensor<?xi64>, tensor<1xi64>, tensor<?xi64>) {
  %c1024 = arith.constant 1024 : index
  %one = arith.constant 1 : i64
  %all, %last, %ns = scan.scan steps(%c1024) until
      sitsot(%one, %one : i64, i64) nonsequences(%max : i64) keep [0, 1, 0] {
  ^bb0(%prev: i64, %prev2: i64, %m: i64):
    %two = arith.constant 2 : i64
    %next = arith.muli %prev, %two : i64
    %stop = arith.cmpi sgt, %next, %m : i64
    scan.yield %next, %next, %prev, %stop : i64, i64, i64, i1
  } -> (tensor<?xi64>, tensor<1xi64>, tensor<?xi64>)
  return %all, %last, %ns : tensor<?xi64>, tensor<1xi64>, tensor<?xi64>
}
"""


def test_until_stops_after_the_step_whose_condition_is_true():
    powers, p = [], 1
    while True:
        p *= 2
        powers.append(p)
        if p > 45:
            break
    all_, last, ns = run(POWERS, "f", 45)
    np.testing.assert_array_equal(all_, powers)  # [2, 4, ..., 64]: the stopping step is kept
    np.testing.assert_array_equal(last, [64])
    np.testing.assert_array_equal(ns, [1] + powers[:-1])
    assert last.dtype == np.int64


UNTIL_NEVER = """
func.func @f(%n: index, %xs: tensor<?xf64>, %limit: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) until sequences(%xs : tensor<?xf64>) nonsequences(%limit : f64) {
  ^bb0(%x: f64, %l: f64):
    %y = arith.mulf %x, %x : f64
    %stop = arith.cmpf ogt, %y, %l : f64
    scan.yield %y, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
"""


def test_until_runs_to_the_end_when_never_true():
    xs = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(run(UNTIL_NEVER, "f", 4, xs, 100.0), [1.0, 4.0, 9.0, 16.0])


def test_until_stops_early_on_nitsot():
    xs = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(run(UNTIL_NEVER, "f", 4, xs, 3.5), [1.0, 4.0])
    np.testing.assert_array_equal(run(UNTIL_NEVER, "f", 4, xs, 0.5), [1.0])


KEEP = """
func.func @f(%n: index, %xs: tensor<?xf64>, %s0: f64, %m0: tensor<2xf64>)
    -> (tensor<KMx f64>, tensor<KSx f64>, tensor<KNx f64>) {
  %m, %s, %y = scan.scan steps(%n) sequences(%xs : tensor<?xf64>)
      mitsot(%m0[-2, -1] : tensor<2xf64>) sitsot(%s0 : f64) keep [KEEP] {
  ^bb0(%x: f64, %a: f64, %b: f64, %acc: f64):
    %mm = arith.addf %a, %b : f64
    %ss = arith.addf %acc, %x : f64
    %yy = arith.mulf %x, %x : f64
    scan.yield %mm, %ss, %yy : f64, f64, f64
  } -> (tensor<KMx f64>, tensor<KSx f64>, tensor<KNx f64>)
  return %m, %s, %y : tensor<KMx f64>, tensor<KSx f64>, tensor<KNx f64>
}
"""


def keep_program(km: int, ks: int, kn: int) -> str:
    dim = lambda k: f"{k}x" if k else "?x"  # noqa: E731
    return (KEEP.replace("KMx ", dim(km)).replace("KSx ", dim(ks)).replace("KNx ", dim(kn))
            .replace("KEEP", f"{km}, {ks}, {kn}"))


def keep_expected(n, xs, s0, m0, km, ks, kn):
    m_hist, s_hist, y_rows = list(m0), [s0], []
    for t in range(n):
        m_hist.append(m_hist[-2] + m_hist[-1])
        s_hist.append(s_hist[-1] + xs[t])
        y_rows.append(xs[t] * xs[t])

    def last(rows, k, skip):
        if k == 0:
            return rows[skip:]
        taken = rows[-k:]
        return [0.0] * (k - len(taken)) + taken

    return last(m_hist, km, 2), last(s_hist, ks, 1), last(y_rows, kn, 0)


@pytest.mark.parametrize("n,km,ks,kn", [
    (5, 0, 0, 0), (5, 1, 1, 1), (5, 2, 3, 2), (2, 4, 4, 4), (1, 3, 3, 3), (0, 1, 1, 1),
    (0, 3, 2, 2), (0, 0, 0, 0), (3, 5, 0, 6),
])
def test_keep(n, km, ks, kn):
    xs = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    m0 = np.array([0.5, 1.5])
    out = run(keep_program(km, ks, kn), "f", n, xs, 10.0, m0)
    for got, want in zip(out, keep_expected(n, list(xs), 10.0, list(m0), km, ks, kn)):
        np.testing.assert_array_equal(got, np.array(want, np.float64))


def test_keep_one_with_zero_steps_is_the_init():
    m, s, y = run(keep_program(2, 1, 1), "f", 0, np.zeros(0), 10.0, np.array([0.5, 1.5]))
    np.testing.assert_array_equal(s, [10.0])
    np.testing.assert_array_equal(m, [0.5, 1.5])
    np.testing.assert_array_equal(y, [0.0])  # a nitsot has no init: missing rows are zero


KEEP_TENSOR_UNTIL = """
func.func @f(%n: index, %x0: tensor<3xi32>) -> (tensor<2x3xi32>, tensor<?x3xi32>) {
  %k, %all = scan.scan steps(%n) until sitsot(%x0, %x0 : tensor<3xi32>, tensor<3xi32>) keep [2, 0] {
  ^bb0(%x: tensor<3xi32>, %x2: tensor<3xi32>):
    %y = arith.addi %x, %x : tensor<3xi32>
    %c0 = arith.constant 0 : index
    %e = tensor.extract %y[%c0] : tensor<3xi32>
    %lim = arith.constant 20 : i32
    %stop = arith.cmpi sge, %e, %lim : i32
    scan.yield %y, %y, %stop : tensor<3xi32>, tensor<3xi32>, i1
  } -> (tensor<2x3xi32>, tensor<?x3xi32>)
  return %k, %all : tensor<2x3xi32>, tensor<?x3xi32>
}
"""


def test_keep_with_tensor_rows_and_until():
    x0 = np.array([3, 1, -2], np.int32)
    rows, x = [], x0
    for _ in range(100):
        x = x + x
        rows.append(x)
        if x[0] >= 20:
            break
    k, all_ = run(KEEP_TENSOR_UNTIL, "f", 100, x0)
    np.testing.assert_array_equal(all_, np.array(rows))
    np.testing.assert_array_equal(k, np.array(rows[-2:]))
    k1, all1 = run(KEEP_TENSOR_UNTIL, "f", 1, x0)
    np.testing.assert_array_equal(k1, np.array([x0, x0 + x0]))
    k0, all0 = run(KEEP_TENSOR_UNTIL, "f", 0, x0)
    np.testing.assert_array_equal(k0, np.array([[0, 0, 0], x0]))
    assert all0.shape == (0, 3)


# --------------------------------------------------------------------------- #
# dynamic shapes, nesting, calls
# --------------------------------------------------------------------------- #

DYNAMIC_ROWS = """
func.func @f(%n: index, %xs: tensor<?x?xf64>, %h0: tensor<?xf64>) -> (tensor<?x?xf64>, tensor<?x?xf64>) {
  %hs, %ds = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%h0 : tensor<?xf64>) {
  ^bb0(%x: tensor<?xf64>, %h: tensor<?xf64>):
    %s = arith.addf %h, %x : tensor<?xf64>
    %d = arith.mulf %x, %x : tensor<?xf64>
    scan.yield %s, %d : tensor<?xf64>, tensor<?xf64>
  } -> (tensor<?x?xf64>, tensor<?x?xf64>)
  return %hs, %ds : tensor<?x?xf64>, tensor<?x?xf64>
}
"""


@pytest.mark.parametrize("n,width", [(3, 4), (1, 7), (0, 2)])
def test_dynamic_shapes(n, width):
    xs = np.arange(5 * width, dtype=np.float64).reshape(5, width)
    h0 = np.full(width, 0.5)
    h, hs, ds = h0, [], []
    for t in range(n):
        h = h + xs[t]
        hs.append(h)
        ds.append(xs[t] * xs[t])
    out_h, out_d = run(DYNAMIC_ROWS, "f", n, xs, h0)
    assert out_h.shape == (n, width)
    # A nitsot whose row has `?` dims and that ran no step: those dims are 0.
    assert out_d.shape == ((n, width) if n else (0, 0))
    if n:
        np.testing.assert_array_equal(out_h, np.array(hs))
        np.testing.assert_array_equal(out_d, np.array(ds))


NESTED = """
func.func @f(%n: index, %m: index, %x0: i64) -> tensor<?xi64> {
  %r = scan.scan steps(%n) sitsot(%x0 : i64) nonsequences(%m : index) {
  ^bb0(%x: i64, %mm: index):
    %inner = scan.scan steps(%mm) sitsot(%x : i64) keep [1] {
    ^bb0(%y: i64):
      %one = arith.constant 1 : i64
      %z = arith.addi %y, %one : i64
      scan.yield %z : i64
    } -> (tensor<1xi64>)
    %c0 = arith.constant 0 : index
    %v = tensor.extract %inner[%c0] : tensor<1xi64>
    %two = arith.constant 2 : i64
    %w = arith.muli %v, %two : i64
    scan.yield %w : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}
"""


def test_nested_scan():
    x, expected = 1, []
    for _ in range(4):
        x = (x + 3) * 2
        expected.append(x)
    np.testing.assert_array_equal(run(NESTED, "f", 4, 3, 1), expected)


CALLS = """
func.func private @fact(%n: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %base = arith.cmpi sle, %n, %c1 : i64
  %r = scf.if %base -> (i64) {
    scf.yield %c1 : i64
  } else {
    %m = arith.subi %n, %c1 : i64
    %f = func.call @fact(%m) : (i64) -> i64
    %p = arith.muli %n, %f : i64
    scf.yield %p : i64
  }
  return %r : i64
}
func.func @f(%n: index, %xs: tensor<?xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xi64>) {
  ^bb0(%x: i64):
    %y = func.call @fact(%x) : (i64) -> i64
    scan.yield %y : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}
"""


def test_func_call_and_recursion():
    xs = np.array([0, 1, 5, 10, 20], dtype=np.int64)
    np.testing.assert_array_equal(run(CALLS, "f", 5, xs), [math.factorial(max(x, 1)) for x in xs])
    with pytest.raises(ValueError, match="not public"):
        run(CALLS, "fact", 3)


# --------------------------------------------------------------------------- #
# Theano guide-like programs
# --------------------------------------------------------------------------- #

POWER = """
func.func @f(%k: index, %A: tensor<?xf64>) -> (tensor<?x?xf64>, tensor<1x?xf64>) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %A, %c0 : tensor<?xf64>
  %one = arith.constant 1.0 : f64
  %ones = tensor.splat %one[%d] : tensor<?xf64>
  %all, %last = scan.scan steps(%k) sitsot(%ones, %ones : tensor<?xf64>, tensor<?xf64>)
      nonsequences(%A : tensor<?xf64>) keep [0, 1] {
  ^bb0(%prior: tensor<?xf64>, %prior2: tensor<?xf64>, %a: tensor<?xf64>):
    %r = arith.mulf %prior, %a : tensor<?xf64>
    scan.yield %r, %r : tensor<?xf64>, tensor<?xf64>
  } -> (tensor<?x?xf64>, tensor<1x?xf64>)
  return %all, %last : tensor<?x?xf64>, tensor<1x?xf64>
}
"""


def test_guide_power_by_repeated_multiplication():
    A = np.arange(10, dtype=np.float64)
    all_, last = run(POWER, "f", 2, A)
    np.testing.assert_array_equal(last, [A**2])
    np.testing.assert_array_equal(all_, [A, A * A])
    np.testing.assert_array_equal(run(POWER, "f", 0, A)[1], [np.ones(10)])


POLY = """
func.func @f(%coefficients: tensor<?xf64>, %x: f64, %max: index) -> f64 {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %coefficients, %c0 : tensor<?xf64>
  %powers = tensor.generate %max {
  ^bb0(%i: index):
    %ii = arith.index_cast %i : index to i64
    tensor.yield %ii : i64
  } : tensor<?xi64>
  %terms = scan.scan steps(%n) sequences(%coefficients : tensor<?xf64>, %powers : tensor<?xi64>)
      nonsequences(%x : f64) {
  ^bb0(%c: f64, %p: i64, %xx: f64):
    %pw = math.fpowi %xx, %p : f64, i64
    %t = arith.mulf %c, %pw : f64
    scan.yield %t : f64
  } -> (tensor<?xf64>)
  %zero = arith.constant 0.0 : f64
  %init = tensor.from_elements %zero : tensor<f64>
  %sum = linalg.reduce ins(%terms : tensor<?xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%in: f64, %acc: f64) {
      %s = arith.addf %acc, %in : f64
      linalg.yield %s : f64
    }
  %v = tensor.extract %sum[] : tensor<f64>
  return %v : f64
}
"""


def test_guide_polynomial_evaluation():
    coefficients = np.array([1.0, 0.0, 2.0])
    value = sum(c * 3.0**i for i, c in enumerate(coefficients))
    assert run(POLY, "f", coefficients, 3.0, 100000 // 10000) == value == 19.0
    out = run(POLY, "f", np.array([0.5, -1.0, 0.25, 3.0]), 1.5, 4)
    assert isinstance(out, np.float64)
    assert out == 0.5 - 1.5 + 0.25 * 1.5**2 + 3.0 * 1.5**3


ELMAN = """
func.func @f(%n: index, %xs: tensor<?x3xT>, %h0: tensor<4xT>, %W: tensor<4x4xT>,
             %U: tensor<4x3xT>, %b: tensor<4xT>) -> tensor<?x4xT> {
  %hs = scan.scan steps(%n) sequences(%xs : tensor<?x3xT>) sitsot(%h0 : tensor<4xT>)
      nonsequences(%W, %U, %b : tensor<4x4xT>, tensor<4x3xT>, tensor<4xT>) {
  ^bb0(%x: tensor<3xT>, %h: tensor<4xT>, %w: tensor<4x4xT>, %u: tensor<4x3xT>, %bb: tensor<4xT>):
    %zero = arith.constant 0.0 : T
    %e = tensor.empty() : tensor<4xT>
    %z = linalg.fill ins(%zero : T) outs(%e : tensor<4xT>) -> tensor<4xT>
    %wh = linalg.matvec ins(%w, %h : tensor<4x4xT>, tensor<4xT>) outs(%z : tensor<4xT>) -> tensor<4xT>
    %ux = linalg.matvec ins(%u, %x : tensor<4x3xT>, tensor<3xT>) outs(%z : tensor<4xT>) -> tensor<4xT>
    %s = arith.addf %wh, %ux : tensor<4xT>
    %sb = linalg.add ins(%s, %bb : tensor<4xT>, tensor<4xT>) outs(%e : tensor<4xT>) -> tensor<4xT>
    %hn = math.tanh %sb : tensor<4xT>
    scan.yield %hn : tensor<4xT>
  } -> (tensor<?x4xT>)
  return %hs : tensor<?x4xT>
}
"""


@pytest.mark.parametrize("ty,dtype,rtol", [("f64", np.float64, 1e-12), ("f32", np.float32, 1e-5)])
def test_guide_elman_rnn(ty, dtype, rtol):
    rng = np.random.default_rng(42)
    n = 12
    xs = rng.standard_normal((n, 3)).astype(dtype)
    h0 = rng.standard_normal(4).astype(dtype)
    W = (0.5 * rng.standard_normal((4, 4))).astype(dtype)
    U = rng.standard_normal((4, 3)).astype(dtype)
    b = rng.standard_normal(4).astype(dtype)
    h, expected = h0, []
    for t in range(n):
        h = np.tanh(W @ h + U @ xs[t] + b)
        expected.append(h)
    out = run(ELMAN.replace("T", ty), "f", n, xs, h0, W, U, b)
    assert out.dtype == dtype and out.shape == (n, 4)
    np.testing.assert_allclose(out, np.array(expected), rtol=rtol, atol=rtol)


# --------------------------------------------------------------------------- #
# errors
# --------------------------------------------------------------------------- #


def test_negative_n_steps():
    with pytest.raises(ValueError, match=r"n_steps must be >= 0, got -1"):
        run(CUMSUM, "f", -1, np.ones(3), 0.0)


def test_sequence_too_short():
    with pytest.raises(ValueError, match=r"sequence #0 has 3 rows, but n_steps=4"):
        run(CUMSUM, "f", 4, np.ones(3), 0.0)
    with pytest.raises(ValueError, match=r"taps \[-2, 0, 1\] needs at least 8"):
        run(taps_program([-2, 0, 1]), "f", 5, np.ones(7, np.int64))
    run(taps_program([-2, 0, 1]), "f", 5, np.ones(8, np.int64))  # exactly enough


MITSOT_DYNAMIC = """
func.func @f(%n: index, %init: tensor<?xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) mitsot(%init[-3, -1] : tensor<?xi64>) {
  ^bb0(%a: i64, %b: i64):
    %c = arith.subi %b, %a : i64
    scan.yield %c : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}
"""


def test_mitsot_init_with_wrong_number_of_rows():
    with pytest.raises(ValueError, match=r"mitsot #0: init has 2 rows but taps \[-3, -1\] need 3"):
        run(MITSOT_DYNAMIC, "f", 2, np.array([1, 2], np.int64))
    with pytest.raises(ValueError, match=r"init has 4 rows"):
        run(MITSOT_DYNAMIC, "f", 2, np.array([1, 2, 3, 4], np.int64))
    # x[t] = x[t-1] - x[t-3]
    hist = [1, 5, 2]
    for _ in range(4):
        hist.append(hist[-1] - hist[-3])
    np.testing.assert_array_equal(run(MITSOT_DYNAMIC, "f", 4, np.array([1, 5, 2], np.int64)),
                                  hist[3:])


def test_argument_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"argument #1 \(%arg1\): expected tensor<\?xf64>, "
                                        r"got float32 array of shape \(3,\)"):
        run(CUMSUM, "f", 3, np.ones(3, np.float32), 0.0)
    with pytest.raises(ValueError, match=r"argument #1 \(%arg1\): expected tensor<\?xf64>, "
                                         r"got float64 array of shape \(3, 1\)"):
        run(CUMSUM, "f", 3, np.ones((3, 1)), 0.0)
    with pytest.raises(ValueError, match=r"argument #2 \(%arg2\): expected tensor<3x2xf32>"):
        run(MITSOT_TENSOR, "f", 1, np.ones((5, 8), np.float32), np.ones((2, 2), np.float32),
            np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"argument #1 \(%arg1\): expected tensor<\?xf64>, got list"):
        run(CUMSUM, "f", 3, [1.0, 2.0, 3.0], 0.0)
    with pytest.raises(TypeError, match=r"argument #0 \(%arg0\): expected index, got float"):
        run(CUMSUM, "f", 1.5, np.ones(3), 0.0)
    with pytest.raises(TypeError, match=r"argument #2 \(%arg2\): expected f64, got str"):
        run(CUMSUM, "f", 1, np.ones(3), "x")
    with pytest.raises(ValueError, match=r"does not fit in 8 bits"):
        run(INT_WRAP.replace("T", "i8"), "f", 1, 300)
    with pytest.raises(TypeError, match=r"takes 3 arguments"):
        run(CUMSUM, "f", 1, np.ones(3))
    with pytest.raises(ValueError, match=r"no func.func @g"):
        run(CUMSUM, "g")


def test_scalar_arguments_accept_python_and_numpy_scalars():
    xs = np.array([1.0, 2.0])
    for n in (2, np.int64(2), np.int32(2), np.array(2)):
        np.testing.assert_array_equal(run(CUMSUM, "f", n, xs, np.float32(0.5)), [1.5, 3.5])


def test_unsupported_op_is_reported_by_name():
    src = """
    func.func @f(%a: memref<4xf32>) -> f32 {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<4xf32>
      return %v : f32
    }"""
    with pytest.raises(NotImplementedError, match=r"memref"):
        run(src, "f", np.ones(4, np.float32))
    src = """
    func.func @f(%a: f32) -> f32 {
      %v = math.sinh %a : f32
      %w = math.tanh %v : f32
      %x = complex.constant [1.0 : f32, 2.0 : f32] : complex<f32>
      return %w : f32
    }"""
    with pytest.raises(NotImplementedError, match=r"'complex.constant'"):
        run(src, "f", 1.0)


def test_integer_division_by_zero_is_an_error():
    src = """
    func.func @f(%a: i32, %b: i32) -> i32 {
      %q = arith.divsi %a, %b : i32
      return %q : i32
    }"""
    assert run(src, "f", -7, 2) == -3
    with pytest.raises(ValueError, match="division by zero"):
        run(src, "f", 1, 0)


# --------------------------------------------------------------------------- #
# inputs are values
# --------------------------------------------------------------------------- #

INSERT = """
func.func @f(%t: tensor<3xf64>, %v: f64) -> (tensor<3xf64>, tensor<3xf64>) {
  %c1 = arith.constant 1 : index
  %u = tensor.insert %v into %t[%c1] : tensor<3xf64>
  return %u, %t : tensor<3xf64>, tensor<3xf64>
}
"""


def test_inputs_are_never_modified_and_results_do_not_alias():
    t = np.array([1.0, 2.0, 3.0])
    u, same = run(INSERT, "f", t, 9.0)
    np.testing.assert_array_equal(u, [1.0, 9.0, 3.0])
    np.testing.assert_array_equal(t, [1.0, 2.0, 3.0])
    same[0] = 100.0  # results are fresh, writable arrays
    assert t[0] == 1.0
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    before = x.copy()
    run(MITSOT_TENSOR, "f", 2, np.ones((6, 8), np.float32), x, np.ones(2, np.float32))
    np.testing.assert_array_equal(x, before)


def test_module_object_as_source():
    from mlir import ir

    with ir.Context():
        module = ir.Module.parse(CUMSUM)
        np.testing.assert_array_equal(run(module, "f", 2, np.array([1.0, 2.0]), 0.0), [1.0, 3.0])


# --------------------------------------------------------------------------- #
# arith / math
# --------------------------------------------------------------------------- #

BINOP = """
func.func @f(%a: T, %b: T) -> T {
  %r = arith.OP %a, %b : T
  return %r : T
}
"""


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


INT_CASES = {
    "addi": lambda a, b, w: a + b,
    "subi": lambda a, b, w: a - b,
    "muli": lambda a, b, w: a * b,
    "divsi": lambda a, b, w: trunc_div(a, b),
    "remsi": lambda a, b, w: a - b * trunc_div(a, b),
    "divui": lambda a, b, w: (a % 2**w) // (b % 2**w),
    "remui": lambda a, b, w: (a % 2**w) % (b % 2**w),
    "floordivsi": lambda a, b, w: a // b,
    "ceildivsi": lambda a, b, w: -((-a) // b),
    "andi": lambda a, b, w: a & b,
    "ori": lambda a, b, w: a | b,
    "xori": lambda a, b, w: a ^ b,
    "maxsi": lambda a, b, w: max(a, b),
    "minsi": lambda a, b, w: min(a, b),
    "maxui": lambda a, b, w: max(a % 2**w, b % 2**w),
    "minui": lambda a, b, w: min(a % 2**w, b % 2**w),
    "shli": lambda a, b, w: a << b,
    "shrsi": lambda a, b, w: a >> b,
    "shrui": lambda a, b, w: (a % 2**w) >> b,
}


@pytest.mark.parametrize("op", sorted(INT_CASES))
@pytest.mark.parametrize("ty,bits", [("i8", 8), ("i32", 32), ("i64", 64)])
def test_integer_binary_ops(op, ty, bits):
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (100, 3), (-128, 1), (5, 0 + 1), (-1, 3)]
    if op.startswith("sh"):
        pairs = [(a, abs(b) % bits) for a, b in pairs]
    for a, b in pairs:
        got = run(BINOP.replace("OP", op).replace("T", ty), "f", a, b)
        assert got.dtype == np.dtype(f"int{bits}")
        assert int(got) == wrap(INT_CASES[op](a, b, bits), bits), (op, a, b)


@pytest.mark.parametrize("pred,fn", [
    ("eq", lambda a, b, w: a == b), ("ne", lambda a, b, w: a != b),
    ("slt", lambda a, b, w: a < b), ("sle", lambda a, b, w: a <= b),
    ("sgt", lambda a, b, w: a > b), ("sge", lambda a, b, w: a >= b),
    ("ult", lambda a, b, w: a % 2**w < b % 2**w), ("ule", lambda a, b, w: a % 2**w <= b % 2**w),
    ("ugt", lambda a, b, w: a % 2**w > b % 2**w), ("uge", lambda a, b, w: a % 2**w >= b % 2**w),
])
def test_cmpi(pred, fn):
    src = f"""
    func.func @f(%a: i16, %b: i16) -> i1 {{
      %r = arith.cmpi {pred}, %a, %b : i16
      return %r : i1
    }}"""
    for a, b in [(1, 2), (2, 1), (3, 3), (-1, 1), (1, -1), (-5, -6)]:
        got = run(src, "f", a, b)
        assert isinstance(got, np.bool_) and bool(got) == fn(a, b, 16), (pred, a, b)


CMPF_CASES = {
    "false": lambda a, b: False, "oeq": lambda a, b: a == b, "ogt": lambda a, b: a > b,
    "oge": lambda a, b: a >= b, "olt": lambda a, b: a < b, "ole": lambda a, b: a <= b,
    "one": lambda a, b: not (math.isnan(a) or math.isnan(b)) and a != b,
    "ord": lambda a, b: not (math.isnan(a) or math.isnan(b)),
    "ueq": lambda a, b: math.isnan(a) or math.isnan(b) or a == b,
    "ugt": lambda a, b: math.isnan(a) or math.isnan(b) or a > b,
    "uge": lambda a, b: math.isnan(a) or math.isnan(b) or a >= b,
    "ult": lambda a, b: math.isnan(a) or math.isnan(b) or a < b,
    "ule": lambda a, b: math.isnan(a) or math.isnan(b) or a <= b,
    "une": lambda a, b: math.isnan(a) or math.isnan(b) or a != b,
    "uno": lambda a, b: math.isnan(a) or math.isnan(b), "true": lambda a, b: True,
}


@pytest.mark.parametrize("pred", sorted(CMPF_CASES))
def test_cmpf_all_predicates(pred):
    src = f"""
    func.func @f(%a: f32, %b: f32) -> i1 {{
      %r = arith.cmpf {pred}, %a, %b : f32
      return %r : i1
    }}"""
    nan = float("nan")
    for a, b in [(1.0, 2.0), (2.0, 1.0), (3.0, 3.0), (nan, 1.0), (1.0, nan), (nan, nan)]:
        assert bool(run(src, "f", a, b)) == CMPF_CASES[pred](a, b), (pred, a, b)


CASTS = """
func.func @f(%i8: i8, %i32: i32, %f: f64, %x: f32, %ix: index) -> (i32, i32, i8, f32, f32, i32, i32, i32, f32, f64, index, i64, i64) {
  %a = arith.extsi %i8 : i8 to i32
  %b = arith.extui %i8 : i8 to i32
  %c = arith.trunci %i32 : i32 to i8
  %d = arith.sitofp %i8 : i8 to f32
  %e = arith.uitofp %i8 : i8 to f32
  %g = arith.fptosi %f : f64 to i32
  %h = arith.fptoui %x : f32 to i32
  %k = arith.bitcast %x : f32 to i32
  %l = arith.truncf %f : f64 to f32
  %m = arith.extf %x : f32 to f64
  %n = arith.index_cast %i32 : i32 to index
  %o = arith.index_cast %ix : index to i64
  %p = arith.index_castui %i32 : i32 to index
  %q = arith.index_cast %p : index to i64
  return %a, %b, %c, %d, %e, %g, %h, %k, %l, %m, %n, %o, %q : i32, i32, i8, f32, f32, i32, i32, i32, f32, f64, index, i64, i64
}
"""


def test_casts():
    out = run(CASTS, "f", -3, 1000, -2.75, 3.5, 7)
    a, b, c, d, e, g, h, k, l, m, n, o, q = out
    assert (a, b, c) == (-3, 253, wrap(1000, 8))
    assert (d, e) == (-3.0, 253.0) and d.dtype == np.float32
    assert (g, h) == (-2, 3)
    assert k == np.array(3.5, np.float32).view(np.int32)
    assert l == np.float32(-2.75) and l.dtype == np.float32 and m.dtype == np.float64
    assert (n, o) == (1000, 7) and n.dtype == np.int64
    neg = run(CASTS, "f", -3, -1, -2.75, 3.5, 7)
    assert neg[10] == -1 and neg[12] == 2**32 - 1  # index_cast sign-extends, _castui zero-extends


MATH = """
func.func @f(%x: T, %y: T, %z: T) -> (T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T) {
  %0 = math.tanh %x : T
  %1 = math.exp %x : T
  %2 = math.log %y : T
  %3 = math.log1p %y : T
  %4 = math.expm1 %x : T
  %5 = math.sqrt %y : T
  %6 = math.rsqrt %y : T
  %7 = math.absf %x : T
  %8 = math.powf %y, %x : T
  %9 = math.sin %x : T
  %10 = math.cos %x : T
  %11 = math.erf %x : T
  %12 = math.floor %x : T
  %13 = math.ceil %x : T
  %14 = math.round %z : T
  %15 = math.copysign %y, %x : T
  %16 = math.fma %x, %y, %z : T
  %17 = arith.remf %y, %x : T
  %18 = arith.maximumf %x, %y : T
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18 : T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T
}
"""


@pytest.mark.parametrize("ty,dtype", [("f32", np.float32), ("f64", np.float64)])
def test_math_ops(ty, dtype):
    x, y, z = -1.25, 2.5, -2.5
    expected = [math.tanh(x), math.exp(x), math.log(y), math.log1p(y), math.expm1(x),
                math.sqrt(y), 1 / math.sqrt(y), abs(x), y**x, math.sin(x), math.cos(x),
                math.erf(x), math.floor(x), math.ceil(x), -3.0, math.copysign(y, x),
                x * y + z, math.fmod(y, x), max(x, y)]
    out = run(MATH.replace("T", ty), "f", x, y, z)
    assert all(v.dtype == dtype for v in out)
    np.testing.assert_allclose(np.array(out, np.float64), expected,
                               rtol=1e-6 if dtype == np.float32 else 1e-15)


def test_elementwise_arith_on_tensors_and_select():
    src = """
    func.func @f(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi1>, tensor<4xi32>) {
      %s = arith.addi %a, %b : tensor<4xi32>
      %c = arith.cmpi slt, %a, %b : tensor<4xi32>
      %m = arith.select %c, %a, %b : tensor<4xi1>, tensor<4xi32>
      return %s, %c, %m : tensor<4xi32>, tensor<4xi1>, tensor<4xi32>
    }"""
    a = np.array([2**31 - 1, -5, 3, 0], np.int32)
    b = np.array([1, 7, -3, 0], np.int32)
    s, c, m = run(src, "f", a, b)
    np.testing.assert_array_equal(s, [wrap(int(x) + int(y), 32) for x, y in zip(a, b)])
    assert c.dtype == np.bool_
    np.testing.assert_array_equal(c, [x < y for x, y in zip(a, b)])
    np.testing.assert_array_equal(m, [min(x, y) for x, y in zip(a, b)])


def test_constants():
    src = """
    func.func @f() -> (tensor<2x2xi32>, tensor<3xf32>, tensor<3xi1>, i1, index, f32) {
      %a = arith.constant dense<[[1, 2], [3, -4]]> : tensor<2x2xi32>
      %b = arith.constant dense<1.5> : tensor<3xf32>
      %c = arith.constant dense<[true, false, true]> : tensor<3xi1>
      %d = arith.constant true
      %e = arith.constant 42 : index
      %f = arith.constant 0.1 : f32
      return %a, %b, %c, %d, %e, %f : tensor<2x2xi32>, tensor<3xf32>, tensor<3xi1>, i1, index, f32
    }"""
    a, b, c, d, e, f = run(src, "f")
    np.testing.assert_array_equal(a, [[1, 2], [3, -4]])
    assert a.dtype == np.int32 and b.dtype == np.float32 and c.dtype == np.bool_
    np.testing.assert_array_equal(b, [1.5] * 3)
    np.testing.assert_array_equal(c, [True, False, True])
    assert d == np.bool_(True) and e == 42 and e.dtype == np.int64
    assert f == np.float32(0.1) and f.dtype == np.float32


# --------------------------------------------------------------------------- #
# scf
# --------------------------------------------------------------------------- #

SCF = """
func.func @f(%n: index, %start: i64) -> (f64, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f64) {
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %sq = arith.mulf %fi, %fi : f64
    %next = arith.addf %acc, %sq : f64
    scf.yield %next : f64
  }
  %one = arith.constant 1 : i64
  %steps0 = arith.constant 0 : i64
  %final:2 = scf.while (%x = %start, %k = %steps0) : (i64, i64) -> (i64, i64) {
    %go = arith.cmpi sgt, %x, %one : i64
    scf.condition(%go) %x, %k : i64, i64
  } do {
  ^bb0(%x: i64, %k: i64):
    %two = arith.constant 2 : i64
    %three = arith.constant 3 : i64
    %r = arith.remsi %x, %two : i64
    %odd = arith.cmpi ne, %r, %steps0 : i64
    %y = scf.if %odd -> (i64) {
      %t = arith.muli %x, %three : i64
      %u = arith.addi %t, %one : i64
      scf.yield %u : i64
    } else {
      %h = arith.divsi %x, %two : i64
      scf.yield %h : i64
    }
    %k1 = arith.addi %k, %one : i64
    scf.yield %y, %k1 : i64, i64
  }
  return %sum, %final#1 : f64, i64
}
"""


def test_scf_for_while_if():
    def collatz_steps(x):
        k = 0
        while x > 1:
            x = 3 * x + 1 if x % 2 else x // 2
            k += 1
        return k

    total, steps = run(SCF, "f", 10, 27)
    assert total == sum(float(i * i) for i in range(10))
    assert steps == collatz_steps(27) == 111


# --------------------------------------------------------------------------- #
# tensor
# --------------------------------------------------------------------------- #

TENSOR_OPS = """
func.func @f(%a: tensor<4x6xf32>, %i: index, %k: index) -> (tensor<?xf32>, tensor<4x6xf32>, index,
    tensor<2x2xf32>, tensor<24xf32>, tensor<2x2x6xf32>, tensor<6x4xf32>, tensor<5x9xf32>,
    tensor<8x6xf32>, tensor<3x?xindex>, tensor<?x6xf32>, tensor<2x12xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %row = tensor.extract_slice %a[%i, 1] [1, %k] [1, 2] : tensor<4x6xf32> to tensor<?xf32>
  %z = arith.constant dense<0.0> : tensor<2x2xf32>
  %ins = tensor.insert_slice %z into %a[1, %i] [2, 2] [2, 1] : tensor<2x2xf32> into tensor<4x6xf32>
  %d = tensor.dim %a, %c1 : tensor<4x6xf32>
  %v = tensor.extract %a[%c1, %i] : tensor<4x6xf32>
  %w = arith.constant 7.0 : f32
  %fe = tensor.from_elements %v, %w, %w, %v : tensor<2x2xf32>
  %flat = tensor.collapse_shape %a [[0, 1]] : tensor<4x6xf32> into tensor<24xf32>
  %ex = tensor.expand_shape %a [[0, 1], [2]] output_shape [2, 2, 6] : tensor<4x6xf32> into tensor<2x2x6xf32>
  %shape = arith.constant dense<[6, 4]> : tensor<2xindex>
  %re = tensor.reshape %a(%shape) : (tensor<4x6xf32>, tensor<2xindex>) -> tensor<6x4xf32>
  %pad = tensor.pad %a low[1, 2] high[0, 1] {
  ^bb0(%p: index, %q: index):
    %m = arith.constant -1.0 : f32
    tensor.yield %m : f32
  } : tensor<4x6xf32> to tensor<5x9xf32>
  %cat = tensor.concat dim(0) %a, %a : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %gen = tensor.generate %k {
  ^bb0(%p: index, %q: index):
    %m = arith.muli %p, %q : index
    tensor.yield %m : index
  } : tensor<3x?xindex>
  %cast = tensor.cast %a : tensor<4x6xf32> to tensor<?x6xf32>
  %two = tensor.extract_slice %a[0, 0] [4, 6] [1, 1] : tensor<4x6xf32> to tensor<4x6xf32>
  %col = tensor.collapse_shape %two [[0], [1]] : tensor<4x6xf32> into tensor<4x6xf32>
  %e2 = tensor.expand_shape %col [[0, 1], [2]] output_shape [2, 2, 6] : tensor<4x6xf32> into tensor<2x2x6xf32>
  %m2 = tensor.collapse_shape %e2 [[0], [1, 2]] : tensor<2x2x6xf32> into tensor<2x12xf32>
  return %row, %ins, %d, %fe, %flat, %ex, %re, %pad, %cat, %gen, %cast, %m2 : tensor<?xf32>,
    tensor<4x6xf32>, index, tensor<2x2xf32>, tensor<24xf32>, tensor<2x2x6xf32>, tensor<6x4xf32>,
    tensor<5x9xf32>, tensor<8x6xf32>, tensor<3x?xindex>, tensor<?x6xf32>, tensor<2x12xf32>
}
"""


def test_tensor_ops():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    i, k = 2, 3
    row, ins, d, fe, flat, ex, re, pad, cat, gen, cast, m2 = run(TENSOR_OPS, "f", a, i, k)
    np.testing.assert_array_equal(row, [a[i, 1 + 2 * j] for j in range(k)])
    want = a.copy()
    for r in range(2):
        for c in range(2):
            want[1 + 2 * r, i + c] = 0.0
    np.testing.assert_array_equal(ins, want)
    assert d == 6
    np.testing.assert_array_equal(fe, [[a[1, i], 7.0], [7.0, a[1, i]]])
    np.testing.assert_array_equal(flat, a.ravel())
    np.testing.assert_array_equal(ex, a.reshape(2, 2, 6))
    np.testing.assert_array_equal(re, a.reshape(6, 4))
    want_pad = np.full((5, 9), -1.0, np.float32)
    want_pad[1:5, 2:8] = a
    np.testing.assert_array_equal(pad, want_pad)
    np.testing.assert_array_equal(cat, np.concatenate([a, a]))
    np.testing.assert_array_equal(gen, [[p * q for q in range(k)] for p in range(3)])
    assert gen.dtype == np.int64
    np.testing.assert_array_equal(cast, a)
    np.testing.assert_array_equal(m2, a.reshape(2, 12))


def test_tensor_runtime_errors():
    with pytest.raises(ValueError, match="extract_slice.*out of bounds"):
        run(TENSOR_OPS, "f", np.zeros((4, 6), np.float32), 3, 4)
    src = """
    func.func @f(%a: tensor<?xf32>) -> tensor<3xf32> {
      %b = tensor.cast %a : tensor<?xf32> to tensor<3xf32>
      return %b : tensor<3xf32>
    }"""
    np.testing.assert_array_equal(run(src, "f", np.ones(3, np.float32)), np.ones(3))
    with pytest.raises(ValueError, match="tensor.cast"):
        run(src, "f", np.ones(4, np.float32))
    src = """
    func.func @f(%a: tensor<4xf32>, %i: index) -> f32 {
      %v = tensor.extract %a[%i] : tensor<4xf32>
      return %v : f32
    }"""
    with pytest.raises(ValueError, match="tensor.extract: index -1 out of bounds"):
        run(src, "f", np.ones(4, np.float32), -1)


def test_rank_reducing_extract_slice_in_a_scan_body():
    src = """
    func.func @f(%n: index, %m: tensor<?x3x5xf64>) -> tensor<?x5xf64> {
      %r = scan.scan steps(%n) sequences(%m : tensor<?x3x5xf64>) {
      ^bb0(%x: tensor<3x5xf64>):
        %c2 = arith.constant 2 : index
        %row = tensor.extract_slice %x[%c2, 0] [1, 5] [1, 1] : tensor<3x5xf64> to tensor<5xf64>
        scan.yield %row : tensor<5xf64>
      } -> (tensor<?x5xf64>)
      return %r : tensor<?x5xf64>
    }"""
    m = np.arange(4 * 15, dtype=np.float64).reshape(4, 3, 5)
    np.testing.assert_array_equal(run(src, "f", 4, m), m[:, 2, :])


# --------------------------------------------------------------------------- #
# linalg
# --------------------------------------------------------------------------- #

LINALG = """
func.func @f(%A: tensor<3x4xf64>, %B: tensor<4x2xf64>, %v: tensor<4xf64>, %u: tensor<3xf64>,
             %X: tensor<2x3x4xf64>, %Y: tensor<2x4x2xf64>)
    -> (tensor<3x2xf64>, tensor<3xf64>, tensor<4xf64>, tensor<f64>, tensor<2x3x2xf64>,
        tensor<4x3xf64>, tensor<3x4xf64>, tensor<3x4xf64>, tensor<3xf64>, tensor<3x4xf64>,
        tensor<3x4xf64>, tensor<3xf64>, tensor<3x4xf64>) {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %e32 = tensor.empty() : tensor<3x2xf64>
  %c32 = linalg.fill ins(%one : f64) outs(%e32 : tensor<3x2xf64>) -> tensor<3x2xf64>
  %mm = linalg.matmul ins(%A, %B : tensor<3x4xf64>, tensor<4x2xf64>) outs(%c32 : tensor<3x2xf64>) -> tensor<3x2xf64>
  %e3 = tensor.empty() : tensor<3xf64>
  %z3 = linalg.fill ins(%zero : f64) outs(%e3 : tensor<3xf64>) -> tensor<3xf64>
  %mv = linalg.matvec ins(%A, %v : tensor<3x4xf64>, tensor<4xf64>) outs(%z3 : tensor<3xf64>) -> tensor<3xf64>
  %e4 = tensor.empty() : tensor<4xf64>
  %z4 = linalg.fill ins(%zero : f64) outs(%e4 : tensor<4xf64>) -> tensor<4xf64>
  %vm = linalg.vecmat ins(%u, %A : tensor<3xf64>, tensor<3x4xf64>) outs(%z4 : tensor<4xf64>) -> tensor<4xf64>
  %s0 = tensor.from_elements %zero : tensor<f64>
  %dot = linalg.dot ins(%v, %v : tensor<4xf64>, tensor<4xf64>) outs(%s0 : tensor<f64>) -> tensor<f64>
  %e232 = tensor.empty() : tensor<2x3x2xf64>
  %z232 = linalg.fill ins(%zero : f64) outs(%e232 : tensor<2x3x2xf64>) -> tensor<2x3x2xf64>
  %bmm = linalg.batch_matmul ins(%X, %Y : tensor<2x3x4xf64>, tensor<2x4x2xf64>) outs(%z232 : tensor<2x3x2xf64>) -> tensor<2x3x2xf64>
  %e43 = tensor.empty() : tensor<4x3xf64>
  %tr = linalg.transpose ins(%A : tensor<3x4xf64>) outs(%e43 : tensor<4x3xf64>) permutation = [1, 0]
  %e34 = tensor.empty() : tensor<3x4xf64>
  %bc = linalg.broadcast ins(%v : tensor<4xf64>) outs(%e34 : tensor<3x4xf64>) dimensions = [0]
  %map = linalg.map ins(%A, %bc : tensor<3x4xf64>, tensor<3x4xf64>) outs(%e34 : tensor<3x4xf64>)
    (%x: f64, %y: f64, %o: f64) {
      %p = arith.mulf %x, %y : f64
      linalg.yield %p : f64
    }
  %red = linalg.reduce ins(%A : tensor<3x4xf64>) outs(%z3 : tensor<3xf64>) dimensions = [1]
    (%x: f64, %acc: f64) {
      %m = arith.maximumf %x, %acc : f64
      linalg.yield %m : f64
    }
  %add = linalg.add ins(%A, %bc : tensor<3x4xf64>, tensor<3x4xf64>) outs(%e34 : tensor<3x4xf64>) -> tensor<3x4xf64>
  %exp = linalg.exp ins(%A : tensor<3x4xf64>) outs(%e34 : tensor<3x4xf64>) -> tensor<3x4xf64>
  %rowsum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                            iterator_types = ["parallel", "reduction"]}
      ins(%A : tensor<3x4xf64>) outs(%u : tensor<3xf64>) {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    linalg.yield %s : f64
  } -> tensor<3xf64>
  %idx = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%tr : tensor<4x3xf64>) outs(%e34 : tensor<3x4xf64>) {
  ^bb0(%x: f64, %o: f64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ij = arith.muli %i, %j : index
    %ii = arith.index_cast %ij : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %r = arith.addf %x, %fi : f64
    linalg.yield %r : f64
  } -> tensor<3x4xf64>
  return %mm, %mv, %vm, %dot, %bmm, %tr, %bc, %map, %red, %add, %exp, %rowsum, %idx
    : tensor<3x2xf64>, tensor<3xf64>, tensor<4xf64>, tensor<f64>, tensor<2x3x2xf64>,
      tensor<4x3xf64>, tensor<3x4xf64>, tensor<3x4xf64>, tensor<3xf64>, tensor<3x4xf64>,
      tensor<3x4xf64>, tensor<3xf64>, tensor<3x4xf64>
}
"""


def test_linalg_ops():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((3, 4))
    B = rng.standard_normal((4, 2))
    v = rng.standard_normal(4)
    u = rng.standard_normal(3)
    X = rng.standard_normal((2, 3, 4))
    Y = rng.standard_normal((2, 4, 2))
    out = run(LINALG, "f", A, B, v, u, X, Y)
    mm, mv, vm, dot, bmm, tr, bc, map_, red, add, exp, rowsum, idx = out
    close = lambda got, want: np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)  # noqa
    close(mm, 1.0 + A @ B)  # matmul accumulates into its init
    close(mv, A @ v)
    close(vm, u @ A)
    assert dot.shape == () and isinstance(dot, np.ndarray)
    close(dot, v @ v)
    close(bmm, np.stack([X[b] @ Y[b] for b in range(2)]))
    np.testing.assert_array_equal(tr, A.T)
    np.testing.assert_array_equal(bc, np.stack([v] * 3))
    np.testing.assert_array_equal(map_, A * v)
    np.testing.assert_array_equal(red, [max(0.0, *A[i]) for i in range(3)])
    np.testing.assert_array_equal(add, A + v)
    np.testing.assert_array_equal(exp, np.exp(A))
    want = []
    for i in range(3):  # sequential accumulation, starting from the init u
        acc = u[i]
        for j in range(4):
            acc = acc + A[i, j]
        want.append(acc)
    np.testing.assert_array_equal(rowsum, want)
    np.testing.assert_array_equal(idx, A + np.outer(np.arange(3), np.arange(4)))


def test_linalg_generic_scalar_fallback_for_scf_if_in_body():
    src = """
    func.func @f(%a: tensor<5xi32>) -> tensor<5xi32> {
      %e = tensor.empty() : tensor<5xi32>
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                           iterator_types = ["parallel"]}
          ins(%a : tensor<5xi32>) outs(%e : tensor<5xi32>) {
      ^bb0(%x: i32, %o: i32):
        %zero = arith.constant 0 : i32
        %neg = arith.cmpi slt, %x, %zero : i32
        %y = scf.if %neg -> (i32) {
          %m = arith.subi %zero, %x : i32
          scf.yield %m : i32
        } else {
          scf.yield %x : i32
        }
        linalg.yield %y : i32
      } -> tensor<5xi32>
      return %r : tensor<5xi32>
    }"""
    a = np.array([-3, 4, 0, -2**31, 9], np.int32)
    np.testing.assert_array_equal(run(src, "f", a), [3, 4, 0, -2**31, 9])


def test_f32_matmul_accumulates_in_f32():
    src = """
    func.func @f(%a: tensor<1x3xf32>, %b: tensor<3x1xf32>) -> tensor<1x1xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<1x1xf32>
      %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1xf32>) -> tensor<1x1xf32>
      %m = linalg.matmul ins(%a, %b : tensor<1x3xf32>, tensor<3x1xf32>) outs(%c : tensor<1x1xf32>) -> tensor<1x1xf32>
      return %m : tensor<1x1xf32>
    }"""
    a = np.array([[1e8, 1.0, -1e8]], np.float32)
    b = np.ones((3, 1), np.float32)
    acc = np.float32(0)
    for k in range(3):
        acc = np.float32(acc + a[0, k] * b[k, 0])
    out = run(src, "f", a, b)
    assert out.dtype == np.float32
    assert out[0, 0] == acc == 0.0  # the 1.0 is lost in f32, kept in f64


def test_linalg_transposed_matmul_and_dynamic_shapes():
    src = """
    func.func @f(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>, %c: tensor<?x?xf64>) -> tensor<?x?xf64> {
      %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>,
                                          affine_map<(d0, d1, d2) -> (d2, d1)>,
                                          affine_map<(d0, d1, d2) -> (d0, d1)>]
          ins(%a, %b : tensor<?x?xf64>, tensor<?x?xf64>) outs(%c : tensor<?x?xf64>) -> tensor<?x?xf64>
      return %m : tensor<?x?xf64>
    }"""
    rng = np.random.default_rng(3)
    a, b, c = rng.standard_normal((5, 3)), rng.standard_normal((5, 2)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(run(src, "f", a, b, c), c + a.T @ b, rtol=1e-13)
    with pytest.raises(ValueError, match="loop dimension d2 is 5"):
        run(src, "f", a, rng.standard_normal((4, 2)), c)


def test_i1_arithmetic_is_modulo_two():
    src = """
    func.func @f(%a: i1, %b: i1) -> (i1, i1, i1, i1, i1, i1) {
      %s = arith.addi %a, %b : i1
      %m = arith.muli %a, %b : i1
      %x = arith.xori %a, %b : i1
      %lt = arith.cmpi slt, %a, %b : i1
      %ult = arith.cmpi ult, %a, %b : i1
      %mx = arith.maxsi %a, %b : i1
      return %s, %m, %x, %lt, %ult, %mx : i1, i1, i1, i1, i1, i1
    }"""
    for a in (False, True):
        for b in (False, True):
            s, m, x, lt, ult, mx = run(src, "f", a, b)
            sa, sb = -int(a), -int(b)  # i1 true is -1 when read as signed
            assert (s, m, x) == ((a + b) % 2 == 1, a and b, a != b)
            assert (lt, ult, mx) == (sa < sb, int(a) < int(b), max(sa, sb) == -1)
            assert all(isinstance(v, np.bool_) for v in (s, m, x, lt, ult, mx))


def test_ipowi_ctpop_affine_and_misc_ops():
    src = """
    #map = affine_map<(d0)[s0] -> (d0 * 3 + s0 floordiv 2)>
    func.func @f(%a: i32, %e: i32, %i: index, %j: index, %t: tensor<3xf32>) -> (i32, i32, index, index, tensor<3xf32>, f32) {
      %p = math.ipowi %a, %e : i32
      %c = math.ctpop %a : i32
      %ap = affine.apply #map(%i)[%j]
      %mn = affine.min affine_map<(d0, d1) -> (d0, d1, 4)>(%i, %j)
      %r = scf.execute_region -> tensor<3xf32> {
        %u = builtin.unrealized_conversion_cast %t : tensor<3xf32> to tensor<3xf32>
        scf.yield %u : tensor<3xf32>
      }
      %c0 = arith.constant 0 : index
      %x = tensor.extract %r[%c0] : tensor<3xf32>
      %f = math.fpowi %x, %e : f32, i32
      return %p, %c, %ap, %mn, %r, %f : i32, i32, index, index, tensor<3xf32>, f32
    }"""
    t = np.array([1.5, 2.0, 3.0], np.float32)
    p, c, ap, mn, r, f = run(src, "f", 3, 21, 5, 7, t)
    assert p == wrap(3**21, 32) and c == bin(3).count("1")
    assert ap == 5 * 3 + 7 // 2 and mn == 4
    np.testing.assert_array_equal(r, t)
    assert f.dtype == np.float32 and abs(f - 1.5**21) <= 1e-6 * 1.5**21
    assert run(src, "f", -2, 3, 0, 0, t)[0] == -8
    assert run(src, "f", 2, -1, 0, 0, t)[0] == 0  # 1/2 truncated
    assert run(src, "f", -1, -3, 0, 0, t)[0] == -1


def test_tensor_generate_falls_back_to_scalars_for_control_flow():
    src = """
    func.func @f(%n: index) -> tensor<?xi64> {
      %g = tensor.generate %n {
      ^bb0(%i: index):
        %c2 = arith.constant 2 : index
        %r = arith.remui %i, %c2 : index
        %c0 = arith.constant 0 : index
        %even = arith.cmpi eq, %r, %c0 : index
        %v = scf.if %even -> (i64) {
          %a = arith.constant 100 : i64
          scf.yield %a : i64
        } else {
          %ii = arith.index_cast %i : index to i64
          scf.yield %ii : i64
        }
        tensor.yield %v : i64
      } : tensor<?xi64>
      return %g : tensor<?xi64>
    }"""
    np.testing.assert_array_equal(run(src, "f", 5), [100, 1, 100, 3, 100])
    assert run(src, "f", 0).shape == (0,)


def test_no_results_gives_an_empty_tuple():
    assert run("func.func @f() { return }", "f") == ()


@settings(max_examples=25, deadline=None)
@given(taps=st.lists(st.integers(-4, -1), min_size=1, max_size=3, unique=True).map(sorted),
       n=st.integers(0, 6), keep=st.integers(0, 7))
def test_mitsot_taps_and_keep_property(taps, n, keep):
    K = -min(taps)
    args = ", ".join(f"%a{j}: i64" for j in range(len(taps)))
    body = ["%y0 = arith.constant 1 : i64"]
    for j in range(len(taps)):
        body.append(f"%w{j} = arith.constant {j + 2} : i64")
        body.append(f"%m{j} = arith.muli %a{j}, %w{j} : i64")
        body.append(f"%y{j + 1} = arith.addi %y{j}, %m{j} : i64")
    rows = f"{keep}" if keep else "?"
    src = f"""
    func.func @f(%n: index, %init: tensor<{K}xi64>) -> tensor<{rows}xi64> {{
      %r = scan.scan steps(%n) mitsot(%init[{", ".join(map(str, taps))}] : tensor<{K}xi64>)
          keep [{keep}] {{
      ^bb0({args}):
        {chr(10).join(body)}
        scan.yield %y{len(taps)} : i64
      }} -> (tensor<{rows}xi64>)
      return %r : tensor<{rows}xi64>
    }}"""
    init = [3 * i - 2 for i in range(K)]
    x = {i - K: v for i, v in enumerate(init)}  # x[-K] .. x[-1]
    for t in range(n):
        x[t] = 1 + sum((j + 2) * x[t + k] for j, k in enumerate(taps))
    history = [x[i] for i in range(-K, n)]
    if keep:
        want = ([0] * keep + history)[-keep:]
    else:
        want = history[K:]
    np.testing.assert_array_equal(run(src, "f", n, np.array(init, np.int64)), want)


NAMED_UNARY = {
    "exp": np.exp, "log": np.log, "abs": np.abs, "ceil": np.ceil, "floor": np.floor,
    "negf": np.negative, "reciprocal": lambda x: 1.0 / x, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "square": lambda x: x * x, "tanh": np.tanh,
    "erf": lambda x: np.array([math.erf(v) for v in x]),
}
NAMED_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "max": np.maximum, "min": np.minimum, "powf": np.power,
}


@pytest.mark.parametrize("name", sorted(NAMED_UNARY) + sorted(NAMED_BINARY))
def test_linalg_named_elementwise_ops(name):
    binary = name in NAMED_BINARY
    ins = "%a, %b : tensor<5xf64>, tensor<5xf64>" if binary else "%a : tensor<5xf64>"
    src = f"""
    func.func @f(%a: tensor<5xf64>, %b: tensor<5xf64>) -> tensor<5xf64> {{
      %e = tensor.empty() : tensor<5xf64>
      %r = linalg.{name} ins({ins}) outs(%e : tensor<5xf64>) -> tensor<5xf64>
      return %r : tensor<5xf64>
    }}"""
    a = np.array([0.25, 1.5, 2.0, 3.75, 0.5])
    b = np.array([2.0, -1.0, 0.5, 1.25, 3.0])
    want = NAMED_BINARY[name](a, b) if binary else NAMED_UNARY[name](a)
    np.testing.assert_allclose(run(src, "f", a, b), want, rtol=1e-15)


def test_linalg_elementwise_and_select():
    src = """
    func.func @f(%c: tensor<4xi1>, %a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
      %e = tensor.empty() : tensor<4xi32>
      %s = linalg.select ins(%c, %a, %b : tensor<4xi1>, tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi32>) -> tensor<4xi32>
      %d = linalg.elementwise kind=#linalg.elementwise_kind<add> ins(%a, %b : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi32>) -> tensor<4xi32>
      return %s, %d : tensor<4xi32>, tensor<4xi32>
    }"""
    c = np.array([True, False, False, True])
    a = np.array([1, 2, 3, 2**31 - 1], np.int32)
    b = np.array([10, 20, 30, 1], np.int32)
    s, d = run(src, "f", c, a, b)
    np.testing.assert_array_equal(s, np.where(c, a, b))
    np.testing.assert_array_equal(d, [11, 22, 33, -(2**31)])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["erf", "erfc", "arcsinh", "arccosh", "arctanh"])
def test_the_builders_c_library_calls_run(name, dtype):
    # The builder computes these with calls of libm (@erf, @erff, ...):
    # external declarations the interpreter evaluates itself, with C's
    # results outside their domains.
    import mlir_scan as theano
    from mlir_scan import tensor as T

    x = T.vector("x", dtype=dtype)
    f = theano.function([x], getattr(T, name)(x))
    v = np.array([-2, -1, -0.5, 0, 0.3, 0.99, 1, 1.5, 3, np.inf, -np.inf, np.nan], dtype)
    got = np.asarray(reference.run(f.ir, "f", v))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, f(v), rtol=2e-7 if dtype == "float32" else 1e-15, equal_nan=True)
