//===- ScanDialect.td - The Scan dialect -------------------*- tablegen -*-===//
//
// The Scan dialect: Theano's `scan` loop as one MLIR operation.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_DIALECT_TD
#define SCAN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Scan_Dialect : Dialect {
  let name = "scan";
  let cppNamespace = "::mlir::scan";
  let summary = "Theano's scan loop: sequences with taps and NITSOT/SITSOT/MITSOT/MITMOT state";
  let description = [{
    The `scan` dialect models the loop construct of Theano, Aesara and
    PyTensor as a single operation, `scan.scan`, whose region is the inner
    function of one step. The inputs of that function are grouped by kind
    (sequences read with taps, MITMOT buffers, MITSOT and SITSOT recurrent
    states, non-sequences) and its yields produce the per-step rows of the
    outputs. See `docs/ScanDialect.md` for the rationale.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

class Scan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Scan_Dialect, mnemonic, traits>;

#endif // SCAN_DIALECT_TD
