// RUN: scan-opt %s --scan-check-lowerable -split-input-file -verify-diagnostics

// Two dynamic sizes in one group: rejected with a located error instead of
// the expand-strided-metadata assertion.
func.func @two_dynamic_sizes(%a: memref<?xf64>, %m: index, %n: index) -> memref<?x?xf64> {
  // expected-error @+1 {{expands reassociation group #0 into 2 dynamic sizes}}
  %r = memref.expand_shape %a [[0, 1]] output_shape [%m, %n] : memref<?xf64> into memref<?x?xf64>
  return %r : memref<?x?xf64>
}

// -----

// One dynamic size per group is fine.
func.func @one_dynamic_size(%a: memref<?xf64>, %m: index) -> memref<?x4xf64> {
  %r = memref.expand_shape %a [[0, 1]] output_shape [%m, 4] : memref<?xf64> into memref<?x4xf64>
  return %r : memref<?x4xf64>
}
