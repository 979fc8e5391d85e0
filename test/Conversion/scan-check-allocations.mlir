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

// A static alloca of 8 MB fails unconditionally; a small one needs no check.
// CHECK-LABEL: func.func @static_allocas
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK:         %[[BAD:.*]] = arith.ori %[[TRUE]]
// CHECK:         scf.if %[[BAD]]
// CHECK:           func.call @__mlir_scan_fail_alloc
// CHECK:         memref.alloca() : memref<1000000xf64>
// CHECK-NOT:     scf.if
// CHECK:         memref.alloca() : memref<16xf64>
func.func @static_allocas() {
  %a = memref.alloca() : memref<1000000xf64>
  %b = memref.alloca() : memref<16xf64>
  return
}
