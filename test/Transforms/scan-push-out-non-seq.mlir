// RUN: scan-opt %s --scan-push-out-non-seq | FileCheck %s

// scan-push-out-non-seq (Theano's PushOutNonSeqScan): pure, speculatable body
// work that only reads non-sequences (and constants) is computed once before
// the scan and passed in as a new non-sequence. The public functions are also
// run by test/python/test_rewrites.py, with and without the pass.

// The doc example: w * b is the same in every step.
// CHECK-LABEL: func.func @scalar_invariant
// CHECK:         %[[WB:.*]] = arith.mulf %arg2, %arg3 : f64
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : f64)
// CHECK-NEXT:      nonsequences(%arg2 : f64, %arg3 : f64, %[[WB]] : f64) {
// CHECK-NEXT:    ^bb0(%[[H:.*]]: f64, %{{.*}}: f64, %{{.*}}: f64, %[[X:.*]]: f64):
// CHECK-NEXT:      %[[Y:.*]] = arith.addf %[[H]], %[[X]] : f64
// CHECK-NEXT:      scan.yield %[[Y]] : f64
func.func @scalar_invariant(%n: index, %h0: f64, %w: f64, %b: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%w, %b : f64, f64) {
  ^bb0(%h: f64, %ww: f64, %bb: f64):
    %wb = arith.mulf %ww, %bb : f64
    %y = arith.addf %h, %wb : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A chain with a constant: exp(w) * 2 - w; the constant is cloned out with
// the chain, only the last value (used by the step) becomes a non-sequence.
// CHECK-LABEL: func.func @invariant_chain
// CHECK:         %[[E:.*]] = math.exp %arg2 : f32
// CHECK:         %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:         %[[M:.*]] = arith.mulf %[[E]], %[[TWO]] : f32
// CHECK:         %[[S:.*]] = arith.subf %[[M]], %arg2 : f32
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?xf32>)
// CHECK-NEXT:      nonsequences(%arg2 : f32, %[[S]] : f32) {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %{{.*}}: f32, %[[C:.*]]: f32):
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[X]], %[[C]] : f32
// CHECK-NEXT:      scan.yield %[[Y]] : f32
func.func @invariant_chain(%n: index, %xs: tensor<?xf32>, %w: f32) -> tensor<?xf32> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xf32>) nonsequences(%w : f32) {
  ^bb0(%x: f32, %ww: f32):
    %e = math.exp %ww : f32
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %e, %two : f32
    %s = arith.subf %m, %ww : f32
    %y = arith.mulf %x, %s : f32
    scan.yield %y : f32
  } -> (tensor<?xf32>)
  return %r : tensor<?xf32>
}

// Tensor work: the transpose of W and W^T·v (a linalg.matvec whose
// destination is a fill of a constant) are loop-invariant. Both move out;
// the transposed W, still read by the step's vecmat, and W^T·v become
// non-sequences, W itself is no longer read in the body.
// CHECK-LABEL: func.func @tensor_invariant
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x4xf64>
// CHECK:         %[[WT:.*]] = linalg.transpose ins(%arg2 : tensor<4x4xf64>) outs(%[[E]] : tensor<4x4xf64>) permutation = [1, 0]
// CHECK:         %[[F:.*]] = linalg.fill
// CHECK:         %[[WV:.*]] = linalg.matvec ins(%[[WT]], %arg3 : tensor<4x4xf64>, tensor<4xf64>) outs(%[[F]] : tensor<4xf64>)
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : tensor<4xf64>)
// CHECK-NEXT:      nonsequences(%arg2 : tensor<4x4xf64>, %arg3 : tensor<4xf64>, %[[WT]] : tensor<4x4xf64>, %[[WV]] : tensor<4xf64>) {
// CHECK:           linalg.vecmat
// CHECK-NOT:       linalg.transpose
// CHECK-NOT:       linalg.matvec
// CHECK:           scan.yield
func.func @tensor_invariant(%n: index, %h0: tensor<4xf64>, %W: tensor<4x4xf64>, %v: tensor<4xf64>) -> tensor<?x4xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<4xf64>) nonsequences(%W, %v : tensor<4x4xf64>, tensor<4xf64>) {
  ^bb0(%h: tensor<4xf64>, %w: tensor<4x4xf64>, %vv: tensor<4xf64>):
    %e = tensor.empty() : tensor<4x4xf64>
    %wt = linalg.transpose ins(%w : tensor<4x4xf64>) outs(%e : tensor<4x4xf64>) permutation = [1, 0]
    %zero = arith.constant 0.0 : f64
    %e1 = tensor.empty() : tensor<4xf64>
    %f = linalg.fill ins(%zero : f64) outs(%e1 : tensor<4xf64>) -> tensor<4xf64>
    %wv = linalg.matvec ins(%wt, %vv : tensor<4x4xf64>, tensor<4xf64>) outs(%f : tensor<4xf64>) -> tensor<4xf64>
    %e2 = tensor.empty() : tensor<4xf64>
    %f2 = linalg.fill ins(%zero : f64) outs(%e2 : tensor<4xf64>) -> tensor<4xf64>
    %hw = linalg.vecmat ins(%h, %wt : tensor<4xf64>, tensor<4x4xf64>) outs(%f2 : tensor<4xf64>) -> tensor<4xf64>
    %s = arith.addf %hw, %wv : tensor<4xf64>
    %t = math.tanh %s : tensor<4xf64>
    scan.yield %t : tensor<4xf64>
  } -> (tensor<?x4xf64>)
  return %r : tensor<?x4xf64>
}

// Every kind around the invariant: a sequence with taps, a mitsot, a sitsot,
// a nitsot, go_backwards and until. Only c * c moves.
// CHECK-LABEL: func.func @all_kinds
// CHECK:         %[[CC:.*]] = arith.muli %arg4, %arg4 : i64
// CHECK:         scan.scan steps(%arg0) go_backwards until
// CHECK-NEXT:      sequences(%arg1[-1, 1] : tensor<?xi64>)
// CHECK-NEXT:      mitsot(%arg2[-2, -1] : tensor<2xi64>)
// CHECK-NEXT:      sitsot(%arg3 : i64)
// CHECK-NEXT:      nonsequences(%arg4 : i64, %[[CC]] : i64) {
// CHECK-NOT:       arith.muli %{{.*}}, %{{.*}} : i64
// CHECK:           scan.yield
func.func @all_kinds(%n: index, %xs: tensor<?xi64>, %init: tensor<2xi64>, %s0: i64, %c: i64) -> (tensor<?xi64>, tensor<?xi64>, tensor<?xi64>) {
  %m, %s, %y = scan.scan steps(%n) go_backwards until sequences(%xs[-1, 1] : tensor<?xi64>) mitsot(%init[-2, -1] : tensor<2xi64>) sitsot(%s0 : i64) nonsequences(%c : i64) {
  ^bb0(%xa: i64, %xb: i64, %m2: i64, %m1: i64, %sp: i64, %cc: i64):
    %sq = arith.muli %cc, %cc : i64
    %a = arith.addi %m2, %m1 : i64
    %mn = arith.addi %a, %xa : i64
    %sn = arith.addi %sp, %sq : i64
    %yn = arith.subi %xb, %cc : i64
    %lim = arith.constant 1000 : i64
    %stop = arith.cmpi sgt, %mn, %lim : i64
    scan.yield %mn, %sn, %yn, %stop : i64, i64, i64, i1
  } -> (tensor<?xi64>, tensor<?xi64>, tensor<?xi64>)
  return %m, %s, %y : tensor<?xi64>, tensor<?xi64>, tensor<?xi64>
}

// NEGATIVE: ops reading a state, a sequence or a mitmot row stay in the
// body; so does an op that only reads constants (cheaper where it is).
// (The now unused non-sequences are left to scan-remove-unused.)
// CHECK-LABEL: func.func @variant_ops_stay
// CHECK-NOT:     arith.
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?xf64>)
// CHECK-NEXT:      mitmot(%arg2[0] -> [0] : tensor<?xf64>)
// CHECK-NEXT:      sitsot(%arg3 : f64)
// CHECK-NEXT:      nonsequences(%arg4 : f64) {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f64, %[[G:.*]]: f64, %[[H:.*]]: f64, %[[W:.*]]: f64):
// CHECK-NEXT:      arith.constant 1.000000e+00
// CHECK-NEXT:      arith.constant 3.000000e+00
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      arith.mulf %[[H]], %[[W]]
// CHECK-NEXT:      arith.mulf %[[X]], %[[W]]
// CHECK-NEXT:      arith.addf %[[G]], %[[W]]
func.func @variant_ops_stay(%n: index, %xs: tensor<?xf64>, %buf: tensor<?xf64>, %h0: f64, %w: f64) -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) {
  %g, %h, %y = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) mitmot(%buf[0] -> [0] : tensor<?xf64>) sitsot(%h0 : f64) nonsequences(%w : f64) {
  ^bb0(%x: f64, %gg: f64, %hp: f64, %ww: f64):
    %one = arith.constant 1.0 : f64
    %three = arith.constant 3.0 : f64
    %four = arith.addf %one, %three : f64
    %hn = arith.mulf %hp, %ww : f64
    %yn = arith.mulf %x, %ww : f64
    %gn = arith.addf %gg, %ww : f64
    %yy = arith.addf %yn, %four : f64
    scan.yield %gn, %hn, %yy : f64, f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>)
  return %g, %h, %y : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>
}

// NEGATIVE: not speculatable. A division by a non-sequence may trap; hoisted,
// it would run even when the scan runs zero steps.
// CHECK-LABEL: func.func @division_stays
// CHECK-NOT:     arith.divsi
// CHECK:         scan.scan
// CHECK:           arith.divsi
func.func @division_stays(%n: index, %h0: i32, %a: i32, %b: i32) -> tensor<?xi32> {
  %r = scan.scan steps(%n) sitsot(%h0 : i32) nonsequences(%a, %b : i32, i32) {
  ^bb0(%h: i32, %aa: i32, %bb: i32):
    %q = arith.divsi %aa, %bb : i32
    %y = arith.addi %h, %q : i32
    scan.yield %y : i32
  } -> (tensor<?xi32>)
  return %r : tensor<?xi32>
}

// NEGATIVE: side effects. A load from a non-sequence memref reads memory
// another step may write; it stays.
// CHECK-LABEL: func.func private @load_stays
// CHECK-NOT:     memref.load
// CHECK:         scan.scan
// CHECK:           memref.load
// CHECK:           memref.store
func.func private @load_stays(%n: index, %h0: f32, %m: memref<f32>) -> tensor<?xf32> {
  %r = scan.scan steps(%n) sitsot(%h0 : f32) nonsequences(%m : memref<f32>) {
  ^bb0(%h: f32, %mm: memref<f32>):
    %v = memref.load %mm[] : memref<f32>
    %y = arith.addf %h, %v : f32
    memref.store %y, %mm[] : memref<f32>
    scan.yield %y : f32
  } -> (tensor<?xf32>)
  return %r : tensor<?xf32>
}

// NEGATIVE: a value used as the destination (outs) of a linalg op is
// overwritten in every step: the fill of the bias %b stays in the body
// although it only reads a non-sequence.
// CHECK-LABEL: func.func @destination_stays
// CHECK-NOT:     linalg.fill
// CHECK:         scan.scan
// CHECK:           %[[F:.*]] = linalg.fill ins(%{{.*}} : f32)
// CHECK:           linalg.vecmat ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3x3xf32>) outs(%[[F]] : tensor<3xf32>)
func.func @destination_stays(%n: index, %h0: tensor<3xf32>, %W: tensor<3x3xf32>, %b: f32) -> tensor<?x3xf32> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<3xf32>) nonsequences(%W, %b : tensor<3x3xf32>, f32) {
  ^bb0(%h: tensor<3xf32>, %w: tensor<3x3xf32>, %bb: f32):
    %e = tensor.empty() : tensor<3xf32>
    %f = linalg.fill ins(%bb : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
    %hw = linalg.vecmat ins(%h, %w : tensor<3xf32>, tensor<3x3xf32>) outs(%f : tensor<3xf32>) -> tensor<3xf32>
    %t = math.tanh %hw : tensor<3xf32>
    scan.yield %t : tensor<3xf32>
  } -> (tensor<?x3xf32>)
  return %r : tensor<?x3xf32>
}

// A pure op with regions (scf.if reading non-sequences only) moves too.
// CHECK-LABEL: func.func @invariant_region_op
// CHECK:         %[[V:.*]] = scf.if %arg2 -> (f64) {
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : f64)
// CHECK-NEXT:      nonsequences(%arg2 : i1, %arg3 : f64, %arg4 : f64, %[[V]] : f64) {
// CHECK-NOT:       scf.if
// CHECK:           scan.yield
func.func @invariant_region_op(%n: index, %h0: f64, %c: i1, %a: f64, %b: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%c, %a, %b : i1, f64, f64) {
  ^bb0(%h: f64, %cc: i1, %aa: f64, %bb: f64):
    %v = scf.if %cc -> f64 {
      %s = arith.addf %aa, %bb : f64
      scf.yield %s : f64
    } else {
      scf.yield %aa : f64
    }
    %y = arith.addf %h, %v : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// NEGATIVE: a pure op without results (an empty scf.if) is not an invariant
// value to pass in (regression: the pass aborted on it, reading result #0).
// CHECK-LABEL: func.func @result_less_pure_op
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : f64)
// CHECK-NEXT:      nonsequences(%arg2 : i1) {
// CHECK-NEXT:    ^bb0(%{{.*}}: f64, %[[C:.*]]: i1):
// CHECK-NEXT:      scf.if %[[C]] {
func.func @result_less_pure_op(%n: index, %h0: f64, %c: i1) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%c : i1) {
  ^bb0(%h: f64, %cc: i1):
    scf.if %cc {
    }
    %one = arith.constant 1.0 : f64
    %y = arith.addf %h, %one : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A hoisted value whose only user in the body is dead: nothing replaces it
// (regression: rebuild erased the dead user and the hoisted op with it, then
// the pass replaced the erased value: segfault).
// CHECK-LABEL: func.func @dead_user
// CHECK:         arith.mulf %arg2, %arg2
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : f64)
// CHECK-NEXT:      nonsequences(%arg2 : f64) {
// CHECK-NEXT:    ^bb0(%[[H:.*]]: f64, %[[W:.*]]: f64):
// CHECK-NEXT:      %[[Y:.*]] = arith.addf %[[H]], %[[W]] : f64
// CHECK-NEXT:      scan.yield %[[Y]] : f64
func.func @dead_user(%n: index, %h0: f64, %w: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%w : f64) {
  ^bb0(%h: f64, %ww: f64):
    %sq = arith.mulf %ww, %ww : f64
    %dead = arith.addf %sq, %h : f64
    %y = arith.addf %h, %ww : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// -----------------------------------------------------------------------------
// Run-time checks (scan.check) and the sizes of rows.
// -----------------------------------------------------------------------------

// The sizes of a row are the same in every step: tensor.dim of a sequence
// row, a sitsot state and a mitsot tap become non-sequences (dimensions of
// the outer values), and the check of the state's size against w's, whose
// operands are now invariant, runs once before the scan, when a step runs.
// The elementwise op after the check may rely on it: it stays in the loop
// (it reads the state anyway).
// CHECK-LABEL: func.func @invariant_check
// CHECK-DAG:     %[[XD:.*]] = tensor.dim %arg1, %c1{{.*}} : tensor<?x?xf64>
// CHECK-DAG:     %[[HD:.*]] = tensor.dim %arg2, %c0{{.*}} : tensor<?xf64>
// CHECK-DAG:     %[[WD:.*]] = tensor.dim %arg3, %c0{{.*}} : tensor<?xf64>
// CHECK-DAG:     %[[RUNS:.*]] = arith.cmpi sgt, %arg0, %{{.*}} : index
// CHECK-DAG:     %[[BAD:.*]] = arith.cmpi ne, %[[HD]], %[[WD]] : index
// CHECK:         %[[FAILS:.*]] = arith.andi %[[RUNS]], %[[BAD]] : i1
// CHECK:         scan.check %[[FAILS]] code 100 id 0 (%[[HD]], %[[WD]] : index, index)
// CHECK:         %[[BAD2:.*]] = arith.cmpi ne, %[[XD]], %[[WD]] : index
// CHECK:         %[[FAILS2:.*]] = arith.andi %[[RUNS]], %[[BAD2]] : i1
// CHECK:         scan.check %[[FAILS2]] code 100 id 1 (%[[XD]], %[[WD]] : index, index)
// CHECK:         scan.scan steps(%arg0)
// CHECK-NOT:     scan.check
// CHECK-NOT:     tensor.dim
// CHECK:         arith.mulf
// CHECK:         scan.yield
func.func @invariant_check(%n: index, %xs: tensor<?x?xf64>, %h0: tensor<?xf64>, %w: tensor<?xf64>) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%h0 : tensor<?xf64>) nonsequences(%w : tensor<?xf64>) {
  ^bb0(%x: tensor<?xf64>, %h: tensor<?xf64>, %ww: tensor<?xf64>):
    %c0 = arith.constant 0 : index
    %kh = tensor.dim %h, %c0 : tensor<?xf64>
    %kw = tensor.dim %ww, %c0 : tensor<?xf64>
    %bad = arith.cmpi ne, %kh, %kw : index
    scan.check %bad code 100 id 0 (%kh, %kw : index, index)
    %kx = tensor.dim %x, %c0 : tensor<?xf64>
    %bad2 = arith.cmpi ne, %kx, %kw : index
    scan.check %bad2 code 100 id 1 (%kx, %kw : index, index)
    %y = arith.mulf %h, %ww : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// A check that depends on the step (a state's value) stays in the loop,
// and so does every check after it (hoisting those would change which
// error a call reports), but pure work that does not rely on a check
// still leaves: w * 2 is a scalar, defined for any w.
// CHECK-LABEL: func.func @variant_check_stays
// CHECK:         %[[W2:.*]] = arith.mulf %arg2, %{{.*}} : f64
// CHECK:         scan.scan steps(%arg0)
// CHECK:           scan.check %{{.*}} code 100 id 0
// CHECK:           scan.check %{{.*}} code 100 id 1
// CHECK:           arith.addf %{{.*}}, %{{.*}} : f64
func.func @variant_check_stays(%n: index, %h0: f64, %w: f64, %k: index) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%w, %k : f64, index) {
  ^bb0(%h: f64, %ww: f64, %kk: index):
    %big = arith.constant 1.0e6 : f64
    %bad = arith.cmpf ogt, %h, %big : f64
    %c0 = arith.constant 0 : index
    scan.check %bad code 100 id 0 (%c0, %c0 : index, index)
    %neg = arith.cmpi slt, %kk, %c0 : index
    scan.check %neg code 100 id 1 (%kk, %c0 : index, index)
    %two = arith.constant 2.0 : f64
    %w2 = arith.mulf %ww, %two : f64
    %y = arith.addf %h, %w2 : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// An invariant contraction after a check it relies on (the sizes of a and
// v must agree) is hoisted with the check, under the same guard: when no
// step runs, neither does the check nor the matvec.
// CHECK-LABEL: func.func @guarded_contraction
// CHECK:         %[[RUNS:.*]] = arith.cmpi sgt, %arg0, %{{.*}} : index
// CHECK:         scan.check
// CHECK:         %[[MV:.*]] = scf.if %[[RUNS]] -> (tensor<?xf64>) {
// CHECK-NEXT:      %[[R:.*]] = linalg.matvec
// CHECK-NEXT:      scf.yield %[[R]] : tensor<?xf64>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %{{.*}} : tensor<?xf64>
// CHECK:         scan.scan steps(%arg0)
// CHECK:           nonsequences({{.*}}%[[MV]] : tensor<?xf64>
// CHECK-NOT:       linalg.matvec
// CHECK:           scan.yield
func.func @guarded_contraction(%n: index, %h0: tensor<?xf64>, %a: tensor<?x?xf64>, %v: tensor<?xf64>) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<?xf64>) nonsequences(%a, %v : tensor<?x?xf64>, tensor<?xf64>) {
  ^bb0(%h: tensor<?xf64>, %aa: tensor<?x?xf64>, %vv: tensor<?xf64>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ka = tensor.dim %aa, %c1 : tensor<?x?xf64>
    %kv = tensor.dim %vv, %c0 : tensor<?xf64>
    %bad = arith.cmpi ne, %ka, %kv : index
    scan.check %bad code 100 id 0 (%ka, %kv : index, index)
    %m = tensor.dim %aa, %c0 : tensor<?x?xf64>
    %zero = arith.constant 0.0 : f64
    %e = tensor.empty(%m) : tensor<?xf64>
    %f = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
    %mv = linalg.matvec ins(%aa, %vv : tensor<?x?xf64>, tensor<?xf64>) outs(%f : tensor<?xf64>) -> tensor<?xf64>
    %y = arith.addf %h, %mv : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// The same contraction behind a check that stays in the loop stays too.
// CHECK-LABEL: func.func @contraction_behind_variant_check
// CHECK:         scan.scan steps(%arg0)
// CHECK:           scan.check
// CHECK:           linalg.matvec
func.func @contraction_behind_variant_check(%n: index, %h0: tensor<?xf64>, %a: tensor<?x?xf64>, %v: tensor<?xf64>) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<?xf64>) nonsequences(%a, %v : tensor<?x?xf64>, tensor<?xf64>) {
  ^bb0(%h: tensor<?xf64>, %aa: tensor<?x?xf64>, %vv: tensor<?xf64>):
    %c0 = arith.constant 0 : index
    %first = tensor.extract %h[%c0] : tensor<?xf64>
    %big = arith.constant 1.0e6 : f64
    %huge = arith.cmpf ogt, %first, %big : f64
    scan.check %huge code 100 id 0 (%c0, %c0 : index, index)
    %m = tensor.dim %aa, %c0 : tensor<?x?xf64>
    %zero = arith.constant 0.0 : f64
    %e = tensor.empty(%m) : tensor<?xf64>
    %f = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
    %mv = linalg.matvec ins(%aa, %vv : tensor<?x?xf64>, tensor<?xf64>) outs(%f : tensor<?xf64>) -> tensor<?xf64>
    %y = arith.addf %h, %mv : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// A view after a check that bounds its index (`w[0]` of a matrix that may
// have no row) is hoisted under the guard too; the other branch yields an
// empty tensor of the view's sizes, which no step reads.
// CHECK-LABEL: func.func @guarded_view
// CHECK:         %[[RUNS:.*]] = arith.cmpi sgt, %arg0, %{{.*}} : index
// CHECK:         scan.check
// CHECK:         %[[COLS:.*]] = tensor.dim %arg2, %c1
// CHECK:         %[[ROW:.*]] = scf.if %[[RUNS]] -> (tensor<?xf64>) {
// CHECK-NEXT:      %[[S:.*]] = tensor.extract_slice %arg2[0, 0] [1, %[[COLS]]] [1, 1]
// CHECK-NEXT:      scf.yield %[[S]] : tensor<?xf64>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[E:.*]] = tensor.empty(%[[COLS]]) : tensor<?xf64>
// CHECK-NEXT:      scf.yield %[[E]] : tensor<?xf64>
// CHECK:         scan.scan steps(%arg0)
// CHECK:           nonsequences({{.*}}%[[ROW]] : tensor<?xf64>
// CHECK-NOT:       tensor.extract_slice
// CHECK:           scan.yield
func.func @guarded_view(%n: index, %h0: tensor<?xf64>, %w: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<?xf64>) nonsequences(%w : tensor<?x?xf64>) {
  ^bb0(%h: tensor<?xf64>, %ww: tensor<?x?xf64>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = tensor.dim %ww, %c0 : tensor<?x?xf64>
    %empty = arith.cmpi sle, %rows, %c0 : index
    scan.check %empty code 101 id 0 (%c0, %rows : index, index)
    %cols = tensor.dim %ww, %c1 : tensor<?x?xf64>
    %row = tensor.extract_slice %ww[0, 0] [1, %cols] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
    %y = arith.addf %h, %row : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// A check an earlier run hoisted (guarded by this loop's n_steps > 0) still
// guards the ops after it: the view it bounds, now invariant, is hoisted
// under the same guard, not unconditionally (which failed a call that runs
// no step).
// CHECK-LABEL: func.func @check_hoisted_earlier
// CHECK:         scan.check
// CHECK:         %[[ROW:.*]] = scf.if %{{.*}} -> (tensor<?xf64>) {
// CHECK-NEXT:      tensor.extract_slice
// CHECK:         } else {
// CHECK-NEXT:      tensor.empty
// CHECK:         scan.scan steps(%arg0)
// CHECK:           nonsequences({{.*}}%[[ROW]] : tensor<?xf64>
func.func @check_hoisted_earlier(%n: index, %h0: tensor<?xf64>, %w: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %w, %c0 : tensor<?x?xf64>
  %empty = arith.cmpi sle, %rows, %c0 : index
  %runs = arith.cmpi sgt, %n, %c0 : index
  %fails = arith.andi %runs, %empty : i1
  scan.check %fails code 101 id 0 (%c0, %rows : index, index)
  %cols = tensor.dim %w, %c1 : tensor<?x?xf64>
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<?xf64>) nonsequences(%w, %cols : tensor<?x?xf64>, index) {
  ^bb0(%h: tensor<?xf64>, %ww: tensor<?x?xf64>, %k: index):
    %row = tensor.extract_slice %ww[0, 0] [1, %k] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
    %y = arith.addf %h, %row : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}
