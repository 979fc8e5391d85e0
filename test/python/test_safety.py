"""Memory and thread safety of compiled programs (issue 10, SPEC §7).

Every case that used to crash the process runs in a child process here, so a
crash fails a test instead of killing pytest: the child prints what the call
raised (or returned) and the parent checks it and the child's exit status.
Expected values are NumPy computations or the exception types SPEC §7 names,
never output of the code under test.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import mlir_scan
import mlir_scan as theano
from mlir_scan import tensor as T

_PRELUDE = """
import numpy as np, mlir_scan, mlir_scan as theano
from mlir_scan import tensor as T

def report(call):
    try:
        value = call()
    except Exception as exc:  # what a user would see
        print(f"RAISED {type(exc).__name__}: {exc}", flush=True)
    else:
        print(f"RETURNED {np.asarray(value).tolist()!r}", flush=True)
"""


def run_child(code: str, timeout: float = 120) -> list[str]:
    """Runs `code` (after _PRELUDE) in a fresh interpreter; its report lines.

    A crash (signal, abort) or a non-zero exit fails the calling test.
    """
    proc = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"child process died (exit status {proc.returncode}):\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    return [line for line in proc.stdout.splitlines() if line.startswith(("RAISED", "RETURNED"))]


# ---------------------------------------------------------------------------
# 1. Failed allocations raise MemoryError; 2. size arithmetic never wraps.
# ---------------------------------------------------------------------------

_HUGE_SCANS = """
p = mlir_scan.compile('''
func.func @fib(%n: index, %x0: tensor<2xf64>) -> tensor<?xf64> {
  %r = scan.scan steps(%n) mitsot(%x0[-2, -1] : tensor<2xf64>) {
  ^bb0(%a: f64, %b: f64):
    %s = arith.addf %a, %b : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
func.func @static_huge(%x0: f64) -> tensor<1000000000000xf64> {
  %n = arith.constant 1000000000000 : index
  %r = scan.scan steps(%n) sitsot(%x0 : f64) {
  ^bb0(%a: f64):
    scan.yield %a : f64
  } -> (tensor<1000000000000xf64>)
  return %r : tensor<1000000000000xf64>
}
func.func @keep_huge(%n: index, %x0: f64) -> tensor<9223372036854775807xf64> {
  %r = scan.scan steps(%n) sitsot(%x0 : f64) keep [9223372036854775807] {
  ^bb0(%a: f64):
    scan.yield %a : f64
  } -> (tensor<9223372036854775807xf64>)
  return %r : tensor<9223372036854775807xf64>
}
func.func @rows(%n: index, %x0: tensor<1024xf64>) -> tensor<?x1024xf64> {
  %r = scan.scan steps(%n) sitsot(%x0 : tensor<1024xf64>) {
  ^bb0(%a: tensor<1024xf64>):
    scan.yield %a : tensor<1024xf64>
  } -> (tensor<?x1024xf64>)
  return %r : tensor<?x1024xf64>
}
func.func @stack(%n: index) -> f64 {
  %a = memref.alloca(%n) : memref<?xf64>
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f64
  memref.store %z, %a[%c0] : memref<?xf64>
  %v = memref.load %a[%c0] : memref<?xf64>
  return %v : f64
}
func.func @empty(%n: index) -> tensor<?x3xf64> {
  %e = tensor.empty(%n) : tensor<?x3xf64>
  %z = arith.constant 0.0 : f64
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<?x3xf64>) -> tensor<?x3xf64>
  return %f : tensor<?x3xf64>
}
''')
"""


@pytest.mark.parametrize("call, expected", [
    # a mitsot scan with n_steps = 10**12: 8 TB of rows
    ("p.fib(10**12, np.ones(2))", r"RAISED MemoryError: out of memory: cannot allocate 8000000000\d* bytes"),
    # a static 10**12-row result
    ("p.static_huge(1.0)", r"RAISED MemoryError: out of memory: cannot allocate 8000000000\d* bytes"),
    # keep [2**63 - 1]: the ring buffer's byte count does not fit in 64 bits
    ("p.keep_huge(3, 1.0)", r"RAISED MemoryError: cannot allocate a buffer of shape \(9223372036854775807\) "
                            r"of 8-byte elements: its size does not fit"),
    # n_steps * 8 KiB rows wraps around 2**64 (2**51 rows)
    ("p.rows(2**51, np.zeros(1024))", r"RAISED MemoryError: cannot allocate a buffer of shape "
                                      r"\(2251799813685248, 1024\)"),
    # a stack allocation of 80 MB would overflow the thread's stack
    ("p.stack(10**7)", r"RAISED MemoryError: cannot allocate a buffer of shape \(10000000\) of 8-byte "
                       r"elements on the stack: more than 1048576 bytes"),
    # a negative size reaches tensor.empty (raw IR)
    ("p.empty(-5)", r"RAISED ValueError: cannot allocate a buffer of shape \(-5, 3\): negative size"),
])
def test_huge_and_negative_sizes_raise(call, expected):
    lines = run_child(_HUGE_SCANS + f"report(lambda: {call})\n"
                      # the process goes on, and the program still works
                      "report(lambda: p.fib(5, np.array([0.0, 1.0])))\n")
    assert re.match(expected, lines[0]), lines
    assert lines[1] == "RETURNED [1.0, 2.0, 3.0, 5.0, 8.0]"


def test_builder_programs_with_huge_sizes_raise_memory_error():
    lines = run_child("""
    n = T.lscalar()
    report(lambda: theano.function([n], T.zeros((n, n)).sum())(10**6))
    report(lambda: theano.function([n], T.zeros((n, n)).sum())(30))
    # the README's A**k keeping every row, k = 10**12
    k = T.lscalar("k"); A = T.vector("A")
    result, updates = theano.scan(fn=lambda p, A: p * A, outputs_info=T.ones_like(A),
                                  non_sequences=A, n_steps=k)
    every_row = theano.function([A, k], result, updates=updates)
    report(lambda: every_row(np.arange(10.0), 10**12))
    report(lambda: every_row(np.arange(3.0), 2))
    """)
    assert re.fullmatch(r"RAISED MemoryError: out of memory: cannot allocate 8000000000\d* bytes", lines[0])
    assert lines[1] == "RETURNED 0.0"
    assert re.fullmatch(r"RAISED MemoryError: .*", lines[2]), lines
    assert lines[3] == f"RETURNED {np.array([[0.0, 1.0, 2.0], [0.0, 1.0, 4.0]]).tolist()!r}"


def test_a_failed_call_frees_what_it_allocated():
    """The call allocates a 128 MiB result, then fails allocating the next:
    the first block is freed with the failed call, so 40 failed calls do not
    grow the process by 5 GiB."""
    lines = run_child("""
    p = mlir_scan.compile('''
    func.func @two(%n: index, %m: index) -> (tensor<?xf64>, tensor<?xf64>) {
      %z = arith.constant 1.0 : f64
      %e1 = tensor.empty(%n) : tensor<?xf64>
      %a = linalg.fill ins(%z : f64) outs(%e1 : tensor<?xf64>) -> tensor<?xf64>
      %e2 = tensor.empty(%m) : tensor<?xf64>
      %b = linalg.fill ins(%z : f64) outs(%e2 : tensor<?xf64>) -> tensor<?xf64>
      return %a, %b : tensor<?xf64>, tensor<?xf64>
    }''')
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    report(lambda: p.two(2**24, 2**60))
    before = rss()
    for _ in range(40):
        try:
            p.two(2**24, 2**60)
        except MemoryError:
            pass
    print(f"RETURNED {(rss() - before) // 2**20}", flush=True)
    report(lambda: [a.sum() for a in p.two(3, 2)])
    """)
    assert lines[0].startswith("RAISED MemoryError")
    grown_mib = int(lines[1].split()[1])
    assert grown_mib < 512, f"{grown_mib} MiB kept by 40 failed calls"
    assert lines[2] == "RETURNED [3.0, 2.0]"


_UNTIL = """
p = mlir_scan.compile('''
func.func @to5(%n: index) -> (tensor<?xf64>, tensor<?xf64>) {
  %x0 = arith.constant 0.0 : f64
  %r:2 = scan.scan steps(%n) until sitsot(%x0 : f64) {
  ^bb0(%a: f64):
    %one = arith.constant 1.0 : f64
    %five = arith.constant 5.0 : f64
    %s = arith.addf %a, %one : f64
    %stop = arith.cmpf oge, %s, %five : f64
    scan.yield %s, %s, %stop : f64, f64, i1
  } -> (tensor<?xf64>, tensor<?xf64>)
  return %r#0, %r#1 : tensor<?xf64>, tensor<?xf64>
}''')
"""


@pytest.mark.parametrize("n_steps", [2**61 + 1, 2**61, 2**63 - 1, 10**12, 6, 5])
def test_until_scans_never_trust_a_huge_n_steps(n_steps):
    """An until scan that stops after 5 steps, with a full sitsot and nitsot
    output: the buffers grow with the steps taken, whatever n_steps says."""
    lines = run_child(_UNTIL + f"report(lambda: p.to5({n_steps}))\n")
    assert lines == [f"RETURNED {[[1.0, 2.0, 3.0, 4.0, 5.0]] * 2!r}"]


def test_until_buffers_grow_past_their_first_size():
    """Outputs of until scans start at ~1 MiB of rows and double: runs past
    that size (scalar rows, tensor rows, a mitsot reading rows written before
    the buffer moved) give NumPy's numbers."""
    prog = mlir_scan.compile("""
    func.func @count(%n: index, %lim: i64) -> tensor<?xi64> {
      %z = arith.constant 0 : i64
      %r = scan.scan steps(%n) until sitsot(%z : i64) nonsequences(%lim : i64) {
      ^bb0(%a: i64, %l: i64):
        %one = arith.constant 1 : i64
        %s = arith.addi %a, %one : i64
        %stop = arith.cmpi sge, %s, %l : i64
        scan.yield %s, %stop : i64, i1
      } -> (tensor<?xi64>)
      return %r : tensor<?xi64>
    }
    func.func @rows(%n: index, %lim: f64, %x0: tensor<2x3xf64>) -> (tensor<?x3xf64>, tensor<?x3xf64>) {
      %r:2 = scan.scan steps(%n) until mitsot(%x0[-2, -1] : tensor<2x3xf64>) nonsequences(%lim : f64) {
      ^bb0(%a: tensor<3xf64>, %b: tensor<3xf64>, %l: f64):
        %e = tensor.empty() : tensor<3xf64>
        %d = linalg.sub ins(%b, %a : tensor<3xf64>, tensor<3xf64>) outs(%e : tensor<3xf64>) -> tensor<3xf64>
        %e2 = tensor.empty() : tensor<3xf64>
        %u = linalg.add ins(%d, %b : tensor<3xf64>, tensor<3xf64>) outs(%e2 : tensor<3xf64>) -> tensor<3xf64>
        %c0 = arith.constant 0 : index
        %v = tensor.extract %u[%c0] : tensor<3xf64>
        %stop = arith.cmpf oge, %v, %l : f64
        scan.yield %u, %u, %stop : tensor<3xf64>, tensor<3xf64>, i1
      } -> (tensor<?x3xf64>, tensor<?x3xf64>)
      return %r#0, %r#1 : tensor<?x3xf64>, tensor<?x3xf64>
    }""")
    # 1 MiB of i64 rows is 131072 rows.
    for n, lim in [(10**15, 300_001), (300_000, 10**9), (131_072, 10**9), (131_073, 131_073), (0, 3)]:
        np.testing.assert_array_equal(prog.count(n, lim), np.arange(1, min(n, lim) + 1))
    x0 = np.array([[0.0, 10.0, 20.0], [1.0, 11.0, 21.0]])
    # 1 MiB of 3 x f64 rows is 43690 rows.
    for n, lim in [(10**12, 200_000.0), (150_000, 1e9), (43_690, 1e9), (43_691, 1e9)]:
        a, b = prog.rows(n, lim, x0)
        steps = min(n, int(lim) - 1)
        expected = x0[1] + np.arange(1, steps + 1)[:, None]
        np.testing.assert_array_equal(a, expected)
        np.testing.assert_array_equal(b, expected)


# ---------------------------------------------------------------------------
# 4. Raw IR with mismatched run-time shapes or bounds: ValueError naming the op.
# ---------------------------------------------------------------------------

_RAW = """
func.func @scale(%xs: tensor<?x?xf64>, %w: tensor<?xf64>, %h0: tensor<?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x?xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%h0 : tensor<?xf64>) nonsequences(%w : tensor<?xf64>) {
  ^bb0(%row: tensor<?xf64>, %h: tensor<?xf64>, %ww: tensor<?xf64>):
    %m = arith.mulf %row, %ww : tensor<?xf64>
    %s = arith.addf %m, %h : tensor<?xf64>
    scan.yield %s : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}
func.func @pick(%v: tensor<?xf64>, %i: index) -> f64 {
  %x = tensor.extract %v[%i] : tensor<?xf64>
  return %x : f64
}
func.func @window(%v: tensor<?xf64>, %o: index, %s: index) -> tensor<?xf64> {
  %w = tensor.extract_slice %v[%o] [%s] [1] : tensor<?xf64> to tensor<?xf64>
  return %w : tensor<?xf64>
}
"""


@pytest.mark.parametrize("call, line, what", [
    ("p.scale(np.ones((4, 3)), np.ones(2), np.zeros(3))", 7, "dimension #0 of input/output operand #1 is incompatible"),
    ("p.scale(np.ones((4, 3)), np.ones(5), np.zeros(3))", 7, "dimension #0 of input/output operand #1 is incompatible"),
    ("p.scale(np.ones((4, 3)), np.ones(3), np.zeros(2))", 8, "dimension #0 of input/output operand #1 is incompatible"),
    ("p.pick(np.ones(3), 3)", 14, "out-of-bounds access"),
    ("p.pick(np.ones(3), -1)", 14, "out-of-bounds access"),
    ("p.window(np.ones(3), 2, 2)", 18, "slice out of bounds along dimension 0"),
    ("p.window(np.ones(3), 0, -1)", 18, "slice out of bounds along dimension 0"),
])
def test_raw_ir_with_mismatched_shapes_raises_naming_the_op(call, line, what):
    lines = run_child(f"p = mlir_scan.compile('''{_RAW}''')\nreport(lambda: {call})\n")
    assert lines[0].startswith(f"RAISED ValueError: {what}"), lines
    assert f"(line {line}, column" in lines[0], lines


_ROWS = """
func.func @state(%n: index, %h0: tensor<?xf64>, %other: tensor<?xf64>) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<?xf64>) nonsequences(%other : tensor<?xf64>) {
  ^bb0(%h: tensor<?xf64>, %o: tensor<?xf64>):
    scan.yield %o : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}
func.func @grad(%n: index, %buf: tensor<?x?xf64>, %other: tensor<?xf64>) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) mitmot(%buf[0] -> [1] : tensor<?x?xf64>) nonsequences(%other : tensor<?xf64>) {
  ^bb0(%a: tensor<?xf64>, %o: tensor<?xf64>):
    scan.yield %o : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}
"""


@pytest.mark.parametrize("call, expected", [
    # a state yielded longer than its init: would be written past its row
    ("p.state(3, np.zeros(2), np.arange(1000.0))", "result #0: a step yielded a row of size 1000 where "
                                                   "the result's rows have size 2"),
    ("p.state(3, np.zeros(5), np.arange(2.0))", "result #0: a step yielded a row of size 2 where the "
                                                "result's rows have size 5"),
    ("p.grad(2, np.zeros((3, 2)), np.ones(700))", "result #0: a step yielded a row of size 700"),
])
def test_rows_of_another_size_than_the_result_raise(call, expected):
    lines = run_child(f"p = mlir_scan.compile({_ROWS!r})\nreport(lambda: {call})\n"
                      "report(lambda: p.state(2, np.zeros(2), np.ones(2)))\n")
    assert lines[0].startswith(f"RAISED ValueError: scan: {expected}"), lines
    assert lines[1] == "RETURNED [[1.0, 1.0], [1.0, 1.0]]"


def test_raw_ir_checks_accept_valid_programs_and_can_be_turned_off():
    p = mlir_scan.compile(_RAW)
    xs, w, h0 = np.arange(12.0).reshape(4, 3), np.array([1.0, 2.0, 3.0]), np.ones(3)
    expected, h = [], h0
    for row in xs:
        h = row * w + h
        expected.append(h)
    np.testing.assert_array_equal(p.scale(xs, w, h0), expected)
    assert p.pick(np.arange(3.0), 2) == 2.0
    v = np.arange(5.0)
    np.testing.assert_array_equal(p.window(v, 1, 3), v[1:4])
    for offset in (0, 5):  # empty slices are valid anywhere, the end included
        assert p.window(v, offset, 0).shape == (0,)
    unchecked = mlir_scan.compile(_RAW, checks=False)
    np.testing.assert_array_equal(unchecked.scale(xs, w, h0), expected)
    assert "cf.assert" not in unchecked.ir("scf") and "cf.assert" in p.ir("scf")


# ---------------------------------------------------------------------------
# 5. Bad options and unresolvable programs: errors at compile time.
# ---------------------------------------------------------------------------

CUMSUM = """
func.func @cumsum(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%x0 : f64) {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
"""


@pytest.mark.parametrize("level", [7, -1, 4, 2.0, True, "3"])
def test_bad_opt_level_is_a_value_error(level):
    lines = run_child(f"report(lambda: mlir_scan.compile('''{CUMSUM}''', opt_level={level!r}))\n")
    assert lines[0].startswith("RAISED ValueError: compile: opt_level must be 0, 1, 2 or 3"), lines


def test_undefined_external_function_is_named_at_compile_time():
    lines = run_child("""
    report(lambda: mlir_scan.compile('''
    func.func private @helper_from_nowhere(f64) -> f64
    func.func @f(%x: f64) -> f64 {
      %y = func.call @helper_from_nowhere(%x) : (f64) -> f64
      return %y : f64
    }'''))
    # libm functions resolve from the process: fine
    p = mlir_scan.compile('''
    func.func private @fabs(f64) -> f64
    func.func @f(%x: f64) -> f64 {
      %y = func.call @fabs(%x) : (f64) -> f64
      return %y : f64
    }''')
    report(lambda: p.f(-2.5))
    """)
    assert lines[0].startswith("RAISED ValueError: compile: the module calls external function(s) "
                               "@helper_from_nowhere"), lines
    assert lines[1] == "RETURNED 2.5"


def test_argument_conversion_errors():
    p = mlir_scan.compile(CUMSUM)
    with pytest.raises(ValueError, match=r"argument #1 of @cumsum \(f64\): the integer 1000000.*too large for f64"):
        p.cumsum(np.ones(2), 10**400)
    np.testing.assert_array_equal(p.cumsum(np.ones(2), 2**70), [2.0**70 + 1, 2.0**70 + 2])
    for scalar in (np.float64(3.0), np.array(3.0), 3.0):
        with pytest.raises(ValueError, match=r"argument #0 of @cumsum .*: expected rank 1, got .* of shape \(\)"):
            p.cumsum(scalar, 0.0)
    with pytest.raises(TypeError, match=r"argument #0 of @cumsum .*: cannot convert a list of Python objects to float64"):
        p.cumsum([10**400], 0.0)


# ---------------------------------------------------------------------------
# 6. result[-1] of the README's A**k with a symbolic k runs in constant memory.
# ---------------------------------------------------------------------------

def test_last_value_of_a_symbolic_length_scan_runs_in_constant_memory():
    """k = 10**7 steps over 10 elements: keeping every row is 800 MB; the
    call's peak resident memory (reset with /proc/self/clear_refs, as
    `bench/run.py --memory` does) must not grow with k."""
    lines = run_child("""
    k = T.lscalar("k"); A = T.vector("A")
    result, updates = theano.scan(fn=lambda p, A: p * A, outputs_info=T.ones_like(A),
                                  non_sequences=A, n_steps=k)
    power = theano.function(inputs=[A, k], outputs=result[-1], updates=updates)
    a = np.full(10, 1.0000001)
    power(a, 3)
    def status(field):
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))
    with open("/proc/self/clear_refs", "w") as c:
        c.write("5")
    before = status("VmRSS")
    value = power(a, 10**7)
    print(f"RETURNED {status('VmHWM') - before}", flush=True)
    report(lambda: float(value[0]))
    report(lambda: power(a, 0))
    print("KEEP", "keep [1]" in power.program.ir("optimized"), flush=True)
    """, timeout=300)
    growth_kib = int(lines[0].split()[1])
    assert growth_kib < 16 * 1024, f"the call grew the process by {growth_kib} KiB"
    np.testing.assert_allclose(float(lines[1].split()[1]), 1.0000001 ** 10**7, rtol=1e-6)
    # zero steps: result has no rows, result[-1] is an IndexError as in NumPy
    assert lines[2].startswith("RAISED IndexError"), lines


# ---------------------------------------------------------------------------
# 3. Threads: errors are per call; results equal the single-threaded ones.
# ---------------------------------------------------------------------------

def _stress_programs():
    raw = mlir_scan.compile(CUMSUM + _UNTIL.split("'''")[1])
    x = T.dvector("x")
    i = T.lscalar("i")
    y, _ = theano.scan(lambda v, acc: acc + v, sequences=x, outputs_info=T.constant(0.0))
    tap = theano.function([x, i], y[i] * 2)
    n = T.lscalar("n")
    zeros = theano.function([n], T.zeros((n, 3)).sum())
    return raw, tap, zeros


def _stress_cases(rng):
    """(callable, expected) pairs: a value, or (exception type, message regex)."""
    raw, tap, zeros = _stress_programs()
    cases = []
    for _ in range(12):
        xs = rng.standard_normal(int(rng.integers(1, 40)))
        cases.append((lambda xs=xs: raw.cumsum(xs, 1.0), 1.0 + np.cumsum(xs)))
        k = int(rng.integers(-len(xs), len(xs)))
        cases.append((lambda xs=xs, k=k: tap(xs, k), 2 * np.cumsum(xs)[k]))
        bad = len(xs) + int(rng.integers(0, 5))
        cases.append((lambda xs=xs, bad=bad: tap(xs, bad),
                      (IndexError, rf"index {bad} is out of bounds for axis 0 with size {len(xs)}")))
        cases.append((lambda xs=xs, bad=bad: tap(xs, -bad - 1),
                      (IndexError, rf"index {-bad - 1} is out of bounds for axis 0 with size {len(xs)}")))
    cases.append((lambda: raw.cumsum(np.ones(3), 0.5), np.array([1.5, 2.5, 3.5])))
    long = rng.standard_normal(200_000)  # ~0.3 ms of native work, GIL released
    cases.append((lambda: raw.cumsum(long, 0.0), np.cumsum(long)))
    cases.append((lambda: raw.to5(10**15), (np.arange(1.0, 6.0), np.arange(1.0, 6.0))))
    cases.append((lambda: raw.to5(-2), (ValueError, r"n_steps is -2, must be >= 0")))
    cases.append((lambda: zeros(7), 0.0))
    cases.append((lambda: zeros(10**12), (MemoryError, r"out of memory")))
    cases.append((lambda: zeros(-3), (ValueError, r"negative")))
    return cases


def _outcome(call):
    try:
        return ("value", call())
    except Exception as exc:  # noqa: BLE001 - recorded and compared
        return ("error", type(exc), str(exc))


def _agrees(outcome, expected) -> bool:
    if isinstance(expected, tuple) and len(expected) == 2 and isinstance(expected[0], type):
        kind, pattern = expected
        return outcome[0] == "error" and outcome[1] is kind and re.search(pattern, outcome[2]) is not None
    if outcome[0] != "value":
        return False
    got = outcome[1]
    if isinstance(expected, tuple):
        return len(got) == len(expected) and all(np.allclose(g, e) for g, e in zip(got, expected))
    return np.shape(got) == np.shape(expected) and np.allclose(got, expected)


def _stress(threads: int = 8, repeats: int = 40) -> list[str]:
    """Runs every stress case `repeats` times in each of `threads` threads, in
    random interleavings; returns the disagreements (at most 10)."""
    rng = np.random.default_rng(0)
    cases = _stress_cases(rng)
    for call, expected in cases:  # the single-threaded answers first
        assert _agrees(_outcome(call), expected), expected
    failures: list[str] = []
    calls = [0]
    lock = threading.Lock()

    def worker(seed: int) -> None:
        order = np.random.default_rng(seed).permutation(np.repeat(np.arange(len(cases)), repeats))
        for k in order:
            call, expected = cases[k]
            outcome = _outcome(call)
            with lock:
                calls[0] += 1
                if not _agrees(outcome, expected) and len(failures) < 10:
                    failures.append(f"case {k}: got {outcome!r}, expected {expected!r}")

    pool = [threading.Thread(target=worker, args=(seed,)) for seed in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert calls[0] == threads * repeats * len(cases)
    return failures


def test_many_threads_get_exactly_the_single_threaded_results():
    """8 threads call three programs (raw IR, builder with IndexError checks,
    allocation failures) with valid and invalid arguments, interleaved: every
    result and every error is the one the call should give. (Before the
    per-call frames, valid calls raised other threads' errors and invalid
    ones returned empty results.) In a child process: this file as a script."""
    proc = subprocess.run([sys.executable, __file__, "--stress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip() == "no disagreement", proc.stdout


if __name__ == "__main__" and sys.argv[1:] == ["--stress"]:
    found = _stress()
    print("\n".join(found) if found else "no disagreement")
