// RUN: scan-opt %s --scan-bufferize | FileCheck %s

// The in-place contract (SPEC §5): after convert-scan-to-scf and
// one-shot-bufferize, the loop of every variable kind contains no allocation
// and no copy of a state or output. Each case checks the text between the
// loop's first line and its closing brace (4 spaces: a loop at function level).

// SITSOT scalar state, reversed sequence.
// CHECK-LABEL: func.func @sitsot_scalar
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @sitsot_scalar(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %r = scan.scan steps(%n) go_backwards sequences(%xs : tensor<?xf64>) sitsot(%x0 : f64) {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// MITSOT scalar state, taps [-2, -1].
// CHECK-LABEL: func.func @mitsot_scalar
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @mitsot_scalar(%n: index, %init: tensor<2xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) mitsot(%init[-2, -1] : tensor<2xi64>) {
  ^bb0(%a: i64, %b: i64):
    %s = arith.addi %a, %b : i64
    scan.yield %s : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}

// sequence with taps [-2, 0, 1], elementwise body (a nitsot).
// CHECK-LABEL: func.func @sequence_taps
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @sequence_taps(%xs: tensor<?x4xf32>, %n: index) -> tensor<?x4xf32> {
  %r = scan.scan steps(%n) sequences(%xs[-2, 0, 1] : tensor<?x4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
    %s = arith.addf %a, %b : tensor<4xf32>
    %t = arith.mulf %s, %c : tensor<4xf32>
    scan.yield %t : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return %r : tensor<?x4xf32>
}

// NITSOT of tensor rows.
// CHECK-LABEL: func.func @nitsot
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @nitsot(%xs: tensor<?x8xf32>, %n: index) -> tensor<?x8xf32> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x8xf32>) {
  ^bb0(%x: tensor<8xf32>):
    %t = math.tanh %x : tensor<8xf32>
    scan.yield %t : tensor<8xf32>
  } -> (tensor<?x8xf32>)
  return %r : tensor<?x8xf32>
}

// SITSOT tensor state read by a vecmat whose destination is filled first.
// CHECK-LABEL: func.func @sitsot_tensor
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @sitsot_tensor(%h0: tensor<16xf32>, %W: tensor<16x16xf32>, %n: index) -> tensor<?x16xf32> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<16xf32>) nonsequences(%W : tensor<16x16xf32>) {
  ^bb0(%h: tensor<16xf32>, %w: tensor<16x16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %z = arith.constant 0.0 : f32
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %a = linalg.vecmat ins(%h, %w : tensor<16xf32>, tensor<16x16xf32>) outs(%f : tensor<16xf32>) -> tensor<16xf32>
    %t = math.tanh %a : tensor<16xf32>
    scan.yield %t : tensor<16xf32>
  } -> (tensor<?x16xf32>)
  return %r : tensor<?x16xf32>
}

// MITSOT tensor state, taps [-3, -1].
// CHECK-LABEL: func.func @mitsot_tensor
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @mitsot_tensor(%x0: tensor<3x8xf64>, %n: index) -> tensor<?x8xf64> {
  %r = scan.scan steps(%n) mitsot(%x0[-3, -1] : tensor<3x8xf64>) {
  ^bb0(%a: tensor<8xf64>, %b: tensor<8xf64>):
    %s = arith.addf %a, %b : tensor<8xf64>
    scan.yield %s : tensor<8xf64>
  } -> (tensor<?x8xf64>)
  return %r : tensor<?x8xf64>
}

// MITMOT whose in and out taps are different rows.
// CHECK-LABEL: func.func @mitmot_disjoint
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @mitmot_disjoint(%g: tensor<?x8xf64>, %n: index) -> tensor<?x8xf64> {
  %r = scan.scan steps(%n) mitmot(%g[1] -> [0] : tensor<?x8xf64>) {
  ^bb0(%g1: tensor<8xf64>):
    %t = arith.mulf %g1, %g1 : tensor<8xf64>
    scan.yield %t : tensor<8xf64>
  } -> (tensor<?x8xf64>)
  return %r : tensor<?x8xf64>
}

// keep [1] on a tensor state: a two-row ring.
// CHECK-LABEL: func.func @keep_ring
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @keep_ring(%h0: tensor<16xf32>, %W: tensor<16x16xf32>, %n: index) -> tensor<1x16xf32> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<16xf32>) nonsequences(%W : tensor<16x16xf32>) keep [1] {
  ^bb0(%h: tensor<16xf32>, %w: tensor<16x16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %z = arith.constant 0.0 : f32
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %a = linalg.vecmat ins(%h, %w : tensor<16xf32>, tensor<16x16xf32>) outs(%f : tensor<16xf32>) -> tensor<16xf32>
    scan.yield %a : tensor<16xf32>
  } -> (tensor<1x16xf32>)
  return %r : tensor<1x16xf32>
}

// until: an scf.while.
// CHECK-LABEL: func.func @until_scalar
// CHECK:         scf.while
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @until_scalar(%x0: f64, %max: f64) -> tensor<?xf64> {
  %c100 = arith.constant 100 : index
  %r = scan.scan steps(%c100) until sitsot(%x0 : f64) nonsequences(%max : f64) {
  ^bb0(%x: f64, %m: f64):
    %two = arith.constant 2.0 : f64
    %y = arith.mulf %x, %two : f64
    %stop = arith.cmpf ogt, %y, %m : f64
    scan.yield %y, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// MITMOT whose in tap 0 reads the row its out tap 0 overwrites: one row is
// copied to a scratch buffer allocated before the loop, nothing else.
// CHECK-LABEL: func.func @mitmot
// CHECK:         %[[SCRATCH:.*]] = memref.alloc() {{.*}} : memref<8xf64>
// CHECK:         scf.for
// CHECK-NOT:     memref.alloc
// CHECK:         memref.copy %{{.*}}, %[[SCRATCH]] : memref<8xf64, strided<[1], offset: ?>> to memref<8xf64>
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         {{^    }$}}
func.func @mitmot(%g: tensor<?x8xf64>, %xs: tensor<?x8xf64>, %n: index) -> tensor<?x8xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x8xf64>) mitmot(%g[0, 1] -> [0] : tensor<?x8xf64>) {
  ^bb0(%x: tensor<8xf64>, %g0: tensor<8xf64>, %g1: tensor<8xf64>):
    %s = arith.addf %g0, %g1 : tensor<8xf64>
    %t = arith.mulf %s, %x : tensor<8xf64>
    scan.yield %t : tensor<8xf64>
  } -> (tensor<?x8xf64>)
  return %r : tensor<?x8xf64>
}
