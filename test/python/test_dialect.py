"""The Scan dialect from Python: registration, op classes, attributes,
builders, passes, verifier errors and round-trips (SPEC §3, §4, §7)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import mlir_scan
from mlir import ir, passmanager
from mlir.dialects import arith, func
from mlir_scan.dialect import ScanOp, YieldOp

# A scan with every group and flag, in the shape of SPEC §4's example.
SOURCE = """
func.func @rnn(%n: index, %u: tensor<?x8xf32>, %g: tensor<?x16xf32>, %x0: tensor<3x16xf32>,
               %y0: tensor<4xf32>, %w: tensor<16x16xf32>) -> (tensor<?x16xf32>, tensor<1x16xf32>, tensor<?x4xf32>) {
  %r:3 = scan.scan steps(%n) go_backwards
      sequences(%u[-4, 0, 2] : tensor<?x8xf32>)
      mitmot(%g[] -> [0, 1] : tensor<?x16xf32>)
      mitsot(%x0[-3, -1] : tensor<3x16xf32>)
      sitsot(%y0 : tensor<4xf32>)
      nonsequences(%w : tensor<16x16xf32>) keep [0, 1, 0] {
  ^bb0(%u_m4: tensor<8xf32>, %u_0: tensor<8xf32>, %u_2: tensor<8xf32>, %x_m3: tensor<16xf32>,
       %x_m1: tensor<16xf32>, %y: tensor<4xf32>, %w_: tensor<16x16xf32>):
    %x = arith.addf %x_m3, %x_m1 : tensor<16xf32>
    scan.yield %x, %x, %x, %y : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<4xf32>
  } -> (tensor<?x16xf32>, tensor<1x16xf32>, tensor<?x4xf32>)
  return %r#0, %r#1, %r#2 : tensor<?x16xf32>, tensor<1x16xf32>, tensor<?x4xf32>
}

func.func @powers(%one: i64, %max: i64) -> tensor<?xi64> {
  %c64 = arith.constant 64 : index
  %r = scan.scan steps(%c64) until sitsot(%one : i64) nonsequences(%max : i64) {
  ^bb0(%prev: i64, %m: i64):
    %zero = arith.constant 0 : i64
    %two = arith.constant 2 : i64
    %p = arith.addi %prev, %zero : i64
    %next = arith.muli %p, %two : i64
    %stop = arith.cmpi sgt, %next, %m : i64
    scan.yield %next, %stop : i64, i1
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}
"""

# mitsot #1 has an init of 2 rows for taps [-3, -1].
INVALID = """
func.func @bad(%n: index, %x0: tensor<5xf32>, %x1: tensor<2x16xf32>) {
  %r:2 = scan.scan steps(%n) mitsot(%x0[-5] : tensor<5xf32>, %x1[-3, -1] : tensor<2x16xf32>) {
  ^bb0(%a: f32, %b: tensor<16xf32>, %c: tensor<16xf32>):
    scan.yield %a, %b : f32, tensor<16xf32>
  } -> (tensor<?xf32>, tensor<?x16xf32>)
  return
}
"""


def _ops(module: ir.Module, name: str) -> list[ir.OpView]:
    found = []

    def visit(op):
        if op.name == name:
            found.append(op.opview)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _taps(attr: ir.Attribute) -> list[list[int]]:
    return [list(ir.DenseI64ArrayAttr(a)) for a in ir.ArrayAttr(attr)]


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------


def test_import_registers_dialect_in_new_contexts() -> None:
    for _ in range(2):  # every new Context, not only the first one
        with ir.Context():
            module = ir.Module.parse(SOURCE)
            assert len(_ops(module, "scan.scan")) == 2


def test_register_dialects_for_context_created_before_import() -> None:
    script = textwrap.dedent(f"""
        from mlir import ir
        source = {SOURCE!r}
        ctx = ir.Context()
        try:
            ir.Module.parse(source, context=ctx)
        except ir.MLIRError as e:
            assert "scan" in str(e), e
        else:
            raise AssertionError("scan IR parsed before mlir_scan was imported")
        import mlir_scan
        # The registry of an existing Context is not changed by the import.
        try:
            ir.Module.parse(source, context=ctx)
        except ir.MLIRError:
            pass
        else:
            raise AssertionError("import changed a Context created before it")
        mlir_scan.register_dialects(ctx)
        module = ir.Module.parse(source, context=ctx)
        with ctx:
            op = module.body.operations[0].regions[0].blocks[0].operations[0]
            assert type(op).__name__ == "ScanOp", type(op)
            assert module.operation.verify()
        print("OK")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stdout + proc.stderr


def test_register_passes_is_idempotent() -> None:
    mlir_scan.register_passes()
    mlir_scan.register_passes()
    with ir.Context():
        module = ir.Module.parse(SOURCE)
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(module.operation)


# ---------------------------------------------------------------------------
# Op classes and attributes
# ---------------------------------------------------------------------------


def test_parsed_ops_have_dialect_classes() -> None:
    with ir.Context():
        module = ir.Module.parse(SOURCE)
        scans = _ops(module, "scan.scan")
        yields = _ops(module, "scan.yield")
        assert len(scans) == 2 and len(yields) == 2
        assert all(type(op) is ScanOp for op in scans)
        assert all(type(op) is YieldOp for op in yields)
        # The body's terminator, reached through the op's region.
        body = scans[0].body.blocks[0]
        assert isinstance(body.operations[len(body.operations) - 1], YieldOp)


def test_attributes_from_python() -> None:
    with ir.Context():
        module = ir.Module.parse(SOURCE)
        rnn, powers = _ops(module, "scan.scan")
        assert _taps(rnn.sequence_taps) == [[-4, 0, 2]]
        assert _taps(rnn.mitmot_in_taps) == [[]]
        assert _taps(rnn.mitmot_out_taps) == [[0, 1]]
        assert _taps(rnn.mitsot_taps) == [[-3, -1]]
        assert rnn.go_backwards is True and rnn.until is False
        assert list(rnn.keep) == [0, 1, 0]
        assert (len(rnn.sequences), len(rnn.mitmot), len(rnn.mitsot_inits), len(rnn.sitsot_inits),
                len(rnn.non_sequences), len(rnn.outputs)) == (1, 1, 1, 1, 1, 3)
        assert str(rnn.mitsot_inits[0].type) == "tensor<3x16xf32>"

        assert powers.go_backwards is False and powers.until is True
        assert powers.keep is None
        assert _taps(powers.sequence_taps) == []
        assert str(powers.n_steps.owner.attributes["value"]) == "64 : index"


def test_attributes_written_from_python() -> None:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(SOURCE)
        _, powers = _ops(module, "scan.scan")
        powers.go_backwards = True
        powers.keep = ir.DenseI64ArrayAttr.get([1])
        powers.outputs[0].set_type(ir.RankedTensorType.get([1], ir.IntegerType.get_signless(64)))
        assert powers.operation.verify()  # the scan alone: @powers still returns tensor<?xi64>
        text = powers.operation.get_asm(assume_verified=True)
        assert "scan.scan steps(%c64) go_backwards until" in text
        assert "keep [1]" in text and "-> (tensor<1xi64>)" in text


# ---------------------------------------------------------------------------
# Building ops
# ---------------------------------------------------------------------------


def _build(taps: list[int], result_rows: int | None = None) -> tuple[ir.Module, ScanOp]:
    """func @f(%n, %u: tensor<?xf32>, %x0: f32) with one scan over `u` (taps
    `taps`) and a sitsot, built with the generated builders."""
    f32, index = ir.F32Type.get(), ir.IndexType.get()
    dyn = ir.ShapedType.get_dynamic_size()
    seq_type = ir.RankedTensorType.get([dyn], f32)
    result_type = ir.RankedTensorType.get([dyn if result_rows is None else result_rows], f32)
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("f", ([index, seq_type, f32], [result_type]))
        entry = fn.add_entry_block()
        with ir.InsertionPoint(entry):
            n, u, x0 = entry.arguments
            op = ScanOp([result_type], n, [u], [], [], [x0], [],
                        sequence_taps=ir.ArrayAttr.get([ir.DenseI64ArrayAttr.get(taps)]))
            body = op.body.blocks.append(*([f32] * len(taps)), f32)
            with ir.InsertionPoint(body):
                acc = body.arguments[len(taps)]
                for arg in list(body.arguments)[: len(taps)]:
                    acc = arith.AddFOp(acc, arg).result
                YieldOp([acc])
            func.ReturnOp([op.result])
    return module, op


def test_build_scan_from_python() -> None:
    with ir.Context(), ir.Location.unknown():
        module, op = _build([-1, 0, 2])
        assert module.operation.verify()
        assert isinstance(op, ScanOp)
        text = str(module)
        assert "sequences(%arg1[-1, 0, 2] : tensor<?xf32>)" in text
        assert "sitsot(%arg2 : f32) {" in text
        assert "} -> (tensor<?xf32>)" in text
        # What Python built is what the parser builds.
        reparsed = ir.Module.parse(text)
        assert str(reparsed) == text


def test_build_invalid_scan_raises() -> None:
    with ir.Context(), ir.Location.unknown():
        module, _ = _build([0], result_rows=4)
        with pytest.raises(ir.MLIRError, match="has static leading size 4 but n_steps is not a constant"):
            module.operation.verify()
        module, _ = _build([1, 0])
        with pytest.raises(ir.MLIRError, match=r"sequence #0: taps must be strictly increasing, got \[1, 0\]"):
            module.operation.verify()


# ---------------------------------------------------------------------------
# Passes
# ---------------------------------------------------------------------------


def test_canonicalize_runs_on_scan_ir() -> None:
    with ir.Context():
        module = ir.Module.parse(SOURCE)
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(module.operation)
        assert module.operation.verify()
        _, powers = _ops(module, "scan.scan")
        body = str(powers)
        # `%prev + 0` folded away inside the body; the scan itself stays.
        assert "arith.addi" not in body and "arith.muli %arg" in body
        assert "scan.scan steps(%c64) until" in str(module)


def test_pass_pipeline_nested_on_func() -> None:
    with ir.Context():
        module = ir.Module.parse(SOURCE)
        passmanager.PassManager.parse("builtin.module(func.func(canonicalize,cse))").run(module.operation)
        assert len(_ops(module, "scan.scan")) == 2


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def test_parse_error_is_mlir_error() -> None:
    with ir.Context():
        with pytest.raises(ir.MLIRError, match=r"mitsot #1: init has 2 rows but taps \[-3, -1\] need 3"):
            ir.Module.parse(INVALID)
        with pytest.raises(ir.MLIRError, match="'sitsot' lists 2 operands but 1 types"):
            ir.Module.parse("func.func @f(%n: index, %a: f32) {\n"
                            "  %r:2 = scan.scan steps(%n) sitsot(%a, %a : f32) {\n"
                            "  ^bb0(%x: f32, %y: f32):\n    scan.yield %x, %y : f32, f32\n"
                            "  } -> (tensor<?xf32>, tensor<?xf32>)\n  return\n}")


def test_invalid_attribute_set_from_python_is_mlir_error() -> None:
    """Breaking an op through its attributes gives a verifier error; printing
    the broken op falls back to the generic form instead of crashing in the
    custom printer (which trusts the tap lists)."""
    with ir.Context():
        module = ir.Module.parse(SOURCE)
        rnn, _ = _ops(module, "scan.scan")
        rnn.attributes["sequence_taps"] = ir.ArrayAttr.get([])
        with pytest.raises(ir.MLIRError, match="'sequence_taps' has 0 tap lists but there are 1 sequences"):
            module.operation.verify()
        assert '"scan.scan"' in str(module)

        module = ir.Module.parse(SOURCE)
        rnn, _ = _ops(module, "scan.scan")
        rnn.keep = ir.DenseI64ArrayAttr.get([0, -1, 0])
        with pytest.raises(ir.MLIRError, match="'keep' entry #1 is -1, must be >= 0"):
            module.operation.verify()

        module = ir.Module.parse(SOURCE)
        rnn, _ = _ops(module, "scan.scan")
        rnn.attributes["mitsot_taps"] = ir.ArrayAttr.get([ir.DenseI64ArrayAttr.get([-1])])
        with pytest.raises(ir.MLIRError, match=r"mitsot #0: init has 3 rows but taps \[-1\] need 1"):
            module.operation.verify()


# ---------------------------------------------------------------------------
# Round-trips
# ---------------------------------------------------------------------------


def test_print_and_reparse_round_trip() -> None:
    with ir.Context():
        module = ir.Module.parse(SOURCE)
        text = str(module)
        assert "mitmot(%arg2[] -> [0, 1] : tensor<?x16xf32>)" in text
        assert "nonsequences(%arg5 : tensor<16x16xf32>) keep [0, 1, 0] {" in text
        assert str(ir.Module.parse(text)) == text
        generic = module.operation.get_asm(print_generic_op_form=True)
        assert '"scan.scan"' in generic and "sequence_taps = [array<i64: -4, 0, 2>]" in generic
        assert str(ir.Module.parse(generic)) == text


def test_round_trip_through_bytecode() -> None:
    import io

    with ir.Context():
        module = ir.Module.parse(SOURCE)
        buffer = io.BytesIO()
        module.operation.write_bytecode(buffer)
        again = ir.Module.parse(buffer.getvalue())
        assert str(again) == str(module)
