// RUN: scan-opt %s --scan-optimize | FileCheck %s
// RUN: scan-opt %s --scan-optimize --scan-bufferize | FileCheck %s --check-prefix=BUF
// RUN: scan-opt %s --scan-optimize --mlir-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS

// --mlir-pass-statistics shows what each rewrite of the rounds did.
// STATS-LABEL: ScanOptimize
// STATS-DAG:   rounds
// STATS-DAG:   scan-push-out-seq: pushed-out
// STATS-DAG:   scan-remove-unused: removed-inputs
// STATS-DAG:   scan-save-mem: trimmed-outputs

// scan-optimize: every scan rewrite in PyTensor's order, to a fixed point.
// The three effects of the scan-rewrites issue on concrete programs, plus
// the readout of an RNN. The public functions are also run by
// test/python/test_rewrites.py (with and without scan-optimize).

// CHECK-DAG:   #[[$X:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG:   #[[$M:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG:   #[[$Y:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>

// (a) The Elman RNN h_t = tanh(U·x_t + b + W·h_{t-1}): U·x_t for all t is one
// matmul-shaped linalg.generic before the loop (rows x units, reduction over
// the inputs), + b is applied to all rows before the loop too; the body only
// has W·h_{t-1} (its fill and vecmat), the add and tanh, and reads only W.
// (@elman_formula_order below: the same with (W·h + U·x) + b.)
// CHECK-LABEL: func.func @elman_rnn
// CHECK:         %[[XS:.*]] = tensor.extract_slice %arg0
// CHECK:         %[[UX:.*]] = linalg.generic {indexing_maps = [#[[$X]], #[[$M]], #[[$Y]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[XS]], %arg3 : tensor<?x3xf32>, tensor<3x4xf32>)
// CHECK:         %[[UXB:.*]] = linalg.generic {{.*}} ins(%[[UX]], %arg4 : tensor<?x4xf32>, tensor<4xf32>)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      linalg.yield
// CHECK-NEXT:    } -> tensor<?x4xf32>
// CHECK-NOT:     linalg.generic
// CHECK:         scan.scan steps(%{{.*}})
// CHECK-NEXT:      sequences(%[[UXB]] : tensor<?x4xf32>)
// CHECK-NEXT:      sitsot(%arg1 : tensor<4xf32>)
// CHECK-NEXT:      nonsequences(%arg2 : tensor<4x4xf32>) {
// CHECK-NEXT:    ^bb0(%[[UXT:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4x4xf32>):
// CHECK-NEXT:      arith.constant 0.000000e+00
// CHECK-NEXT:      tensor.empty
// CHECK-NEXT:      %[[F:.*]] = linalg.fill
// CHECK-NEXT:      %[[WH:.*]] = linalg.vecmat ins(%[[H]], %[[W]] : tensor<4xf32>, tensor<4x4xf32>) outs(%[[F]] : tensor<4xf32>)
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[UXT]], %[[WH]] : tensor<4xf32>
// CHECK-NEXT:      %[[T:.*]] = math.tanh %[[S]] : tensor<4xf32>
// CHECK-NEXT:      scan.yield %[[T]] : tensor<4xf32>
func.func @elman_rnn(%xs: tensor<?x3xf32>, %h0: tensor<4xf32>, %W: tensor<4x4xf32>, %U: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x3xf32>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x3xf32>) sitsot(%h0 : tensor<4xf32>) nonsequences(%W, %U, %b : tensor<4x4xf32>, tensor<3x4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<3xf32>, %h: tensor<4xf32>, %w: tensor<4x4xf32>, %u: tensor<3x4xf32>, %bb: tensor<4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %ux = linalg.vecmat ins(%x, %u : tensor<3xf32>, tensor<3x4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    %uxb = arith.addf %ux, %bb : tensor<4xf32>
    %wh = linalg.vecmat ins(%h, %w : tensor<4xf32>, tensor<4x4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    %s = arith.addf %uxb, %wh : tensor<4xf32>
    %t = math.tanh %s : tensor<4xf32>
    scan.yield %t : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return %r : tensor<?x4xf32>
}

// The Elman RNN in the order of the formula, tanh((W·h + U·x) + b): the bias
// is added to a recurrent value; scan-reassociate-adds regroups the sum as
// W·h + (U·x + b), and the same effect follows: U·x for all t is one
// matmul-shaped op, + b for all rows too, both before the loop.
// CHECK-LABEL: func.func @elman_formula_order
// CHECK:         %[[UX:.*]] = linalg.generic {indexing_maps = [#[[$X]], #[[$M]], #[[$Y]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %arg3 : tensor<?x3xf32>, tensor<3x4xf32>)
// CHECK:         %[[UXB:.*]] = linalg.generic {{.*}} ins(%[[UX]], %arg4 : tensor<?x4xf32>, tensor<4xf32>)
// CHECK-NOT:     linalg.generic
// CHECK:         scan.scan steps(%{{.*}})
// CHECK-NEXT:      sequences(%[[UXB]] : tensor<?x4xf32>)
// CHECK-NEXT:      sitsot(%arg1 : tensor<4xf32>)
// CHECK-NEXT:      nonsequences(%arg2 : tensor<4x4xf32>) {
// CHECK:           linalg.vecmat
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      math.tanh
// CHECK-NEXT:      scan.yield
func.func @elman_formula_order(%xs: tensor<?x3xf32>, %h0: tensor<4xf32>, %W: tensor<4x4xf32>, %U: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x3xf32>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x3xf32>) sitsot(%h0 : tensor<4xf32>) nonsequences(%W, %U, %b : tensor<4x4xf32>, tensor<3x4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<3xf32>, %h: tensor<4xf32>, %w: tensor<4x4xf32>, %u: tensor<3x4xf32>, %bb: tensor<4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %wh = linalg.vecmat ins(%h, %w : tensor<4xf32>, tensor<4x4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    %ux = linalg.vecmat ins(%x, %u : tensor<3xf32>, tensor<3x4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    %s = arith.addf %wh, %ux : tensor<4xf32>
    %sb = arith.addf %s, %bb : tensor<4xf32>
    %t = math.tanh %sb : tensor<4xf32>
    scan.yield %t : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return %r : tensor<?x4xf32>
}

// The same RNN with a readout y_t = h_t·V stacked as a nitsot: the readout
// becomes one matmul-shaped op on all of h after the loop.
// CHECK-LABEL: func.func @elman_readout
// CHECK:         %[[H:.*]] = scan.scan
// CHECK-NEXT:      sequences(%{{.*}} : tensor<?x4xf32>)
// CHECK-NEXT:      sitsot(%arg1 : tensor<4xf32>)
// CHECK-NEXT:      nonsequences(%arg2 : tensor<4x4xf32>) {
// CHECK:           scan.yield %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    } -> (tensor<?x4xf32>)
// CHECK:         %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$X]], #[[$M]], #[[$Y]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[H]], %arg5 : tensor<?x4xf32>, tensor<4x2xf32>)
// CHECK:         return %[[Y]]
func.func @elman_readout(%xs: tensor<?x3xf32>, %h0: tensor<4xf32>, %W: tensor<4x4xf32>, %U: tensor<3x4xf32>, %b: tensor<4xf32>, %V: tensor<4x2xf32>) -> tensor<?x2xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x3xf32>
  %r, %y = scan.scan steps(%n) sequences(%xs : tensor<?x3xf32>) sitsot(%h0 : tensor<4xf32>) nonsequences(%W, %U, %b, %V : tensor<4x4xf32>, tensor<3x4xf32>, tensor<4xf32>, tensor<4x2xf32>) {
  ^bb0(%x: tensor<3xf32>, %h: tensor<4xf32>, %w: tensor<4x4xf32>, %u: tensor<3x4xf32>, %bb: tensor<4xf32>, %v: tensor<4x2xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %ux = linalg.vecmat ins(%x, %u : tensor<3xf32>, tensor<3x4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    %uxb = arith.addf %ux, %bb : tensor<4xf32>
    %wh = linalg.vecmat ins(%h, %w : tensor<4xf32>, tensor<4x4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    %s = arith.addf %uxb, %wh : tensor<4xf32>
    %t = math.tanh %s : tensor<4xf32>
    %e2 = tensor.empty() : tensor<2xf32>
    %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
    %yy = linalg.vecmat ins(%t, %v : tensor<4xf32>, tensor<4x2xf32>) outs(%f2 : tensor<2xf32>) -> tensor<2xf32>
    scan.yield %t, %yy : tensor<4xf32>, tensor<2xf32>
  } -> (tensor<?x4xf32>, tensor<?x2xf32>)
  return %y : tensor<?x2xf32>
}

// (b) A**k with only result[-1] used: keep = 1, and after lowering the loop
// writes a ring of 2 rows (max(k, K + 1) for a tensor state): the only
// buffer of the state is memref<2x3xf64>, allocated before the loop; no
// buffer grows with k, nothing is allocated in the loop.
// CHECK-LABEL: func.func @power
// CHECK:         %[[R:.*]] = scan.scan steps(%arg1)
// CHECK-NEXT:      sitsot(%{{.*}} : tensor<3xf64>)
// CHECK-NEXT:      nonsequences(%arg0 : tensor<3xf64>) keep [1] {
// CHECK:         } -> (tensor<1x3xf64>)
// CHECK:         tensor.extract_slice %[[R]][0, 0] [1, 3] [1, 1] : tensor<1x3xf64> to tensor<3xf64>
// BUF-LABEL:   func.func @power
// BUF-NOT:       memref<?x3xf64>
// BUF:           %[[RING:.*]] = memref.alloc() {{.*}} : memref<2x3xf64>
// BUF-NOT:       memref<?x3xf64>
// BUF:           scf.for
// BUF-NOT:         memref.alloc
// BUF-NOT:         memref.copy
// BUF:             memref.subview %[[RING]]
// BUF-NOT:         memref.alloc
// BUF-NOT:         memref.copy
// BUF:           {{^    }$}}
// BUF-NOT:       memref<?x3xf64>
// BUF:           return
func.func @power(%A: tensor<3xf64>, %k: index) -> tensor<3xf64> {
  %one = arith.constant dense<1.0> : tensor<3xf64>
  %r = scan.scan steps(%k) sitsot(%one : tensor<3xf64>) nonsequences(%A : tensor<3xf64>) {
  ^bb0(%p: tensor<3xf64>, %a: tensor<3xf64>):
    %q = arith.mulf %p, %a : tensor<3xf64>
    scan.yield %q : tensor<3xf64>
  } -> (tensor<?x3xf64>)
  %c1 = arith.constant 1 : index
  %last = arith.subi %k, %c1 : index
  %v = tensor.extract_slice %r[%last, 0] [1, 3] [1, 1] : tensor<?x3xf64> to tensor<3xf64>
  return %v : tensor<3xf64>
}

// (c) Two independent scans over the same sequence (a running sum and a map)
// become one scan with one sequence.
// CHECK-LABEL: func.func @two_scans_one_sequence
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%{{.*}})
// CHECK-NEXT:      sequences(%arg0 : tensor<?xf64>)
// CHECK-NEXT:      sitsot(%arg1 : f64, %arg1 : f64) {
// CHECK-NEXT:    ^bb0(%{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
// CHECK:         } -> (tensor<?xf64>, tensor<?xf64>)
// CHECK-NOT:     scan.scan
// CHECK:         return %[[R]]#0, %[[R]]#1
func.func @two_scans_one_sequence(%xs: tensor<?xf64>, %s0: f64) -> (tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %sum = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%s0 : f64) {
  ^bb0(%x: f64, %s: f64):
    %t = arith.addf %s, %x : f64
    scan.yield %t : f64
  } -> (tensor<?xf64>)
  %sq = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%s0 : f64) {
  ^bb0(%x: f64, %s: f64):
    %p = arith.mulf %x, %s : f64
    scan.yield %p : f64
  } -> (tensor<?xf64>)
  return %sum, %sq : tensor<?xf64>, tensor<?xf64>
}

// Two maps computing the same row from the same sequence: one row computed
// once, one result (scan-merge, then scan-merge-inouts with its CSE; the row
// is then pushed out). The scan left only copies the pushed-out rows (it
// could be replaced by them: not done).
// CHECK-LABEL: func.func @two_identical_maps
// CHECK:         %[[SQ:.*]] = linalg.generic
// CHECK:           arith.mulf
// CHECK-NOT:       arith.mulf
// CHECK:         %[[R:.*]] = scan.scan steps(%{{.*}})
// CHECK-NEXT:      sequences(%[[SQ]] : tensor<?xf64>) {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f64):
// CHECK-NEXT:      scan.yield %[[X]] : f64
// CHECK-NOT:     scan.scan
// CHECK:         return %[[R]], %[[R]]
func.func @two_identical_maps(%xs: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %a = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.mulf %x, %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  %b = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.mulf %x, %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %a, %b : tensor<?xf64>, tensor<?xf64>
}

// NEGATIVE: a true recurrence read whole (no keep, nothing to push out), and
// two scans with until over the same sequence (not merged): they stay.
// CHECK-LABEL: func.func @nothing_to_do
// CHECK-NOT:     keep
// CHECK:         scan.scan steps(%{{.*}}) until
// CHECK:         scan.scan steps(%{{.*}}) until
// CHECK-NOT:     keep
// CHECK:         return
func.func @nothing_to_do(%xs: tensor<?xf64>, %s0: f64) -> (tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %a = scan.scan steps(%n) until sequences(%xs : tensor<?xf64>) sitsot(%s0 : f64) {
  ^bb0(%x: f64, %s: f64):
    %t = arith.addf %s, %x : f64
    %lim = arith.constant 10.0 : f64
    %stop = arith.cmpf ogt, %t, %lim : f64
    scan.yield %t, %stop : f64, i1
  } -> (tensor<?xf64>)
  %b = scan.scan steps(%n) until sequences(%xs : tensor<?xf64>) sitsot(%s0 : f64) {
  ^bb0(%x: f64, %s: f64):
    %t = arith.mulf %s, %x : f64
    %lim = arith.constant 10.0 : f64
    %stop = arith.cmpf ogt, %t, %lim : f64
    scan.yield %t, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %a, %b : tensor<?xf64>, tensor<?xf64>
}
