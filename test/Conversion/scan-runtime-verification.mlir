// RUN: scan-opt %s --scan-runtime-verification -split-input-file | FileCheck %s

// scan-runtime-verification: run-time checks of a program's own ops, with
// messages naming the op's location ("file:line:col: what").

// An elementwise op on tensors becomes a linalg.generic whose operand sizes
// are checked against each other, inside a scan body too.
// CHECK-LABEL: func.func @elementwise_in_body
// CHECK:         scan.scan
// CHECK:           cf.assert %{{.*}}, "{{.*}}scan-runtime-verification.mlir:{{[0-9]+}}:{{[0-9]+}}: dimension #0 of input/output operand #1 is incompatible with inferred dimension size"
// CHECK:           linalg.generic
// CHECK:           scan.yield
func.func @elementwise_in_body(%xs: tensor<?x?xf64>, %w: tensor<?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x?xf64>
  %h0 = tensor.extract_slice %xs[0, 0] [1, %n] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%w : tensor<?xf64>) {
  ^bb0(%row: tensor<?xf64>, %h: tensor<?xf64>):
    %m = arith.mulf %row, %h : tensor<?xf64>
    scan.yield %m : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// -----

// tensor.extract: the index against the size (the upstream model).
// CHECK-LABEL: func.func @extract
// CHECK:         cf.assert %{{.*}}, "{{.*}}: out-of-bounds access"
// CHECK:         tensor.extract
func.func @extract(%v: tensor<?xf64>, %i: index) -> f64 {
  %x = tensor.extract %v[%i] : tensor<?xf64>
  return %x : f64
}

// -----

// Slices: a size >= 0 and, unless the size is 0, first and last position in
// bounds (an empty slice is valid anywhere, unlike the upstream model of
// LLVM 22.1, which checks the offset of an empty slice too).
// CHECK-LABEL: func.func @slices
// CHECK-SAME:      (%[[V:.*]]: tensor<?xf64>, %[[O:.*]]: index, %[[S:.*]]: index
// CHECK:         %[[EMPTY:.*]] = arith.cmpi eq, %[[S]], %c0
// CHECK:         %[[OK:.*]] = arith.andi
// CHECK:         cf.assert %{{.*}}, "{{.*}}: slice out of bounds along dimension 0 (offset, size, stride against the size of the dimension)"
// CHECK:         tensor.extract_slice
// CHECK:         cf.assert %{{.*}}, "{{.*}}: slice out of bounds along dimension 0
// CHECK:         tensor.insert_slice
func.func @slices(%v: tensor<?xf64>, %o: index, %s: index, %d: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %a = tensor.extract_slice %v[%o] [%s] [1] : tensor<?xf64> to tensor<?xf64>
  %b = tensor.insert_slice %a into %d[%o] [%s] [1] : tensor<?xf64> into tensor<?xf64>
  return %a, %b : tensor<?xf64>, tensor<?xf64>
}

// -----

// Static shapes that agree need no check at all.
// CHECK-LABEL: func.func @static_ok
// CHECK-NOT:     cf.assert
// CHECK:         return
func.func @static_ok(%a: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<2xf64> {
  %m = arith.mulf %a, %b : tensor<4xf64>
  %s = tensor.extract_slice %m[1] [2] [1] : tensor<4xf64> to tensor<2xf64>
  return %s : tensor<2xf64>
}
