// RUN: scan-opt %s --pass-pipeline="builtin.module(func.func(scan-guard-dim-indices))" -split-input-file | FileCheck %s

// scan-guard-dim-indices: a dim op whose index is a negative constant becomes
// an assertion that always fails (the run-time check's message) and a 0.

// CHECK-LABEL: func.func @negative
// CHECK:         %[[FALSE:.*]] = arith.constant false
// CHECK:         cf.assert %[[FALSE]], "{{.*}}scan-guard-dim-indices.mlir:{{[0-9]+}}:{{[0-9]+}}: index is out of bounds"
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NOT:     tensor.dim
// CHECK:         return %[[ZERO]]
func.func @negative(%t: tensor<?xf64>) -> index {
  %c = arith.constant -1 : index
  %d = tensor.dim %t, %c : tensor<?xf64>
  return %d : index
}

// -----

// memref.dim too, inside a region.
// CHECK-LABEL: func.func @memref_in_loop
// CHECK:         scf.for
// CHECK:           cf.assert %{{.*}}, "{{.*}}: index is out of bounds"
// CHECK-NOT:       memref.dim
func.func @memref_in_loop(%m: memref<?x?xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cm2 = arith.constant -2 : index
  scf.for %i = %c0 to %n step %c1 {
    %d = memref.dim %m, %cm2 : memref<?x?xf64>
    %f = arith.constant 1.0 : f64
    memref.store %f, %m[%d, %d] : memref<?x?xf64>
  }
  return
}

// -----

// Indices that are not negative constants stay (a dynamic one, or one past
// the rank, are scan-runtime-verification's).
// CHECK-LABEL: func.func @others
// CHECK-NOT:     cf.assert
// CHECK:         tensor.dim %{{.*}}, %{{.*}}
// CHECK:         tensor.dim %{{.*}}, %{{.*}}
// CHECK:         tensor.dim %{{.*}}, %{{.*}}
func.func @others(%t: tensor<?xf64>, %i: index) -> (index, index, index) {
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %a = tensor.dim %t, %c0 : tensor<?xf64>
  %b = tensor.dim %t, %c5 : tensor<?xf64>
  %c = tensor.dim %t, %i : tensor<?xf64>
  return %a, %b, %c : index, index, index
}
