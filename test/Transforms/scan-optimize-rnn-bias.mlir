// RUN: scan-opt %s --scan-optimize | FileCheck %s
// XFAIL: *

// KNOWN GAP (expected to fail; lit reports an unexpected pass as a failure,
// so this file is a strict xfail): the Elman RNN written in the order of the
// formula, h_t = tanh((W·h_{t-1} + U·x_t) + b). scan-optimize pushes U·x_t
// out, but the bias is added to a value that depends on the state, so
// without reassociating the additions (s + u) + b -> s + (u + b) the add of
// b stays in the body. scan-optimize.mlir shows the effect with the
// association U·x_t + b + W·h_{t-1}.

// CHECK-LABEL: func.func @elman_formula_order
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %arg4 : tensor<?x4xf32>, tensor<4xf32>)
// CHECK:         scan.scan
// CHECK-NEXT:      sequences(%{{.*}} : tensor<?x4xf32>)
// CHECK-NEXT:      sitsot(%arg1 : tensor<4xf32>)
// CHECK-NEXT:      nonsequences(%arg2 : tensor<4x4xf32>) {
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
