// RUN: scan-opt %s --scan-check-lowerable -split-input-file -verify-diagnostics

// Two dynamic sizes in one group: rejected with a located error instead of
// the expand-strided-metadata assertion.
func.func @two_dynamic_sizes(%a: memref<?xf64>, %m: index, %n: index) -> memref<?x?xf64> {
  // expected-error @+1 {{expands reassociation group #0 into 2 dynamic sizes}}
  %r = memref.expand_shape %a [[0, 1]] output_shape [%m, %n] : memref<?xf64> into memref<?x?xf64>
  return %r : memref<?x?xf64>
}

// -----

// A dynamic size beside a static 0 in one group: expand-strided-metadata would
// divide by 0 (reported without failing the pass); rejected instead.
func.func @dynamic_beside_zero(%a: memref<?xf64>, %n: index) -> memref<0x?xf64> {
  // expected-error @+1 {{expands reassociation group #0 into a dynamic size beside a static size 0}}
  %r = memref.expand_shape %a [[0, 1]] output_shape [0, %n] : memref<?xf64> into memref<0x?xf64>
  return %r : memref<0x?xf64>
}

// -----

// Static sizes only, a 0 among them, are fine.
func.func @static_zero(%a: memref<0xf64>) -> memref<0x4xf64> {
  %r = memref.expand_shape %a [[0, 1]] output_shape [0, 4] : memref<0xf64> into memref<0x4xf64>
  return %r : memref<0x4xf64>
}

// -----

// One dynamic size per group is fine.
func.func @one_dynamic_size(%a: memref<?xf64>, %m: index) -> memref<?x4xf64> {
  %r = memref.expand_shape %a [[0, 1]] output_shape [%m, 4] : memref<?xf64> into memref<?x4xf64>
  return %r : memref<?x4xf64>
}

// -----

// Static sizes whose product passes 2**63 - 1: the memref lowering would
// abort computing the strides.
func.func @static_overflow() -> f64 {
  // expected-error @+1 {{uses the type 'memref<2305843009213693952x8xf64>', whose static sizes multiply to more than 2**63 - 1 elements}}
  %a = memref.alloc() : memref<2305843009213693952x8xf64>
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0, %c0] : memref<2305843009213693952x8xf64>
  return %v : f64
}

// -----

// A zero size does not help (the lowering still multiplies the others).
func.func @static_overflow_with_zero() {
  // expected-error @+1 {{uses the type 'memref<0x4611686018427387904x2xf64>'}}
  %b = memref.alloc() : memref<0x4611686018427387904x2xf64>
  return
}

// -----

// One size of 2**63 - 1, or a product with a dynamic size: fine.
func.func @static_fits(%n: index) {
  %a = memref.alloc() : memref<9223372036854775807xf64>
  %c = memref.alloc(%n) : memref<?x4611686018427387904xf64>
  return
}
