// RUN: scan-opt %s --split-input-file --scan-call-blas="keep-loops=1" | FileCheck %s
// RUN: scan-opt %s --split-input-file --scan-call-blas="keep-loops=1 min-work=100" | FileCheck %s --check-prefix=LOW
// RUN: scan-opt %s --split-input-file --scan-call-blas | FileCheck %s --check-prefix=LIB

// CHECK (keep-loops): every product keeps its loops as the fallback of the
// BLAS call. LIB (the default): a product outside the function's loops
// becomes a call of the run-time library, which computes it whatever the
// layout; one inside a loop keeps its loops.

// A matmul of dynamic sizes: its work m * n * k is compared with min-work at
// run time; the call (on fully dynamic strided views) is made only above it,
// and the op runs when the call was not made or returned 0.

// CHECK-LABEL: func.func private @mlir_scan_blas_gemm_f64(memref<?x?xf64, strided<[?, ?], offset: ?>>, memref<?x?xf64, strided<[?, ?], offset: ?>>, memref<?x?xf64, strided<[?, ?], offset: ?>>, i32) -> i32
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:    %[[A:.*]]: memref<?x?xf64>, %[[B:.*]]: memref<?x?xf64>, %[[C:.*]]: memref<?x?xf64>)
// CHECK:         %[[M:.*]] = memref.dim %[[A]], %c0
// CHECK:         %[[N:.*]] = memref.dim %[[B]], %c1
// CHECK:         %[[MN:.*]] = arith.muli %[[M]], %[[N]]
// CHECK:         %[[K:.*]] = memref.dim %[[A]], %c1
// CHECK:         %[[WORK:.*]] = arith.muli %[[MN]], %[[K]]
// CHECK:         %[[LARGE:.*]] = arith.cmpi sge, %[[WORK]], %c65536
// CHECK:         %[[DONE:.*]] = scf.if %[[LARGE]] -> (i32) {
// CHECK:           %[[VA:.*]] = memref.cast %[[A]]
// CHECK:           %[[VB:.*]] = memref.cast %[[B]]
// CHECK:           %[[VC:.*]] = memref.cast %[[C]]
// CHECK:           %[[R:.*]] = func.call @mlir_scan_blas_gemm_f64(%[[VA]], %[[VB]], %[[VC]], %c1_i32)
// CHECK:           scf.yield %[[R]] : i32
// CHECK:         } else {
// CHECK:           scf.yield %c0_i32 : i32
// CHECK:         %[[DECLINED:.*]] = arith.cmpi eq, %[[DONE]], %c0_i32
// CHECK:         scf.if %[[DECLINED]] {
// CHECK-NEXT:      linalg.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[C]] : {{.*}})
// CHECK-NEXT:    }
// LIB-LABEL: func.func private @mlir_scan_gemm_f64(memref<?x?xf64, strided<[?, ?], offset: ?>>, memref<?x?xf64, strided<[?, ?], offset: ?>>, memref<?x?xf64, strided<[?, ?], offset: ?>>, i32){{$}}
// LIB-LABEL: func.func @matmul(
// LIB-SAME:    %[[A:.*]]: memref<?x?xf64>, %[[B:.*]]: memref<?x?xf64>, %[[C:.*]]: memref<?x?xf64>)
// LIB-DAG:       %[[ONE:.*]] = arith.constant 1 : i32
// LIB-DAG:       %[[VA:.*]] = memref.cast %[[A]]
// LIB-DAG:       %[[VB:.*]] = memref.cast %[[B]]
// LIB-DAG:       %[[VC:.*]] = memref.cast %[[C]]
// LIB:           call @mlir_scan_gemm_f64(%[[VA]], %[[VB]], %[[VC]], %[[ONE]]) : ({{.*}}) -> ()
// LIB-NOT:       scf.if
// LIB-NOT:       linalg.matmul
// LIB:           return
func.func @matmul(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?xf64>) {
  linalg.matmul ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>)
  return
}

// -----

// The output filled with zeros right before the product: BLAS overwrites it
// (accumulate = 0, BLAS's beta = 0) and the fill moves to the loops' branch.

// CHECK-LABEL: func.func @filled(
// CHECK-SAME:    %[[A:.*]]: memref<?x?xf64>, %[[B:.*]]: memref<?x?xf64>, %[[C:.*]]: memref<?x?xf64>)
// CHECK-NOT:     linalg.fill
// CHECK:         %[[DONE:.*]] = scf.if
// CHECK:           func.call @mlir_scan_blas_gemm_f64(%{{.*}}, %{{.*}}, %{{.*}}, %c0_i32)
// CHECK:         %[[DECLINED:.*]] = arith.cmpi eq, %[[DONE]], %c0_i32
// CHECK:         scf.if %[[DECLINED]] {
// CHECK-NEXT:      linalg.fill ins(%{{.*}} : f64) outs(%[[C]] : memref<?x?xf64>)
// CHECK-NEXT:      linalg.matmul
// CHECK-NEXT:    }
// LIB-LABEL: func.func @filled(
// LIB-NOT:       linalg.fill
// LIB:           %[[ZERO:.*]] = arith.constant 0 : i32
// LIB:           call @mlir_scan_gemm_f64(%{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]])
// LIB-NOT:       linalg
// LIB:           return
func.func @filled(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?xf64>) {
  %zero = arith.constant 0.0 : f64
  linalg.fill ins(%zero : f64) outs(%c : memref<?x?xf64>)
  linalg.matmul ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>)
  return
}

// -----

// A product inside a loop (a scan's step) keeps its loops in both modes:
// they are tuned for the small products of a step, and a call per step
// would decide again each time.

// CHECK-LABEL: func.func @in_loop(
// CHECK:         scf.for
// CHECK:           scf.if
// CHECK:             func.call @mlir_scan_blas_gemm_f64(
// CHECK:           scf.if
// CHECK-NEXT:        linalg.matmul
// LIB-LABEL:   func.func @in_loop(
// LIB-NOT:       mlir_scan_gemm_f64
// LIB:           scf.for
// LIB:             scf.if
// LIB:               func.call @mlir_scan_blas_gemm_f64(
// LIB:             scf.if
// LIB-NEXT:          linalg.matmul
func.func @in_loop(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    linalg.matmul ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>)
  }
  return
}

// -----

// x.T @ y as the builder emits it (reading x in place): A is a transposed
// view of x.

// CHECK-LABEL: func.func @at_b(
// CHECK-SAME:    %[[X:.*]]: memref<?x?xf32>, %[[Y:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK:         scf.if
// CHECK:           %[[T:.*]] = memref.transpose %[[X]] (d0, d1) -> (d1, d0)
// CHECK:           %[[VA:.*]] = memref.cast %[[T]] : memref<?x?xf32, strided<[1, ?]>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK:           func.call @mlir_scan_blas_gemm_f32(%[[VA]],
// CHECK:         scf.if
// CHECK-NEXT:      linalg.generic
func.func @at_b(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// dot(tensor3, W.T): the two leading dimensions of contiguous buffers
// collapse into m; W is read transposed.

// CHECK-LABEL: func.func @leading_rows(
// CHECK-SAME:    %[[X:.*]]: memref<?x?x?xf64>, %[[W:.*]]: memref<?x?xf64>, %[[C:.*]]: memref<?x?x?xf64>)
// CHECK:         scf.if
// CHECK:           %[[XR:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1], [2]]
// CHECK:           %[[WT:.*]] = memref.transpose %[[W]] (d0, d1) -> (d1, d0)
// CHECK:           %[[CR:.*]] = memref.collapse_shape %[[C]] {{\[}}[0, 1], [2]]
// CHECK:           func.call @mlir_scan_blas_gemm_f64(
// CHECK:         scf.if
// CHECK-NEXT:      linalg.generic
func.func @leading_rows(%a: memref<?x?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?x?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(t, i, n, k) -> (t, i, k)>, affine_map<(t, i, n, k) -> (n, k)>, affine_map<(t, i, n, k) -> (t, i, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?x?xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Leading dimensions of a strided view do not collapse: left alone.

// CHECK-LABEL: func.func @strided_leading_rows(
// CHECK-NOT:     call
// CHECK:         linalg.generic
func.func @strided_leading_rows(%a: memref<?x?x?xf64, strided<[?, ?, 1], offset: ?>>, %b: memref<?x?xf64>, %c: memref<?x?x?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(t, i, n, k) -> (t, i, k)>, affine_map<(t, i, n, k) -> (k, n)>, affine_map<(t, i, n, k) -> (t, i, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x?x?xf64, strided<[?, ?, 1], offset: ?>>, memref<?x?xf64>) outs(%c : memref<?x?x?xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Statically below min-work: left alone (and called with min-work=100).

// CHECK-LABEL: func.func @small(
// CHECK-NOT:     call
// CHECK:         linalg.matmul
// LOW-LABEL:   func.func @small(
// LOW:           arith.cmpi sge, %{{.*}}, %c100
// LOW:           func.call @mlir_scan_blas_gemm_f64
// LIB-LABEL:   func.func @small(
// LIB-NOT:       call
// LIB:           linalg.matmul
func.func @small(%a: memref<8x8xf64>, %b: memref<8x8xf64>, %c: memref<8x8xf64>) {
  linalg.matmul ins(%a, %b : memref<8x8xf64>, memref<8x8xf64>) outs(%c : memref<8x8xf64>)
  return
}

// -----

// What BLAS does not compute is left alone: integers, a body other than
// out + a * b, a batch dimension; and matrix-vector products (the
// generated loops stream the matrix as fast as BLAS's gemv).

// CHECK-LABEL: func.func @not_products(
// CHECK-NOT:     call
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
// CHECK:         linalg.batch_matmul
// CHECK:         linalg.vecmat
// CHECK-NOT:     call
func.func @not_products(%ia: memref<?x?xi64>, %ib: memref<?x?xi64>, %ic: memref<?x?xi64>,
                        %a: memref<?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?xf64>,
                        %ba: memref<?x?x?xf64>, %bb: memref<?x?x?xf64>, %bc: memref<?x?x?xf64>,
                        %h: memref<?xf64>, %out: memref<?xf64>) {
  linalg.matmul ins(%ia, %ib : memref<?x?xi64>, memref<?x?xi64>) outs(%ic : memref<?x?xi64>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %x, %y : f64
    %s = arith.subf %acc, %m : f64
    linalg.yield %s : f64
  }
  linalg.batch_matmul ins(%ba, %bb : memref<?x?x?xf64>, memref<?x?x?xf64>) outs(%bc : memref<?x?x?xf64>)
  linalg.vecmat ins(%h, %a : memref<?xf64>, memref<?x?xf64>) outs(%out : memref<?xf64>)
  return
}
