"""mlir_scan.compile: calling convention, argument checks, memory ownership,
run-time errors and IR stages of the JIT runtime (python/mlir_scan/runtime.py).

Expected values come from NumPy loops written here, never from the compiler.
"""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import mlir_scan
from mlir import ir

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

MISC = """
func.func @identity(%a: tensor<3xf32>) -> tensor<3xf32> {
  return %a : tensor<3xf32>
}
func.func @twice(%n: index, %x0: i32) -> (tensor<?xi32>, tensor<?xi32>, i32) {
  %r = scan.scan steps(%n) sitsot(%x0 : i32) {
  ^bb0(%x: i32):
    %c3 = arith.constant 3 : i32
    %y = arith.muli %x, %c3 : i32
    scan.yield %y : i32
  } -> (tensor<?xi32>)
  return %r, %r, %x0 : tensor<?xi32>, tensor<?xi32>, i32
}
func.func @constant() -> tensor<2xi64> {
  %c = arith.constant dense<[7, 8]> : tensor<2xi64>
  return %c : tensor<2xi64>
}
func.func @positive(%xs: tensor<?x2xf64>) -> tensor<?x2xi1> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x2xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x2xf64>) {
  ^bb0(%x: tensor<2xf64>):
    %z = arith.constant dense<0.0> : tensor<2xf64>
    %p = arith.cmpf ogt, %x, %z : tensor<2xf64>
    scan.yield %p : tensor<2xi1>
  } -> (tensor<?x2xi1>)
  return %r : tensor<?x2xi1>
}
func.func @mitmot(%n: index, %buf: tensor<?x3xf64>) -> tensor<?x3xf64> {
  %r = scan.scan steps(%n) mitmot(%buf[0, 1] -> [1] : tensor<?x3xf64>) {
  ^bb0(%a: tensor<3xf64>, %b: tensor<3xf64>):
    %s = arith.addf %a, %b : tensor<3xf64>
    scan.yield %s : tensor<3xf64>
  } -> (tensor<?x3xf64>)
  return %r : tensor<?x3xf64>
}
func.func @fib(%n: index, %init: tensor<?xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) mitsot(%init[-2, -1] : tensor<?xi64>) {
  ^bb0(%a: i64, %b: i64):
    %s = arith.addi %a, %b : i64
    scan.yield %s : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}
"""


@pytest.fixture(scope="module")
def misc():
    return mlir_scan.compile(MISC)


def test_compile_text_and_module_give_the_same_program():
    xs = np.array([1.0, 2.0, 3.5])
    expected = np.cumsum(xs) + 1.0
    from_text = mlir_scan.compile(CUMSUM)
    with ir.Context():
        module = ir.Module.parse(CUMSUM)
        from_module = mlir_scan.compile(module)
    np.testing.assert_array_equal(from_text.cumsum(xs, 1.0), expected)
    np.testing.assert_array_equal(from_module.cumsum(xs, 1.0), expected)


def test_unoptimized_compile_runs_too():
    xs = np.linspace(0, 1, 11)
    prog = mlir_scan.compile(CUMSUM, optimize=False)
    np.testing.assert_allclose(prog.cumsum(xs, 0.0), np.cumsum(xs))


def test_ir_stages():
    prog = mlir_scan.compile(CUMSUM)
    assert "scan.scan" in prog.ir("input")
    assert "scf.for" in prog.ir("scf") and "scan.scan" not in prog.ir("scf")
    assert "memref.alloc" in prog.ir("bufferized") and "tensor<" not in prog.ir("bufferized")
    llvm = prog.ir("llvm")
    # The wrapper Python calls is external; the function it wraps is internal
    # and never inlined, so LLVM compiles its body once (_compile_once).
    assert "llvm.func @_mlir_ciface_cumsum" in llvm
    wrapped = next(line for line in llvm.splitlines() if "@cumsum(" in line and "llvm.func" in line)
    assert "llvm.func internal @cumsum" in wrapped and "no_inline" in wrapped
    with pytest.raises(ValueError, match="unknown stage"):
        prog.ir("nope")


POWER = """
func.func @power(%A: tensor<?xf64>, %k: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %len = tensor.dim %A, %c0 : tensor<?xf64>
  %one = arith.constant 1.0 : f64
  %empty = tensor.empty(%len) : tensor<?xf64>
  %ones = linalg.fill ins(%one : f64) outs(%empty : tensor<?xf64>) -> tensor<?xf64>
  %all = scan.scan steps(%k) sitsot(%ones : tensor<?xf64>) nonsequences(%A : tensor<?xf64>) {
  ^bb0(%prior: tensor<?xf64>, %a: tensor<?xf64>):
    %next = arith.mulf %prior, %a : tensor<?xf64>
    scan.yield %next : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  %rows = tensor.dim %all, %c0 : tensor<?x?xf64>
  %last = arith.subi %rows, %c1 : index
  %r = tensor.extract_slice %all[%last, 0] [1, %len] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
  return %r : tensor<?xf64>
}
"""


def test_only_the_wrappers_python_calls_are_external():
    # Every other function with a body (the deallocation pipeline's
    # `dealloc_helper`, private functions) is internal: LLVM need not keep
    # and compile it where it is inlined or unused.
    program = mlir_scan.compile(POWER)
    defined = [line.strip() for line in program.ir("llvm").splitlines()
               if line.strip().startswith("llvm.func") and line.rstrip().endswith("{")]
    assert any("@dealloc_helper" in line for line in defined)
    for line in defined:
        assert line.startswith("llvm.func internal") or "@_mlir_ciface_" in line, line
    A = np.linspace(0.5, 1.5, 7)
    np.testing.assert_allclose(program.power(A, 5), A ** 5)


def test_ir_stages_are_printed_on_demand_from_the_compile_steps():
    # A compile prints no stage; ir() runs the same steps again from the source.
    plain = mlir_scan.compile(CUMSUM, optimize=False)
    assert plain.ir("optimized") == plain.ir("input")  # no rewrite ran
    custom = mlir_scan.compile(CUMSUM, optimize="canonicalize")
    assert "scan.scan" in custom.ir("optimized")
    assert custom.ir("llvm") == mlir_scan.compile(CUMSUM, optimize="canonicalize").ir("llvm")
    # From another thread (another compile context) too.
    result = []
    thread = threading.Thread(target=lambda: result.append(plain.ir("scf")))
    thread.start()
    thread.join()
    assert result == [plain.ir("scf")]


def test_compile_rejects_bad_source():
    with pytest.raises(TypeError, match="MLIR text"):
        mlir_scan.compile(42)
    with pytest.raises(ir.MLIRError):
        mlir_scan.compile("func.func @f( {")
    with pytest.raises(TypeError, match="unsupported type"):
        mlir_scan.compile("func.func @f(%m: memref<3xf32>) { return }")


def test_argument_checks_name_the_argument():
    prog = mlir_scan.compile(CUMSUM)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        prog.cumsum(np.zeros(3))
    with pytest.raises(TypeError, match=r"argument #0 .*expected dtype float64, got float32"):
        prog.cumsum(np.zeros(3, np.float32), 0.0)
    with pytest.raises(ValueError, match=r"argument #0 .*expected rank 1"):
        prog.cumsum(np.zeros((2, 2)), 0.0)
    with pytest.raises(TypeError, match=r"argument #1 .*expected a scalar"):
        prog.cumsum(np.zeros(3), np.zeros(3))
    with pytest.raises(TypeError, match=r"argument #1 .*expected a number"):
        prog.cumsum(np.zeros(3), "1.0")
    # Lists and Python scalars convert when the conversion is safe.
    np.testing.assert_array_equal(prog.cumsum([1.0, 2.0], 1), [2.0, 4.0])


def test_static_dims_and_integer_ranges_are_checked(misc):
    with pytest.raises(ValueError, match=r"argument #0 .*dimension 0 must be 3"):
        misc.identity(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="does not fit in i32"):
        misc.twice(2, 2**40)
    with pytest.raises(TypeError, match="expected an integer"):
        misc.twice(2.5, 1)


def test_results_never_alias_inputs_or_each_other(misc):
    a = np.array([1.0, 2.0, 3.0], np.float32)
    out = misc.identity(a)
    out[0] = 42.0
    assert a[0] == 1.0
    r1, r2, x0 = misc.twice(3, 2)
    np.testing.assert_array_equal(r1, [6, 18, 54])
    r1[0] = -1
    assert r2[0] == 6 and x0 == 2 and isinstance(x0, np.int32)
    c = misc.constant()
    c[0] = 0
    np.testing.assert_array_equal(misc.constant(), [7, 8])


def test_results_outlive_the_program():
    prog = mlir_scan.compile(CUMSUM)
    result = prog.cumsum(np.ones(1000), 0.0)
    del prog
    gc.collect()
    np.testing.assert_array_equal(result, np.arange(1, 1001, dtype=np.float64))


def test_boolean_tensors(misc):
    xs = np.array([[1.0, -1.0], [-2.0, 0.5], [0.0, 3.0]])
    np.testing.assert_array_equal(misc.positive(xs), xs > 0)


def test_mitmot_input_is_not_modified(misc):
    buf = np.arange(15.0).reshape(5, 3)
    original = buf.copy()
    result = misc.mitmot(4, buf)
    expected = original.copy()
    for t in range(4):
        expected[t + 1] = expected[t] + expected[t + 1]
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(buf, original)


def test_zero_steps_give_empty_results(misc):
    assert misc.twice(0, 5)[0].shape == (0,)
    assert misc.positive(np.zeros((0, 2))).shape == (0, 2)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda p: p.twice(-3, 1), r"n_steps is -3, must be >= 0"),
        (lambda p: p.mitmot(5, np.zeros((5, 3))), r"mitmot buffer #0 has 5 rows but .* need 6"),
        (lambda p: p.fib(4, np.array([1, 1, 2])), r"mitsot #0 init has 3 rows but its taps need 2"),
    ],
)
def test_run_time_checks_raise_and_the_program_survives(misc, call, message):
    with pytest.raises(ValueError, match=message):
        call(misc)
    np.testing.assert_array_equal(misc.fib(5, np.array([0, 1])), [1, 2, 3, 5, 8])


def test_too_short_sequence():
    prog = mlir_scan.compile(
        """
        func.func @diff(%n: index, %xs: tensor<?xf64>) -> tensor<?xf64> {
          %r = scan.scan steps(%n) sequences(%xs[0, 2] : tensor<?xf64>) {
          ^bb0(%a: f64, %b: f64):
            %d = arith.subf %b, %a : f64
            scan.yield %d : f64
          } -> (tensor<?xf64>)
          return %r : tensor<?xf64>
        }"""
    )
    xs = np.array([1.0, 4.0, 9.0, 16.0, 25.0])
    np.testing.assert_array_equal(prog.diff(3, xs), xs[2:] - xs[:3])
    with pytest.raises(ValueError, match=r"sequence #0 has 5 rows but .* need 6"):
        prog.diff(4, xs)


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_no_memory_growth_over_many_calls(misc):
    xs = np.ones(64)
    prog = mlir_scan.compile(CUMSUM)
    for _ in range(2000):  # warm up allocator pools
        prog.cumsum(xs, 0.0)
        misc.twice(16, 1)
    before = _resident_bytes()
    for _ in range(50_000):
        prog.cumsum(xs, 0.0)
        misc.twice(16, 1)
    grown = _resident_bytes() - before
    # 10^5 calls each returning fresh buffers: a leak of even one 512-byte
    # result per call would be ~25 MB.
    assert grown < 8 * 2**20, f"resident memory grew by {grown / 2**20:.1f} MiB"


def test_large_buffers_are_reused_but_never_while_alive():
    """The programs' caching allocator (python/capi/ScanAllocator.cpp): a result
    kept alive is never handed out again; results dropped are reused, so
    resident memory stays bounded over many calls with 8 MB results; results
    of different sizes interleave correctly."""
    prog = mlir_scan.compile(CUMSUM)
    kept = []
    for n in (300_000, 1_000_000, 300_000, 1_000_000, 40_000):
        xs = np.full(n, 1.0)
        kept.append((n, prog.cumsum(xs, 0.0)))
    for n, r in kept:  # later calls did not overwrite earlier, live results
        assert r.shape == (n,)
        np.testing.assert_array_equal(r[[0, n // 2, -1]], [1.0, n // 2 + 1.0, float(n)])
    del kept

    xs = np.ones(1_000_000)
    for _ in range(20):
        prog.cumsum(xs, 0.0)
    before = _resident_bytes()
    for _ in range(300):  # 2.4 GB of results in total
        assert prog.cumsum(xs, 0.0)[-1] == 1e6
    grown = _resident_bytes() - before
    assert grown < 64 * 2**20, f"resident memory grew by {grown / 2**20:.1f} MiB"


def test_zero_filled_results_come_from_the_programs_allocator():
    """LLVM turns malloc + a zero fill into calloc: that calloc must be the
    programs' allocator too (freeing libc's block with mlirScanFree aborted),
    and must zero blocks the cache hands out again."""
    prog = mlir_scan.compile(
        """
        func.func @ones() -> tensor<65536xf64> {
          %c = arith.constant dense<1.0> : tensor<65536xf64>
          return %c : tensor<65536xf64>
        }
        func.func @zeros() -> tensor<65536xf64> {
          %c = arith.constant dense<0.0> : tensor<65536xf64>
          return %c : tensor<65536xf64>
        }"""
    )
    for _ in range(3):
        assert (prog.ones() == 1.0).all()  # dirties a block the cache keeps
        assert not prog.zeros().any()


def test_reused_context_and_pass_managers_survive_new_dialects():
    """compile() reuses one context and its pass managers per thread; loading
    more dialects into the context re-initializes the passes (scan-optimize
    must not repeat its round then) and results stay right."""
    from mlir_scan import runtime

    xs = np.arange(5.0)
    np.testing.assert_array_equal(mlir_scan.compile(CUMSUM).cumsum(xs, 0.0), np.cumsum(xs))
    runtime._compile_context().load_all_available_dialects()
    for _ in range(2):
        np.testing.assert_array_equal(mlir_scan.compile(CUMSUM).cumsum(xs, 1.0), 1.0 + np.cumsum(xs))


def test_rewrite_pipeline_string_is_guarded_against_aborting_folds():
    """`cmpi eq, %x, %x` on a dynamic tensor aborts upstream's canonicalize
    (scan-opt --canonicalize dies); compile() runs the C++ guard
    (genericizeFoldHazards, through the C API) before a pipeline string."""
    prog = mlir_scan.compile(
        """
        func.func @f(%x: tensor<?xi32>) -> tensor<?xi1> {
          %c = arith.cmpi eq, %x, %x : tensor<?xi32>
          return %c : tensor<?xi1>
        }""",
        optimize="canonicalize",
    )
    np.testing.assert_array_equal(prog.f(np.arange(3, dtype=np.int32)), [True, True, True])


def test_functions_never_write_their_arguments():
    # tensor.insert into an argument: bufferization must copy, not write the
    # caller's array (the runtime passes arrays without copying).
    prog = mlir_scan.compile(
        """
        func.func @set0(%x: tensor<?xf64>, %v: f64) -> tensor<?xf64> {
          %c0 = arith.constant 0 : index
          %r = tensor.insert %v into %x[%c0] : tensor<?xf64>
          return %r : tensor<?xf64>
        }"""
    )
    a = np.zeros(3)
    np.testing.assert_array_equal(prog.set0(a, 5.0), [5.0, 0.0, 0.0])
    np.testing.assert_array_equal(a, [0.0, 0.0, 0.0])


def test_ir_the_llvm_lowering_would_abort_on_is_an_error():
    with pytest.raises(ir.MLIRError, match="at most one dynamic size per group"):
        mlir_scan.compile(
            """
            func.func @f(%a: tensor<?xf64>, %m: index, %n: index) -> tensor<?x?xf64> {
              %r = tensor.expand_shape %a [[0, 1]] output_shape [%m, %n]
                  : tensor<?xf64> into tensor<?x?xf64>
              return %r : tensor<?x?xf64>
            }"""
        )


DYNAMIC_ROWS = """
func.func @rows(%n: index, %k: index, %v: f32) -> tensor<?x?xf32> {
  %r = scan.scan steps(%n) nonsequences(%k, %v : index, f32) {
  ^bb0(%kk: index, %vv: f32):
    %e = tensor.empty(%kk) : tensor<?xf32>
    %f = linalg.fill ins(%vv : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    scan.yield %f : tensor<?xf32>
  } -> (tensor<?x?xf32>)
  return %r : tensor<?x?xf32>
}
func.func @map_rows(%m: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %m, %c0 : tensor<?x?xf64>
  %r = scan.scan steps(%n) sequences(%m : tensor<?x?xf64>) {
  ^bb0(%row: tensor<?xf64>):
    %y = arith.mulf %row, %row : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}
func.func @lengths(%n: index, %lens: tensor<?xindex>, %stops: tensor<?xi1>) -> tensor<?x?xi64> {
  %r = scan.scan steps(%n) until sequences(%lens : tensor<?xindex>, %stops : tensor<?xi1>) {
  ^bb0(%l: index, %stop: i1):
    %e = tensor.empty(%l) : tensor<?xi64>
    %c = arith.constant 7 : i64
    %f = linalg.fill ins(%c : i64) outs(%e : tensor<?xi64>) -> tensor<?xi64>
    scan.yield %f, %stop : tensor<?xi64>, i1
  } -> (tensor<?x?xi64>)
  return %r : tensor<?x?xi64>
}
func.func @last_two(%n: index, %k: index) -> tensor<2x?xi64> {
  %z = arith.constant 0 : i64
  %r:2 = scan.scan steps(%n) sitsot(%z : i64) nonsequences(%k : index) keep [0, 2] {
  ^bb0(%p: i64, %kk: index):
    %one = arith.constant 1 : i64
    %q = arith.addi %p, %one : i64
    %e = tensor.empty(%kk) : tensor<?xi64>
    %f = linalg.fill ins(%q : i64) outs(%e : tensor<?xi64>) -> tensor<?xi64>
    scan.yield %q, %f : i64, tensor<?xi64>
  } -> (tensor<?xi64>, tensor<2x?xi64>)
  return %r#1 : tensor<2x?xi64>
}
"""


@pytest.mark.parametrize("optimize", [False, True])
def test_nitsot_rows_sized_by_the_first_step(optimize):
    """Nitsot rows whose size only a step knows (Theano sizes the output from its first step)."""
    p = mlir_scan.compile(DYNAMIC_ROWS, optimize=optimize)
    np.testing.assert_array_equal(p.rows(3, 2, 1.5), np.full((3, 2), 1.5, np.float32))
    assert p.rows(0, 4, 1.0).shape == (0, 0)  # zero steps: 0 for the row's dynamic size
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(p.map_rows(m), m * m)
    assert p.map_rows(np.zeros((0, 5))).shape == (0, 0)
    # `until`: 100 steps of 3-element rows (the buffer grows past its first 64 rows).
    lens = np.array([3] * 100 + [5] * 10, dtype=np.int64)
    stops = np.arange(110) == 99
    got = p.lengths(110, lens, stops)
    assert got.shape == (100, 3) and (got == 7).all()
    np.testing.assert_array_equal(p.last_two(5, 3), [[4, 4, 4], [5, 5, 5]])
    np.testing.assert_array_equal(p.last_two(1, 2), [[0, 0], [1, 1]])
    assert p.last_two(0, 2).shape == (2, 0)
    with pytest.raises(ValueError, match="nitsot #0: a step's row has size 4 where the first step's rows have 3"):
        p.lengths(3, np.array([3, 4, 3], dtype=np.int64), np.zeros(3, bool))
    np.testing.assert_array_equal(p.rows(2, 1, 2.0), [[2.0], [2.0]])  # the program survives


def test_roundtrip_nested_scan_lowers_and_runs():
    """The nested scan of test/Dialect/roundtrip.mlir: the inner result has %k rows, %k a non-sequence."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "Dialect" / "roundtrip.mlir").read_text()
    nested = re.search(r"^func\.func @nested\(.*?^}$", text, re.MULTILINE | re.DOTALL).group(0)
    for optimize in (False, True):
        p = mlir_scan.compile(nested, optimize=optimize)
        m = np.arange(15, dtype=np.float32).reshape(3, 5)
        np.testing.assert_array_equal(p.nested(3, m), np.cumsum(m, axis=1))
        assert p.nested(0, m).shape == (0, 0)
        with pytest.raises(ValueError, match="sequence #0 has 3 rows but the steps and taps need 4"):
            p.nested(4, m)


_VIEWS_ACROSS_CALLS = """
func.func private @first_columns(%a: tensor<?x?xf64>, %k: index) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf64>
  %n = tensor.dim %a, %c1 : tensor<?x?xf64>
  %e = tensor.empty(%m, %n) : tensor<?x?xf64>
  %two = arith.constant 2.0 : f64
  %o = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x?xf64>) outs(%e : tensor<?x?xf64>) {
  ^bb0(%x: f64, %y: f64):
    %z = arith.mulf %x, %two : f64
    linalg.yield %z : f64
  } -> tensor<?x?xf64>
  %s = tensor.extract_slice %o[0, 0] [%m, %k] [1, 1] : tensor<?x?xf64> to tensor<?x?xf64>
  return %s : tensor<?x?xf64>
}
func.func private @fill_ones(%a: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %one = arith.constant 1.0 : f64
  %r = linalg.fill ins(%one : f64) outs(%a : tensor<?x?xf64>) -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}
func.func @returned_view(%a: tensor<?x?xf64>, %k: index) -> tensor<?x?xf64> {
  %r = func.call @first_columns(%a, %k) : (tensor<?x?xf64>, index) -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}
func.func @written_view(%a: tensor<?x?xf64>, %k: index) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf64>
  %r = func.call @first_columns(%a, %c1) : (tensor<?x?xf64>, index) -> tensor<?x?xf64>
  %o = func.call @first_columns(%a, %k) : (tensor<?x?xf64>, index) -> tensor<?x?xf64>
  %s = tensor.extract_slice %o[0, 0] [%m, %c1] [1, 1] : tensor<?x?xf64> to tensor<?x?xf64>
  %w = func.call @fill_ones(%s) : (tensor<?x?xf64>) -> tensor<?x?xf64>
  %u = tensor.insert_slice %w into %o[0, 0] [%m, %c1] [1, 1] : tensor<?x?xf64> into tensor<?x?xf64>
  return %u : tensor<?x?xf64>
}
"""


@pytest.mark.parametrize("plain", [False, True])
def test_views_passed_to_and_returned_from_private_functions(plain):
    """A view of run-time strides crossing a private function's identity-layout boundary (what the
    builder's linear algebra helpers return: the first columns of a work matrix) is a contiguous
    copy: it was once retyped only, and copied back with memcpy as if contiguous. A callee writing
    the view writes the caller's buffer."""
    kw = dict(vectorize=False, parallel=False, block_steps=0, blas=False) if plain else {}
    p = mlir_scan.compile(_VIEWS_ACROSS_CALLS, **kw)
    a = np.arange(20.0).reshape(4, 5)
    for k in (0, 1, 2, 5):
        np.testing.assert_array_equal(p.returned_view(a, k), 2 * a[:, :k])
    want = 2 * a[:, :3]
    want[:, 0] = 1.0
    np.testing.assert_array_equal(p.written_view(a, 3), want)
