// RUN: scan-opt %s --scan-lower-signed-stride-access | FileCheck %s
// RUN: scan-opt %s --scan-lower-signed-stride-access --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// Loads and stores of views whose strides may be negative (a static
// negative stride, or a dynamic one) are lowered with `inbounds` alone and
// signed index arithmetic; LLVM 22.1's own lowering adds `nuw`, which makes
// the address of an element of a reversed view poison. Views with known
// non-negative strides keep the upstream lowering.

// CHECK-LABEL: func.func @reversed
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK:         %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr -> f64
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK:         llvm.store %[[V]], %[[Q]] : f64, !llvm.ptr
// LLVM-LABEL: llvm.func @reversed
// LLVM-NOT:     nuw
// LLVM:         llvm.mul %{{.*}} overflow<nsw> : i64
// LLVM:         llvm.getelementptr inbounds %
// LLVM-NOT:     nuw
// LLVM:         llvm.return
func.func @reversed(%m: memref<?x4xf64, strided<[-4, 1], offset: ?>>, %i: index, %j: index) {
  %v = memref.load %m[%i, %j] : memref<?x4xf64, strided<[-4, 1], offset: ?>>
  memref.store %v, %m[%j, %i] : memref<?x4xf64, strided<[-4, 1], offset: ?>>
  return
}

// A dynamic stride may be negative at run time: lowered here too.
// CHECK-LABEL: func.func @dynamic
// CHECK:         llvm.getelementptr inbounds
// CHECK:         llvm.load
// CHECK-NOT:     memref.load
// LLVM-LABEL: llvm.func @dynamic
// LLVM-NOT:     nuw
// LLVM:         llvm.return
func.func @dynamic(%m: memref<?x?xf64, strided<[?, 1], offset: ?>>, %i: index) -> f64 {
  %v = memref.load %m[%i, %i] : memref<?x?xf64, strided<[?, 1], offset: ?>>
  return %v : f64
}

// Known non-negative strides: left to finalize-memref-to-llvm (with its nuw).
// CHECK-LABEL: func.func @forward
// CHECK:         memref.load %{{.*}} : memref<?x4xf64>
// CHECK:         memref.store %{{.*}} : memref<?xf32, strided<[2], offset: ?>>
// LLVM-LABEL: llvm.func @forward
// LLVM:         llvm.getelementptr inbounds|nuw
func.func @forward(%m: memref<?x4xf64>, %s: memref<?xf32, strided<[2], offset: ?>>, %i: index, %x: f32) -> f64 {
  %v = memref.load %m[%i, %i] : memref<?x4xf64>
  memref.store %x, %s[%i] : memref<?xf32, strided<[2], offset: ?>>
  return %v : f64
}
