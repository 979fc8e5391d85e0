// RUN: scan-opt %s --split-input-file --scan-parallelize-linalg | FileCheck %s
// RUN: scan-opt %s --split-input-file --scan-parallelize-linalg="min-work=1000000000" | FileCheck %s --check-prefix=HIGH
// RUN: scan-opt %s --split-input-file --scan-parallelize-linalg="hot-work=0" | FileCheck %s --check-prefix=NOHOT
// RUN: scan-opt %s --split-input-file --scan-parallelize-linalg="split-reductions=0" | FileCheck %s --check-prefix=COLS

// COLS-NOT: run_parts
// COLS-NOT: scf.if

// NOHOT-NOT: mlir-scan-hot

// h^T W of a 512-wide state: 262,144 points, an accumulation by sum whose
// output is indexed by the innermost dimension j, the contiguous dimension
// of W[k, j]. Split along the reduction k (each part reads whole rows of W):
// 512 / 128 = 4 parts, part p summing rows [512 p / 4, 512 (p + 1) / 4) into
// row p of a buffer of partial sums (zeroed first), which the caller then
// adds to the output in the order of p. Its static work reaches hot-work
// (2**18): the chunk function is marked hot (the JIT's quick tier compiles
// it optimized).

// CHECK-LABEL: func.func private @__mlir_scan_chunk0(
// CHECK-SAME:    %[[LO:[^:]*]]: index, %[[HI:[^:]*]]: index, %[[BUF:[^:]*]]: memref<4x512xf64>, %[[H:[^:]*]]: memref<512xf64>, %[[W:[^:]*]]: memref<512x512xf64>)
// CHECK-SAME:    attributes {passthrough = ["mlir-scan-hot"]}
// CHECK-DAG:     %[[C512:.*]] = arith.constant 512 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         scf.for %[[P:.*]] = %[[LO]] to %[[HI]]
// CHECK:           %[[A:.*]] = arith.muli %[[P]], %[[C512]]
// CHECK:           %[[BEGIN:.*]] = arith.divui %[[A]], %[[C4]]
// CHECK:           %[[ROW:.*]] = memref.subview %[[BUF]][%[[P]], 0] [1, 512] [1, 1]
// CHECK:           linalg.generic {{.*}} outs(%[[ROW]] :
// CHECK:             arith.constant -0.0
// CHECK:           %[[HS:.*]] = memref.subview %[[H]][%[[BEGIN]]] [%[[N:.*]]] [1]
// CHECK:           %[[WS:.*]] = memref.subview %[[W]][%[[BEGIN]], 0] [%[[N]], 512] [1, 1]
// CHECK:           linalg.generic {{.*}} ins(%[[HS]], %[[WS]] : {{.*}}) outs(%[[ROW]] : {{.*}})
// CHECK:       func.func private @__mlir_scan_run_parts0(index, index, index, memref<4x512xf64>, memref<512xf64>, memref<512x512xf64>)
// CHECK-LABEL: func.func @vecmat(
// CHECK:         %[[PARTIALS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x512xf64>
// CHECK:         call @__mlir_scan_run_parts0(%{{.*}}, %{{.*}}, %{{.*}}, %[[PARTIALS]], %arg0, %arg1)
// CHECK:         %[[SUMS:.*]] = memref.subview %[[PARTIALS]][0, 0] [4, 512] [1, 1]
// CHECK:         linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} ins(%[[SUMS]] : {{.*}}) outs(%arg2 : memref<512xf64>)
// CHECK:           arith.addf %{{.*}}, %{{.*}} : f64
// CHECK:         memref.dealloc %[[PARTIALS]]
// HIGH-LABEL:  func.func @vecmat(
// HIGH-NOT:      call
// HIGH:          linalg.generic
// HIGH-NOT:      call
// HIGH:          return
func.func @vecmat(%h: memref<512xf64>, %w: memref<512x512xf64>, %out: memref<512xf64>) {
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k)>, affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%h, %w : memref<512xf64>, memref<512x512xf64>) outs(%out : memref<512xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %m = arith.mulf %a, %b : f64
    %s = arith.addf %c, %m : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// h^T W with W of 128 x 4096: the reduction is too short to split (fewer
// than 2 x 128 rows), so the op is split along j, into a chunk function on
// subviews of W's columns. So is W of 1024 x 1024 f64: its rows of 8 KiB give
// each of two cores whole pages of every row.

// CHECK-LABEL: func.func private @__mlir_scan_chunk0(
// CHECK-SAME:    %[[LO:[^:]*]]: index, %[[HI:[^:]*]]: index, %[[H:[^:]*]]: memref<128xf64>, %[[W:[^:]*]]: memref<128x4096xf64>, %[[OUT:[^:]*]]: memref<4096xf64>)
// CHECK:         %[[N:.*]] = arith.subi %[[HI]], %[[LO]]
// CHECK:         %[[WS:.*]] = memref.subview %[[W]][0, %[[LO]]] [128, %[[N]]] [1, 1]
// CHECK:         %[[OS:.*]] = memref.subview %[[OUT]][%[[LO]]] [%[[N]]] [1]
// CHECK:         linalg.generic {{.*}} ins(%[[H]], %[[WS]] : {{.*}}) outs(%[[OS]] : {{.*}})
// CHECK:       func.func private @__mlir_scan_run_chunks0(index, index, index, memref<128xf64>, memref<128x4096xf64>, memref<4096xf64>)
// CHECK-LABEL: func.func @short_vecmat(
// CHECK-NOT:     memref.alloc
// CHECK:         call @__mlir_scan_run_chunks0(%{{.*}}, %{{.*}}, %{{.*}}, %arg0, %arg1, %arg2)
// CHECK-LABEL: func.func @wide_rows(
// CHECK-NOT:     memref.alloc
// CHECK:         call @__mlir_scan_run_chunks{{[0-9]+}}(%{{.*}}, %{{.*}}, %{{.*}}, %arg0, %arg1, %arg2)
func.func @short_vecmat(%h: memref<128xf64>, %w: memref<128x4096xf64>, %out: memref<4096xf64>) {
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k)>, affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%h, %w : memref<128xf64>, memref<128x4096xf64>) outs(%out : memref<4096xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %m = arith.mulf %a, %b : f64
    %s = arith.addf %c, %m : f64
    linalg.yield %s : f64
  }
  return
}

func.func @wide_rows(%h: memref<1024xf64>, %w: memref<1024x1024xf64>, %out: memref<1024xf64>) {
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k)>, affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%h, %w : memref<1024xf64>, memref<1024x1024xf64>) outs(%out : memref<1024xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %m = arith.mulf %a, %b : f64
    %s = arith.addf %c, %m : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// h^T W of dynamic sizes: which way is tested at run time. At least 256
// rows and rows narrower than 8 KiB (2048 f32): min(8, K / 128) parts of the
// reduction; else parts of j. Both chunk functions take the sizes as
// arguments.

// CHECK-LABEL: func.func private @__mlir_scan_chunk0(
// CHECK-SAME:    %{{[^:]*}}: index, %{{[^:]*}}: index, %[[P:[^:]*]]: index, %[[K:[^:]*]]: index, %[[NN:[^:]*]]: index, %{{[^:]*}}: memref<?x?xf32>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: memref<?x?xf32>)
// CHECK-NOT:     mlir-scan-hot
// CHECK:         scf.for
// CHECK:           arith.divui %{{.*}}, %[[P]]
// CHECK:       func.func private @__mlir_scan_run_parts0(
// CHECK-LABEL: func.func private @__mlir_scan_chunk1(
// CHECK:       func.func private @__mlir_scan_run_chunks1(
// CHECK-LABEL: func.func @dynamic_vecmat(
// CHECK:         %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK:         %[[ENOUGH:.*]] = arith.cmpi uge, %[[ROWS]], %c256
// CHECK:         %[[WIDTH:.*]] = memref.dim %arg1, %c1
// CHECK:         %[[NARROW:.*]] = arith.cmpi ult, %[[WIDTH]], %c2048
// CHECK:         %[[BYROWS:.*]] = arith.andi %[[ENOUGH]], %[[NARROW]]
// CHECK:         scf.if %[[BYROWS]] {
// CHECK:           %[[Q:.*]] = arith.divui %{{.*}}, %c128
// CHECK:           %[[PARTS:.*]] = arith.minui %[[Q]], %c8
// CHECK:           memref.alloc(%[[PARTS]], %{{.*}}) {alignment = 64 : i64} : memref<?x?xf32>
// CHECK:           call @__mlir_scan_run_parts0(%{{.*}}, %[[PARTS]],
// CHECK:           linalg.generic
// CHECK:           memref.dealloc
// CHECK:         } else {
// CHECK:           call @__mlir_scan_run_chunks1(
// CHECK:         }
func.func @dynamic_vecmat(%h: memref<?xf32>, %w: memref<?x?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k)>, affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%h, %w : memref<?xf32>, memref<?x?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %c : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Not split along the reduction: a product whose output is not indexed by
// the innermost dimension (W x: rows of W are whole already), and a
// reduction that is not a sum (a max over k).

// CHECK-LABEL: func.func @not_by_rows(
// CHECK-NOT:     run_parts
// CHECK:         call @__mlir_scan_run_chunks{{[0-9]+}}(
// CHECK-NOT:     run_parts
// CHECK:         call @__mlir_scan_run_chunks{{[0-9]+}}(
// CHECK-NOT:     run_parts
// CHECK:         return
func.func @not_by_rows(%w: memref<512x512xf64>, %x: memref<512xf64>, %out: memref<512xf64>, %out2: memref<512xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%w, %x : memref<512x512xf64>, memref<512xf64>) outs(%out : memref<512xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %m = arith.mulf %a, %b : f64
    %s = arith.addf %c, %m : f64
    linalg.yield %s : f64
  }
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%w : memref<512x512xf64>) outs(%out2 : memref<512xf64>) {
  ^bb0(%a: f64, %c: f64):
    %s = arith.maximumf %c, %a : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Dynamic sizes: split, with the work computed at run time (the run-time
// library decides whether it pays); the outermost parallel dimension is
// the one split, and a value the body uses from above is passed along.
// Not marked hot: its work is not known statically.

// CHECK-LABEL: func.func private @__mlir_scan_chunk0(
// CHECK-SAME:    %{{.*}}: index, %{{.*}}: index, %[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[S:.*]]: f32)
// CHECK-NOT:     mlir-scan-hot
// CHECK:         memref.subview %[[A]][%{{.*}}, 0]
// CHECK:         memref.subview %[[B]][%{{.*}}, 0]
// CHECK:         arith.mulf %{{.*}}, %[[S]]
// CHECK-LABEL: func.func @scale(
// CHECK:         %[[R:.*]] = memref.dim %arg0, %c0
// CHECK:         %[[C:.*]] = memref.dim %arg0, %c1
// CHECK:         %[[WORK:.*]] = arith.muli %[[R]], %[[C]]
// CHECK:         call @__mlir_scan_run_chunks0(%{{.*}}, %{{.*}}, %[[WORK]], %arg0, %arg1, %arg2)
func.func @scale(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %s: f32) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<?x?xf32>) outs(%b : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %s : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Left alone: a small op, an op on tensors, a full reduction (no parallel
// dimension indexes the output), and a body with a call.

// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT:     call @__mlir_scan_run_chunks
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT:     call @__mlir_scan_run_chunks
func.func private @effect(f64) -> f64
func.func @left_alone(%v: memref<64xf64>, %o: memref<64xf64>, %t: tensor<?xf64>, %big: memref<?xf64>, %acc: memref<f64>) -> tensor<?xf64> {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%v : memref<64xf64>) outs(%o : memref<64xf64>) {
  ^bb0(%x: f64, %y: f64):
    linalg.yield %x : f64
  }
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%t : tensor<?xf64>) outs(%t : tensor<?xf64>) {
  ^bb0(%x: f64, %y: f64):
    %n = arith.negf %x : f64
    linalg.yield %n : f64
  } -> tensor<?xf64>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%big : memref<?xf64>) outs(%acc : memref<f64>) {
  ^bb0(%x: f64, %y: f64):
    %s = arith.addf %x, %y : f64
    linalg.yield %s : f64
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%big : memref<?xf64>) outs(%big : memref<?xf64>) {
  ^bb0(%x: f64, %y: f64):
    %c = func.call @effect(%x) : (f64) -> f64
    linalg.yield %c : f64
  }
  return %r : tensor<?xf64>
}

// -----

// Two ops that compute the same thing on operands of the same types (the
// forward and backward steps of a gradient often split the same product)
// share one chunk function and its stub; an op with another body gets its own.

// CHECK-LABEL: func.func private @__mlir_scan_chunk0(
// CHECK:         arith.mulf
// CHECK:       func.func private @__mlir_scan_run_chunks0(
// CHECK-NOT:   @__mlir_scan_chunk1(
// CHECK-LABEL: func.func private @__mlir_scan_chunk2(
// CHECK:         arith.addf
// CHECK:       func.func private @__mlir_scan_run_chunks2(
// CHECK-LABEL: func.func @same_twice(
// CHECK:         call @__mlir_scan_run_chunks0(%{{.*}}, %{{.*}}, %{{.*}}, %arg0, %arg1)
// CHECK:         call @__mlir_scan_run_chunks0(%{{.*}}, %{{.*}}, %{{.*}}, %arg1, %arg2)
// CHECK:         call @__mlir_scan_run_chunks2(%{{.*}}, %{{.*}}, %{{.*}}, %arg2, %arg0)
func.func @same_twice(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<?x?xf64>) outs(%b : memref<?x?xf64>) {
  ^bb0(%x: f64, %y: f64):
    %m = arith.mulf %x, %x : f64
    linalg.yield %m : f64
  } loc("first")
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<?x?xf64>) outs(%c : memref<?x?xf64>) {
  ^bb0(%x: f64, %y: f64):
    %m = arith.mulf %x, %x : f64
    linalg.yield %m : f64
  } loc("second")
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<?x?xf64>) outs(%a : memref<?x?xf64>) {
  ^bb0(%x: f64, %y: f64):
    %m = arith.addf %x, %x : f64
    linalg.yield %m : f64
  }
  return
}

// -----

// A point that calls the C math library (pow) costs 17 points of simple
// arithmetic: 10,000 pows (170,000 weighted points) are split, and the run-time
// library is told their weighted work; 10,000 multiplies (below min-work) are
// not. 170,000 weighted points are not hot; 20,000 pows (340,000) are.
// CHECK-LABEL: func.func private @__mlir_scan_chunk{{[0-9]+}}(
// CHECK-SAME:    memref<10000xf64>) {
// CHECK-LABEL: func.func @libm_body(
// CHECK:         %[[C17:.*]] = arith.constant 17 : index
// CHECK:         %[[WORK:.*]] = arith.muli %{{.*}}, %[[C17]] : index
// CHECK:         call @__mlir_scan_run_chunks{{[0-9]+}}(%{{.*}}, %{{.*}}, %[[WORK]], %arg0, %arg1, %arg2)
// CHECK-NEXT:    linalg.generic
// CHECK:           arith.mulf
// CHECK:         return
// CHECK-LABEL: func.func private @__mlir_scan_chunk{{[0-9]+}}(
// CHECK-SAME:    memref<20000xf64>) attributes {passthrough = ["mlir-scan-hot"]}
// CHECK-LABEL: func.func @libm_hot(
func.func @libm_body(%x: f64, %p: memref<10000xf64>, %out: memref<10000xf64>, %out2: memref<10000xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> ()>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x, %p : f64, memref<10000xf64>) outs(%out : memref<10000xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %y = math.powf %a, %b : f64
    linalg.yield %y : f64
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%p : memref<10000xf64>) outs(%out2 : memref<10000xf64>) {
  ^bb0(%b: f64, %c: f64):
    %y = arith.mulf %b, %b : f64
    linalg.yield %y : f64
  }
  return
}

func.func @libm_hot(%x: f64, %p: memref<20000xf64>, %out: memref<20000xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> ()>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x, %p : f64, memref<20000xf64>) outs(%out : memref<20000xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %y = math.powf %a, %b : f64
    linalg.yield %y : f64
  }
  return
}

// -----

// A body that reads its iteration's index (an `arange`, an `eye`): the part
// runs on subviews that start `lo` iterations in, so the index of the split
// dimension is shifted by `lo` (else every part would restart at 0); the
// index of the other dimension is left as it is.
// CHECK-LABEL: func.func private @__mlir_scan_chunk0(
// CHECK-SAME:    %[[LO:[^:]*]]: index, %{{[^:]*}}: index, %[[OUT:.*]]: memref<?x?xi64>)
// CHECK:         linalg.generic
// CHECK:           %[[I:.*]] = linalg.index 0 : index
// CHECK:           %[[SHIFTED:.*]] = arith.addi %[[I]], %[[LO]] : index
// CHECK:           %[[J:.*]] = linalg.index 1 : index
// CHECK-NOT:       arith.addi %[[J]], %[[LO]]
// CHECK:           arith.muli %[[SHIFTED]], %[[J]] : index
func.func @indices(%out: memref<?x?xi64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      outs(%out : memref<?x?xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %p = arith.muli %i, %j : index
    %v = arith.index_cast %p : index to i64
    linalg.yield %v : i64
  }
  return
}
