"""The lowering of mitmot buffers (convert-scan-to-scf), against the reference interpreter.

A mitmot whose result nobody reads (the gradient of a scan when the initial
state's gradient is not wanted) lives in a ring of the rows one step touches;
an operand that is a splat (``linalg.fill``, a broadcast ``linalg.generic``, a
splat constant) is not copied but filled. Each program below makes the buffer's
rows observable through a nitsot that stacks what the in taps read, so a wrong
ring slot, a row loaded too late or a missed init row changes a result. Every
program runs compiled (with and without scan-optimize) and through
``mlir_scan.reference.run``.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import mlir_scan
import mlir_scan._cli
from mlir_scan.reference import run

# (in taps, out taps): one step's reads and writes, overlapping or not.
TAPS = [
    ((0, 1), (1,)),  # the gradient of a sitsot
    ((0, 1, 3), (1, 3)),  # the gradient of a mitsot with taps [-3, -1]
    ((), (0, 1)),  # write-only
    ((-1, 2), (0, 2)),  # a negative tap: lo = -1
    ((0,), (2,)),  # a row written two steps before it is read
]

INITS = ["argument", "fill", "broadcast", "constant"]
_ID = "affine_map<(d0) -> (d0)>"


def _program(in_taps, out_taps, init: str, use_result: bool, form: str = "arith") -> str:
    """A scan over `n` steps with one mitmot of rows of 3 f64 and a nitsot of the reads.

    With ``form="generic"``, an out tap that overwrites an in tap's row adds
    to that row with an elementwise ``linalg.generic`` that is the row's only
    reader (a gradient's ``g'[t+1] = g[t+1] + ...``): the lowering reads that
    row in place instead of from a copy."""
    lo = min(0, *in_taps, *out_taps)
    hi = max(0, *in_taps, *out_taps)
    rows = f"%rows = arith.addi %n, %c{hi - lo} : index"
    if init == "argument":
        make = "%buf = tensor.cast %b : tensor<?x3xf64> to tensor<?x3xf64>"
    elif init == "fill":
        make = ("%e = tensor.empty(%rows) : tensor<?x3xf64>\n"
                "  %buf = linalg.fill ins(%v : f64) outs(%e : tensor<?x3xf64>) -> tensor<?x3xf64>")
    elif init == "broadcast":
        make = ("%e = tensor.empty(%rows) : tensor<?x3xf64>\n"
                "  %buf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, "
                "affine_map<(d0, d1) -> (d0, d1)>], iterator_types = [\"parallel\", \"parallel\"]} "
                "ins(%v : f64) outs(%e : tensor<?x3xf64>) {\n"
                "  ^bb0(%in: f64, %out: f64):\n    linalg.yield %in : f64\n  } -> tensor<?x3xf64>")
    else:
        make = (f"%cst = arith.constant dense<1.5> : tensor<{{R}}x3xf64>\n"
                f"  %buf = tensor.cast %cst : tensor<{{R}}x3xf64> to tensor<?x3xf64>")
    args = "".join(f"%m{i}: tensor<3xf64>, " for i in range(len(in_taps)))
    # out tap j writes (sum of the reads) * 0.5 + x_t * (j + 1): every row depends
    # on what the step read.
    body = ["%half = arith.constant dense<0.5> : tensor<3xf64>"]
    acc = "%x"
    updated = {in_taps.index(t) for t in out_taps if t in in_taps} if form == "generic" else set()
    for i in range(len(in_taps)):
        if i in updated:
            continue
        body.append(f"%s{i} = arith.addf {acc}, %m{i} : tensor<3xf64>")
        acc = f"%s{i}"
    body.append(f"%h = arith.mulf {acc}, %half : tensor<3xf64>")
    outs = []
    for j in range(len(out_taps)):
        body.append(f"%k{j} = arith.constant dense<{j + 1}.0> : tensor<3xf64>")
        body.append(f"%xk{j} = arith.mulf %x, %k{j} : tensor<3xf64>")
        body.append(f"%o{j} = arith.addf %h, %xk{j} : tensor<3xf64>")
        if form == "generic" and out_taps[j] in in_taps:
            k = in_taps.index(out_taps[j])
            body.append(f"%e{j} = tensor.empty() : tensor<3xf64>")
            body.append(f"%u{j} = linalg.generic {{indexing_maps = [{_ID}, {_ID}, {_ID}], "
                        f"iterator_types = [\"parallel\"]}} ins(%m{k}, %o{j} : tensor<3xf64>, tensor<3xf64>) "
                        f"outs(%e{j} : tensor<3xf64>) {{")
            body.append("^bb0(%a: f64, %c: f64, %d: f64):")
            body.append("  %w = arith.addf %a, %c : f64")
            body.append("  linalg.yield %w : f64")
            body.append("} -> tensor<3xf64>")
            outs.append(f"%u{j}")
            continue
        outs.append(f"%o{j}")
    reads = acc  # the nitsot: what the in taps read (plus x_t)
    yields = outs + [reads]
    ins = "[" + ", ".join(map(str, in_taps)) + "]"
    outs_t = "[" + ", ".join(map(str, out_taps)) + "]"
    result = "%r#0" if use_result else "%r#1"
    ret_t = "tensor<?x3xf64>"
    return f"""
func.func @f(%n: index, %xs: tensor<?x3xf64>, %b: tensor<?x3xf64>, %v: f64) -> ({ret_t}, {ret_t}) {{
  %c{hi - lo} = arith.constant {hi - lo} : index
  {rows}
  {make}
  %r:2 = scan.scan steps(%n) sequences(%xs : tensor<?x3xf64>)
      mitmot(%buf{ins} -> {outs_t} : tensor<?x3xf64>) {{
  ^bb0(%x: tensor<3xf64>, {args.rstrip(", ")}):
    {chr(10).join("    " + line for line in body).strip()}
    scan.yield {", ".join(yields)} : {", ".join(["tensor<3xf64>"] * len(yields))}
  }} -> (tensor<?x3xf64>, tensor<?x3xf64>)
  return {result}, %r#1 : {ret_t}, {ret_t}
}}
""".replace("(%x: tensor<3xf64>, )", "(%x: tensor<3xf64>)")


@pytest.mark.parametrize("form", ["arith", "generic"])
@pytest.mark.parametrize("use_result", [False, True], ids=["result-unused", "result-used"])
@pytest.mark.parametrize("init", INITS)
@pytest.mark.parametrize("taps", TAPS, ids=lambda t: f"in{list(t[0])}-out{list(t[1])}")
@pytest.mark.parametrize("n", [0, 1, 6])
def test_mitmot_matches_reference(taps, init, use_result, n, form):
    in_taps, out_taps = taps
    lo = min(0, *in_taps, *out_taps)
    hi = max(0, *in_taps, *out_taps)
    rows = n + hi - lo
    source = _program(in_taps, out_taps, init, use_result, form).replace("{R}", str(rows))
    rng = np.random.default_rng(n * 100 + len(in_taps))
    xs = rng.standard_normal((n, 3))
    b = rng.standard_normal((rows, 3))
    v = 0.75
    expected = run(source, "f", n, xs, b, v)
    for optimize in (False, True):
        got = mlir_scan.compile(source, optimize=optimize).f(n, xs, b, v)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("use_result", [False, True], ids=["result-unused", "result-used"])
def test_buffer_of_the_lowering(use_result):
    """An unused result: a ring of 2 rows (taps [0, 1] -> [1]) filled row by row from
    the splat, no copy of the operand; a used one: the whole buffer, filled, not
    copied."""
    source = _program((0, 1), (1,), "fill", use_result)
    proc = subprocess.run([str(mlir_scan._cli.scan_opt_path()), "--convert-scan-to-scf"], input=source,
                          capture_output=True, text=True, check=True)
    lowered = proc.stdout
    buffer_fill = re.search(r"linalg\.fill ins\(%arg3 : f64\) outs\(%alloc\w* : memref<\?x3xf64>\)", lowered)
    ring_fill = re.search(r"linalg\.fill ins\(%arg3 : f64\) outs\(%subview\w* : memref<3xf64", lowered)
    copies_operand = re.search(r"materialize_in_destination %2 in", lowered)
    assert not copies_operand
    if use_result:
        assert buffer_fill and not ring_fill and "memref<2x3xf64>" not in lowered
    else:
        assert ring_fill and not buffer_fill and "memref<2x3xf64>" in lowered and "arith.remui" in lowered


@pytest.mark.parametrize("form", ["arith", "generic"])
def test_row_updated_by_its_only_reader_is_not_copied(form):
    """taps [0, 1] -> [1]: the row in tap 1 reads is the row out tap 1 writes. Read by
    an elementwise linalg.generic alone, it is updated in place (no copy per step);
    read by other ops too, it is read from a copy."""
    source = _program((0, 1), (1,), "argument", True, form)
    proc = subprocess.run([str(mlir_scan._cli.scan_opt_path()), "--convert-scan-to-scf"], input=source,
                          capture_output=True, text=True, check=True)
    loop = proc.stdout[proc.stdout.index("scf.for"):]
    if form == "generic":
        assert "memref.copy" not in loop and "restrict writable : memref<3xf64" in loop
    else:
        assert "memref.copy" in loop
