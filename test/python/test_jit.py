"""The JIT of CPU programs (python/capi/ScanJIT.cpp).

A large module is split into parts that LLVM optimizes and compiles on
several threads at once (``MLIR_SCAN_NUM_THREADS`` of them); the parts are
linked in one JIT. How many parts there were must not change any result.
The thread count is read once per process, so each count runs in a child.

A large module is also compiled in two tiers (quick code at -O0 first, the
optimized code on a background thread): which tier a call runs in, or
whether it restarted when the optimized code arrived, must not change any
bit of a result either.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import gc
import importlib
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import mlir_scan
from mlir_scan import _registration
from mlir_scan import tensor as T

# The RNN and its gradient (d/dW of the sum of the states), large enough to be
# split: the forward and backward loops, their pushed-out matmuls.
_CHILD = textwrap.dedent("""
    import json
    import numpy as np
    import mlir_scan as theano
    from mlir_scan import tensor as T

    xs, h0 = T.dmatrix("xs"), T.dvector("h0")
    W, U, b = T.dmatrix("W"), T.dmatrix("U"), T.dvector("b")
    hs, _ = theano.scan(lambda x, h, W, U, b: T.tanh(T.dot(h, W) + T.dot(x, U) + b),
                        sequences=xs, outputs_info=h0, non_sequences=[W, U, b])
    cost = hs.sum()
    fn = theano.function([xs, h0, W, U, b], [hs, T.grad(cost, W)])
    rng = np.random.default_rng(7)
    args = (rng.standard_normal((37, 11)), rng.standard_normal(13),
            rng.standard_normal((13, 13)) / 4, rng.standard_normal((11, 13)) / 4,
            rng.standard_normal(13) / 4)
    states, grad = fn(*args)
    print(json.dumps({"parts": fn.program.wait()._engine.parts, "states": states.tolist(),
                      "grad": grad.tolist(), "args": [a.tolist() for a in args]}))
""")


def _run_child(threads: int) -> dict:
    env = dict(os.environ, MLIR_SCAN_NUM_THREADS=str(threads))
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _bptt(xs, h0, W, U, b):
    """States and d/dW sum(states) of the RNN, in NumPy."""
    hs = []
    h = h0
    for x in xs:
        h = np.tanh(h @ W + x @ U + b)
        hs.append(h)
    grad = np.zeros_like(W)
    carry = np.zeros_like(h0)
    for t in reversed(range(len(xs))):
        delta = (1.0 + carry) * (1.0 - hs[t] ** 2)
        grad += np.outer(hs[t - 1] if t > 0 else h0, delta)
        carry = delta @ W.T
    return np.array(hs), grad


def test_a_program_compiled_in_parts_gives_the_results_of_one_part():
    one, two = _run_child(1), _run_child(2)
    assert one["parts"] == 1
    assert two["parts"] == 2
    np.testing.assert_allclose(two["states"], one["states"], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(two["grad"], one["grad"], rtol=1e-12, atol=1e-14)
    states, grad = _bptt(*(np.array(a) for a in one["args"]))
    np.testing.assert_allclose(one["states"], states, rtol=1e-10)
    np.testing.assert_allclose(one["grad"], grad, rtol=1e-9)


def test_a_small_program_is_one_part():
    program = mlir_scan.compile(textwrap.dedent("""
        func.func @twice(%x: f64) -> f64 {
          %y = arith.addf %x, %x : f64
          return %y : f64
        }"""))
    assert program._engine.parts == 1
    assert program.twice(1.5) == 3.0


# ---------------------------------------------------------------------------
# Tiers: a large program is compiled at -O0 first and at -O3 on a background
# thread; calls switch to the optimized code when it is ready, and a call
# running in the quick code then restarts in it.
# ---------------------------------------------------------------------------

def _rnn_program_text() -> str:
    """The RNN's last state and d/dW sum(states): a program large enough for
    two tiers."""
    xs, h0 = T.dmatrix("xs"), T.dvector("h0")
    W, U, b = T.dmatrix("W"), T.dmatrix("U"), T.dvector("b")
    hs, _ = mlir_scan.scan(lambda x, h, W, U, b: T.tanh(T.dot(h, W) + T.dot(x, U) + b),
                           sequences=xs, outputs_info=h0, non_sequences=[W, U, b])
    fn = mlir_scan.function([xs, h0, W, U, b], [hs[-1], T.grad(hs.sum(), W)])
    # Its optimized compile, once held back, would run during the caller's
    # checks of the run-time library's account of compiles.
    fn.program.wait()
    return fn.program._source


def _rnn_args(steps: int, hidden: int = 32, inputs: int = 8, seed: int = 7) -> tuple:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((steps, inputs)), rng.standard_normal(hidden),
            rng.standard_normal((hidden, hidden)) / 8, rng.standard_normal((inputs, hidden)) / 4,
            rng.standard_normal(hidden) / 4)


def _restarts() -> int:
    return _registration.runtime_library().mlirScanRestarts()


@pytest.fixture
def no_compile_cache(monkeypatch):
    """Compiles for real (a cached program is loaded in its optimized tier)."""
    monkeypatch.setenv("MLIR_SCAN_CACHE", "0")


def test_a_large_program_runs_quick_code_first_and_the_optimized_code_later(no_compile_cache):
    text = _rnn_program_text()
    args = _rnn_args(50)
    program = mlir_scan.compile(text)
    assert program.tier == "quick"  # LLVM at -O3 takes a tenth of a second or more
    quick = program.f(*args)
    assert program.wait() is program
    assert program.tier == "optimized"
    optimized = program.f(*args)
    one_tier = mlir_scan.compile(text, tiered=False)
    assert one_tier.tier == "optimized"
    expected = one_tier.f(*args)
    # The same operations in every tier (ScanJIT.cpp: makeContractionExplicit): the same bits.
    for q, o, e in zip(quick, optimized, expected):
        np.testing.assert_array_equal(q, e)
        np.testing.assert_array_equal(o, e)
    states, grad = _bptt(*args)
    np.testing.assert_allclose(expected[0], states[-1], rtol=1e-10)
    np.testing.assert_allclose(expected[1], grad, rtol=1e-9)


def test_a_small_program_is_compiled_in_one_tier(no_compile_cache):
    program = mlir_scan.compile(textwrap.dedent("""
        func.func @twice(%x: f64) -> f64 {
          %y = arith.addf %x, %x : f64
          return %y : f64
        }"""))
    assert program.tier == "optimized"
    assert program.twice(2.5) == 5.0


def test_the_scan_guides_polynomial_is_compiled_in_two_tiers(no_compile_cache):
    """About 450 LLVM instructions: -O3 takes some 60 ms more than -O0 there
    (ScanJIT.cpp, kMinTieredSize), most of the first call."""
    coefficients, x = T.dvector("coefficients"), T.dscalar("x")
    components, _ = mlir_scan.scan(lambda c, power, x: c * x ** power, outputs_info=None,
                                   sequences=[coefficients, T.arange(1000, dtype="float64")], non_sequences=x)
    text = mlir_scan.function([coefficients, x], components.sum()).program._source
    values = np.random.default_rng(3).standard_normal(1000)
    program = mlir_scan.compile(text)
    assert program.tier == "quick"
    quick = program.f(values, 0.999)
    assert program.wait().tier == "optimized"
    assert program.f(values, 0.999) == quick == mlir_scan.compile(text, tiered=False).f(values, 0.999)
    np.testing.assert_allclose(quick, np.polyval(values[::-1], 0.999), rtol=1e-10)


def test_programs_destroyed_while_their_optimized_code_waits_its_turn(no_compile_cache):
    """Optimized tiers compile one at a time: the programs compiled after the
    first wait for its compile, and one destroyed meanwhile must neither hang
    nor take the others' code with it."""
    text = _rnn_program_text()
    args = _rnn_args(20)
    expected = mlir_scan.compile(text, tiered=False).f(*args)
    programs = [mlir_scan.compile(text) for _ in range(6)]
    results = [program.f(*args) for program in programs]
    del programs[1:5]
    gc.collect()
    for program in programs:
        assert program.wait().tier == "optimized"
        results.append(program.f(*args))
    for result in results:
        for r, e in zip(result, expected):
            np.testing.assert_array_equal(r, e)


def test_a_process_exits_without_the_optimized_compiles_still_waiting(no_compile_cache):
    """Twelve programs compiled and called once: at exit the compiles still
    waiting for their turn are dropped (``_finish_at_exit``), the running one
    finishes, and the process exits cleanly."""
    child = textwrap.dedent(f"""
        import numpy as np, mlir_scan
        from test_jit import _rnn_args
        text = {_rnn_program_text()!r}
        args = _rnn_args(5)
        programs = [mlir_scan.compile(text + "// " + str(i)) for i in range(12)]
        results = [p.f(*args) for p in programs]
        assert all(np.array_equal(r[1], results[0][1]) for r in results)
        print("quick", sum(p.tier == "quick" for p in programs))
    """)
    env = dict(os.environ, MLIR_SCAN_CACHE="0", PYTHONPATH=os.path.dirname(__file__))
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    word, quick = done.stdout.split()
    assert word == "quick" and int(quick) > 0  # compiles were still waiting at exit


def test_the_optimized_compile_waits_while_the_process_compiles(no_compile_cache):
    """The optimized compile is held back while the process compiles other
    programs and until the first call after that returns (ScanJIT.cpp,
    deferToForeground), for at most half its expected time: held back while
    another compile runs, started once the process is idle, and started
    within the bound when the process never is."""
    library = _registration.runtime_library()
    text = _rnn_program_text()
    args = _rnn_args(20)
    expected = mlir_scan.compile(text, tiered=False).f(*args)
    library.mlirScanCompileBegins()  # another program compiling, on and on
    try:
        program = mlir_scan.compile(text)
        time.sleep(0.02)
        assert program.tier == "quick" and library.mlirScanUpgradesPending() == 0
        assert program.wait().tier == "optimized"  # the bound, with the process busy
        second = mlir_scan.compile(text + "// second")
    finally:
        library.mlirScanCompileEnds()
    assert second.tier == "quick"
    assert second.wait().tier == "optimized"  # idle: started after a short grace
    for result in (program.f(*args), second.f(*args)):
        for r, e in zip(result, expected):
            np.testing.assert_array_equal(r, e)


def _foreground() -> tuple[int, int, int]:
    """The run-time library's account of what the process waits for: calls
    computing, compiles running, calls returned."""
    calls, compiles, ended = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_int64()
    fn = _registration.runtime_library().__mlir_scan_foreground
    fn(ctypes.byref(calls), ctypes.byref(compiles), ctypes.byref(ended))
    return calls.value, compiles.value, ended.value


def test_the_optimized_compile_waits_for_the_first_call(no_compile_cache):
    """A call running the quick code right after the compiles holds the
    optimized compile back until it returns (within the bound)."""
    library = _registration.runtime_library()
    text = _rnn_program_text()
    args = _rnn_args(300_000)
    busy = True
    library.mlirScanCompileBegins()
    try:
        program = mlir_scan.compile(text)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            call = pool.submit(program.f, *args)
            while _foreground()[0] == 0 and not call.done():
                time.sleep(0.0005)
            library.mlirScanCompileEnds()
            busy = False
            ended = _foreground()[2]
            try:
                assert _foreground()[0] == 1 and library.mlirScanUpgradesPending() == 0
            finally:
                result = call.result()
    finally:
        if busy:
            library.mlirScanCompileEnds()
    assert _foreground()[2] == ended + 1
    assert program.wait().tier == "optimized"
    for r, e in zip(result, mlir_scan.compile(text, tiered=False).f(*args)):
        np.testing.assert_array_equal(r, e)


def test_calls_made_back_to_back_hold_the_optimized_compile_back(no_compile_cache):
    """The LSTM tutorial's training step calls two functions back to back:
    the optimized compile, held back for the first call after the compiles
    (ScanJIT.cpp, deferToForeground), waits until the calls that follow it
    without a pause have returned too, so as not to take the cores from them.
    Here one program is called twice in a row: a call of some milliseconds
    (long enough for the held-back compile to see it run), then a long one."""
    library = _registration.runtime_library()
    text = _rnn_program_text()
    first, then = _rnn_args(3_000), _rnn_args(300_000)
    program = mlir_scan.compile(text)
    assert program.tier == "quick"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        ended = _foreground()[2]
        step = pool.submit(lambda: (program.f(*first), program.f(*then)))
        while not step.done() and not (_foreground()[2] > ended and _foreground()[0] == 1):
            time.sleep(0.0005)  # until the first call has returned and the second runs
        try:
            time.sleep(0.01)  # several of the held-back compile's polls
            pending = library.mlirScanUpgradesPending()
            running = not step.done()
        finally:
            results = step.result()
    assert running, "the second call ended before the check"
    assert pending == 0
    assert program.wait().tier == "optimized"
    one_tier = mlir_scan.compile(text, tiered=False)
    for result, args in zip(results, (first, then)):
        for r, e in zip(result, one_tier.f(*args)):
            np.testing.assert_array_equal(r, e)


def test_a_call_with_less_left_than_it_has_run_finishes_in_the_quick_code():
    """The rule the quick code's loops apply (their polls pass the outermost
    loop's iteration and bound): a call restarts in the optimized code only
    while it has more left to do, by its loop's pace, than it has run. A
    blocked loop's last test of its bound (iteration 1024 of 1000) is its
    end, not a reason to restart; unknown progress restarts as before."""
    finishes = _registration.runtime_library().mlirScanFinishesInQuickCode
    finishes.argtypes = [ctypes.c_int64] * 4
    finishes.restype = ctypes.c_int32
    ms = 1_000_000
    assert not finishes(100 * ms, 100 * ms, 100, 1000)   # 900 ms left after 100
    assert not finishes(100 * ms, 100 * ms, 499, 1000)
    assert finishes(100 * ms, 100 * ms, 500, 1000)       # as much left as done
    assert finishes(100 * ms, 100 * ms, 1000, 1000)
    assert finishes(100 * ms, 100 * ms, 1024, 1000)      # the loop's last test
    # Time before the loop counts as run: 60 ms in earlier loops, 40 ms here.
    assert finishes(100 * ms, 40 * ms, 300, 1000)        # 93 ms left after 100
    assert not finishes(100 * ms, 40 * ms, 200, 1000)    # 160 ms left
    assert not finishes(100 * ms, 100 * ms, 0, 1000)     # nothing done yet
    assert not finishes(100 * ms, 100 * ms, 0, 0)        # progress unknown


def _static_rnn_text(hidden: int) -> str:
    """The RNN's states, hand-written with a static `hidden` (W5 of
    bench/workloads.py): its `h W` is a product of static size."""
    h, i = hidden, 8
    return textwrap.dedent(f"""
        func.func @rnn(%xs: tensor<?x{i}xf64>, %h0: tensor<{h}xf64>, %W: tensor<{h}x{h}xf64>,
                       %U: tensor<{i}x{h}xf64>) -> tensor<?x{h}xf64> {{
          %c0 = arith.constant 0 : index
          %n = tensor.dim %xs, %c0 : tensor<?x{i}xf64>
          %r = scan.scan steps(%n) sequences(%xs : tensor<?x{i}xf64>) sitsot(%h0 : tensor<{h}xf64>)
              nonsequences(%W, %U : tensor<{h}x{h}xf64>, tensor<{i}x{h}xf64>) {{
          ^bb0(%x: tensor<{i}xf64>, %s: tensor<{h}xf64>, %w: tensor<{h}x{h}xf64>, %u: tensor<{i}x{h}xf64>):
            %e = tensor.empty() : tensor<{h}xf64>
            %z = arith.constant 0.0 : f64
            %f = linalg.fill ins(%z : f64) outs(%e : tensor<{h}xf64>) -> tensor<{h}xf64>
            %sw = linalg.vecmat ins(%s, %w : tensor<{h}xf64>, tensor<{h}x{h}xf64>)
                outs(%f : tensor<{h}xf64>) -> tensor<{h}xf64>
            %xu = linalg.vecmat ins(%x, %u : tensor<{i}xf64>, tensor<{i}x{h}xf64>)
                outs(%f : tensor<{h}xf64>) -> tensor<{h}xf64>
            %a = arith.addf %sw, %xu : tensor<{h}xf64>
            %next = math.tanh %a : tensor<{h}xf64>
            scan.yield %next : tensor<{h}xf64>
          }} -> (tensor<?x{h}xf64>)
          return %r : tensor<?x{h}xf64>
        }}""")


@pytest.mark.parametrize("steps", [40, 0, 1, 65])
def test_a_large_static_product_is_optimized_in_the_quick_tier(no_compile_cache, steps):
    """scan-parallelize-linalg marks the chunk function of `h W` at 512 x 512
    hot: the quick tier compiles it at -O3 in a part of its own, the rest at
    -O0 (ScanJIT.cpp). Every part computes the bits of the optimized tier,
    for any number of steps (the steps run in blocks of 64)."""
    text = _static_rnn_text(512) + f"// {steps} steps"  # a compile of its own
    rng = np.random.default_rng(11)
    args = (rng.standard_normal((steps, 8)), rng.standard_normal(512),
            rng.standard_normal((512, 512)) / 24, rng.standard_normal((8, 512)) / 4)
    expected = mlir_scan.compile(text, tiered=False).rnn(*args)
    program = mlir_scan.compile(text)
    assert program.tier == "quick" and program._engine.parts == 2
    quick = program.rnn(*args)
    assert program.wait().tier == "optimized"
    assert quick.shape == expected.shape == (steps, 512)
    np.testing.assert_array_equal(quick, expected)
    np.testing.assert_array_equal(program.rnn(*args), expected)
    h, W, U = args[1], args[2], args[3]
    for t, x in enumerate(args[0]):
        h = np.tanh(h @ W + x @ U)
        np.testing.assert_allclose(expected[t], h, rtol=1e-9, atol=1e-12)


def test_a_static_product_below_hot_work_stays_at_O0(no_compile_cache):
    """256 x 256 is below hot-work (2**18 points): the quick tier is one part."""
    assert mlir_scan.compile(_static_rnn_text(256))._engine.parts == 1


@pytest.mark.parametrize("hidden, steps", [(32, 1_000_000), (512, 3_000)])
def test_a_call_running_in_the_quick_code_restarts_in_the_optimized_code(no_compile_cache, hidden, steps):
    """A call that runs at -O0 for well over the time LLVM takes at -O3 (at
    -O0 it runs some ten times longer than the optimized code). At 512 the
    step's products run as parts on the thread pool (scan-parallelize-linalg):
    the restart must not leave parts running."""
    text = _rnn_program_text()
    args = _rnn_args(steps, hidden=hidden)
    expected = mlir_scan.compile(text, tiered=False).f(*args)
    before = _restarts()
    program = mlir_scan.compile(text)
    assert program.tier == "quick"
    result = program.f(*args)
    assert _restarts() == before + 1
    assert program.tier == "optimized"
    for r, e in zip(result, expected):
        np.testing.assert_array_equal(r, e)


def test_calls_from_several_threads_cross_the_switch_of_tiers(no_compile_cache):
    text = _rnn_program_text()
    inputs = [_rnn_args(steps, seed=steps) for steps in (1, 2, 1000, 100_000, 3, 20_000)]
    one_tier = mlir_scan.compile(text, tiered=False)
    expected = [one_tier.f(*args) for args in inputs]
    program = mlir_scan.compile(text)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda args: program.f(*args), inputs * 3))
    for result, want in zip(results, expected * 3):
        for r, e in zip(result, want):
            np.testing.assert_array_equal(r, e)
    program.wait()


def test_the_quick_code_fails_as_the_optimized_code_does(no_compile_cache):
    text = _rnn_program_text()
    xs, h0, W, U, b = _rnn_args(10)
    bad = (xs, h0, W[:, :5], U, b)  # W has 5 columns for a 32-wide state
    program = mlir_scan.compile(text)
    assert program.tier == "quick"
    with pytest.raises(ValueError) as quick:
        program.f(*bad)
    program.wait()
    with pytest.raises(ValueError) as optimized:
        program.f(*bad)
    assert str(quick.value) == str(optimized.value)
    assert program.f(xs, h0, W, U, b)[0].shape == (32,)  # the program still works


@contextlib.contextmanager
def _another_program_beside_a_long_quick_call(steps: int):
    """A program whose optimized compile is given up (its calls stay in the
    quick code), a call of it of `steps` steps running on a thread, and a
    second program compiled once that call runs: yields (text, args, the
    first program, the call's future, the second program)."""
    text = _rnn_program_text()
    program = mlir_scan.compile(text)
    program._engine.cancel()
    args = _rnn_args(steps)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        call = pool.submit(program.f, *args)
        while _foreground()[0] == 0 and not call.done():
            time.sleep(0.0005)
        yield text, args, program, call, mlir_scan.compile(text + "// another program")


def test_an_optimized_compile_waits_while_another_programs_call_runs(no_compile_cache):
    """A held-back optimized compile's bound (half its expected time) counts
    only while the process is idle or runs the program's own calls: another
    program's call, which the compile would slow down, holds it back for up
    to four times its expected time first. (The LSTM step's `f_update`,
    compiled beside `f_grad_shared`'s first call, made it up to four times
    longer.) Here the compile starts after the long call ends or after at
    least its own duration (about its expected time), not after half."""
    library = _registration.runtime_library()
    with _another_program_beside_a_long_quick_call(1_000_000) as (text, args, _, call, other):
        assert other._engine.parts >= 1  # its quick code is linked: its bound may count
        linked = time.monotonic()
        started = ended = call_ended = None
        while ended is None:
            now = time.monotonic()
            if call_ended is None and call.done():
                call_ended = now
            pending = library.mlirScanUpgradesPending()
            if started is None and (pending or other.tier == "optimized"):
                started = now
            if started is not None and not pending:
                ended = now
            time.sleep(0.0005)
        result = call.result()
    assert call_ended is None or call_ended > linked + 0.05, "the long call ended too soon"
    waited, compiled = started - linked, ended - started
    assert waited >= 0.9 * min(compiled, (call_ended or ended) - linked), (waited, compiled)
    assert other.wait().tier == "optimized"
    for r, e in zip(result, mlir_scan.compile(text, tiered=False).f(*args)):
        np.testing.assert_array_equal(r, e)


@contextlib.contextmanager
def _quick_compiles(mode: int):
    """ScanJIT.cpp's test hook for the quick tiers LLVM compiles on the
    background thread: 1 holds them back before they start, 2 makes them fail."""
    hook = _registration.capi().mlirScanJitTestQuickCompiles
    hook(mode)
    try:
        yield hook
    finally:
        hook(0)


def test_compile_returns_before_llvm_has_compiled_the_quick_code(no_compile_cache):
    """LLVM compiles a large program's quick code on the background thread:
    compile() returns once the module is translated (the caller goes on to
    build its next function), and calls wait for the code."""
    text = _rnn_program_text()
    args = _rnn_args(40)
    expected = mlir_scan.compile(text, tiered=False).f(*args)
    with _quick_compiles(1) as hook, concurrent.futures.ThreadPoolExecutor(1) as pool:
        program = mlir_scan.compile(text)  # returns while its quick code is held back
        assert program.tier == "quick"
        call = pool.submit(program.f, *args)
        time.sleep(0.05)
        waited = not call.done()
        hook(0)
        result = call.result()
    assert waited
    for r, e in zip(result, expected):
        np.testing.assert_array_equal(r, e)
    assert program.wait().tier == "optimized"


def _theano_rnn() -> tuple[list, object, tuple]:
    """The RNN through the graph builder: its inputs, its states, arguments."""
    xs, h0 = T.dmatrix("xs"), T.dvector("h0")
    W, U, b = T.dmatrix("W"), T.dmatrix("U"), T.dvector("b")
    hs, _ = mlir_scan.scan(lambda x, h, W, U, b: T.tanh(T.dot(h, W) + T.dot(x, U) + b),
                           sequences=xs, outputs_info=h0, non_sequences=[W, U, b])
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((17, 5)), rng.standard_normal(7), rng.standard_normal((7, 7)) / 4,
            rng.standard_normal((5, 7)) / 4, rng.standard_normal(7) / 4)
    return [xs, h0, W, U, b], hs, args


def test_a_theano_function_is_callable_while_its_quick_code_compiles(no_compile_cache):
    """The same through the graph builder, whose functions bind the entry
    slot at once: two functions compiled while their quick code is held, then
    called (the first waits), as the LSTM tutorial compiles and calls its
    training step's two functions."""
    inputs, hs, args = _theano_rnn()
    # The same graph compiled by another test in this process would be taken
    # from the builder's cache, with its optimized code.
    importlib.import_module("mlir_scan.builder.function")._CACHE.clear()
    with _quick_compiles(1) as hook, concurrent.futures.ThreadPoolExecutor(1) as pool:
        grad = mlir_scan.function(inputs, T.grad(hs.sum(), inputs[2]))
        states = mlir_scan.function(inputs, hs)
        assert grad.program.tier == "quick" and states.program.tier == "quick"
        call = pool.submit(grad, *args)
        time.sleep(0.05)
        waited = not call.done()
        hook(0)
        dW = call.result()
    assert waited
    want_states, want_grad = _bptt(*args)
    np.testing.assert_allclose(states(*args), want_states, rtol=1e-12)
    np.testing.assert_allclose(dW, want_grad, rtol=1e-10)


def test_calls_fail_when_llvm_cannot_compile_the_quick_code(no_compile_cache):
    """A quick tier LLVM failed to compile (which the caller no longer waits
    for) fails every call with LLVM's message, through compile() and through
    the graph builder, and no optimized tier is compiled."""
    text = _rnn_program_text()
    inputs, hs, args = _theano_rnn()
    builder_cache = importlib.import_module("mlir_scan.builder.function")._CACHE
    builder_cache.clear()  # a program compiled before would be taken from it
    try:
        # Failing at once (before or after the functions are bound), and
        # failing once they are bound (held, then released into failure).
        with _quick_compiles(2):
            program = mlir_scan.compile(text)
            fn = mlir_scan.function(inputs, T.grad(hs.sum(), inputs[2]))
        with _quick_compiles(1) as hook:
            held = mlir_scan.compile(text + "// held")
            held_fn = mlir_scan.function(inputs, T.grad(hs.sum(), inputs[3]))
            hook(2)
            for p in (held, held_fn.program):  # failed (before the hook is reset)
                assert p._engine.quick_error()
        message = "LLVM could not compile the program: the quick code failed for a test"
        for _ in range(2):
            for f, f_args in ((program.f, _rnn_args(5)), (fn, args), (held.f, _rnn_args(5)),
                              (held_fn, args)):
                with pytest.raises(RuntimeError, match=message):
                    f(*f_args)
        for p in (program, fn.program, held, held_fn.program):
            assert p.wait().tier == "quick" and p._engine.parts == 0
    finally:
        builder_cache.clear()  # nor must a later test get this one


def test_a_quick_call_does_not_wait_for_another_programs_optimized_code(no_compile_cache):
    """A long call in the quick code may stop and wait for its own program's
    optimized code (ScanRuntime.cpp, __mlir_scan_poll_upgrade), never for
    another program's: here its own optimized compile is given up, and a
    second program's runs while the call goes on computing."""
    library = _registration.runtime_library()
    # A call long enough for the other program's compile to start during it
    # (it holds that compile back for up to four times its expected time).
    with _another_program_beside_a_long_quick_call(3_000_000) as (text, args, program, call, other):
        # Its optimized compile starts at the end of its bound (this call
        # holds it back), then runs beside the call.
        while not library.mlirScanUpgradesPending() and other.tier == "quick" and not call.done():
            time.sleep(0.0005)
        samples = []
        while library.mlirScanUpgradesPending() and not call.done():
            samples.append(_foreground()[0])
            time.sleep(0.001)
        running = not call.done()
        result = call.result()
    assert running, "the long call ended before the other program's optimized compile"
    assert samples and min(samples) == 1  # computing throughout, never waiting
    assert program.tier == "quick" and other.wait().tier == "optimized"
    for r, e in zip(result, mlir_scan.compile(text, tiered=False).f(*args)):
        np.testing.assert_array_equal(r, e)


def test_a_process_forked_during_the_optimized_compile_gets_the_optimized_code(no_compile_cache):
    text = _rnn_program_text()
    args = _rnn_args(40)
    program = mlir_scan.compile(text)
    expected = mlir_scan.compile(text, tiered=False).f(*args)
    read, write = os.pipe()
    pid = os.fork()  # waits for the optimized code first (os.register_at_fork)
    if pid == 0:
        try:
            state, grad = program.f(*args)
            os.write(write, json.dumps([program.tier, state.tolist(), grad.tolist()]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        tier, state, grad = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert program.tier == "optimized" and tier == "optimized"
    np.testing.assert_array_equal(state, expected[0])
    np.testing.assert_array_equal(grad, expected[1])


def test_tiered_must_be_a_bool():
    with pytest.raises(TypeError, match="tiered must be True or False"):
        mlir_scan.compile("func.func @f() { return }", tiered="no")
