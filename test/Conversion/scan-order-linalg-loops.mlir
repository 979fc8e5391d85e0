// RUN: scan-opt %s --pass-pipeline="builtin.module(func.func(scan-order-linalg-loops))" | FileCheck %s

// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[MAT:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[A_IK:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B_KJ:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C_IJ:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>

// vecmat (out[j] += h[i] * W[i, j]): j is the last dimension of W and of the
// output, so it becomes the innermost loop; no reassociation is needed, only
// contraction into FMAs.
// CHECK-LABEL: func.func @vecmat
// CHECK:         linalg.generic {indexing_maps = [#[[ROW]], #[[MAT]], #[[COL]]], iterator_types = ["reduction", "parallel"]}
// CHECK:           arith.mulf {{.*}} fastmath<contract>
// CHECK:           arith.addf {{.*}} fastmath<contract>
func.func @vecmat(%h: memref<16xf32>, %w: memref<16x32xf32>, %o: memref<32xf32>) {
  linalg.vecmat ins(%h, %w : memref<16xf32>, memref<16x32xf32>) outs(%o : memref<32xf32>)
  return
}

// matvec (out[i] += A[i, j] * x[j]): j is contiguous in A and x, a reduction:
// it stays innermost and the body may be reassociated.
// CHECK-LABEL: func.func @matvec
// CHECK:         linalg.generic {indexing_maps = [#[[MAT]], #[[COL]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK:           arith.mulf {{.*}} fastmath<reassoc,contract>
// CHECK:           arith.addf {{.*}} fastmath<reassoc,contract>
func.func @matvec(%a: memref<32x16xf64>, %x: memref<16xf64>, %o: memref<32xf64>) {
  linalg.matvec ins(%a, %x : memref<32x16xf64>, memref<16xf64>) outs(%o : memref<32xf64>)
  return
}

// matmul (C[i, j] += A[i, k] * B[k, j]) is reordered to (i, k, j).
// CHECK-LABEL: func.func @matmul
// CHECK:         linalg.generic {indexing_maps = [#[[A_IK]], #[[B_KJ]], #[[C_IJ]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME:    ins(%{{.*}}, %{{.*}} : memref<4x8xf32>, memref<8x5xf32>)
func.func @matmul(%a: memref<4x8xf32>, %b: memref<8x5xf32>, %c: memref<4x5xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x5xf32>) outs(%c : memref<4x5xf32>)
  return
}

// Elementwise ops are already in the best order and are left alone.
// CHECK-LABEL: func.func @elementwise
// CHECK:         linalg.generic {indexing_maps = [#[[MAT]], #[[MAT]]], iterator_types = ["parallel", "parallel"]}
// CHECK-NOT:       fastmath
func.func @elementwise(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  }
  return
}
