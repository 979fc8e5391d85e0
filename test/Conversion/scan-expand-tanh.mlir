// RUN: scan-opt %s --pass-pipeline="builtin.module(func.func(scan-expand-tanh))" | FileCheck %s

// f64 tanh becomes arithmetic on the same (vector) type: the polynomial near
// zero, 1 - 2 / (exp(2|x|) + 1) elsewhere with exp from a polynomial and the
// exponent bits, a select between them, and NaN passed through.
// CHECK-LABEL: func.func @f64_vector
// CHECK-SAME:    (%[[X:.*]]: vector<8xf64>)
// CHECK-NOT:     math.tanh
// CHECK:         %[[AX:.*]] = math.absf %[[X]] : vector<8xf64>
// CHECK:         math.fma {{.*}} : vector<8xf64>
// CHECK:         arith.minnumf {{.*}} : vector<8xf64>
// CHECK:         math.roundeven {{.*}} : vector<8xf64>
// CHECK:         arith.fptosi {{.*}} : vector<8xf64> to vector<8xi64>
// CHECK:         arith.shli {{.*}} : vector<8xi64>
// CHECK:         arith.bitcast {{.*}} : vector<8xi64> to vector<8xf64>
// CHECK:         arith.divf
// CHECK:         math.copysign
// CHECK:         %[[SMALL:.*]] = arith.cmpf olt, %[[AX]], %{{.*}} : vector<8xf64>
// CHECK:         %[[SEL:.*]] = arith.select %[[SMALL]]
// CHECK:         %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : vector<8xf64>
// CHECK:         %[[R:.*]] = arith.select %[[NAN]], %[[X]], %[[SEL]]
// CHECK:         return %[[R]]
func.func @f64_vector(%x: vector<8xf64>) -> vector<8xf64> {
  %y = math.tanh %x : vector<8xf64>
  return %y : vector<8xf64>
}

// f32 is expanded in f32, with its own constants: 2^k from i32 bits (k + 127)
// << 23.
// CHECK-LABEL: func.func @f32_scalar
// CHECK-NOT:     arith.extf
// CHECK:         math.absf %{{.*}} : f32
// CHECK:         %[[K:.*]] = arith.fptosi {{.*}} : f32 to i32
// CHECK:         %[[BIAS:.*]] = arith.constant 127 : i32
// CHECK:         %[[B:.*]] = arith.addi %[[K]], %[[BIAS]] : i32
// CHECK:         %[[SHIFT:.*]] = arith.constant 23 : i32
// CHECK:         arith.shli %[[B]], %[[SHIFT]] : i32
// CHECK:         arith.bitcast {{.*}} : i32 to f32
// CHECK:         %[[NAN:.*]] = arith.cmpf uno
// CHECK:         %[[R:.*]] = arith.select %[[NAN]]
// CHECK:         return %[[R]]
func.func @f32_scalar(%x: f32) -> f32 {
  %y = math.tanh %x : f32
  return %y : f32
}

// Other element types get upstream's exp-based expansion (math-expand-ops'
// tanh pattern), so that no tanh reaches convert-math-to-llvm; tensors are
// left alone (the elementwise-to-linalg conversion handles them).
// CHECK-LABEL: func.func @other_types
// CHECK-NOT:     math.tanh %{{.*}} : f16
// CHECK:         math.exp %{{.*}} : f16
// CHECK-NOT:     math.tanh %{{.*}} : vector<4xbf16>
// CHECK:         math.exp %{{.*}} : vector<4xbf16>
// CHECK:         math.tanh %{{.*}} : tensor<4xf64>
func.func @other_types(%x: f16, %v: vector<4xbf16>, %t: tensor<4xf64>) -> (f16, vector<4xbf16>, tensor<4xf64>) {
  %y = math.tanh %x : f16
  %w = math.tanh %v : vector<4xbf16>
  %u = math.tanh %t : tensor<4xf64>
  return %y, %w, %u : f16, vector<4xbf16>, tensor<4xf64>
}
