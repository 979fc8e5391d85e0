// RUN: scan-opt %s --scan-own-public-results | FileCheck %s

// Returning an argument, a global or one buffer twice: each gets a fresh copy
// the caller can own; an allocation of the function is returned as it is.

memref.global "private" constant @table : memref<2xi64> = dense<[7, 8]>

// CHECK-LABEL: func.func @returns_argument
// CHECK-SAME:    (%[[A:[^:]*]]: memref<?xf32>)
// CHECK:         %[[D:.*]] = memref.dim %[[A]], %c0
// CHECK:         %[[NEW:.*]] = memref.alloc(%[[D]]) : memref<?xf32>
// CHECK:         memref.copy %[[A]], %[[NEW]]
// CHECK:         return %[[NEW]]
func.func @returns_argument(%a: memref<?xf32>) -> memref<?xf32> {
  return %a : memref<?xf32>
}

// CHECK-LABEL: func.func @returns_global
// CHECK:         %[[G:.*]] = memref.get_global @table
// CHECK:         %[[NEW:.*]] = memref.alloc() : memref<2xi64>
// CHECK:         memref.copy %[[G]], %[[NEW]]
// CHECK:         return %[[NEW]]
func.func @returns_global() -> memref<2xi64> {
  %g = memref.get_global @table : memref<2xi64>
  return %g : memref<2xi64>
}

// CHECK-LABEL: func.func @returns_twice
// CHECK:         %[[OWN:.*]] = memref.alloc() : memref<4xf64>
// CHECK:         %[[CAST:.*]] = memref.cast %[[OWN]]
// CHECK:         %[[NEW:.*]] = memref.alloc() : memref<4xf64>
// CHECK:         memref.copy %[[CAST]], %[[NEW]]
// CHECK:         return %[[OWN]], %[[NEW]]
func.func @returns_twice() -> (memref<4xf64>, memref<4xf64>) {
  %a = memref.alloc() : memref<4xf64>
  %c = memref.cast %a : memref<4xf64> to memref<4xf64>
  return %a, %c : memref<4xf64>, memref<4xf64>
}

// A buffer carried through a loop is still the function's allocation.
// CHECK-LABEL: func.func @returns_loop_buffer
// CHECK-NOT:     memref.copy
// CHECK:         return %{{.*}} : memref<8xf32>
func.func @returns_loop_buffer(%n: index) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%b = %a) -> (memref<8xf32>) {
    scf.yield %b : memref<8xf32>
  }
  return %r : memref<8xf32>
}

// Private functions are left alone: only public results cross to Python.
// CHECK-LABEL: func.func private @private_returns_argument
// CHECK-NOT:     memref.copy
// CHECK:         return %arg0
func.func private @private_returns_argument(%a: memref<?xf32>) -> memref<?xf32> {
  return %a : memref<?xf32>
}
