// RUN: scan-opt %s --scan-check-allocations -split-input-file | FileCheck %s

// scan-check-allocations: every allocation whose byte count is not a known
// small constant computes it with overflow checks first; a negative size or
// a byte count of 2**63 or more calls the run-time library, which ends the
// call with the shape (MemoryError / ValueError in Python).

// 8 bytes * 4 * %n: one checked product for the one dynamic size.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-SAME:      (%[[N:.*]]: index)
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[BYTES:.*]] = arith.constant 32 : i64
// CHECK:         %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK:         %[[NEG:.*]] = arith.cmpi slt, %[[N64]], %[[ZERO]] : i64
// CHECK:         %[[LO:.*]], %[[HI:.*]] = arith.mului_extended %[[BYTES]], %[[N64]] : i64
// CHECK:         %[[WRAP:.*]] = arith.cmpi ne, %[[HI]], %[[ZERO]] : i64
// CHECK:         %[[HUGE:.*]] = arith.cmpi ugt, %[[LO]], %{{.*}} : i64
// CHECK:         scf.if %{{.*}} {
// CHECK:           %[[SHAPE:.*]] = memref.alloca() : memref<2xi64>
// CHECK:           memref.store %[[N64]], %[[SHAPE]]
// CHECK:           memref.extract_aligned_pointer_as_index %[[SHAPE]]
// CHECK:           llvm.inttoptr
// CHECK:           func.call @__mlir_scan_fail_alloc(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, !llvm.ptr, i64) -> ()
// CHECK:         }
// CHECK:         memref.alloc(%[[N]]) : memref<?x4xf64>
func.func @dynamic_rows(%n: index) -> memref<?x4xf64> {
  %m = memref.alloc(%n) : memref<?x4xf64>
  return %m : memref<?x4xf64>
}
// CHECK: func.func private @__mlir_scan_fail_alloc(i64, i64, !llvm.ptr, i64)

// -----

// Two dynamic sizes: the product is checked after each multiplication.
// CHECK-LABEL: func.func @two_dynamic_sizes
// CHECK-COUNT-2: arith.mului_extended
// CHECK:         scf.if
// CHECK:         memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xi32>
func.func @two_dynamic_sizes(%n: index, %m: index) -> memref<?x?xi32> {
  %a = memref.alloc(%n, %m) : memref<?x?xi32>
  return %a : memref<?x?xi32>
}

// -----

// A static byte count that fits needs no check (a failed allocation is the
// allocator's MemoryError).
// CHECK-LABEL: func.func @static_fits
// CHECK-NOT:     scf.if
// CHECK-NOT:     __mlir_scan_fail_alloc
// CHECK:         memref.alloc() : memref<1000000000000xf64>
func.func @static_fits() -> memref<1000000000000xf64> {
  %a = memref.alloc() : memref<1000000000000xf64>
  return %a : memref<1000000000000xf64>
}

// -----

// A static byte count that overflows fails unconditionally, before the
// allocation (the condition is the constant `true`).
// CHECK-LABEL: func.func @static_overflow
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK:         scf.if
// CHECK:           func.call @__mlir_scan_fail_alloc
// CHECK:         memref.alloc() : memref<9223372036854775807xf64>
func.func @static_overflow() -> memref<9223372036854775807xf64> {
  %a = memref.alloc() : memref<9223372036854775807xf64>
  return %a : memref<9223372036854775807xf64>
}

// -----

// memref.alloca is checked too, against 1 MiB (a negative, wrapped or large
// size would move the stack pointer past the thread's stack).
// CHECK-LABEL: func.func @dynamic_alloca
// CHECK:         arith.mului_extended
// CHECK:         arith.cmpi ugt, %{{.*}}, %c1048576_i64
// CHECK:         scf.if
// CHECK:         memref.alloca(%{{.*}}) : memref<?xi8>
func.func @dynamic_alloca(%n: index) {
  %a = memref.alloca(%n) : memref<?xi8>
  return
}

// -----

// A static alloca over 1 MiB cannot be checked where it is (LLVM allocates
// it in the prologue, before any check): it becomes a heap allocation, freed
// at the end of its block, checked as such; a small one stays on the stack
// and needs no check.
// CHECK-LABEL: func.func @static_allocas
// CHECK-NOT:     scf.if
// CHECK:         %[[HEAP:.*]] = memref.alloc() : memref<1000000xf64>
// CHECK-NOT:     scf.if
// CHECK:         memref.alloca() : memref<16xf64>
// CHECK:         memref.store
// CHECK:         memref.dealloc %[[HEAP]] : memref<1000000xf64>
// CHECK-NEXT:    return
func.func @static_allocas(%i: index, %v: f64) {
  %a = memref.alloca() : memref<1000000xf64>
  %b = memref.alloca() : memref<16xf64>
  memref.store %v, %a[%i] : memref<1000000xf64>
  return
}

// -----

// In a loop body (the alloca that used to crash): freed every iteration,
// where its buffer dies; its views are followed. A static byte count that
// overflows fails unconditionally, as a heap allocation.
// CHECK-LABEL: func.func @alloca_in_loop
// CHECK:         scf.for
// CHECK:           %[[HEAP:.*]] = memref.alloc() : memref<10000000xf64>
// CHECK:           memref.subview %[[HEAP]]
// CHECK:           memref.dealloc %[[HEAP]]
// CHECK-NEXT:      scf.yield
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK:         scf.if
// CHECK:           func.call @__mlir_scan_fail_alloc
// CHECK:         memref.alloc() : memref<2305843009213693952x8xf64>
func.func @alloca_in_loop(%n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> f64 {
    %a = memref.alloca() : memref<10000000xf64>
    %v = memref.subview %a[0] [4] [1] : memref<10000000xf64> to memref<4xf64, strided<[1]>>
    memref.store %acc, %v[%c0] : memref<4xf64, strided<[1]>>
    %x = memref.load %v[%c0] : memref<4xf64, strided<[1]>>
    scf.yield %x : f64
  }
  %h = memref.alloca() : memref<2305843009213693952x8xf64>
  memref.store %r, %h[%c0, %c0] : memref<2305843009213693952x8xf64>
  return %r : f64
}

// -----

// A zero size makes a buffer empty whatever the other sizes: too large a
// byte count is only an error when no size is 0 (a negative size always is).
// NumPy's rule still holds for an empty buffer: element bytes times the sizes
// other than 0 must fit in 64 bits (a size of 0 counts as 1 there).
// CHECK-LABEL: func.func @empty_buffers
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i64
// CHECK:         %[[N:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:         %[[NEG:.*]] = arith.ori %false, %{{.*}} : i1
// CHECK:         %[[ZERO:.*]] = arith.cmpi eq, %[[N]], %{{.*}} : i64
// CHECK:         %[[EMPTY:.*]] = arith.ori %false, %[[ZERO]] : i1
// CHECK:         %[[NZ:.*]] = arith.select %[[ZERO]], %[[ONE]], %[[N]] : i64
// CHECK:         arith.mului_extended %{{.*}}, %[[NZ]] : i64
// CHECK:         %[[NONEMPTY:.*]] = arith.xori %[[EMPTY]], %true
// CHECK:         %[[TOOLARGE:.*]] = arith.andi %{{.*}}, %[[NONEMPTY]]
// CHECK:         %[[BAD:.*]] = arith.ori %[[NEG]], %[[TOOLARGE]]
// CHECK:         %[[ALL:.*]] = arith.ori %[[BAD]], %{{.*}} : i1
// CHECK:         scf.if %[[ALL]]
// CHECK:         memref.alloc(%{{.*}}) : memref<?x4xf64>
// CHECK-NOT:     scf.if
// CHECK:         memref.alloc() : memref<576460752303423488x0xf64>
// A constant shape that breaks the rule fails unconditionally.
// CHECK:         arith.ori %true{{.*}}, %{{.*}} : i1
// CHECK:         scf.if
// CHECK:         call @__mlir_scan_fail_alloc
// CHECK:         memref.alloc() : memref<4611686018427387904x0xf64>
func.func @empty_buffers(%n: index) {
  %a = memref.alloc(%n) : memref<?x4xf64>
  %b = memref.alloc() : memref<576460752303423488x0xf64>
  %c = memref.alloc() : memref<4611686018427387904x0xf64>
  return
}
