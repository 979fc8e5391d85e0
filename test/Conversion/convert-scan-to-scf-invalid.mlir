// RUN: scan-opt %s --convert-scan-to-scf -split-input-file -verify-diagnostics

// convert-scan-to-scf refuses, with a located error, a module using a type
// whose static sizes multiply to more than 2**63 - 1 elements: no buffer can
// have them, and MLIR asserts computing the strides of their row views.

func.func @static_rows_overflow(%x0: tensor<8xf64>) -> tensor<2305843009213693952x8xf64> {
  %n = arith.constant 2305843009213693952 : index
  // expected-error @+1 {{'scan.scan' op uses the type 'tensor<2305843009213693952x8xf64>', whose static sizes multiply to more than 2**63 - 1 elements}}
  %r = scan.scan steps(%n) sitsot(%x0 : tensor<8xf64>) {
  ^bb0(%a: tensor<8xf64>):
    scan.yield %a : tensor<8xf64>
  } -> (tensor<2305843009213693952x8xf64>)
  return %r : tensor<2305843009213693952x8xf64>
}
