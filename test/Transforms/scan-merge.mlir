// RUN: scan-opt %s --scan-merge | FileCheck %s

// scan-merge (Theano's ScanMerge): independent scans of one block with the
// same n_steps and direction, without until, become one scan running both
// bodies; the earlier scan's items come first in each group. The public
// functions are also run by test/python/test_rewrites.py.

// Two maps over the same sequence: one scan with the sequence twice (merging
// the duplicate is scan-merge-inouts' job).
// CHECK-LABEL: func.func @two_maps
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%[[N:.*]])
// CHECK-NEXT:      sequences(%arg0 : tensor<?xf64>, %arg0 : tensor<?xf64>) {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f64, %[[B:.*]]: f64):
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[A]], %[[A]]
// CHECK-NEXT:      %[[NG:.*]] = arith.negf %[[B]]
// CHECK-NEXT:      scan.yield %[[SQ]], %[[NG]] : f64, f64
// CHECK-NEXT:    } -> (tensor<?xf64>, tensor<?xf64>)
// CHECK-NOT:     scan.scan
// CHECK:         return %[[R]]#0, %[[R]]#1
func.func @two_maps(%xs: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %a = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.mulf %x, %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  %b = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.negf %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %a, %b : tensor<?xf64>, tensor<?xf64>
}

// Every kind, equal constant n_steps from two different constants, both
// backwards: the groups are concatenated (a's items first) and the results
// keep their order per group (mitmot, mitsot, sitsot, nitsot).
// CHECK-LABEL: func.func @all_kinds_backwards
// CHECK:         %[[R:.*]]:5 = scan.scan steps(%{{.*}}) go_backwards
// CHECK-NEXT:      sequences(%arg0[-1, 0] : tensor<7xi32>, %arg1 : tensor<?xi32>)
// CHECK-NEXT:      mitmot(%arg2[0] -> [0] : tensor<?xi32>)
// CHECK-NEXT:      mitsot(%arg3[-2, -1] : tensor<2xi32>)
// CHECK-NEXT:      sitsot(%arg4 : i32, %arg5 : i32)
// CHECK-NEXT:      nonsequences(%arg6 : i32) {
// CHECK:         } -> (tensor<?xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>)
// CHECK:         return %[[R]]#2, %[[R]]#4, %[[R]]#0, %[[R]]#1, %[[R]]#3
func.func @all_kinds_backwards(%xs: tensor<7xi32>, %ys: tensor<?xi32>, %buf: tensor<?xi32>, %init: tensor<2xi32>, %s0: i32, %t0: i32, %w: i32) -> (tensor<6xi32>, tensor<6xi32>, tensor<?xi32>, tensor<6xi32>, tensor<6xi32>) {
  %c6 = arith.constant 6 : index
  %a:2 = scan.scan steps(%c6) go_backwards sequences(%xs[-1, 0] : tensor<7xi32>) sitsot(%s0 : i32) {
  ^bb0(%x1: i32, %x0: i32, %s: i32):
    %d = arith.subi %x0, %x1 : i32
    %sn = arith.addi %s, %d : i32
    scan.yield %sn, %d : i32, i32
  } -> (tensor<6xi32>, tensor<6xi32>)
  %six = arith.constant 6 : index
  %b:3 = scan.scan steps(%six) go_backwards sequences(%ys : tensor<?xi32>) mitmot(%buf[0] -> [0] : tensor<?xi32>) mitsot(%init[-2, -1] : tensor<2xi32>) sitsot(%t0 : i32) nonsequences(%w : i32) {
  ^bb0(%y: i32, %g: i32, %m2: i32, %m1: i32, %t: i32, %ww: i32):
    %gn = arith.addi %g, %y : i32
    %mn = arith.addi %m2, %m1 : i32
    %tn = arith.muli %t, %ww : i32
    scan.yield %gn, %mn, %tn : i32, i32, i32
  } -> (tensor<?xi32>, tensor<6xi32>, tensor<6xi32>)
  return %a#0, %a#1, %b#0, %b#1, %b#2 : tensor<6xi32>, tensor<6xi32>, tensor<?xi32>, tensor<6xi32>, tensor<6xi32>
}

// Work between the scans that uses the first one's results moves after the
// merged scan; work the second scan needs that does not depend on the first
// stays before it.
// CHECK-LABEL: func.func @ops_in_between
// CHECK:         %[[W:.*]] = arith.mulf %arg2, %arg2
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%arg0)
// CHECK:         %[[E:.*]] = tensor.extract %[[R]]#0[%c0]
// CHECK:         %[[D:.*]] = arith.addf %[[E]], %arg2
// CHECK:         return %[[D]], %[[R]]#1
func.func @ops_in_between(%n: index, %xs: tensor<?xf64>, %w: f64) -> (f64, tensor<?xf64>) {
  %a = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.mulf %x, %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  %c0 = arith.constant 0 : index
  %e = tensor.extract %a[%c0] : tensor<?xf64>
  %ww = arith.mulf %w, %w : f64
  %d = arith.addf %e, %w : f64
  %b = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) nonsequences(%ww : f64) {
  ^bb0(%x: f64, %v: f64):
    %y = arith.mulf %x, %v : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %d, %b : f64, tensor<?xf64>
}

// Three scans: merged pairwise into one.
// CHECK-LABEL: func.func @three
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : i64, %arg2 : i64, %arg3 : i64) {
// CHECK-NOT:     scan.scan
// CHECK:         return
func.func @three(%n: index, %a0: i64, %b0: i64, %c0: i64) -> (tensor<?xi64>, tensor<?xi64>, tensor<?xi64>) {
  %a = scan.scan steps(%n) sitsot(%a0 : i64) {
  ^bb0(%s: i64):
    %one = arith.constant 1 : i64
    %t = arith.addi %s, %one : i64
    scan.yield %t : i64
  } -> (tensor<?xi64>)
  %b = scan.scan steps(%n) sitsot(%b0 : i64) {
  ^bb0(%s: i64):
    %two = arith.constant 2 : i64
    %t = arith.muli %s, %two : i64
    scan.yield %t : i64
  } -> (tensor<?xi64>)
  %c = scan.scan steps(%n) sitsot(%c0 : i64) {
  ^bb0(%s: i64):
    %t = arith.muli %s, %s : i64
    scan.yield %t : i64
  } -> (tensor<?xi64>)
  return %a, %b, %c : tensor<?xi64>, tensor<?xi64>, tensor<?xi64>
}

// NEGATIVE: different n_steps (values %n and %m, or constants 3 and 4),
// different directions, until on one of them (different stop conditions):
// no merge.
// CHECK-LABEL: func.func @incompatible
// CHECK-COUNT-5: scan.scan
// CHECK-NOT:     scan.scan
func.func @incompatible(%n: index, %m: index, %xs: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>, tensor<3xf64>, tensor<?xf64>, tensor<?xf64>) {
  %a = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    scan.yield %x : f64
  } -> (tensor<?xf64>)
  %b = scan.scan steps(%m) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    scan.yield %x : f64
  } -> (tensor<?xf64>)
  %c3 = arith.constant 3 : index
  %c = scan.scan steps(%c3) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    scan.yield %x : f64
  } -> (tensor<3xf64>)
  %d = scan.scan steps(%n) go_backwards sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    scan.yield %x : f64
  } -> (tensor<?xf64>)
  %e = scan.scan steps(%m) until sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %z = arith.constant 0.0 : f64
    %stop = arith.cmpf olt, %x, %z : f64
    scan.yield %x, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %a, %b, %c, %d, %e : tensor<?xf64>, tensor<?xf64>, tensor<3xf64>, tensor<?xf64>, tensor<?xf64>
}

// NEGATIVE: two scans with until and the same n_steps still stop at
// different steps.
// CHECK-LABEL: func.func @both_until
// CHECK-COUNT-2: scan.scan
func.func @both_until(%n: index, %xs: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %a = scan.scan steps(%n) until sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %z = arith.constant 0.0 : f64
    %stop = arith.cmpf olt, %x, %z : f64
    scan.yield %x, %stop : f64, i1
  } -> (tensor<?xf64>)
  %b = scan.scan steps(%n) until sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %z = arith.constant 1.0 : f64
    %stop = arith.cmpf ogt, %x, %z : f64
    scan.yield %x, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %a, %b : tensor<?xf64>, tensor<?xf64>
}

// NEGATIVE: the second scan reads the first's result, directly (b) or
// through an op in between (c): merging would create a cycle. b and c only
// depend on a, not on each other: they merge, after a.
// CHECK-LABEL: func.func @dependent
// CHECK:         %[[A:.*]] = scan.scan
// CHECK:         %[[T:.*]] = tensor.extract %[[A]]
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%[[A]] : tensor<?xf64>)
// CHECK-NEXT:      sitsot(%[[T]] : f64) {
// CHECK-NOT:     scan.scan
func.func @dependent(%n: index, %xs: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %a = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.mulf %x, %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  %b = scan.scan steps(%n) sequences(%a : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.negf %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  %c0 = arith.constant 0 : index
  %t = tensor.extract %a[%c0] : tensor<?xf64>
  %c = scan.scan steps(%n) sitsot(%t : f64) {
  ^bb0(%s: f64):
    %y = arith.negf %s : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %b, %c : tensor<?xf64>, tensor<?xf64>
}

// NEGATIVE: side effects. A body with a call, or an op with side effects in
// between that reads the first scan (it would have to move after the merged
// scan): no merge.
// CHECK-LABEL: func.func private @side_effects
// CHECK-COUNT-4: scan.scan
// A call (unknown side effects to the passes; defined, so the JIT links).
func.func private @effect(%v: f64) -> f64 {
  return %v : f64
}
func.func private @side_effects(%n: index, %xs: tensor<?xf64>, %m: memref<f64>) -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) {
  %a = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = func.call @effect(%x) : (f64) -> f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  %b = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.negf %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  %c0 = arith.constant 0 : index
  %t = tensor.extract %b[%c0] : tensor<?xf64>
  memref.store %t, %m[] : memref<f64>
  %c = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = arith.mulf %x, %x : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  %d = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    %y = func.call @effect(%x) : (f64) -> f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %a, %b, %c, %d : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>
}
