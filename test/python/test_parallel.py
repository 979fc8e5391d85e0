"""Large linalg ops on every core (scan-parallelize-linalg, python/runtime/ScanParallel.cpp).

Splitting an op along a parallel dimension changes no element's arithmetic
(each output element is computed by one part, in the same order), so those
results are compared bit for bit with ``compile(..., parallel=False)``. A
step's ``h W`` with at least 256 rows is split along its reduction instead
(partial sums over blocks of rows, added in a fixed order): its results
differ from the unsplit product's in rounding only, are the same bits with
any number of threads, and ``split_reductions=False`` gives the serial bits.
Timing is the benchmark's business (bench/run.py), not these tests'.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import mlir_scan
import mlir_scan as theano
from mlir_scan import tensor as T

RNN = """
func.func @rnn(%xs: tensor<?x?xf64>, %h0: tensor<?xf64>, %W: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x?xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%h0 : tensor<?xf64>)
      nonsequences(%W : tensor<?x?xf64>) {
  ^bb0(%x: tensor<?xf64>, %h: tensor<?xf64>, %w: tensor<?x?xf64>):
    %i0 = arith.constant 0 : index
    %k = tensor.dim %h, %i0 : tensor<?xf64>
    %e = tensor.empty(%k) : tensor<?xf64>
    %z = arith.constant 0.0 : f64
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
    %wh = linalg.vecmat ins(%h, %w : tensor<?xf64>, tensor<?x?xf64>) outs(%f : tensor<?xf64>) -> tensor<?xf64>
    %s = arith.addf %wh, %x : tensor<?xf64>
    %next = math.tanh %s : tensor<?xf64>
    scan.yield %next : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}
"""


def _rnn_args(hidden: int, steps: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(steps, hidden)), rng.normal(size=hidden),
            rng.normal(size=(hidden, hidden)) / np.sqrt(hidden))


def test_the_step_of_a_large_state_is_split_and_gives_the_same_bits():
    split = mlir_scan.compile(RNN)
    by_columns = mlir_scan.compile(RNN, split_reductions=False)
    serial = mlir_scan.compile(RNN, parallel=False)
    assert "__mlir_scan_parallel_for" in split.ir("llvm")
    assert "__mlir_scan_parallel_parts" in split.ir("llvm")
    assert "__mlir_scan_parallel_parts" not in by_columns.ir("llvm")
    assert "__mlir_scan_parallel_for" not in serial.ir("llvm")
    # Below, at and above the run-time thresholds (2**17 points; 256 rows for
    # the reduction split), sizes that leave remainders (700 rows: 5 parts of
    # 140; 1000: 7 parts of 142 or 143).
    for hidden in (3, 64, 255, 256, 361, 512, 700, 1000):
        args = _rnn_args(hidden)
        want = serial.rnn(*args)
        np.testing.assert_array_equal(by_columns.rnn(*args), want)
        got = split.rnn(*args)
        if hidden < 256:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
        # Against NumPy's own loop, as a check of both.
        xs, h, W = args
        for t in range(xs.shape[0]):
            h = np.tanh(h @ W + xs[t])
            np.testing.assert_allclose(got[t], h, rtol=1e-10, atol=1e-12)


def test_a_reduction_split_in_float32_and_int64():
    # f32: parts of rows of W, within f32 rounding of NumPy's product;
    # int64 (an arith.addi accumulation): exact.
    for dtype, check in ((np.float32, lambda got, want: np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-4)),
                         (np.int64, np.testing.assert_array_equal)):
        x, W = T.vector("x", dtype=np.dtype(dtype).name), T.matrix("W", dtype=np.dtype(dtype).name)
        f = theano.function([x, W], T.dot(x, W))
        rng = np.random.default_rng(3)
        for k, n in ((300, 500), (1031, 700), (257, 1024), (600, 1000)):
            if dtype == np.int64:
                xv, Wv = rng.integers(-1000, 1000, k), rng.integers(-1000, 1000, (k, n))
            else:
                xv, Wv = rng.normal(size=k).astype(dtype), rng.normal(size=(k, n)).astype(dtype)
            check(f(xv, Wv), xv @ Wv)


def test_static_small_ops_are_not_split():
    small = (RNN.replace("tensor<?x?xf64>", "tensor<?x64xf64>").replace("tensor<?xf64>", "tensor<64xf64>")
             .replace("%W: tensor<?x64xf64>", "%W: tensor<64x64xf64>")
             .replace("nonsequences(%W : tensor<?x64xf64>)", "nonsequences(%W : tensor<64x64xf64>)")
             .replace("%w: tensor<?x64xf64>", "%w: tensor<64x64xf64>")
             .replace("ins(%h, %w : tensor<64xf64>, tensor<?x64xf64>)", "ins(%h, %w : tensor<64xf64>, tensor<64x64xf64>)")
             .replace("tensor.empty(%k) : tensor<64xf64>", "tensor.empty() : tensor<64xf64>"))
    program = mlir_scan.compile(small)
    assert "__mlir_scan_parallel_for" not in program.ir("llvm")
    args = _rnn_args(64)
    np.testing.assert_array_equal(program.rnn(*args), mlir_scan.compile(RNN, parallel=False).rnn(*args))


_SIGNED_ZERO_VECMAT = """
func.func @f(%h: tensor<?xf64>, %w: tensor<?x?xf64>) -> tensor<?xf64> {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %w, %c1 : tensor<?x?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %z = arith.constant -0.0 : f64
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %r = linalg.vecmat ins(%h, %w : tensor<?xf64>, tensor<?x?xf64>) outs(%f : tensor<?xf64>) -> tensor<?xf64>
  return %r : tensor<?xf64>
}
"""


def test_a_reduction_split_keeps_the_sign_of_a_sum_of_negative_zeros():
    # -0.0 + -0.0 + ... is -0.0: the rows of partial sums start at -0.0 (the
    # identity of IEEE addition), not at +0.0, which would make the sum +0.0.
    split, serial = mlir_scan.compile(_SIGNED_ZERO_VECMAT), mlir_scan.compile(_SIGNED_ZERO_VECMAT, parallel=False)
    assert "__mlir_scan_parallel_parts" in split.ir("llvm")
    h, W = np.full(600, -0.0), np.ones((600, 700))
    W[:, 0] = -1.0  # column 0: (-0.0) * (-1.0) = +0.0, so its sum is +0.0
    got, want = split.f(h, W), serial.f(h, W)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert not np.signbit(got[0]) and np.signbit(got[1:]).all()


def test_theano_api_rnn_and_pushed_out_matmul_are_split():
    x, h0, W, U = T.matrix("x"), T.vector("h0"), T.matrix("W"), T.matrix("U")
    hs, _ = theano.scan(lambda x_t, h, W, U: T.tanh(T.dot(h, W) + T.dot(x_t, U)),
                        sequences=x, outputs_info=h0, non_sequences=[W, U])
    f = theano.function([x, h0, W, U], hs)
    assert "__mlir_scan_parallel_for" in f.program.ir("llvm")
    assert "__mlir_scan_parallel_parts" in f.program.ir("llvm")
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(30, 40)), rng.normal(size=600), rng.normal(size=(600, 600)) / 25,
            rng.normal(size=(40, 600)) / 7)
    serial = mlir_scan.compile(f.ir, parallel=False)
    np.testing.assert_allclose(f(*args), serial.f(*args), rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(mlir_scan.compile(f.ir, split_reductions=False).f(*args), serial.f(*args))


def test_many_threads_calling_split_programs_get_their_own_results():
    # Calls from several threads share one pool: a call that finds it busy
    # runs its op itself. Every call must still get exactly its own result.
    program = mlir_scan.compile(RNN)
    cases = [_rnn_args(h, steps=8, seed=s) for s, h in enumerate((400, 513, 640, 7))]
    want = [program.rnn(*args) for args in cases]
    errors = []

    def worker(k):
        try:
            for i in range(30):
                j = (k + i) % len(cases)
                np.testing.assert_array_equal(program.rnn(*cases[j]), want[j])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


_SAME_BITS_SCRIPT = (
    "import hashlib, numpy as np, mlir_scan, sys\n"
    "from mlir_scan import _registration\n"
    "lib = _registration.runtime_library()\n"
    "print(lib.mlirScanNumThreads())\n"
    "src = sys.stdin.read()\n"
    "p, q = mlir_scan.compile(src), mlir_scan.compile(src, split_reductions=False)\n"
    "s = mlir_scan.compile(src, parallel=False)\n"
    "rng = np.random.default_rng(0)\n"
    "args = (rng.normal(size=(5, 700)), rng.normal(size=700), rng.normal(size=(700, 700)) / 26)\n"
    "assert (q.rnn(*args) == s.rnn(*args)).all()\n"
    "print(hashlib.sha256(p.rnn(*args).tobytes()).hexdigest())\n"
)


@pytest.mark.parametrize("threads", ["1", "3"])
def test_thread_count_from_the_environment(threads):
    # The threads change nothing in the results: a column split computes
    # every element as the serial op does, and a reduction split's parts
    # depend on the sizes alone (the same bits as this process's, which has
    # as many threads as cores).
    env = dict(os.environ, MLIR_SCAN_NUM_THREADS=threads)
    result = subprocess.run([sys.executable, "-c", _SAME_BITS_SCRIPT], input=RNN, capture_output=True,
                            text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    reported, digest = result.stdout.split()[:2]
    assert reported == threads
    import hashlib

    rng = np.random.default_rng(0)
    args = (rng.normal(size=(5, 700)), rng.normal(size=700), rng.normal(size=(700, 700)) / 26)
    assert digest == hashlib.sha256(mlir_scan.compile(RNN).rnn(*args).tobytes()).hexdigest()


def test_split_reductions_option_is_a_bool():
    with pytest.raises(TypeError, match="split_reductions must be True or False"):
        mlir_scan.compile(RNN, split_reductions=1)


def test_split_ops_that_read_their_index_count_from_their_part():
    # arange, eye and a step's arange read linalg.index: a part that starts
    # `lo` iterations in must see the whole op's index (arange(300000)
    # restarted at 0 halfway). Three threads, so that the split happens (in
    # three parts) whatever this machine's cores.
    script = (
        "import numpy as np, mlir_scan as theano\n"
        "from mlir_scan import tensor as T\n"
        "n = T.iscalar('n')\n"
        "x = T.matrix('x')\n"
        "f = theano.function([n, x], [T.arange(n), T.eye(n) + x, T.arange(n * n).reshape((n, n)) + x])\n"
        "for N in (5, 700, 1000):\n"
        "    r, e, a = f(N, np.zeros((N, N)))\n"
        "    assert np.array_equal(r, np.arange(N)), (N, r)\n"
        "    assert np.array_equal(e, np.eye(N)), N\n"
        "    assert np.array_equal(a, np.arange(N * N).reshape(N, N)), N\n"
        "k = T.iscalar('k')\n"
        "rows, _ = theano.scan(lambda i, k: T.arange(k) * i, sequences=T.arange(3), non_sequences=k)\n"
        "g = theano.function([k], rows)\n"
        "got = g(300000)\n"
        "assert np.array_equal(got, np.arange(3)[:, None] * np.arange(300000)), got\n"
    )
    env = dict(os.environ, MLIR_SCAN_NUM_THREADS="3")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr


def test_parallel_option_is_a_bool():
    with pytest.raises(TypeError, match="parallel must be True or False"):
        mlir_scan.compile(RNN, parallel="yes")


def test_a_forked_child_runs_split_programs():
    # The pool's threads do not survive fork(): a child runs its loops itself.
    script = (
        "import os, sys, numpy as np, mlir_scan\n"
        "src = sys.stdin.read()\n"
        "p = mlir_scan.compile(src)\n"
        "rng = np.random.default_rng(0)\n"
        "args = (rng.normal(size=(5, 700)), rng.normal(size=700), rng.normal(size=(700, 700)) / 26)\n"
        "want = p.rnn(*args)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if (p.rnn(*args) == want).all() else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], input=RNN, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


# --- When splitting pays: the pool's judge (python/runtime/ScanParallel.cpp, SplitJudge) ---
#
# The judge is fed recorded loops through a test hook, so these tests do not
# depend on what else the machine runs. Loops of 50 us of the calling
# thread's work, as W5's step at H = 1024: a window of 4 ms holds 80 of them.

_LOOP_NS = 50_000
_WINDOW = 80


def _judge(loops: list[tuple[int, int, int]]) -> list[int]:
    """Feeds (waited ns, parts the worker ran, parts meant for it) loops of
    _LOOP_NS each to a new judge; the backoff it returns after each."""
    import ctypes

    from mlir_scan import _registration

    lib = _registration.runtime_library()
    count = len(loops)
    i64, i32 = ctypes.c_int64 * count, ctypes.c_int32 * count
    backoffs = i32()
    lib.mlirScanTestSplitJudge.argtypes = [ctypes.c_int64] + [ctypes.c_void_p] * 5
    lib.mlirScanTestSplitJudge.restype = None
    lib.mlirScanTestSplitJudge(count, i64(*([_LOOP_NS] * count)), i64(*[w for w, _, _ in loops]),
                               i32(*[h for _, h, _ in loops]), i32(*[e for _, _, e in loops]),
                               backoffs)
    return list(backoffs)


def _window(late: dict[int, int] | None = None, helped: int = 1) -> list[tuple[int, int, int]]:
    """One window of loops; `late` maps a loop's index to its wait in ns."""
    late = late or {}
    return [(late.get(i, 0), helped, 1) for i in range(_WINDOW)]


def test_split_judge_keeps_splitting_through_a_few_late_loops():
    # Three loops in a row wait twice their work (a worker woken from sleep,
    # an interrupt): 300 us of 4 ms. Splitting still pays.
    loops = [loop for _ in range(10) for loop in _window({10: 100_000, 11: 100_000, 12: 100_000})]
    assert _judge(loops) == [0] * len(loops)


def test_split_judge_keeps_splitting_while_the_worker_is_slower_but_pays():
    # A worker whose parts take 1.6x the caller's (each loop waits 0.6 of its
    # work): a loop takes 1.6 parts' time where one thread takes 2. Backing
    # off at waits of half the work (the earlier rule) ran W9 at one thread's
    # speed for seconds.
    slow = {i: _LOOP_NS * 6 // 10 for i in range(_WINDOW)}
    assert _judge([loop for _ in range(8) for loop in _window(slow)]) == [0] * (8 * _WINDOW)


def test_split_judge_backs_off_while_workers_lose_their_core():
    # Beside a busy process, a descheduled worker holds its part for a time
    # slice (3 ms), twice in every window: one thread, twice as long each time.
    backoffs = _judge([loop for _ in range(8) for loop in _window({20: 3_000_000, 60: 3_000_000})])
    assert [b for b in backoffs if b] == [64, 128, 256, 512, 1024, 2048, 4096, 4096]
    assert all(b == 0 for i, b in enumerate(backoffs) if i % _WINDOW != _WINDOW - 1)


def test_split_judge_halves_the_backoff_after_free_windows():
    busy, free = _window({20: 3_000_000, 60: 3_000_000}), _window()
    backoffs = _judge(busy * 4 + free * 2 + busy)
    # 64, 128, 256, 512 while busy (the next would be 1024); two free
    # windows halve that twice.
    assert [b for b in backoffs if b] == [64, 128, 256, 512, 256]


def test_split_judge_backs_off_when_workers_run_no_parts():
    # No waiting, but the calling thread ran every part: the workers had no core.
    assert [b for b in _judge(_window(helped=0)) if b] == [64]
