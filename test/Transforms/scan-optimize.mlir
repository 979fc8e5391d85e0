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

// (b) A**k with only result[-1] used: keep = 1, and after lowering the
// state is one row updated in place (the step only reads it to compute the
// new one, element by element; a ring of max(k, K + 1) rows otherwise): the
// only buffer of the state is memref<1x3xf64>, allocated before the loop; no
// buffer grows with k, nothing is allocated or copied in the loop.
// CHECK-LABEL: func.func @power
// CHECK:         %[[R:.*]] = scan.scan steps(%arg1)
// CHECK-NEXT:      sitsot(%{{.*}} : tensor<3xf64>)
// CHECK-NEXT:      nonsequences(%arg0 : tensor<3xf64>) keep [1] {
// CHECK:         } -> (tensor<1x3xf64>)
// CHECK:         tensor.extract_slice %[[R]][0, 0] [1, 3] [1, 1] : tensor<1x3xf64> to tensor<3xf64>
// BUF-LABEL:   func.func @power
// BUF-NOT:       memref<?x3xf64>
// BUF:           %[[RING:.*]] = memref.alloc() {{.*}} : memref<1x3xf64>
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
// is then pushed out). The scan left would only copy the pushed-out rows:
// the result is those rows, and no scan is left.
// CHECK-LABEL: func.func @two_identical_maps
// CHECK:         %[[SQ:.*]] = linalg.generic
// CHECK:           arith.mulf
// CHECK-NOT:       arith.mulf
// CHECK-NOT:     scan.scan
// CHECK:         %[[R:.*]] = tensor.extract_slice %[[SQ]][0] [%{{.*}}] [1]
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

// The gradient of an Elman RNN, d/dW sum_t sum(h_t), as the builder emits it
// (`T.grad(hs.sum(), W)` on h_t = tanh(h_{t-1} W + x_t U + b); static sizes,
// run-time checks included). After the rewrites: the forward scan keeps every
// state (the backward scan reads them all), the backward scan runs
// go_backwards with the state's gradient as a MITMOT buffer (in-tap 0 reads
// the complete gradient of h_t, out-tap 1 adds this step's contribution to
// the gradient of h_{t-1}), and dW = sum_t outer(h_{t-1}, da_t) is one matmul
// of the two stacked vectors after the loop, not an accumulator in it.
// CHECK-LABEL: func.func @elman_rnn_grad
// CHECK:         scan.scan steps
// CHECK-NOT:       keep
// CHECK:           sitsot(%arg1 : tensor<3xf64>)
// CHECK:         scan.scan steps(%{{.*}}) go_backwards
// CHECK-NEXT:      sequences(%{{.*}}[0, 1] : tensor<?x3xf64>)
// CHECK-NEXT:      mitmot(%{{.*}}[0, 1] -> [1] : tensor<?x3xf64>)
// CHECK-NEXT:      nonsequences(%arg2 : tensor<3x3xf64>) {
// CHECK:           linalg.matvec
// CHECK-NOT:       tensor<3x3xf64>)
// CHECK:           scan.yield
// CHECK:         } -> (tensor<?x3xf64>, tensor<?x3xf64>, tensor<?x3xf64>)
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<3x?xf64>, tensor<?x3xf64>) outs(%{{.*}} : tensor<3x3xf64>)
func.func @elman_rnn_grad(%in0: tensor<?x2xf64> {bufferization.writable = false}, %in1: tensor<3xf64> {bufferization.writable = false}, %in2: tensor<3x3xf64> {bufferization.writable = false}, %in3: tensor<2x3xf64> {bufferization.writable = false}, %in4: tensor<3xf64> {bufferization.writable = false}) -> (tensor<3x3xf64>) {
  %c5 = arith.constant 0 : index
  %dim6 = tensor.dim %in0, %c5 : tensor<?x2xf64>
  %v7 = arith.index_cast %dim6 : index to i64
  %c8 = arith.constant 0 : i64
  %v9 = arith.subi %v7, %c8 : i64
  %c10 = arith.constant 1 : index
  %c11 = arith.constant 3 : index
  %empty12 = tensor.empty() : tensor<1x3xf64>
  %g15 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in1 : tensor<3xf64>) outs(%empty12 : tensor<1x3xf64>) {
  ^bb0(%a13: f64, %a14: f64):
      linalg.yield %a13 : f64
  } -> tensor<1x3xf64>
  %cast16 = tensor.cast %g15 : tensor<1x3xf64> to tensor<?x3xf64>
  %idx17 = arith.index_cast %v9 : i64 to index
  %scan56 = scan.scan steps(%idx17)
      sequences(%in0[0] : tensor<?x2xf64>)
      sitsot(%in1 : tensor<3xf64>)
      nonsequences(%in2, %in3, %in4 : tensor<3x3xf64>, tensor<2x3xf64>, tensor<3xf64>) {
  ^bb0(%arg18: tensor<2xf64>, %arg19: tensor<3xf64>, %arg20: tensor<3x3xf64>, %arg21: tensor<2x3xf64>, %arg22: tensor<3xf64>):
    %c23 = arith.constant 0.0 : f64
    %c24 = arith.constant 3 : index
    %cmp25 = arith.cmpi ne, %c24, %c24 : index
    scf.if %cmp25 {
        %c26 = arith.constant 100 : i64
        %c27 = arith.constant 0 : i64
        %v28 = arith.index_cast %c24 : index to i64
        %v29 = arith.index_cast %c24 : index to i64
        func.call @__mlir_scan_fail(%c26, %c27, %v28, %v29) : (i64, i64, i64, i64) -> ()
    }
    %empty30 = tensor.empty() : tensor<3xf64>
    %fill31 = linalg.fill ins(%c23 : f64) outs(%empty30 : tensor<3xf64>) -> tensor<3xf64>
    %c32 = arith.constant true
    %v33 = arith.xori %cmp25, %c32 : i1
    %dot34 = scf.if %v33 -> (tensor<3xf64>) {
        %v35 = linalg.vecmat ins(%arg19, %arg20 : tensor<3xf64>, tensor<3x3xf64>) outs(%fill31 : tensor<3xf64>) -> tensor<3xf64>
        scf.yield %v35 : tensor<3xf64>
    } else {
      scf.yield %fill31 : tensor<3xf64>
    }
    %c36 = arith.constant 2 : index
    %cmp37 = arith.cmpi ne, %c36, %c36 : index
    scf.if %cmp37 {
        %c38 = arith.constant 100 : i64
        %c39 = arith.constant 1 : i64
        %v40 = arith.index_cast %c36 : index to i64
        %v41 = arith.index_cast %c36 : index to i64
        func.call @__mlir_scan_fail(%c38, %c39, %v40, %v41) : (i64, i64, i64, i64) -> ()
    }
    %empty42 = tensor.empty() : tensor<3xf64>
    %fill43 = linalg.fill ins(%c23 : f64) outs(%empty42 : tensor<3xf64>) -> tensor<3xf64>
    %v44 = arith.xori %cmp37, %c32 : i1
    %dot45 = scf.if %v44 -> (tensor<3xf64>) {
        %v46 = linalg.vecmat ins(%arg18, %arg21 : tensor<2xf64>, tensor<2x3xf64>) outs(%fill43 : tensor<3xf64>) -> tensor<3xf64>
        scf.yield %v46 : tensor<3xf64>
    } else {
      scf.yield %fill43 : tensor<3xf64>
    }
    %empty47 = tensor.empty() : tensor<3xf64>
    %g55 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%dot34, %dot45, %arg22 : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) outs(%empty47 : tensor<3xf64>) {
    ^bb0(%a48: f64, %a49: f64, %a50: f64, %a51: f64):
        %v52 = arith.addf %a48, %a49 : f64
        %v53 = arith.addf %v52, %a50 : f64
        %v54 = math.tanh %v53 : f64
        linalg.yield %v54 : f64
    } -> tensor<3xf64>
    scan.yield %g55 : tensor<3xf64>
  } -> (tensor<?x3xf64>)
  %dim57 = tensor.dim %cast16, %c5 : tensor<?x3xf64>
  %ix58 = arith.addi %c5, %dim57 : index
  %dim59 = tensor.dim %scan56, %c5 : tensor<?x3xf64>
  %ix60 = arith.addi %ix58, %dim59 : index
  %empty61 = tensor.empty(%ix60) : tensor<?x3xf64>
  %dim62 = tensor.dim %cast16, %c5 : tensor<?x3xf64>
  %cat63 = tensor.insert_slice %cast16 into %empty61[%c5, %c5] [%dim62, 3] [%c10, %c10] : tensor<?x3xf64> into tensor<?x3xf64>
  %dim64 = tensor.dim %scan56, %c5 : tensor<?x3xf64>
  %cat65 = tensor.insert_slice %scan56 into %cat63[%ix58, %c5] [%dim64, 3] [%c10, %c10] : tensor<?x3xf64> into tensor<?x3xf64>
  %c66 = arith.constant 1 : i64
  %v67 = arith.addi %v9, %c66 : i64
  %dim68 = tensor.dim %cat65, %c5 : tensor<?x3xf64>
  %idx69 = arith.index_cast %v67 : i64 to index
  %cmp70 = arith.cmpi slt, %c5, %c5 : index
  %ix71 = arith.addi %c5, %dim68 : index
  %ix72 = arith.maxsi %ix71, %c5 : index
  %ix73 = arith.minsi %c5, %dim68 : index
  %sel74 = arith.select %cmp70, %ix72, %ix73 : index
  %cmp75 = arith.cmpi slt, %idx69, %c5 : index
  %ix76 = arith.addi %idx69, %dim68 : index
  %ix77 = arith.maxsi %ix76, %c5 : index
  %ix78 = arith.minsi %idx69, %dim68 : index
  %sel79 = arith.select %cmp75, %ix77, %ix78 : index
  %ix80 = arith.subi %sel79, %sel74 : index
  %ix81 = arith.subi %c10, %c10 : index
  %ix82 = arith.addi %ix80, %ix81 : index
  %ix83 = arith.divsi %ix82, %c10 : index
  %ix84 = arith.maxsi %ix83, %c5 : index
  %sub85 = tensor.extract_slice %cat65[%sel74, 0] [%ix84, 3] [1, 1] : tensor<?x3xf64> to tensor<?x3xf64>
  %c86 = arith.constant 1.0 : f64
  %v87 = tensor.from_elements %c86 : tensor<1x1xf64>
  %idx88 = arith.index_cast %v9 : i64 to index
  %cmp89 = arith.cmpi slt, %idx88, %c5 : index
  scf.if %cmp89 {
      %c90 = arith.constant 100 : i64
      %c91 = arith.constant 2 : i64
      %v92 = arith.index_cast %idx88 : index to i64
      func.call @__mlir_scan_fail(%c90, %c91, %v92, %c8) : (i64, i64, i64, i64) -> ()
  }
  %ix93 = arith.maxsi %idx88, %c5 : index
  %empty94 = tensor.empty(%ix93) : tensor<?x3xf64>
  %g97 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v87 : tensor<1x1xf64>) outs(%empty94 : tensor<?x3xf64>) {
  ^bb0(%a95: f64, %a96: f64):
      linalg.yield %a95 : f64
  } -> tensor<?x3xf64>
  %dim98 = tensor.dim %g97, %c5 : tensor<?x3xf64>
  %idx99 = arith.index_cast %v9 : i64 to index
  %cmp100 = arith.cmpi slt, %c5, %c5 : index
  %ix101 = arith.addi %c5, %dim98 : index
  %ix102 = arith.maxsi %ix101, %c5 : index
  %ix103 = arith.minsi %c5, %dim98 : index
  %sel104 = arith.select %cmp100, %ix102, %ix103 : index
  %cmp105 = arith.cmpi slt, %idx99, %c5 : index
  %ix106 = arith.addi %idx99, %dim98 : index
  %ix107 = arith.maxsi %ix106, %c5 : index
  %ix108 = arith.minsi %idx99, %dim98 : index
  %sel109 = arith.select %cmp105, %ix107, %ix108 : index
  %ix110 = arith.subi %sel109, %sel104 : index
  %ix111 = arith.subi %c10, %c10 : index
  %ix112 = arith.addi %ix110, %ix111 : index
  %ix113 = arith.divsi %ix112, %c10 : index
  %ix114 = arith.maxsi %ix113, %c5 : index
  %sub115 = tensor.extract_slice %g97[%sel104, 0] [%ix114, 3] [1, 1] : tensor<?x3xf64> to tensor<?x3xf64>
  %dim116 = tensor.dim %sub115, %c5 : tensor<?x3xf64>
  %c117 = arith.constant -1 : index
  %ix118 = arith.subi %dim116, %c10 : index
  %ix119 = arith.subi %ix118, %c117 : index
  %ix120 = arith.subi %c10, %c10 : index
  %ix121 = arith.addi %ix119, %ix120 : index
  %ix122 = arith.divsi %ix121, %c10 : index
  %ix123 = arith.maxsi %ix122, %c5 : index
  %empty124 = tensor.empty(%ix123) : tensor<?x3xf64>
  %g133 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%empty124 : tensor<?x3xf64>) {
  ^bb0(%a125: f64):
      %v126 = linalg.index 0 : index
      %ix127 = arith.muli %v126, %c117 : index
      %ix128 = arith.addi %ix118, %ix127 : index
      %v129 = linalg.index 1 : index
      %ix130 = arith.muli %v129, %c10 : index
      %ix131 = arith.addi %c5, %ix130 : index
      %v132 = tensor.extract %sub115[%ix128, %ix131] : tensor<?x3xf64>
      linalg.yield %v132 : f64
  } -> tensor<?x3xf64>
  %c134 = arith.constant 0.0 : f64
  %empty135 = tensor.empty() : tensor<1x3xf64>
  %fill136 = linalg.fill ins(%c134 : f64) outs(%empty135 : tensor<1x3xf64>) -> tensor<1x3xf64>
  %cast137 = tensor.cast %fill136 : tensor<1x3xf64> to tensor<?x3xf64>
  %dim138 = tensor.dim %g133, %c5 : tensor<?x3xf64>
  %ix139 = arith.addi %c5, %dim138 : index
  %dim140 = tensor.dim %cast137, %c5 : tensor<?x3xf64>
  %ix141 = arith.addi %ix139, %dim140 : index
  %empty142 = tensor.empty(%ix141) : tensor<?x3xf64>
  %dim143 = tensor.dim %g133, %c5 : tensor<?x3xf64>
  %cat144 = tensor.insert_slice %g133 into %empty142[%c5, %c5] [%dim143, 3] [%c10, %c10] : tensor<?x3xf64> into tensor<?x3xf64>
  %dim145 = tensor.dim %cast137, %c5 : tensor<?x3xf64>
  %cat146 = tensor.insert_slice %cast137 into %cat144[%ix139, %c5] [%dim145, 3] [%c10, %c10] : tensor<?x3xf64> into tensor<?x3xf64>
  %idx147 = arith.index_cast %v9 : i64 to index
  %scan183:3 = scan.scan steps(%idx147) go_backwards
      sequences(%sub85[0, 1] : tensor<?x3xf64>)
      mitmot(%cat146[0, 1] -> [1] : tensor<?x3xf64>)
      nonsequences(%in2 : tensor<3x3xf64>) {
  ^bb0(%arg148: tensor<3xf64>, %arg149: tensor<3xf64>, %arg150: tensor<3xf64>, %arg151: tensor<3xf64>, %arg152: tensor<3x3xf64>):
    %c153 = arith.constant 1.0 : f64
    %c154 = arith.constant 3 : index
    %empty155 = tensor.empty() : tensor<3xf64>
    %g164 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%arg150, %c153, %arg148, %arg148 : tensor<3xf64>, f64, tensor<3xf64>, tensor<3xf64>) outs(%empty155 : tensor<3xf64>) {
    ^bb0(%a156: f64, %a157: f64, %a158: f64, %a159: f64, %a160: f64):
        %v161 = arith.mulf %a158, %a159 : f64
        %v162 = arith.subf %a157, %v161 : f64
        %v163 = arith.mulf %a156, %v162 : f64
        linalg.yield %v163 : f64
    } -> tensor<3xf64>
    %c165 = arith.constant 0.0 : f64
    %cmp166 = arith.cmpi ne, %c154, %c154 : index
    scf.if %cmp166 {
        %c167 = arith.constant 100 : i64
        %c168 = arith.constant 3 : i64
        %v169 = arith.index_cast %c154 : index to i64
        %v170 = arith.index_cast %c154 : index to i64
        func.call @__mlir_scan_fail(%c167, %c168, %v169, %v170) : (i64, i64, i64, i64) -> ()
    }
    %empty171 = tensor.empty() : tensor<3xf64>
    %fill172 = linalg.fill ins(%c165 : f64) outs(%empty171 : tensor<3xf64>) -> tensor<3xf64>
    %c173 = arith.constant true
    %v174 = arith.xori %cmp166, %c173 : i1
    %dot175 = scf.if %v174 -> (tensor<3xf64>) {
        %v176 = linalg.matvec ins(%arg152, %g164 : tensor<3x3xf64>, tensor<3xf64>) outs(%fill172 : tensor<3xf64>) -> tensor<3xf64>
        scf.yield %v176 : tensor<3xf64>
    } else {
      scf.yield %fill172 : tensor<3xf64>
    }
    %empty177 = tensor.empty() : tensor<3xf64>
    %g182 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%arg151, %dot175 : tensor<3xf64>, tensor<3xf64>) outs(%empty177 : tensor<3xf64>) {
    ^bb0(%a178: f64, %a179: f64, %a180: f64):
        %v181 = arith.addf %a178, %a179 : f64
        linalg.yield %v181 : f64
    } -> tensor<3xf64>
    scan.yield %g182, %arg149, %g164 : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>
  } -> (tensor<?x3xf64>, tensor<?x3xf64>, tensor<?x3xf64>)
  %dim184 = tensor.dim %scan183#1, %c5 : tensor<?x3xf64>
  %empty185 = tensor.empty(%dim184) : tensor<3x?xf64>
  %g188 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%scan183#1 : tensor<?x3xf64>) outs(%empty185 : tensor<3x?xf64>) {
  ^bb0(%a186: f64, %a187: f64):
      linalg.yield %a186 : f64
  } -> tensor<3x?xf64>
  %dim189 = tensor.dim %g188, %c10 : tensor<3x?xf64>
  %dim190 = tensor.dim %scan183#2, %c5 : tensor<?x3xf64>
  %cmp191 = arith.cmpi ne, %dim189, %dim190 : index
  scf.if %cmp191 {
      %c192 = arith.constant 100 : i64
      %c193 = arith.constant 4 : i64
      %v194 = arith.index_cast %dim189 : index to i64
      %v195 = arith.index_cast %dim190 : index to i64
      func.call @__mlir_scan_fail(%c192, %c193, %v194, %v195) : (i64, i64, i64, i64) -> ()
  }
  %empty196 = tensor.empty() : tensor<3x3xf64>
  %fill197 = linalg.fill ins(%c134 : f64) outs(%empty196 : tensor<3x3xf64>) -> tensor<3x3xf64>
  %c198 = arith.constant true
  %v199 = arith.xori %cmp191, %c198 : i1
  %dot200 = scf.if %v199 -> (tensor<3x3xf64>) {
      %v201 = linalg.matmul ins(%g188, %scan183#2 : tensor<3x?xf64>, tensor<?x3xf64>) outs(%fill197 : tensor<3x3xf64>) -> tensor<3x3xf64>
      scf.yield %v201 : tensor<3x3xf64>
  } else {
    scf.yield %fill197 : tensor<3x3xf64>
  }
  return %dot200 : tensor<3x3xf64>
}
func.func private @__mlir_scan_fail(i64, i64, i64, i64)
