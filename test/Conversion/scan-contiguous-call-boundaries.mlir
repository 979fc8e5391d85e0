// RUN: scan-opt %s --split-input-file --scan-contiguous-call-boundaries | FileCheck %s

// A view of run-time strides returned by a private function under the
// identity layout (one-shot-bufferize's cast) is returned as a copy.

// CHECK-LABEL: func.func private @first_columns
// CHECK:         %[[V:.*]] = memref.subview
// CHECK-NOT:     memref.cast
// CHECK:         %[[NEW:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xf64>
// CHECK:         memref.copy %[[V]], %[[NEW]] : memref<?x?xf64, strided<[?, 1]>> to memref<?x?xf64>
// CHECK:         return %[[NEW]]
func.func private @first_columns(%a: memref<?x?xf64>, %k: index) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %v = memref.subview %a[0, 0] [%m, %k] [1, 1] : memref<?x?xf64> to memref<?x?xf64, strided<[?, 1]>>
  %c = memref.cast %v : memref<?x?xf64, strided<[?, 1]>> to memref<?x?xf64>
  return %c : memref<?x?xf64>
}

// A public function's result keeps its view: the run-time library reads
// returned buffers through their strides.

// CHECK-LABEL: func.func @public_view
// CHECK:         %[[C:.*]] = memref.cast
// CHECK:         return %[[C]]
func.func @public_view(%a: memref<?x?xf64>, %k: index) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %v = memref.subview %a[0, 0] [%m, %k] [1, 1] : memref<?x?xf64> to memref<?x?xf64, strided<[?, 1]>>
  %c = memref.cast %v : memref<?x?xf64, strided<[?, 1]>> to memref<?x?xf64>
  return %c : memref<?x?xf64>
}

// -----

// A view passed to a function that only reads it: a copy in, nothing back.

func.func private @total(%a: memref<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0, %c0] : memref<?x?xf64>
  return %x : f64
}

// CHECK-LABEL: func.func @reads_view
// CHECK:         %[[V:.*]] = memref.subview
// CHECK:         %[[NEW:.*]] = memref.alloc
// CHECK:         memref.copy %[[V]], %[[NEW]]
// CHECK:         call @total(%[[NEW]])
// CHECK-NOT:     memref.copy
// CHECK:         return
func.func @reads_view(%a: memref<?x?xf64>, %k: index) -> f64 {
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %v = memref.subview %a[0, 0] [%m, %k] [1, 1] : memref<?x?xf64> to memref<?x?xf64, strided<[?, 1]>>
  %c = memref.cast %v : memref<?x?xf64, strided<[?, 1]>> to memref<?x?xf64>
  %t = call @total(%c) : (memref<?x?xf64>) -> f64
  return %t : f64
}

// -----

// A view passed to a function that writes it (through a view of its own):
// the copy is written back after the call.

func.func private @fill_first_row(%a: memref<?x?xf64>) {
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c1 : memref<?x?xf64>
  %row = memref.subview %a[0, 0] [1, %n] [1, 1] : memref<?x?xf64> to memref<?xf64, strided<[1]>>
  %one = arith.constant 1.0 : f64
  linalg.fill ins(%one : f64) outs(%row : memref<?xf64, strided<[1]>>)
  return
}

// CHECK-LABEL: func.func @writes_view
// CHECK:         %[[V:.*]] = memref.subview
// CHECK:         %[[NEW:.*]] = memref.alloc
// CHECK:         memref.copy %[[V]], %[[NEW]]
// CHECK:         call @fill_first_row(%[[NEW]])
// CHECK-NEXT:    memref.copy %[[NEW]], %[[V]]
func.func @writes_view(%a: memref<?x?xf64>, %k: index) {
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %v = memref.subview %a[0, 0] [%m, %k] [1, 1] : memref<?x?xf64> to memref<?x?xf64, strided<[?, 1]>>
  %c = memref.cast %v : memref<?x?xf64, strided<[?, 1]>> to memref<?x?xf64>
  call @fill_first_row(%c) : (memref<?x?xf64>) -> ()
  return
}

// -----

// Casts that keep the layout's meaning stay: to a more dynamic layout, and
// from static strides equal to the identity layout's.

// CHECK-LABEL: func.func private @kept
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
func.func private @kept(%a: memref<4x8xf64>, %b: memref<4x8xf64, strided<[8, 1]>>) -> (memref<?x?xf64, strided<[?, 1]>>, memref<4x8xf64>) {
  %c = memref.cast %a : memref<4x8xf64> to memref<?x?xf64, strided<[?, 1]>>
  %d = memref.cast %b : memref<4x8xf64, strided<[8, 1]>> to memref<4x8xf64>
  return %c, %d : memref<?x?xf64, strided<[?, 1]>>, memref<4x8xf64>
}
