// RUN: scan-opt %s --scan-reassociate-adds | FileCheck %s

// (W·h + U·x) + b: regrouped as W·h + (U·x + b), the sequence-only part.
// CHECK-LABEL: func.func @rnn_bias
// CHECK:         ^bb0(%[[X:[^:]*]]: tensor<4xf32>, %[[H:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>):
// CHECK:           %[[WH:.*]] = arith.mulf %[[H]], %[[H]]
// CHECK:           %[[XB:.*]] = arith.addf %[[X]], %[[B]] : tensor<4xf32>
// CHECK:           %[[S:.*]] = arith.addf %[[WH]], %[[XB]] : tensor<4xf32>
// CHECK:           scan.yield %[[S]]
func.func @rnn_bias(%xs: tensor<?x4xf32>, %h0: tensor<4xf32>, %b: tensor<4xf32>, %n: index) -> tensor<?x4xf32> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x4xf32>) sitsot(%h0 : tensor<4xf32>) nonsequences(%b : tensor<4xf32>) {
  ^bb0(%x: tensor<4xf32>, %h: tensor<4xf32>, %bb: tensor<4xf32>):
    %wh = arith.mulf %h, %h : tensor<4xf32>
    %s = arith.addf %wh, %x : tensor<4xf32>
    %sb = arith.addf %s, %bb : tensor<4xf32>
    scan.yield %sb : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return %r : tensor<?x4xf32>
}

// Integers too, with the operands in either order.
// CHECK-LABEL: func.func @ints
// CHECK:         ^bb0(%[[X:[^:]*]]: i64, %[[ACC:[^:]*]]: i64, %[[C:[^:]*]]: i64):
// CHECK:           %[[XC:.*]] = arith.addi %[[X]], %[[C]] : i64
// CHECK:           arith.addi %[[ACC]], %[[XC]] : i64
func.func @ints(%xs: tensor<?xi64>, %a0: i64, %c: i64, %n: index) -> tensor<?xi64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xi64>) sitsot(%a0 : i64) nonsequences(%c : i64) {
  ^bb0(%x: i64, %acc: i64, %cc: i64):
    %s = arith.addi %x, %acc : i64
    %t = arith.addi %cc, %s : i64
    scan.yield %t : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}

// Negative cases: both terms recurrent; the partial sum used twice; different
// fastmath flags.
// CHECK-LABEL: func.func @kept
// CHECK:         %[[S1:.*]] = arith.addf %{{.*}}, %{{.*}} : f64
// CHECK:         arith.addf %[[S1]], %{{.*}} : f64
// CHECK:         %[[S2:.*]] = arith.addf %{{.*}}, %{{.*}} : f64
// CHECK:         %[[T2:.*]] = arith.addf %[[S2]], %{{.*}} : f64
// CHECK:         arith.mulf %[[T2]], %[[S2]]
// CHECK:         %[[S3:.*]] = arith.addf %{{.*}}, %{{.*}} fastmath<fast> : f64
// CHECK:         arith.addf %[[S3]], %{{.*}} : f64
func.func @kept(%xs: tensor<?xf64>, %a0: f64, %b0: f64, %n: index) -> (tensor<?xf64>, tensor<?xf64>) {
  %r:2 = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%a0, %b0 : f64, f64) {
  ^bb0(%x: f64, %a: f64, %b: f64):
    %s1 = arith.addf %a, %b : f64
    %t1 = arith.addf %s1, %x : f64
    %s2 = arith.addf %a, %x : f64
    %t2 = arith.addf %s2, %x : f64
    %u2 = arith.mulf %t2, %s2 : f64
    %s3 = arith.addf %a, %x fastmath<fast> : f64
    %t3 = arith.addf %s3, %x : f64
    %v = arith.addf %u2, %t3 : f64
    scan.yield %t1, %v : f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>)
  return %r#0, %r#1 : tensor<?xf64>, tensor<?xf64>
}

// NEGATIVE: integer adds with overflow flags are not regrouped: s + c may
// overflow (poison with nsw) where neither original sum did.
// CHECK-LABEL: func.func @overflow_flags
// CHECK:           %[[A:.*]] = arith.addi %{{.*}}, %{{.*}} overflow<nsw> : i32
// CHECK-NEXT:      %[[B:.*]] = arith.addi %[[A]], %{{.*}} overflow<nsw> : i32
// CHECK-NEXT:      scan.yield %[[B]]
func.func @overflow_flags(%n: index, %xs: tensor<?xi32>, %s0: i32, %c: i32) -> tensor<?xi32> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xi32>) sitsot(%s0 : i32) nonsequences(%c : i32) {
  ^bb0(%x: i32, %s: i32, %cc: i32):
    %a = arith.addi %s, %x overflow<nsw> : i32
    %b = arith.addi %a, %cc overflow<nsw> : i32
    scan.yield %b : i32
  } -> (tensor<?xi32>)
  return %r : tensor<?xi32>
}

// A sum inside an elementwise linalg.generic (the graph builder fuses
// tanh(h·W + x·U + b) into one loop): (wh + ux) + b, with ux a sequence row
// and b a non-sequence, is split; ux + b becomes a generic of its own and
// the inputs the loop no longer reads are dropped.
// CHECK-LABEL: func.func @generic_sum
// CHECK:         scan.scan
// CHECK:         ^bb0(%[[X:.*]]: tensor<?xf64>, %[[H:.*]]: tensor<?xf64>, %[[B:.*]]: tensor<?xf64>, %{{.*}}: index):
// CHECK:           %[[E:.*]] = tensor.empty
// CHECK:           %[[XB:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[B]] : tensor<?xf64>, tensor<?xf64>)
// CHECK-NEXT:      ^bb0(%[[I0:.*]]: f64, %[[I1:.*]]: f64, %{{.*}}: f64):
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[I0]], %[[I1]] : f64
// CHECK-NEXT:        linalg.yield %[[S]] : f64
// CHECK:           linalg.generic {{.*}} ins(%[[H]], %[[XB]] : tensor<?xf64>, tensor<?xf64>)
// CHECK-NEXT:      ^bb0(%[[J0:.*]]: f64, %[[J1:.*]]: f64, %{{.*}}: f64):
// CHECK-NEXT:        %[[T:.*]] = arith.addf %[[J0]], %[[J1]] : f64
// CHECK-NEXT:        math.tanh %[[T]] : f64
func.func @generic_sum(%n: index, %xs: tensor<?x?xf64>, %h0: tensor<?xf64>, %b: tensor<?xf64>, %m: index) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%h0 : tensor<?xf64>) nonsequences(%b, %m : tensor<?xf64>, index) {
  ^bb0(%x: tensor<?xf64>, %h: tensor<?xf64>, %bb: tensor<?xf64>, %mm: index):
    %e = tensor.empty(%mm) : tensor<?xf64>
    %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%h, %x, %bb : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %c: f64, %d: f64, %o: f64):
      %0 = arith.addf %a, %c : f64
      %1 = arith.addf %0, %d : f64
      %2 = math.tanh %1 : f64
      linalg.yield %2 : f64
    } -> tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// NEGATIVE: the sum reads the init (the destination's values): not split.
// CHECK-LABEL: func.func @generic_reads_init
// CHECK:           linalg.generic
// CHECK-NOT:       linalg.generic
// CHECK:           scan.yield
func.func @generic_reads_init(%n: index, %xs: tensor<?x?xf64>, %h0: tensor<?xf64>, %b: tensor<?xf64>) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%h0 : tensor<?xf64>) nonsequences(%b : tensor<?xf64>) {
  ^bb0(%x: tensor<?xf64>, %h: tensor<?xf64>, %bb: tensor<?xf64>):
    %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%x, %bb : tensor<?xf64>, tensor<?xf64>) outs(%h : tensor<?xf64>) {
    ^bb0(%c: f64, %d: f64, %o: f64):
      %0 = arith.addf %o, %c : f64
      %1 = arith.addf %0, %d : f64
      linalg.yield %1 : f64
    } -> tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}
