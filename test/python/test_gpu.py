"""The GPU backend: ``scan-opt --scan-to-nvvm`` and ``mlir_scan.compile(..., target="cuda")``.

No GPU is available to these tests, so they check the two things that can be
checked without one:

* the device code: every function of test/Dialect/roundtrip.mlir (those that
  return nothing, which the optimizer would delete, as variants that return
  their scans' results), every example program (examples/*.py and
  examples/*.mlir) and random programs of the differential generator compile
  in both modes (host and kernel) to PTX that ``ptxas`` accepts: compiled for
  chip=sm_80 (checked by ``ptxas -arch=sm_80`` and ``-arch=sm_90``) and for
  chip=sm_90 (checked by ``ptxas -arch=sm_90``); and the W5 RNN's kernels at
  H=128 spill no registers;
* what the lowering computes: the same programs run with ``emulate=True``
  (``scan-gpu-emulate``: the kernels as loops on the CPU, block kernels as
  their one-thread lockstep schedule) and must give the CPU path's results /
  the reference interpreter's; the host code of the real lowering must
  JIT-compile (with the CUDA runtime's symbols stubbed: nothing is run).

ptxas runs in batches of two processes. The file takes about 2.5 minutes on
the 2-core CI machine; it is skipped where ``ptxas`` is missing.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mlir_scan
import mlir_scan._cli
from mlir_scan import cuda
from mlir_scan import tensor as T

import test_differential as td

TEST_DIR = Path(__file__).resolve().parents[1]
ROOT = TEST_DIR.parent
EXAMPLES = ROOT / "examples"
PTXAS = shutil.which("ptxas")
ARCHS = ("sm_80", "sm_90")
MODES = ("host", "kernel")

needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on the PATH")


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #


def ptxas(ptx: str, arch: str, verbose: bool = False) -> subprocess.CompletedProcess:
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    try:
        args = [PTXAS, f"-arch={arch}", f.name, "-o", os.devnull] + (["-v"] if verbose else [])
        return subprocess.run(args, capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(f.name)


def split_ptx(text: str) -> list[str]:
    """The kernel modules of a CudaProgram's "ptx" stage, one PTX text each."""
    return [p for p in re.split(r"^// ----- kernel module @\S+\n", text, flags=re.M) if p.strip()]


_DEFINED = re.compile(
    r"^\s*(?:\.(?:visible|extern|weak)\s+)*(?:\.entry|\.func)\s+(?:\([^)]*\)\s*)?([\w$]+)"
    r"|^\s*(?:\.(?:visible|extern)\s+)*\.(?:global|shared|const)\b[^;\n]*?([\w$]+)\s*"
    r"(?:\[[^\]]*\])?\s*(?:=|;)", re.M)


def merge_ptx(modules: list[str]) -> str:
    """One PTX text with the kernels of all `modules` (same .version/.target),
    each module's symbols renamed apart: one ptxas run checks them all."""
    header, bodies = None, []
    for i, ptx in enumerate(modules):
        end = re.search(r"^\.address_size.*$", ptx, re.M).end()
        head, body = ptx[:end], ptx[end:]
        if header is None:
            header = head
        assert re.findall(r"\.(?:version|target) \S+", head) == re.findall(
            r"\.(?:version|target) \S+", header), "modules for different targets"
        names = {a or b for a, b in _DEFINED.findall(body)}
        for name in sorted(names, key=len, reverse=True):
            body = re.sub(rf"(?<![\w$]){re.escape(name)}(?![\w$])", f"{name}__m{i}", body)
        bodies.append(body)
    return header + "\n" + "\n".join(bodies)


#: The ptxas architectures that check the PTX compiled for each chip (PTX for
#: sm_80 is valid input for newer architectures too).
PTXAS_ARCHS = {"sm_80": ARCHS, "sm_90": ("sm_90",)}


def assert_ptxas_accepts(batches: dict[str, list[str]], chip: str = "sm_80") -> None:
    """Runs ptxas for the architectures of `chip` on each batch (a name -> PTX
    modules compiled for `chip`, merged)."""
    jobs = [(name, merge_ptx(ptxs), arch) for name, ptxs in batches.items() if ptxs
            for arch in PTXAS_ARCHS[chip]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda job: (job, ptxas(job[1], job[2])), jobs))
    failures = [f"{name} for {arch}:\n{r.stderr[-1500:]}"
                for (name, _, arch), r in results if r.returncode != 0]
    assert not failures, "ptxas rejected:\n" + "\n".join(failures)


def ptx_of_module_text(text: str) -> list[str]:
    """The PTX of every gpu.binary of a lowered module (scan-opt's output)."""
    from mlir import ir
    from mlir.dialects import gpu

    with ir.Context():
        module = ir.Module.parse(text)
        return [gpu.ObjectAttr(obj).object.decode()
                for op in module.body.operations if op.operation.name == "gpu.binary"
                for obj in ir.ArrayAttr(op.attributes["objects"])]


def run_python(script: str, *args: str, timeout: int = 600) -> str:
    """Runs `script` in a fresh interpreter (a crash fails the test, not pytest)."""
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def roundtrip_functions() -> dict[str, str]:
    text = (TEST_DIR / "Dialect" / "roundtrip.mlir").read_text()
    parts = re.split(r"(?m)^(?=func\.func )", text)
    return {re.match(r"func\.func @(\w+)", p).group(1): p for p in parts if p.startswith("func.func")}


# Functions of roundtrip.mlir whose scans have no results: the variant adds a
# step counter (a sitsot) that reads the non-sequences, and returns it.
_NO_RESULT_VARIANTS = {
    "nonsequences_no_results": """
func.func @nonsequences_no_results(%n: index, %w: tensor<16x16xf32>, %f: f32, %i: index, %b: i1, %m: memref<4xf32>)
    -> tensor<?xf32> {
  %z = arith.constant 0.0 : f32
  %r = scan.scan steps(%n) sitsot(%z : f32)
      nonsequences(%w, %f, %i, %b, %m : tensor<16x16xf32>, f32, index, i1, memref<4xf32>) {
  ^bb0(%acc: f32, %w_: tensor<16x16xf32>, %f_: f32, %i_: index, %b_: i1, %m_: memref<4xf32>):
    %c0 = arith.constant 0 : index
    %x = tensor.extract %w_[%i_, %c0] : tensor<16x16xf32>
    %y = memref.load %m_[%c0] : memref<4xf32>
    %s = arith.addf %acc, %x : f32
    %t = arith.addf %s, %y : f32
    %u = arith.select %b_, %t, %f_ : f32
    scan.yield %u : f32
  } -> (tensor<?xf32>)
  return %r : tensor<?xf32>
}
""",
    "empty_groups": """
func.func @empty_groups(%n: index, %w: f32) -> tensor<?xf32> {
  %z = arith.constant 0.0 : f32
  %r = scan.scan steps(%n) sequences() sitsot(%z : f32) nonsequences(%w : f32) {
  ^bb0(%acc: f32, %pw: f32):
    %s = arith.addf %acc, %pw : f32
    scan.yield %s : f32
  } -> (tensor<?xf32>)
  return %r : tensor<?xf32>
}
""",
}


def returning_variant(name: str, text: str) -> str:
    """`text` (a roundtrip.mlir function) as a function that returns what its
    scans compute: a bare `return` returns every result of the one scan,
    whose types the signature gets. (Unchanged if it returns something.)"""
    if name in _NO_RESULT_VARIANTS:
        return _NO_RESULT_VARIANTS[name]
    body = text[:re.search(r"^\}$", text, re.M).end()]  # without the next function's comments
    if not re.search(r"^\s*return\s*$", body, re.M):
        return text
    scans = re.findall(r"^\s*(%\w+)(?::(\d+))? = scan\.scan", body, re.M)
    assert len(scans) == 1, f"{name}: one scan with results expected"
    value, count = scans[0]
    types = re.findall(r"\} -> \((.*)\)\s*$", body, re.M)[-1]
    results = [f"{value}#{i}" for i in range(int(count))] if count else [value]
    body = re.sub(r"^(\s*)return\s*$", rf"\1return {', '.join(results)} : {types}", body, flags=re.M)
    return re.sub(r"\)\s*\{\n", f") -> ({types}) {{\n", body, count=1)


def roundtrip_programs() -> dict[str, str]:
    """Every roundtrip.mlir function, returning its results."""
    return {name: returning_variant(name, text) for name, text in roundtrip_functions().items()}


def test_roundtrip_variants_return_their_results():
    """The variants keep each function's scan and only return what it computes."""
    functions, programs = roundtrip_functions(), roundtrip_programs()
    changed = {n for n in functions if programs[n] != functions[n]}
    assert changed == {"all_groups", "element_types", "item_forms", "empty_groups",
                       "nonsequences_no_results"}
    for name in changed:
        verify_source = programs[name]
        assert re.search(r"^\s*return %", verify_source, re.M), verify_source
        td.verify(verify_source)
    assert "return %r#0, %r#1, %r#2, %r#3, %r#4 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<1x4xf32>" \
        in programs["all_groups"]


def scan_opt(source: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([mlir_scan._cli.scan_opt_path(), "-", *args], input=source,
                          capture_output=True, text=True, timeout=300)


# --------------------------------------------------------------------------- #
# PTX accepted by ptxas: roundtrip.mlir, examples, random programs
# --------------------------------------------------------------------------- #


def split_run(functions: dict[str, str], *args: str) -> tuple[dict[str, str], str]:
    """Runs scan-opt on every function (one process, --split-input-file):
    (function -> output module, for those that lowered; stderr)."""
    source = "\n// -----\n".join(functions.values())
    proc = scan_opt(source, "--split-input-file", *args)
    assert proc.returncode in (0, 1), f"scan-opt crashed:\n{proc.stderr[-3000:]}"
    outputs = {}
    for chunk in proc.stdout.split("// -----"):
        names = re.findall(r"llvm\.func (?:internal )?@(\w+)\(", chunk)
        owners = [n for n in functions if n in names]
        if owners:
            outputs[owners[0]] = chunk
    return outputs, proc.stderr


@pytest.fixture(scope="module")
def cpu_lowered() -> tuple[set[str], str]:
    """The roundtrip functions the CPU pipeline lowers, and its errors."""
    outputs, errors = split_run(roundtrip_programs(), "--scan-to-llvm")
    return set(outputs), errors


#: Roundtrip functions that mode=kernel refuses: a loop that allocates in
#: every step (@nested: its nitsot's rows have a size known only once the
#: first step ran, so the outer loop allocates the output in its body).
KERNEL_MODE_REFUSES = {"nested"}


@needs_ptxas
@pytest.mark.parametrize("chip", ["sm_80", "sm_90"])
@pytest.mark.parametrize("mode", MODES)
def test_roundtrip_functions_compile_to_ptx(mode, chip, cpu_lowered):
    """Every function of roundtrip.mlir (returning its results) that the CPU
    pipeline lowers goes through `scan-opt --scan-to-nvvm` to PTX that ptxas
    accepts, and each has GPU code; the one the CPU pipeline rejects (a
    nitsot with dynamic rows) gets the same located error, and no crash.
    mode=kernel refuses the functions of KERNEL_MODE_REFUSES, naming why."""
    functions = roundtrip_programs()
    lowered, cpu_errors = cpu_lowered
    outputs, errors = split_run(functions, f"--scan-to-nvvm=chip={chip} mode={mode}")
    refused = KERNEL_MODE_REFUSES if mode == "kernel" else set()
    assert set(outputs) == lowered - refused, errors[-3000:]
    assert len(lowered) >= len(functions) - 1
    for line in cpu_errors.splitlines():
        if ": error: " in line:
            assert line in errors, f"{line}\n---\n{errors[-3000:]}"
    assert errors.count("mode=kernel cannot run this loop in one kernel: every step allocates memory") \
        == len(refused), errors[-3000:]
    without_kernels = [name for name, text in outputs.items() if "gpu.binary" not in text]
    assert not without_kernels, without_kernels
    modules = [ptx for text in outputs.values() for ptx in ptx_of_module_text(text)]
    assert all(f".target {chip}" in m for m in modules)
    assert len(modules) > 20
    assert_ptxas_accepts({f"roundtrip.mlir ({mode}, {chip})": modules}, chip)


# The examples run with mlir_scan.compile redirected to the GPU target: once
# emulated (their output must match the CPU run), then each module they
# compiled goes to PTX (the real lowering).
_EXAMPLES_SCRIPT = r"""
import contextlib, glob, io, json, os, runpy, sys
import numpy as np
import mlir_scan, mlir_scan.compiler as compiler
from mlir_scan import cuda
mode, examples = sys.argv[1], sys.argv[2]
original = compiler.compile
texts = []
def redirected(source, optimize=True, opt_level=3, vectorize=True, checks=True, target="cpu", **options):
    texts.append((str(source), optimize))
    if mode == "cpu":
        return original(source, optimize=optimize, opt_level=opt_level)
    return original(source, optimize=optimize, opt_level=opt_level, target="cuda", mode=mode,
                    emulate=True)
compiler.compile = mlir_scan.compile = redirected
# what theano.function compiles with (the module, which the package's
# `function` attribute hides)
sys.modules["mlir_scan.builder.function"].compile_mlir = redirected
outputs = {}
for path in sorted(glob.glob(os.path.join(examples, "*.py"))):
    np.random.seed(0)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        runpy.run_path(path, run_name="__main__")
    outputs[os.path.basename(path)] = buffer.getvalue()
ptx = {"sm_80": [], "sm_90": []}
if mode != "cpu":
    for text, optimize in texts:
        for chip in ptx:
            program = original(text, optimize=optimize, target="cuda", mode=mode, chip=chip)
            ptx[chip].append(program.ir("ptx"))
print(json.dumps({"outputs": outputs, "ptx": ptx, "modules": len(texts)}))
"""


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?", text)]


@pytest.fixture(scope="module")
def cpu_example_outputs() -> dict[str, str]:
    return json.loads(run_python(_EXAMPLES_SCRIPT, "cpu", str(EXAMPLES)))["outputs"]


@needs_ptxas
@pytest.mark.parametrize("mode", MODES)
def test_examples_on_the_gpu_path(mode, cpu_example_outputs):
    """Every example program: emulated GPU run prints the CPU run's numbers, and
    every module it compiles becomes PTX that ptxas accepts."""
    result = json.loads(run_python(_EXAMPLES_SCRIPT, mode, str(EXAMPLES)))
    assert result["outputs"].keys() == cpu_example_outputs.keys()
    for name, out in result["outputs"].items():
        want = cpu_example_outputs[name]
        got_numbers, want_numbers = numbers(out), numbers(want)
        assert len(got_numbers) == len(want_numbers), f"{name}:\n{out}\n--- CPU:\n{want}"
        # The RNN example prints its error against NumPy (~1e-16 either way).
        np.testing.assert_allclose(got_numbers, want_numbers, rtol=1e-6, atol=1e-12,
                                   err_msg=f"{name}:\n{out}\n--- CPU:\n{want}")
    assert result["modules"] >= 10
    for chip, texts in result["ptx"].items():
        modules = [ptx for text in texts for ptx in split_ptx(text)]
        assert modules and all(f".target {chip}" in m for m in modules)
        assert_ptxas_accepts({f"examples ({mode}, {chip})": modules}, chip)


MLIR_EXAMPLES = sorted(EXAMPLES.glob("*.mlir"))


@needs_ptxas
@pytest.mark.parametrize("mode", MODES)
def test_mlir_examples_on_the_gpu_path(mode):
    """examples/*.mlir: `scan-opt --scan-to-nvvm` in both modes for sm_80 and
    sm_90, PTX accepted; cumsum.mlir emulated gives the CPU's numbers. The
    entry point of cumsum_main.mlir (for mlir-runner) calls a host function
    with the result: the host waits for the stream, then passes a host copy."""
    assert {p.name for p in MLIR_EXAMPLES} >= {"cumsum.mlir", "cumsum_main.mlir"}
    for path in MLIR_EXAMPLES:
        for chip in ("sm_80", "sm_90"):
            proc = scan_opt(path.read_text(), f"--scan-to-nvvm=chip={chip} mode={mode}")
            assert proc.returncode == 0, f"{path.name}:\n{proc.stderr[-3000:]}"
            modules = ptx_of_module_text(proc.stdout)
            assert modules, path.name
            assert_ptxas_accepts({f"{path.name} ({mode}, {chip})": modules}, chip)
    main = scan_opt((EXAMPLES / "cumsum_main.mlir").read_text(),
                    "--pass-pipeline=builtin.module(scan-optimize,convert-scan-to-scf{block-steps=0},canonicalize,cse,"
                    f"scan-gpu-bufferize-loops,scan-buffers-to-gpu{{mode={mode}}})")
    assert main.returncode == 0, main.stderr[-3000:]
    host = main.stdout.split("func.func @main")[1]
    assert "call @cumsum" not in host  # inlined
    assert re.search(r"gpu\.memcpy async \[%\w+\] %(\w+), %\w+ : memref<4xf64>.*\n"
                     r"(?:.*\n)*?.*memref\.cast %\1 : memref<4xf64> to memref<\*xf64>\n"
                     r"(?:.*\n)*?.*llvm\.call @mgpuStreamSynchronize.*\n\s*call @printMemrefF64", host), host
    source = (EXAMPLES / "cumsum.mlir").read_text()
    xs = np.array([1.0, 2.0, 3.0, 4.0])
    want = mlir_scan.compile(source).cumsum(xs, 0.5)
    got = mlir_scan.compile(source, target="cuda", mode=mode, emulate=True).cumsum(xs, 0.5)
    np.testing.assert_array_equal(got, want)


RANDOM_PTX_PROGRAMS = 8

_COMPILE_SCRIPT = r"""
import json, sys
import mlir_scan
sources = json.loads(sys.stdin.read())
out = []
for source, optimize in sources:
    row = {}
    for mode in ("host", "kernel"):
        for chip in ("sm_80", "sm_90"):
            program = mlir_scan.compile(source, optimize=optimize, target="cuda", mode=mode, chip=chip)
            row[f"{mode} {chip}"] = program.ir("ptx")
    out.append(row)
print(json.dumps(out))
"""


@needs_ptxas
def test_random_programs_compile_to_ptx():
    """Random programs of the differential generator (every scan kind, nested
    and chained scans; hypothesis derandomized: the same programs every run),
    in both modes, compiled for sm_80 and for sm_90: PTX accepted; kernel mode
    has block kernels (bar.sync) in some of them."""
    cases = []

    @settings(max_examples=RANDOM_PTX_PROGRAMS, **td.COMMON)
    @given(case=td.programs(), optimize=st.booleans())
    def collect(case, optimize):
        cases.append((case.source, optimize))

    collect()
    proc = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=600, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout)
    assert any("bar.sync" in row["kernel sm_80"] for row in rows)
    for chip in ("sm_80", "sm_90"):
        batches = {f"program #{i} ({key})\n{cases[i][0]}": split_ptx(text)
                   for i, row in enumerate(rows) for key, text in row.items() if key.endswith(chip)}
        assert all(f".target {chip}" in m for b in batches.values() for m in b)
        assert_ptxas_accepts(batches, chip)


@needs_ptxas
def test_merged_ptx_checks_every_module():
    """The batching itself: a module that ptxas rejects fails its batch."""
    program = mlir_scan.compile(RNN, target="cuda", mode="host", chip="sm_80")
    modules = split_ptx(program.ir("ptx"))
    assert len(modules) > 2
    assert ptxas(merge_ptx(modules), "sm_90").returncode == 0
    broken = modules[:-1] + [modules[-1].replace("ret;", "ret")]
    assert ptxas(merge_ptx(broken), "sm_90").returncode != 0
    # Device functions (a bare `.func`, declared then defined, as libdevice's
    # pow is) are renamed apart too: two modules that both define one merge.
    x = T.dvector("x")
    pow_ptx = split_ptx(mlir_scan.function([x], x ** x, target="cuda").program.ir("ptx"))
    assert any(re.search(r"^\.func\b", m, re.M) for m in pow_ptx)
    assert ptxas(merge_ptx(pow_ptx + pow_ptx), "sm_90").returncode == 0


# --------------------------------------------------------------------------- #
# What the lowering computes: the kernels emulated on the CPU
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def worker():
    w = td._Worker()
    yield w
    w.close()


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=20, **td.COMMON)
@given(case=td.programs(), optimize=st.booleans())
def test_random_programs_emulated(worker, mode, case, optimize):
    """The GPU lowering's program (cells, read-backs, error words, kernel
    mapping) run on the CPU gives the reference interpreter's results."""
    td.check(worker, case, {"optimize": optimize, "target": "cuda", "mode": mode, "emulate": True})


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=8, **td.COMMON)
@given(case=td.programs(td.UNTIL), optimize=st.booleans())
def test_until_programs_emulated(worker, mode, case, optimize):
    td.check(worker, case, {"optimize": optimize, "target": "cuda", "mode": mode, "emulate": True})


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=8, **td.COMMON)
@given(case=td.programs(td.NESTED), optimize=st.booleans())
def test_nested_programs_emulated(worker, mode, case, optimize):
    td.check(worker, case, {"optimize": optimize, "target": "cuda", "mode": mode, "emulate": True})


@pytest.mark.parametrize("mode", MODES)
def test_run_time_errors_emulated(worker, mode):
    """A failed run-time check is reported as on the CPU: negative n_steps (a
    host check) and a too-short sequence of an inner scan (a check made inside
    a kernel, reported through the device error word)."""
    options = {"optimize": False, "target": "cuda", "mode": mode, "emulate": True}
    status = worker.run(_NEGATIVE_STEPS, "f", (np.int64(-1), np.zeros(3)), options)
    assert status[:2] == ("raise", "ValueError") and "n_steps is -1" in status[2], status
    status = worker.run(_INNER_TOO_SHORT, "f", (np.arange(6.0).reshape(2, 3), np.int64(5)), options)
    assert status[:2] == ("raise", "ValueError"), status
    assert "sequence #0 has 3 rows but the steps and taps need 5" in status[2], status
    status = worker.run(_INNER_TOO_SHORT, "f", (np.arange(6.0).reshape(2, 3), np.int64(3)), options)
    assert status[0] == "ok", status
    np.testing.assert_allclose(status[1][0], [3.0, 12.0])


@pytest.mark.parametrize("mode", MODES)
def test_builder_check_inside_a_kernel_emulated(mode):
    """The Python builder's index check in a scan body runs in a kernel: the
    report goes through the device error word to the builder's host function,
    with the CPU path's arguments."""
    import mlir_scan as theano
    from mlir_scan import tensor as T

    v, idx = T.vector("v"), T.lvector("idx")
    res, _ = theano.scan(lambda i, vv: vv[i] * 2.0, sequences=idx, non_sequences=v)
    f = theano.function([idx, v], res)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        f(np.array([0, 5]), np.array([1.0, 2.0, 3.0]))
    program = mlir_scan.compile(f.ir, target="cuda", mode=mode, emulate=True)
    assert "memref<5xi64>" in program.ir("gpu")  # the device error word
    with pytest.raises(IndexError) as raised:
        program.f(np.array([0, 5]), np.array([1.0, 2.0, 3.0]))
    failure = raised.value.scan_check  # the builder's check id and values, as on the CPU
    assert (failure.have, failure.need) == (5, 3)
    assert f._checks[failure.check] == "subtensor: index {have} is out of bounds for axis 0 with size {need}"
    np.testing.assert_array_equal(program.f(np.array([2, 0]), np.array([1.0, 2.0, 3.0])), [6.0, 2.0])


_LAST_ROW = """
func.func @f(%xs: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %z = arith.constant 0.0 : f64
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%z : f64) {
  ^bb0(%x: f64, %a: f64):
    %s = arith.addf %a, %x : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  %last = arith.subi %n, %c1 : index
  %v = tensor.extract %r[%last] : tensor<?xf64>
  return %v : f64
}
"""


@pytest.mark.parametrize("mode", ("auto", "host", "kernel"))
def test_save_mem_bounds_check_raises_on_the_host(mode):
    """`result[-1]` of a scan that ran no step: scan-save-mem's bounds check
    (a cf.assert after the scan, in host code) raises as on the CPU when
    emulated, and in the CUDA program goes to the run-time library (as the
    scans' own checks do) instead of upstream's print-and-abort."""
    emulated = mlir_scan.compile(_LAST_ROW, target="cuda", mode=mode, emulate=True)
    assert emulated.f(np.array([1.0, 2.0])) == 3.0
    with pytest.raises(ValueError, match="out-of-bounds access"):
        emulated.f(np.zeros(0))
    host = mlir_scan.compile(_LAST_ROW, target="cuda", mode=mode).ir("llvm")
    assert "__mlir_scan_fail_message" in host and "abort" not in host


def nvvm_test_function(name: str) -> str:
    """The function @`name` of test/Conversion/scan-to-nvvm.mlir (its split
    chunk, with the declarations it needs)."""
    chunks = (TEST_DIR / "Conversion" / "scan-to-nvvm.mlir").read_text().split("// -----")
    return next(c for c in chunks if f"func.func @{name}(" in c)


ALL_MODES = ("auto", "host", "kernel")


def host_code(program) -> str:
    """The host functions of a GPU program's "gpu" stage (kernels removed)."""
    text = program.ir("gpu")
    return re.sub(r"gpu\.launch blocks.*?\{scan\.kernel = \"\w+\"\}", "LAUNCH", text, flags=re.S)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_until_with_a_run_time_step_count_emulated(mode):
    """`until` scans whose step count is an argument grow their stacked
    outputs' buffers when full (at 32768 rows, then twice as many): the
    emulated GPU program gives the CPU's results for step counts that stop
    early, run out, never start, or grow the buffers twice. In kernel mode
    (and auto) the steps run in one kernel (a block kernel for the vector
    state, a serial kernel for the scalar ones): the host's loop only runs
    once per growth."""
    grow = nvvm_test_function("grow_dynamic")
    cpu, emu = mlir_scan.compile(grow), mlir_scan.compile(grow, target="cuda", mode=mode, emulate=True)
    for n, h0, limit in [(0, 1.0, 1.0), (5, 1e-30, 1e30), (100, 1.0, 100.0), (32768, 0.0, 1.0),
                         (70000, 0.0, 1.0)]:
        args = (np.full(8, h0, np.float32), np.float32(limit), np.int64(n))
        want, got = cpu.grow_dynamic(*args), emu.grow_dynamic(*args)
        assert got.shape == want.shape and np.array_equal(got, want), (n, got.shape, want.shape)
    host = host_code(emu)
    if mode != "host":
        assert host.count("scf.while") == 1 and 'scan.kernel = "block"' in emu.ir("gpu"), host
    backwards = nvvm_test_function("backwards_until_keep")
    cpu, emu = mlir_scan.compile(backwards), mlir_scan.compile(backwards, target="cuda", mode=mode,
                                                               emulate=True)
    rng = np.random.default_rng(3)
    for n, limit in [(0, 1.0), (7, 1e30), (50000, 1e30), (70000, 30.0), (100, 3.0)]:
        xs = rng.random(max(n, 1))
        want, got = cpu.backwards_until_keep(xs, np.int64(n), limit), \
            emu.backwards_until_keep(xs, np.int64(n), limit)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert host_code(emu).count("scf.while") == 1  # the inner loop is one serial kernel
    nested = nvvm_test_function("nested_keep")
    cpu, emu = mlir_scan.compile(nested), mlir_scan.compile(nested, target="cuda", mode=mode, emulate=True)
    rows, h0 = np.arange(6.0).reshape(2, 3), np.array([1.0, -1.0, 0.5, 2.0])
    for m in (0, 1, 3):
        np.testing.assert_array_equal(emu.nested_keep(rows, m, h0), cpu.nested_keep(rows, m, h0))
    with pytest.raises(ValueError, match="n_steps is -1"):
        emu.nested_keep(rows, -1, h0)
    if mode != "host":
        assert "scf.for" not in host_code(emu).split("func.func @nested_keep")[1].split("LAUNCH")[0]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_loop_allocating_every_step(mode):
    """A nested `until` scan whose step count changes from outer step to outer
    step allocates in every outer step: mode=kernel refuses it, naming why;
    auto and host run the outer loop on the host and give the CPU's results."""
    source = (TEST_DIR / "Conversion" / "scan-gpu-form-kernels-kernel-mode.mlir").read_text()
    if mode == "kernel":
        with pytest.raises(Exception, match="mode=kernel cannot run this loop in one kernel: every step "
                                            "allocates memory"):
            mlir_scan.compile(source, target="cuda", mode=mode, emulate=True)
        return
    cpu, emu = mlir_scan.compile(source), mlir_scan.compile(source, target="cuda", mode=mode, emulate=True)
    v = np.linspace(0.1, 0.8, 8)
    # (Each inner scan runs one step at least: the body reads its last row.
    # An infinite limit never stops: 40000 steps grow the inner buffer.)
    for ks, limit in [(np.array([1, 3, 1, 5]), 100.0), (np.array([4, 40000, 2]), np.inf),
                      (np.array([], dtype=np.int64), 1.0)]:
        np.testing.assert_array_equal(emu.f(ks, v, limit), cpu.f(ks, v, limit))


_CALLS = """
func.func private @helper(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%x0 : f64) {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
func.func @twice(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
  %a = call @helper(%xs, %x0) : (tensor<?xf64>, f64) -> tensor<?xf64>
  %b = call @helper(%a, %x0) : (tensor<?xf64>, f64) -> tensor<?xf64>
  return %b : tensor<?xf64>
}
func.func @rnn(%xs: tensor<?x4xf32>, %h0: tensor<8xf32>, %W: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x4xf32>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x4xf32>) sitsot(%h0 : tensor<8xf32>)
      nonsequences(%W : tensor<8x8xf32>) {
  ^bb0(%x: tensor<4xf32>, %h: tensor<8xf32>, %w: tensor<8x8xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %m = linalg.vecmat ins(%h, %w : tensor<8xf32>, tensor<8x8xf32>) outs(%f : tensor<8xf32>) -> tensor<8xf32>
    %t = math.tanh %m : tensor<8xf32>
    scan.yield %t : tensor<8xf32>
  } -> (tensor<?x8xf32>)
  return %r : tensor<?x8xf32>
}
func.func @last(%xs: tensor<?x4xf32>, %h0: tensor<8xf32>, %W: tensor<8x8xf32>) -> tensor<8xf32> {
  %r = call @rnn(%xs, %h0, %W) : (tensor<?x4xf32>, tensor<8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %r, %c0 : tensor<?x8xf32>
  %c1 = arith.constant 1 : index
  %l = arith.subi %n, %c1 : index
  %row = tensor.extract_slice %r[%l, 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<8xf32>
  return %row : tensor<8xf32>
}
"""


@pytest.mark.parametrize("mode", ALL_MODES)
def test_calls_emulated(mode):
    """Calls between the module's functions (a private helper called twice, a
    public function calling another public one) are inlined on the GPU path;
    the emulated program gives the CPU's results, and PTX is made for it."""
    cpu = mlir_scan.compile(_CALLS)
    emu = mlir_scan.compile(_CALLS, target="cuda", mode=mode, emulate=True)
    assert "call @" not in host_code(emu).replace("call @__mlir_scan_fail", "")
    rng = np.random.default_rng(1)
    xs = rng.random(7)
    seq, h0 = rng.random((6, 4)).astype(np.float32), rng.random(8).astype(np.float32)
    W = (rng.random((8, 8)) / 8).astype(np.float32)
    np.testing.assert_array_equal(emu.twice(xs, 1.0), cpu.twice(xs, 1.0))
    np.testing.assert_allclose(emu.last(seq, h0, W), cpu.last(seq, h0, W), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(emu.rnn(seq, h0, W), cpu.rnn(seq, h0, W), rtol=1e-5, atol=1e-6)
    assert ".entry" in mlir_scan.compile(_CALLS, target="cuda", mode=mode).ir("ptx")


_NEGATIVE_STEPS = """
func.func @f(%n: index, %xs: tensor<3xf64>) -> tensor<?xf64> {
  %z = arith.constant 0.0 : f64
  %r = scan.scan steps(%n) sitsot(%z : f64) nonsequences(%xs : tensor<3xf64>) {
  ^bb0(%acc: f64, %v: tensor<3xf64>):
    %c0 = arith.constant 0 : index
    %x = tensor.extract %v[%c0] : tensor<3xf64>
    %s = arith.addf %acc, %x : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
"""

# The inner scan runs %m steps over a row of 3: m > 3 fails inside the outer
# loop, which runs in a kernel.
_INNER_TOO_SHORT = """
func.func @f(%rows: tensor<2x3xf64>, %m: index) -> tensor<2xf64> {
  %c2 = arith.constant 2 : index
  %r = scan.scan steps(%c2) sequences(%rows : tensor<2x3xf64>) nonsequences(%m : index) {
  ^bb0(%row: tensor<3xf64>, %mm: index):
    %z = arith.constant 0.0 : f64
    %s = scan.scan steps(%mm) sequences(%row : tensor<3xf64>) sitsot(%z : f64) keep [1] {
    ^bb0(%x: f64, %acc: f64):
      %a = arith.addf %acc, %x : f64
      scan.yield %a : f64
    } -> (tensor<1xf64>)
    %c0 = arith.constant 0 : index
    %last = tensor.extract %s[%c0] : tensor<1xf64>
    scan.yield %last : f64
  } -> (tensor<2xf64>)
  return %r : tensor<2xf64>
}
"""


# --------------------------------------------------------------------------- #
# W5 at H=128: no register spills
# --------------------------------------------------------------------------- #


def w5_source(dtype) -> str:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import workloads
    finally:
        sys.path.pop(0)
    return workloads.w5_rnn(dtype, quick=True, hidden=128).source


@needs_ptxas
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_w5_h128_kernels_do_not_spill(dtype, capsys):
    """ptxas -v: no spill stores or loads in any W5 kernel (H=128), in both
    modes, for sm_80 and sm_90. The register counts are printed (-s) and
    recorded in docs/performance.md."""
    source = w5_source(dtype)
    report = []
    for mode in MODES:
        program = mlir_scan.compile(source, target="cuda", mode=mode, chip="sm_80")
        for i, ptx in enumerate(split_ptx(program.ir("ptx"))):
            barriers = "bar.sync" in ptx
            for arch in ARCHS:
                r = ptxas(ptx, arch, verbose=True)
                assert r.returncode == 0, r.stderr
                spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
                assert spills and all(s == ("0", "0") for s in spills), r.stderr
                registers = re.search(r"Used (\d+) registers", r.stderr).group(1)
                report.append(f"W5-{np.dtype(dtype).name}-H128 {mode} kernel #{i} {arch}: "
                              f"{registers} registers{' (block kernel)' if barriers else ''}")
    with capsys.disabled():
        print("\n" + "\n".join(report))


# --------------------------------------------------------------------------- #
# The Python API
# --------------------------------------------------------------------------- #

RNN = (TEST_DIR / "Conversion" / "scan-to-nvvm.mlir").read_text().split("// -----")[0]


def test_compile_for_cuda_shows_every_stage():
    program = mlir_scan.compile(RNN, target="cuda", chip="sm_90", mode="kernel")
    assert program.chip == "sm_90" and program.mode == "kernel"
    for stage in cuda.STAGES:
        assert program.ir(stage), stage
    assert "scan.scan" in program.ir("input")
    assert "memref.alloc" in program.ir("bufferized")
    assert "gpu.launch_func" in program.ir("gpu") and "gpu.func" in program.ir("gpu")
    assert "gpu.binary" in program.ir("llvm") and "@rnn(" in program.ir("llvm")
    ptx = program.ir("ptx")
    assert ".target sm_90" in ptx and ".entry" in ptx and "bar.sync" in ptx
    with pytest.raises(ValueError, match="unknown stage 'scf-gpu'"):
        program.ir("scf-gpu")


def test_modes_differ_where_they_should():
    host = mlir_scan.compile(RNN, target="cuda", mode="host")
    kernel = mlir_scan.compile(RNN, target="cuda", mode="kernel")
    auto = mlir_scan.compile(RNN, target="cuda")
    # Host mode launches inside the host's time loop; kernel mode has no loop on the host.
    host_func = host.ir("gpu").split("gpu.module")[0]
    kernel_func = kernel.ir("gpu").split("gpu.module")[0]
    assert "scf.for" in host_func and "scf.for" not in kernel_func
    assert "bar.sync" in kernel.ir("ptx") and "bar.sync" not in host.ir("ptx")
    assert auto.ir("ptx") == kernel.ir("ptx")  # 8 elements: one block


@needs_ptxas
def test_cubin_and_fatbin_formats_keep_the_ptx_stage():
    program = mlir_scan.compile(RNN, target="cuda", chip="sm_90", format="bin")
    assert ".target sm_90" in program.ir("ptx")
    assert 'bin = "\\7FELF' in program.ir("llvm")  # a cubin (ELF), made by ptxas
    program = mlir_scan.compile(RNN, target="cuda", chip="sm_90", format="fatbin")
    assert ".target sm_90" in program.ir("ptx")
    assert '"P\\EDU\\BA' in program.ir("llvm")  # the fatbin magic 0xBA55ED50


def test_calling_without_a_device_raises():
    if cuda.device_count()[0] > 0:
        pytest.skip("this machine has a CUDA device")
    program = mlir_scan.compile(RNN, target="cuda")
    args = (np.zeros((3, 4), np.float32), np.zeros(8, np.float32), np.zeros((8, 8), np.float32),
            np.zeros((4, 8), np.float32), np.zeros(8, np.float32))
    with pytest.raises(RuntimeError, match="no CUDA device"):
        program.rnn(*args)


def test_emulated_program_matches_the_cpu():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal(8).astype(np.float32),
            (rng.standard_normal((8, 8)) / 8).astype(np.float32),
            (rng.standard_normal((4, 8)) / 4).astype(np.float32), rng.standard_normal(8).astype(np.float32))
    want = mlir_scan.compile(RNN).rnn(*args)
    for mode in MODES:
        program = mlir_scan.compile(RNN, target="cuda", mode=mode, emulate=True)
        assert all(program.ir(stage) for stage in cuda.EMULATED_STAGES)
        np.testing.assert_allclose(program.rnn(*args), want, rtol=1e-5, atol=1e-6)


def test_bad_options_are_errors():
    with pytest.raises(ValueError, match="chip must be"):
        mlir_scan.compile(RNN, target="cuda", chip="x86")
    with pytest.raises(ValueError, match="mode must be"):
        mlir_scan.compile(RNN, target="cuda", mode="fast")
    with pytest.raises(ValueError, match="format must be"):
        mlir_scan.compile(RNN, target="cuda", format="elf")
    with pytest.raises(ValueError, match="target must be 'cpu' or 'cuda'"):
        mlir_scan.compile(RNN, target="tpu")
    with pytest.raises(TypeError, match="only applies to target='cuda'"):
        mlir_scan.compile(RNN, chip="sm_90")
    # Names LLVM 22 does not know, or ptxas does not (sm_101), and chips that
    # need a newer PTX than sm_90's (LLVM aborted on sm_100 with PTX 8.0).
    for chip in ("sm_abc", "sm_1000", "sm_99", "sm_101", "SM_80", ""):
        with pytest.raises(ValueError, match="chip must be one of"):
            mlir_scan.compile(RNN, target="cuda", chip=chip)


@needs_ptxas
def test_every_supported_chip_gets_ptx_its_ptxas_accepts():
    source = (EXAMPLES / "cumsum.mlir").read_text()
    for chip in cuda.CHIPS:
        for module in split_ptx(mlir_scan.compile(source, target="cuda", chip=chip).ir("ptx")):
            assert f".target {chip}" in module
            result = ptxas(module, chip)
            assert result.returncode == 0, (chip, result.stderr)


def test_function_with_cuda_target():
    import mlir_scan as theano
    from mlir_scan import tensor as T

    k = T.iscalar("k")
    A = T.vector("A")
    result, updates = theano.scan(fn=lambda prior, A: prior * A, outputs_info=T.ones_like(A),
                                  non_sequences=A, n_steps=k)
    power = theano.function(inputs=[A, k], outputs=result[-1], updates=updates, target="cuda")
    assert isinstance(power.program, cuda.CudaProgram)
    assert ".entry" in power.program.ir("ptx")
    assert (power.program.chip, power.program.mode) == ("sm_80", "auto")
    # chip, format and the GPU mode pass through (Theano's own modes still work).
    tuned = theano.function(inputs=[A, k], outputs=result[-1], updates=updates, target="cuda",
                            chip="sm_90", mode="kernel", format="isa")
    assert (tuned.program.chip, tuned.program.mode, tuned.program.format) == ("sm_90", "kernel", "isa")
    assert ".target sm_90" in tuned.program.ir("ptx")
    host = theano.function(inputs=[A, k], outputs=result[-1], updates=updates, target="cuda", mode="host")
    assert host.program.mode == "host" and host.program.ir("ptx") != tuned.program.ir("ptx")
    fast = theano.function(inputs=[A, k], outputs=result[-1], updates=updates, target="cuda",
                           mode="FAST_COMPILE", chip="sm_90")
    assert (fast.program.chip, fast.program.mode) == ("sm_90", "auto")
    for kwargs, error, message in [
            (dict(target="cuda", chip="sm_99"), ValueError, "function: chip must be one of"),
            (dict(target="cuda", format="elf"), ValueError, "function: format must be one of isa, bin, fatbin"),
            (dict(chip="sm_90"), TypeError, "chip only applies to target='cuda'"),
            (dict(format="isa", chip="sm_90"), TypeError, "chip and format only apply to target='cuda'"),
            (dict(mode="kernel"), ValueError, "mode='kernel' is a GPU mode; it needs target='cuda'"),
            (dict(target="tpu"), ValueError, "function: target must be 'cpu' or 'cuda', not 'tpu'")]:
        with pytest.raises(error, match=re.escape(message)):
            theano.function(inputs=[A, k], outputs=result[-1], updates=updates, **kwargs)
    if cuda.device_count()[0] == 0:
        with pytest.raises(RuntimeError, match="no CUDA device"):
            power(np.arange(3.0), 2)


_HOST_JIT_SCRIPT = r"""
import ctypes, re, sys
import mlir_scan
from mlir import execution_engine, ir
from mlir_scan.runtime import _RUNTIME_SYMBOLS
source, name, mode = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
text = mlir_scan.compile(source, target="cuda", mode=mode).ir("llvm")
runtime = set(re.findall(r"llvm\.func @(mgpu\w+)", text))
# What the translation of gpu.launch_func / gpu.binary calls.
runtime |= {"mgpuModuleLoad", "mgpuModuleLoadJIT", "mgpuModuleUnload", "mgpuModuleGetFunction",
            "mgpuLaunchKernel", "malloc", "free"}
# Stubs that do nothing (the module's constructors and destructors load and
# unload the kernels): the code is compiled, never run.
@ctypes.CFUNCTYPE(ctypes.c_void_p)
def nothing():
    return None
stub = ctypes.cast(nothing, ctypes.c_void_p)
with ir.Context():
    engine = execution_engine.ExecutionEngine(ir.Module.parse(text), opt_level=2)
    for symbol in sorted(runtime - set(_RUNTIME_SYMBOLS)):
        engine.raw_register_runtime(symbol, stub)
    # mlir-scan's own run-time library (error reporting), as compile() registers it.
    for symbol, address in _RUNTIME_SYMBOLS.items():
        engine.raw_register_runtime(symbol, ctypes.c_void_p(address))
    assert engine.raw_lookup("_mlir_ciface_" + name)
print("ok")
"""


@pytest.mark.parametrize("mode", MODES)
def test_host_code_jit_compiles(mode, tmp_path):
    """The host code of the real lowering (kernels embedded as PTX) translates
    to LLVM IR and compiles natively; the CUDA runtime is stubbed, nothing runs."""
    for name, source in (("rnn", RNN), ("grow", (TEST_DIR / "Conversion" / "scan-to-nvvm.mlir")
                                         .read_text().split("// -----")[1])):
        path = tmp_path / f"{name}.mlir"
        path.write_text(source)
        assert run_python(_HOST_JIT_SCRIPT, str(path), name, mode).strip() == "ok"
