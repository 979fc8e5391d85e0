// RUN: scan-opt %s --scan-lower-i1-access | FileCheck %s
// RUN: scan-opt %s --scan-lower-i1-access --convert-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// i1 loads and stores become llvm.load/llvm.store of i1 through the memref's
// element pointer; other element types are left to convert-to-llvm (which
// aborts on i1 in LLVM 22.1).

// CHECK-LABEL: func.func @flip
// CHECK:         %[[P:.*]] = llvm.getelementptr
// CHECK:         %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr -> i1
// CHECK:         %[[N:.*]] = arith.xori %[[V]]
// CHECK:         llvm.store %[[N]], %{{.*}} : i1, !llvm.ptr
// CHECK:         memref.store %{{.*}} : memref<?xi8>
// LLVM-LABEL: llvm.func @flip
// LLVM-NOT:     memref.
// LLVM:         llvm.load {{.*}} -> i1
// LLVM:         llvm.store {{.*}} : i1, !llvm.ptr
// LLVM:         llvm.store {{.*}} : i8, !llvm.ptr
func.func @flip(%m: memref<?xi1>, %bytes: memref<?xi8>, %i: index) {
  %true = arith.constant true
  %v = memref.load %m[%i] : memref<?xi1>
  %n = arith.xori %v, %true : i1
  memref.store %n, %m[%i] : memref<?xi1>
  %c = arith.constant 3 : i8
  memref.store %c, %bytes[%i] : memref<?xi8>
  return
}
