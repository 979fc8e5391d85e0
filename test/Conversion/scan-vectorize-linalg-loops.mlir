// RUN: scan-opt %s --pass-pipeline="builtin.module(func.func(scan-vectorize-linalg-loops),canonicalize)" -split-input-file | FileCheck %s
// RUN: scan-opt %s --pass-pipeline="builtin.module(func.func(scan-vectorize-linalg-loops{vector-bits=128}))" -split-input-file | FileCheck %s --check-prefix=NARROW
// RUN: scan-opt %s --scan-buffers-to-llvm -split-input-file | mlir-translate --mlir-to-llvmir -split-input-file | FileCheck %s --check-prefix=LLVM

// Every loop the pass writes is final (LLVM must not touch it); `disableNonforced` becomes
// `llvm.loop.disable_nonforced` on the loop's latch in LLVM IR, so LLVM's
// vectorizer and unroller leave the vector loops and their scalar tails alone.
// CHECK: #[[FINAL:.*]] = #llvm.loop_annotation<disableNonforced = true>
// LLVM-LABEL: define void @vecmat
// LLVM:         br {{.*}}, !llvm.loop ![[LOOP:[0-9]+]]
// LLVM:       ![[LOOP]] = distinct !{![[LOOP]], ![[DISABLE:[0-9]+]]}
// LLVM:       ![[DISABLE]] = !{!"llvm.loop.disable_nonforced"}

// The RNN step after scan-order-linalg-loops: out[j] += h[k] * W[k, j] with j
// innermost. The k loop is unrolled and jammed by 4 (18 = 4 * 4 + 2): the four
// h[k + u] are loaded once, outside the vector loop, even though h has a
// dynamic stride (it is the state view); each vector of out is loaded once,
// updated four times in k order and stored once.
// CHECK-LABEL: func.func @vecmat
// CHECK-SAME:    (%[[H:.*]]: memref<18xf64, strided<[?], offset: ?>>, %[[W:.*]]: memref<18x30xf64>, %[[O:.*]]: memref<30xf64, strided<[1], offset: ?>>)
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[C18:.*]] = arith.constant 18 : index
// CHECK-DAG:     %[[C24:.*]] = arith.constant 24 : index
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %[[C16]] step %[[C4]] {
// CHECK:           %[[H0:.*]] = memref.load %[[H]][%[[K]]]
// CHECK:           %[[K1:.*]] = arith.addi %[[K]], %{{.*}} : index
// CHECK:           %[[H1:.*]] = memref.load %[[H]][%[[K1]]]
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %[[C24]] step %[[C8]] {
// CHECK:             %[[W0:.*]] = vector.load %[[W]][%[[K]], %[[J]]] : memref<18x30xf64>, vector<8xf64>
// CHECK:             %[[OV:.*]] = vector.load %[[O]][%[[J]]] : {{.*}}, vector<8xf64>
// CHECK:             %[[HB:.*]] = vector.broadcast %[[H0]] : f64 to vector<8xf64>
// CHECK:             %[[M:.*]] = arith.mulf %[[HB]], %[[W0]] fastmath<contract> : vector<8xf64>
// CHECK:             %[[A:.*]] = arith.addf %[[OV]], %[[M]] fastmath<contract> : vector<8xf64>
// CHECK:             vector.load %[[W]][%[[K1]], %[[J]]]
// CHECK:             %[[A1:.*]] = arith.addf %[[A]], %{{.*}} : vector<8xf64>
// CHECK-COUNT-2:     arith.addf
// CHECK:             vector.store %{{.*}}, %[[O]][%[[J]]]
// CHECK-NOT:         vector.store
// CHECK:           } {loop_annotation = #[[FINAL]]}
// The remainder of j (30 = 3 * 8 + 6) runs on scalars, still four k at a time.
// CHECK:           scf.for %[[J2:.*]] = %[[C24]] to %{{.*}} step %{{.*}} {
// CHECK:             memref.load %[[W]][%[[K]], %[[J2]]]
// CHECK:             arith.mulf %[[H0]], %{{.*}} fastmath<contract> : f64
// CHECK-COUNT-4:     arith.addf
// CHECK:             memref.store
// CHECK:         }
// The remainder of k, one k at a time.
// CHECK:         scf.for %[[KR:.*]] = %[[C16]] to %[[C18]] step %{{.*}} {
// CHECK:           memref.load %[[H]][%[[KR]]]
// CHECK:           scf.for
// CHECK-COUNT-1:     vector.store
// CHECK-NOT:     linalg.generic
// NARROW-LABEL: func.func @vecmat
// NARROW:         vector.load {{.*}} vector<4xf64>
func.func @vecmat(%h: memref<18xf64, strided<[?], offset: ?>>, %w: memref<18x30xf64>,
                  %o: memref<30xf64, strided<[1], offset: ?>>) {
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k)>, affine_map<(k, j) -> (k, j)>,
                                   affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%h, %w : memref<18xf64, strided<[?], offset: ?>>, memref<18x30xf64>)
      outs(%o : memref<30xf64, strided<[1], offset: ?>>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %m = arith.mulf %a, %b fastmath<contract> : f64
    %s = arith.addf %c, %m fastmath<contract> : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Elementwise with a dynamic size, a constant and a comparison: constants
// stay scalar and are broadcast (canonicalize folds the broadcast of the
// constant); i1 intermediates become vector<i1>; f32 gets 16 lanes (two
// 256-bit registers).
// CHECK-LABEL: func.func @relu_scale
// CHECK:         %[[ZB:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK:         %[[N:.*]] = memref.dim
// CHECK:         scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %[[C16:.*]] {
// CHECK:           %[[X:.*]] = vector.load %{{.*}}[%[[J]]] : memref<?xf32>, vector<16xf32>
// CHECK:           %[[C:.*]] = arith.cmpf ogt, %[[X]], %[[ZB]] : vector<16xf32>
// CHECK:           %[[S:.*]] = arith.select %[[C]], %[[X]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK:           vector.store %{{.*}}, %{{.*}}[%[[J]]] : memref<?xf32>, vector<16xf32>
// CHECK:         scf.for
// CHECK:           arith.cmpf ogt, %{{.*}}, %{{.*}} : f32
func.func @relu_scale(%x: memref<?xf32>, %y: memref<?xf32>, %scale: f32) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %b: f32):
    %z = arith.constant 0.0 : f32
    %c = arith.cmpf ogt, %a, %z : f32
    %s = arith.select %c, %a, %z : f32
    %m = arith.mulf %s, %scale : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A scalar input (the map `(d0) -> ()`: scan-push-out-seq's broadcast of a
// non-sequence, the `x` of the scan guide's `x ** p_i`) is the same value in
// every lane: broadcast where a vector op uses it (LLVM hoists it).
// CHECK-LABEL: func.func @scalar_input
// CHECK:         scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[P:.*]] = vector.load %arg1[%[[J]]] : memref<?xf64>, vector<8xf64>
// CHECK:           %[[XB:.*]] = vector.broadcast %arg0 : f64 to vector<8xf64>
// CHECK:           %[[Y:.*]] = math.powf %[[XB]], %[[P]] : vector<8xf64>
// CHECK:           vector.store %[[Y]], %arg1[%[[J]]] : memref<?xf64>, vector<8xf64>
// CHECK:         scf.for
// CHECK:           math.powf %arg0, %{{.*}} : f64
func.func @scalar_input(%x: f64, %p: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%x, %p : f64, memref<?xf64>) outs(%p : memref<?xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %y = math.powf %a, %b : f64
    linalg.yield %y : f64
  }
  return
}

// -----

// A row-major matvec: the innermost loop is a reassociable reduction. Partial
// sums live in a vector<16xf64> (four registers), reduced into out[i] after
// the vector loop; the remainder continues from that value.
// CHECK-LABEL: func.func @matvec
// CHECK:         %[[ZERO:.*]] = arith.constant dense<-0.000000e+00> : vector<16xf64>
// CHECK:         scf.for %[[I:.*]] =
// CHECK:           %[[OUT:.*]] = memref.load %{{.*}}[%[[I]]] : memref<8xf64>
// CHECK:           %[[ACC:.*]] = scf.for %{{.*}} iter_args(%[[P:.*]] = %[[ZERO]]) -> (vector<16xf64>) {
// CHECK:             %[[M:.*]] = arith.mulf {{.*}} : vector<16xf64>
// CHECK:             %[[S:.*]] = arith.addf %[[P]], %[[M]] fastmath<reassoc,contract> : vector<16xf64>
// CHECK:             scf.yield %[[S]]
// CHECK:           %[[R:.*]] = vector.reduction <add>, %[[ACC]], %[[OUT]] fastmath<reassoc,contract> : vector<16xf64> into f64
// CHECK:           %[[T:.*]] = scf.for %{{.*}} iter_args(%[[Q:.*]] = %[[R]]) -> (f64) {
// CHECK:             arith.addf %[[Q]], %{{.*}} : f64
// CHECK:           memref.store %[[T]], %{{.*}}[%[[I]]] : memref<8xf64>
func.func @matvec(%a: memref<8x40xf64>, %x: memref<40xf64>, %o: memref<8xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a, %x : memref<8x40xf64>, memref<40xf64>) outs(%o : memref<8xf64>) {
  ^bb0(%p: f64, %q: f64, %r: f64):
    %m = arith.mulf %p, %q fastmath<reassoc,contract> : f64
    %s = arith.addf %r, %m fastmath<reassoc,contract> : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Integer sums are exact in any order: no fastmath flag is needed.
// CHECK-LABEL: func.func @int_sum
// CHECK:         vector.reduction <add>, %{{.*}}, %{{.*}} : vector<16xi64> into i64
func.func @int_sum(%x: memref<?xi64>, %o: memref<i64>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%x : memref<?xi64>) outs(%o : memref<i64>) {
  ^bb0(%a: i64, %b: i64):
    %s = arith.addi %b, %a : i64
    linalg.yield %s : i64
  }
  return
}

// -----

// Left for convert-linalg-to-loops, each for its own reason.
// CHECK-LABEL: func.func @not_vectorized
// CHECK-COUNT-8: linalg.generic
// CHECK-NOT:     vector.
func.func @not_vectorized(%x: memref<?xf64>, %m: memref<8x8xf64>, %s: memref<8xf64, strided<[2]>>,
                          %b: memref<?xi1>, %o: memref<f64>, %i: memref<?xindex>) {
  // A float reduction that may not be reassociated.
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%x : memref<?xf64>) outs(%o : memref<f64>) {
  ^bb0(%a: f64, %c: f64):
    %r = arith.addf %c, %a : f64
    linalg.yield %r : f64
  }
  // The innermost dimension is not the last of the operand (a transpose read).
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%m : memref<8x8xf64>) outs(%m : memref<8x8xf64>) {
  ^bb0(%a: f64, %c: f64):
    linalg.yield %a : f64
  }
  // A stride of 2.
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%s : memref<8xf64, strided<[2]>>) outs(%s : memref<8xf64, strided<[2]>>) {
  ^bb0(%a: f64, %c: f64):
    %r = arith.mulf %a, %a : f64
    linalg.yield %r : f64
  }
  // i1 elements in memory (scan-lower-i1-access handles their loads).
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%b : memref<?xi1>) outs(%b : memref<?xi1>) {
  ^bb0(%a: i1, %c: i1):
    %r = arith.xori %a, %c : i1
    linalg.yield %r : i1
  }
  // The body reads the iteration index.
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      outs(%x : memref<?xf64>) {
  ^bb0(%c: f64):
    %j = linalg.index 0 : index
    %k = arith.index_cast %j : index to i64
    %f = arith.sitofp %k : i64 to f64
    linalg.yield %f : f64
  }
  // The output is also an input and a loop revisits its elements (k before
  // j): unrolling k would read c[j] from memory after updating it in a register.
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (j)>, affine_map<(k, j) -> (k, j)>,
                                   affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x, %m : memref<?xf64>, memref<8x8xf64>) outs(%x : memref<?xf64>) {
  ^bb0(%a: f64, %q: f64, %c: f64):
    %r = arith.addf %a, %q : f64
    linalg.yield %r : f64
  }
  // The same with an innermost reduction: the input would be read once.
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>,
                                   affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<?xf64>, memref<8x8xf64>) outs(%x : memref<?xf64>) {
  ^bb0(%a: f64, %q: f64, %c: f64):
    %r = arith.addf %c, %a fastmath<reassoc> : f64
    linalg.yield %r : f64
  }
  // Index elements have no fixed width.
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      outs(%i : memref<?xindex>) {
  ^bb0(%c: index):
    linalg.yield %c : index
  }
  return
}

// -----

// A matmul (C[i, j] += A[i, k] * B[k, j], after scan-order-linalg-loops): rows
// i are blocked by 4 and k by 4; each vector of B is loaded once per k and
// used for the four rows, each row keeps its own C vector in registers across
// the four k. Remainder loops follow for j, k and i.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:.*]]: memref<?x?xf64>, %[[B:.*]]: memref<?x?xf64>, %[[C:.*]]: memref<?x?xf64>)
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[C4:.*]] {
// CHECK:           scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %[[C4]] {
// CHECK-COUNT-16:    memref.load %[[A]]
// CHECK:             scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %[[C8:.*]] {
// CHECK:               %[[B0:.*]] = vector.load %[[B]][%[[K]], %[[J]]]
// CHECK:               vector.load %[[C]][%[[I]], %[[J]]]
// CHECK:               arith.mulf %{{.*}}, %[[B0]]
// CHECK:               vector.load %[[C]]
// CHECK:               arith.mulf %{{.*}}, %[[B0]]
// CHECK:               vector.load %[[C]]
// CHECK:               arith.mulf %{{.*}}, %[[B0]]
// CHECK:               vector.load %[[C]]
// CHECK:               arith.mulf %{{.*}}, %[[B0]]
// CHECK-NOT:           vector.load %[[B]][%[[K]], %[[J]]]
// CHECK:               vector.load %[[B]]
// CHECK-COUNT-4:       vector.store %{{.*}}, %[[C]]
// CHECK-NEXT:        }
// CHECK:             scf.for
// CHECK-COUNT-4:       memref.store %{{.*}}, %[[C]]
// CHECK:           scf.for
// CHECK:         scf.for
func.func @matmul(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>,
                                   affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>) {
  ^bb0(%p: f64, %q: f64, %r: f64):
    %m = arith.mulf %p, %q fastmath<contract> : f64
    %s = arith.addf %r, %m fastmath<contract> : f64
    linalg.yield %s : f64
  }
  return
}
