// RUN: scan-opt %s --scan-merge-inouts | FileCheck %s

// scan-merge-inouts (Theano's scan_merge_inouts): identical inputs share one
// block argument (then the body is CSE'd), outputs yielding the same value
// (states: also from the same init and taps) share one result. The public
// functions are also run by test/python/test_rewrites.py.

// After scan-merge: the same sequence twice and the same row computed twice.
// One sequence, one mulf, one result used twice. (Regression: CSE erased the
// second mulf while the pass still held it as a yield: segfault.)
// CHECK-LABEL: func.func @duplicate_sequence_and_nitsot
// CHECK:         %[[R:.*]] = scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?xf64>) {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f64):
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[X]], %[[X]] : f64
// CHECK-NEXT:      scan.yield %[[Y]] : f64
// CHECK-NEXT:    } -> (tensor<?xf64>)
// CHECK-NEXT:    return %[[R]], %[[R]]
func.func @duplicate_sequence_and_nitsot(%n: index, %xs: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %a, %b = scan.scan steps(%n) sequences(%xs : tensor<?xf64>, %xs : tensor<?xf64>) {
  ^bb0(%x: f64, %y: f64):
    %p = arith.mulf %x, %x : f64
    %q = arith.mulf %y, %y : f64
    scan.yield %p, %q : f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>)
  return %a, %b : tensor<?xf64>, tensor<?xf64>
}

// The same non-sequence twice (and the same sequence with the same taps).
// CHECK-LABEL: func.func @duplicate_nonsequence
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1[-1, 0] : tensor<?xi32>)
// CHECK-NEXT:      sitsot(%arg2 : i32)
// CHECK-NEXT:      nonsequences(%arg3 : i32) {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32):
func.func @duplicate_nonsequence(%n: index, %xs: tensor<?xi32>, %s0: i32, %w: i32) -> tensor<?xi32> {
  %r = scan.scan steps(%n) sequences(%xs[-1, 0] : tensor<?xi32>, %xs[-1, 0] : tensor<?xi32>) sitsot(%s0 : i32) nonsequences(%w, %w : i32, i32) {
  ^bb0(%a1: i32, %a0: i32, %b1: i32, %b0: i32, %s: i32, %u: i32, %v: i32):
    %d = arith.subi %a0, %b1 : i32
    %m = arith.muli %d, %u : i32
    %p = arith.addi %m, %v : i32
    %y = arith.addi %s, %p : i32
    scan.yield %y : i32
  } -> (tensor<?xi32>)
  return %r : tensor<?xi32>
}

// States from the same init (and taps) yielding the same value are the same
// state: the sitsot pair and the mitsot pair each become one.
// CHECK-LABEL: func.func @duplicate_states
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%arg0)
// CHECK-NEXT:      mitsot(%arg1[-2, -1] : tensor<2xf64>)
// CHECK-NEXT:      sitsot(%arg2 : f64) {
// CHECK-NEXT:    ^bb0(%{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
// CHECK:         } -> (tensor<?xf64>, tensor<?xf64>)
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#0, %[[R]]#1, %[[R]]#1
func.func @duplicate_states(%n: index, %init: tensor<2xf64>, %s0: f64) -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) {
  %m1, %m2, %s1, %s2 = scan.scan steps(%n) mitsot(%init[-2, -1] : tensor<2xf64>, %init[-2, -1] : tensor<2xf64>) sitsot(%s0, %s0 : f64, f64) {
  ^bb0(%a2: f64, %a1: f64, %b2: f64, %b1: f64, %s: f64, %t: f64):
    %m = arith.addf %a2, %a1 : f64
    %half = arith.constant 0.5 : f64
    %sn = arith.mulf %s, %half : f64
    scan.yield %m, %m, %sn, %sn : f64, f64, f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>)
  return %m1, %m2, %s1, %s2 : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>
}

// NEGATIVE: the same sequence at different taps, the same state value from
// different inits, the same row kept differently (keep), different rows from
// the same init, and mitmot buffers (never merged): nothing changes.
// CHECK-LABEL: func.func @nothing_to_merge
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1[-1, 0] : tensor<?xf64>, %arg1 : tensor<?xf64>)
// CHECK-NEXT:      mitmot(%arg4[0] -> [0] : tensor<?xf64>, %arg4[0] -> [0] : tensor<?xf64>)
// CHECK-NEXT:      sitsot(%arg2 : f64, %arg3 : f64, %arg2 : f64) keep [0, 0, 0, 0, 0, 0, 1, 0] {
// CHECK:         } -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<1xf64>, tensor<?xf64>)
func.func @nothing_to_merge(%n: index, %xs: tensor<?xf64>, %s0: f64, %t0: f64, %buf: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<1xf64>, tensor<?xf64>) {
  %g1, %g2, %a, %b, %c, %d, %e, %f = scan.scan steps(%n) sequences(%xs[-1, 0] : tensor<?xf64>, %xs : tensor<?xf64>) mitmot(%buf[0] -> [0] : tensor<?xf64>, %buf[0] -> [0] : tensor<?xf64>) sitsot(%s0, %t0, %s0 : f64, f64, f64) keep [0, 0, 0, 0, 0, 0, 1, 0] {
  ^bb0(%x1: f64, %x0: f64, %y: f64, %ga: f64, %gb: f64, %s: f64, %t: f64, %u: f64):
    %v = arith.addf %x1, %y : f64
    %sn = arith.addf %s, %v : f64
    %un = arith.addf %u, %x0 : f64
    %g = arith.addf %ga, %x0 : f64
    %h = arith.addf %gb, %x0 : f64
    scan.yield %g, %h, %sn, %sn, %un, %v, %v, %x0 : f64, f64, f64, f64, f64, f64, f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<1xf64>, tensor<?xf64>)
  return %g1, %g2, %a, %b, %c, %d, %e, %f : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<1xf64>, tensor<?xf64>
}

// A nitsot yields the block argument of a state that is merged into its twin:
// it yields the twin's argument (regression: it kept yielding the dropped
// argument, which became ub.poison).
// CHECK-LABEL: func.func @dropped_argument_yielded
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : f64) {
// CHECK-NEXT:    ^bb0(%[[S:.*]]: f64):
// CHECK-NOT:       ub.poison
// CHECK:           scan.yield %{{.*}}, %[[S]] : f64, f64
// CHECK:         return %[[R]]#0, %[[R]]#0, %[[R]]#1
func.func @dropped_argument_yielded(%n: index, %s0: f64) -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) {
  %a, %b, %prev = scan.scan steps(%n) sitsot(%s0, %s0 : f64, f64) {
  ^bb0(%s: f64, %t: f64):
    %half = arith.constant 0.5 : f64
    %sn = arith.mulf %s, %half : f64
    scan.yield %sn, %sn, %t : f64, f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>)
  return %a, %b, %prev : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>
}
