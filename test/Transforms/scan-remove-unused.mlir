// RUN: scan-opt %s --scan-remove-unused | FileCheck %s
// RUN: scan-opt %s --scan-remove-unused --canonicalize | FileCheck %s --check-prefix=CANON

// scan-remove-unused (Theano's remove_constants_and_unused_inputs_scan).
// The public functions are also run by test/python/test_rewrites.py, with and
// without the pass, against the reference interpreter.

// A constant non-sequence is cloned into the body and dropped; so is the
// unused non-sequence %u. The used one (%w) stays.
// CHECK-LABEL: func.func @constant_nonsequence
// CHECK:         scan.scan steps(%{{.*}})
// CHECK-NEXT:      sitsot(%{{.*}} : f64)
// CHECK-NEXT:      nonsequences(%arg2 : f64) {
// CHECK-NEXT:    ^bb0(%[[H:.*]]: f64, %[[WW:.*]]: f64):
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2.500000e+00 : f64
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[H]], %[[TWO]]
// CHECK-NEXT:      arith.addf %[[M]], %[[WW]]
func.func @constant_nonsequence(%n: index, %h0: f64, %w: f64, %u: f64) -> tensor<?xf64> {
  %two = arith.constant 2.5 : f64
  %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%two, %w, %u : f64, f64, f64) {
  ^bb0(%h: f64, %c: f64, %ww: f64, %uu: f64):
    %m = arith.mulf %h, %c : f64
    %y = arith.addf %m, %ww : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A constant tensor non-sequence is inlined too.
// CHECK-LABEL: func.func @constant_tensor_nonsequence
// CHECK:         scan.scan steps(%dim)
// CHECK-NEXT:      sequences(%arg0 : tensor<?x3xf32>) {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<3xf32>):
// CHECK-NEXT:      arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
func.func @constant_tensor_nonsequence(%xs: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x3xf32>
  %k = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x3xf32>) nonsequences(%k : tensor<3xf32>) {
  ^bb0(%x: tensor<3xf32>, %kk: tensor<3xf32>):
    %y = arith.mulf %x, %kk : tensor<3xf32>
    scan.yield %y : tensor<3xf32>
  } -> (tensor<?x3xf32>)
  return %r : tensor<?x3xf32>
}

// A sequence nobody reads is dropped (%ys); so is the unused tap 1 of %xs,
// which does not move the read window (it is not the lowest tap).
// Both keep their run-time length checks, with their own numbers (sequence
// #0 needs n + 1 rows, #1 needs n), before the scan.
// CHECK-LABEL: func.func @unused_sequence_and_high_tap
// CHECK:         %[[LEN0:.*]] = tensor.dim %arg1
// CHECK:         %[[NEED0:.*]] = arith.addi %arg0, %c1
// CHECK:         %[[SHORT0:.*]] = arith.cmpi ult, %[[LEN0]], %[[NEED0]]
// CHECK:         scf.if
// CHECK:           func.call @__mlir_scan_fail(%c2_i64, %c0_i64,
// CHECK:         %[[LEN1:.*]] = tensor.dim %arg2
// CHECK:         %[[NEED1:.*]] = arith.addi %arg0, %c0
// CHECK:         arith.cmpi ult, %[[LEN1]], %[[NEED1]]
// CHECK:         scf.if
// CHECK:           func.call @__mlir_scan_fail(%c2_i64{{.*}}, %c1_i64,
// CHECK:         scan.scan steps(%{{.*}})
// CHECK-NEXT:      sequences(%arg1 : tensor<?xi32>)
// CHECK-NEXT:      sitsot(%arg3 : i32) {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %{{.*}}: i32):
func.func @unused_sequence_and_high_tap(%n: index, %xs: tensor<?xi32>, %ys: tensor<?xi32>, %s0: i32) -> tensor<?xi32> {
  %r = scan.scan steps(%n) sequences(%xs[0, 1] : tensor<?xi32>, %ys : tensor<?xi32>) sitsot(%s0 : i32) {
  ^bb0(%x0: i32, %x1: i32, %y: i32, %s: i32):
    %t = arith.addi %s, %x0 : i32
    scan.yield %t : i32
  } -> (tensor<?xi32>)
  return %r : tensor<?xi32>
}

// Dropping the lowest tap (-2) moves the window: tap k reads row t + k - lo,
// so the sequence is sliced from row 2 to keep taps 0 and 1 on the same rows.
// The original check (n + 3 rows) comes first.
// CHECK-LABEL: func.func @unused_lowest_tap
// CHECK:         arith.addi %arg0, %c3
// CHECK:         func.call @__mlir_scan_fail
// CHECK:         %[[LEN:.*]] = tensor.dim %arg1
// CHECK:         %[[REST:.*]] = arith.subi %[[LEN]], %c2
// CHECK:         %[[ROWS:.*]] = arith.maxsi %[[REST]], %c0
// CHECK:         %[[S:.*]] = tensor.extract_slice %arg1[2] [%[[ROWS]]] [1]
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%[[S]][0, 1] : tensor<?xf64>)
// CHECK-NEXT:    ^bb0(%{{.*}}: f64, %{{.*}}: f64):
func.func @unused_lowest_tap(%n: index, %xs: tensor<?xf64>) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sequences(%xs[-2, 0, 1] : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %y = arith.subf %c, %b : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// With go_backwards the sequence is read reversed: the rows dropped with the
// lowest tap are at the end of the sequence, so the slice starts at row 0.
// CHECK-LABEL: func.func @unused_lowest_tap_backwards
// CHECK:         %[[S:.*]] = tensor.extract_slice %arg1[0] [%{{.*}}] [1]
// CHECK:         scan.scan steps(%arg0) go_backwards
// CHECK-NEXT:      sequences(%[[S]][0, 2] : tensor<?xf64>)
func.func @unused_lowest_tap_backwards(%n: index, %xs: tensor<?xf64>) -> tensor<?xf64> {
  %r = scan.scan steps(%n) go_backwards sequences(%xs[-1, 0, 2] : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %y = arith.subf %c, %b : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A static sequence shrinks statically; taps [-3, -1] -> [-1]: lo goes from
// -3 to -1, two rows dropped.
// Static lengths: no run-time check is needed (the verifier checked them).
// CHECK-LABEL: func.func @unused_lowest_tap_static
// CHECK-NOT:     func.call
// CHECK:         %[[S:.*]] = tensor.extract_slice %arg0[2, 0] [8, 2] [1, 1] : tensor<10x2xf32> to tensor<8x2xf32>
// CHECK:         scan.scan steps(%{{.*}})
// CHECK-NEXT:      sequences(%[[S]][-1] : tensor<8x2xf32>)
func.func @unused_lowest_tap_static(%xs: tensor<10x2xf32>) -> tensor<7x2xf32> {
  %c7 = arith.constant 7 : index
  %r = scan.scan steps(%c7) sequences(%xs[-3, -1] : tensor<10x2xf32>) {
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    %y = arith.addf %b, %b : tensor<2xf32>
    scan.yield %y : tensor<2xf32>
  } -> (tensor<7x2xf32>)
  return %r : tensor<7x2xf32>
}

// Mitsot taps: the unused lowest tap -3 drops the init's first two rows.
// CHECK-LABEL: func.func @unused_lowest_mitsot_tap
// CHECK:         %[[I:.*]] = tensor.extract_slice %arg1[2] [1] [1] : tensor<3xi64> to tensor<1xi64>
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      mitsot(%[[I]][-1] : tensor<1xi64>)
// CHECK-NEXT:    ^bb0(%{{.*}}: i64):
func.func @unused_lowest_mitsot_tap(%n: index, %init: tensor<3xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) mitsot(%init[-3, -1] : tensor<3xi64>) {
  ^bb0(%a: i64, %b: i64):
    %c3 = arith.constant 3 : i64
    %y = arith.muli %b, %c3 : i64
    scan.yield %y : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}

// The unused highest mitsot tap goes without touching the init.
// CHECK-LABEL: func.func @unused_highest_mitsot_tap
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      mitsot(%arg1[-2] : tensor<2xi64>)
func.func @unused_highest_mitsot_tap(%n: index, %init: tensor<2xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) mitsot(%init[-2, -1] : tensor<2xi64>) {
  ^bb0(%a: i64, %b: i64):
    %c1 = arith.constant 1 : i64
    %y = arith.addi %a, %c1 : i64
    scan.yield %y : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}

// Unused outputs: the nitsot %sq, and the sitsot %acc whose value only feeds
// itself; the kept nitsot's inputs stay. After canonicalize the body is just
// the kept row.
// CHECK-LABEL: func.func @unused_outputs
// CHECK:         %[[R:.*]] = scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?xf64>) {
// CHECK-NEXT:    ^bb0(%{{.*}}: f64):
// CHECK:         } -> (tensor<?xf64>)
// CHECK:         return %[[R]]
// CANON-LABEL: func.func @unused_outputs
// CANON:         scan.scan
// CANON-NEXT:      sequences(%arg1 : tensor<?xf64>) {
// CANON-NEXT:    ^bb0(%[[X:.*]]: f64):
// CANON-NEXT:      %[[N:.*]] = arith.negf %[[X]]
// CANON-NEXT:      scan.yield %[[N]] : f64
func.func @unused_outputs(%n: index, %xs: tensor<?xf64>, %a0: f64) -> tensor<?xf64> {
  %acc, %neg, %sq = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%a0 : f64) {
  ^bb0(%x: f64, %a: f64):
    %s = arith.addf %a, %x : f64
    %m = arith.negf %x : f64
    %q = arith.mulf %x, %x : f64
    scan.yield %s, %m, %q : f64, f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>)
  return %neg : tensor<?xf64>
}

// A chain: the mitsot %fib is only read by the unused nitsot; both go, and
// then the sequence that only they read.
// CHECK-LABEL: func.func @unused_chain
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg3 : i32) {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32):
func.func @unused_chain(%n: index, %xs: tensor<?xi32>, %init: tensor<2xi32>, %c0: i32) -> tensor<?xi32> {
  %fib, %cnt, %dead = scan.scan steps(%n) sequences(%xs : tensor<?xi32>) mitsot(%init[-2, -1] : tensor<2xi32>) sitsot(%c0 : i32) {
  ^bb0(%x: i32, %a: i32, %b: i32, %c: i32):
    %f = arith.addi %a, %b : i32
    %one = arith.constant 1 : i32
    %c1 = arith.addi %c, %one : i32
    %d = arith.addi %f, %x : i32
    scan.yield %f, %c1, %d : i32, i32, i32
  } -> (tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
  return %cnt : tensor<?xi32>
}

// NEGATIVE: a state whose result is unused but whose values a kept output
// needs stays (%h feeds %y).
// CHECK-LABEL: func.func @state_needed_by_kept_output
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : f64)
// CHECK:         } -> (tensor<?xf64>, tensor<?xf64>)
func.func @state_needed_by_kept_output(%n: index, %h0: f64) -> tensor<?xf64> {
  %h, %y = scan.scan steps(%n) sitsot(%h0 : f64) {
  ^bb0(%hp: f64):
    %half = arith.constant 0.5 : f64
    %hn = arith.mulf %hp, %half : f64
    %yy = arith.addf %hp, %half : f64
    scan.yield %hn, %yy : f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>)
  return %y : tensor<?xf64>
}

// NEGATIVE: the until condition reads the state, so neither it nor the
// sequence it reads go, although no result is used but the counter.
// CHECK-LABEL: func.func @state_needed_by_until
// CHECK:         scan.scan steps(%arg0) until
// CHECK-NEXT:      sequences(%arg1 : tensor<?xf64>)
// CHECK-NEXT:      sitsot(%arg2 : f64, %arg3 : i64)
// CHECK:         } -> (tensor<?xf64>, tensor<?xi64>)
func.func @state_needed_by_until(%n: index, %xs: tensor<?xf64>, %s0: f64, %c0: i64) -> tensor<?xi64> {
  %s, %c = scan.scan steps(%n) until sequences(%xs : tensor<?xf64>) sitsot(%s0, %c0 : f64, i64) {
  ^bb0(%x: f64, %sp: f64, %cp: i64):
    %sn = arith.addf %sp, %x : f64
    %one = arith.constant 1 : i64
    %cn = arith.addi %cp, %one : i64
    %lim = arith.constant 4.0 : f64
    %stop = arith.cmpf ogt, %sn, %lim : f64
    scan.yield %sn, %cn, %stop : f64, i64, i1
  } -> (tensor<?xf64>, tensor<?xi64>)
  return %c : tensor<?xi64>
}

// NEGATIVE: a mitmot is never changed, even with an unused in tap.
// CHECK-LABEL: func.func @mitmot_untouched
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      mitmot(%arg2[-1, 0] -> [0] : tensor<?xf64>)
// CHECK-NEXT:      nonsequences(%arg3 : f64) {
// CHECK-NEXT:    ^bb0(%{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
func.func @mitmot_untouched(%n: index, %xs: tensor<?xf64>, %buf: tensor<?xf64>, %w: f64) -> tensor<?xf64> {
  %g = scan.scan steps(%n) mitmot(%buf[-1, 0] -> [0] : tensor<?xf64>) nonsequences(%w : f64) {
  ^bb0(%prev: f64, %cur: f64, %ww: f64):
    %y = arith.mulf %cur, %ww : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %g : tensor<?xf64>
}

// NEGATIVE: with keep, the init rows are part of the kept rows: the unused
// lowest tap (which fixes the number of init rows) stays.
// CHECK-LABEL: func.func @keep_mitsot_lowest_tap
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      mitsot(%arg1[-3, -1] : tensor<3xf64>) keep [4]
func.func @keep_mitsot_lowest_tap(%n: index, %init: tensor<3xf64>) -> tensor<4xf64> {
  %r = scan.scan steps(%n) mitsot(%init[-3, -1] : tensor<3xf64>) keep [4] {
  ^bb0(%a: f64, %b: f64):
    %c = arith.constant 1.0 : f64
    %y = arith.addf %b, %c : f64
    scan.yield %y : f64
  } -> (tensor<4xf64>)
  return %r : tensor<4xf64>
}

// NEGATIVE: an op with side effects reads the state: the state stays
// although its result is unused (regression: it was dropped and the store
// wrote ub.poison).
// CHECK-LABEL: func.func private @state_read_by_side_effect
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : f64)
// CHECK-NEXT:      nonsequences(%arg2 : memref<f64>)
// CHECK-NEXT:    ^bb0(%[[H:.*]]: f64, %[[M:.*]]: memref<f64>):
// CHECK-NEXT:      memref.store %[[H]], %[[M]][]
// CHECK-NOT:     ub.poison
func.func private @state_read_by_side_effect(%n: index, %h0: f64, %m: memref<f64>) {
  %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%m : memref<f64>) {
  ^bb0(%h: f64, %mm: memref<f64>):
    memref.store %h, %mm[] : memref<f64>
    %one = arith.constant 1.0 : f64
    %y = arith.addf %h, %one : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return
}

// NEGATIVE: nothing unused, nothing constant: the scan is left alone.
// CHECK-LABEL: func.func @nothing_to_do
// CHECK-NOT:     func.call
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1[-1, 0] : tensor<?xf64>)
// CHECK-NEXT:      sitsot(%arg2 : f64)
// CHECK-NEXT:      nonsequences(%arg3 : f64)
func.func @nothing_to_do(%n: index, %xs: tensor<?xf64>, %s0: f64, %w: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sequences(%xs[-1, 0] : tensor<?xf64>) sitsot(%s0 : f64) nonsequences(%w : f64) {
  ^bb0(%a: f64, %b: f64, %s: f64, %ww: f64):
    %d = arith.subf %b, %a : f64
    %m = arith.mulf %d, %ww : f64
    %y = arith.addf %s, %m : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A constant non-sequence yielded as it is (a nitsot of constant rows): the
// yield takes the inlined constant (regression: the pass kept yielding the
// dropped block argument, which became ub.poison).
// CHECK-LABEL: func.func @constant_yielded
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : i64) {
// CHECK-NEXT:    ^bb0(%[[S:.*]]: i64):
// CHECK-NEXT:      %[[C:.*]] = arith.constant 7 : i64
// CHECK-NOT:       ub.poison
// CHECK:           scan.yield %{{.*}}, %[[C]] : i64, i64
func.func @constant_yielded(%n: index, %s0: i64) -> (tensor<?xi64>, tensor<?xi64>) {
  %c7 = arith.constant 7 : i64
  %s, %k = scan.scan steps(%n) sitsot(%s0 : i64) nonsequences(%c7 : i64) {
  ^bb0(%sp: i64, %c: i64):
    %t = arith.addi %sp, %c : i64
    scan.yield %t, %c : i64, i64
  } -> (tensor<?xi64>, tensor<?xi64>)
  return %s, %k : tensor<?xi64>, tensor<?xi64>
}

// Dropping the unused lowest tap of values whose rows hold no element (a
// static size 0): the shortened init and sequence are tensor.empty ops, not
// slices, which MLIR's verifier rejects for such types.
// CHECK-LABEL: func.func @empty_rows_lowest_taps
// CHECK-NOT:     tensor.extract_slice
// CHECK:         tensor.empty(%{{.*}}) : tensor<?x0xf32>
// CHECK-NOT:     tensor.extract_slice
// CHECK:         tensor.empty() : tensor<1x3x0xf32>
// CHECK:         scan.scan steps
// CHECK-NEXT:      sequences(%{{.*}} : tensor<?x0xf32>)
// CHECK-NEXT:      mitsot(%{{.*}}[-1] : tensor<1x3x0xf32>)
func.func @empty_rows_lowest_taps(%xs: tensor<?x0xf32>, %m0: tensor<2x3x0xf32>) -> (tensor<?x3x0xf32>, tensor<?x0xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %len = tensor.dim %xs, %c0 : tensor<?x0xf32>
  %n = arith.subi %len, %c1 : index
  %r:2 = scan.scan steps(%n) sequences(%xs[-1, 0] : tensor<?x0xf32>) mitsot(%m0[-2, -1] : tensor<2x3x0xf32>) {
  ^bb0(%xp: tensor<0xf32>, %x: tensor<0xf32>, %a: tensor<3x0xf32>, %b: tensor<3x0xf32>):
    scan.yield %b, %x : tensor<3x0xf32>, tensor<0xf32>
  } -> (tensor<?x3x0xf32>, tensor<?x0xf32>)
  return %r#0, %r#1 : tensor<?x3x0xf32>, tensor<?x0xf32>
}
