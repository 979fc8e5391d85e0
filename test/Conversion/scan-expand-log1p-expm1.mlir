// RUN: scan-opt %s --pass-pipeline="builtin.module(func.func(scan-expand-log1p-expm1,cse))" | FileCheck %s
// (cse: the expansions make a constant per use; one per value reads better in the checks)

// log1p(x) = log(u) * (x / (u - 1)), u = 1 + x; x where u == 1 (tiny x, and
// the sign of -0), u where u == +inf.
// CHECK-LABEL: func.func @log1p_f64
// CHECK-SAME:    (%[[X:.*]]: f64)
// CHECK-NOT:     math.log1p
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK:         %[[U:.*]] = arith.addf %[[ONE]], %[[X]] : f64
// CHECK:         %[[LOG:.*]] = math.log %[[U]] : f64
// CHECK:         %[[D:.*]] = arith.subf %[[U]], %[[ONE]] : f64
// CHECK:         %[[Q:.*]] = arith.divf %[[X]], %[[D]] : f64
// CHECK:         %[[C:.*]] = arith.mulf %[[LOG]], %[[Q]] : f64
// CHECK:         %[[TINY:.*]] = arith.cmpf oeq, %[[U]], %[[ONE]] : f64
// CHECK:         %[[S:.*]] = arith.select %[[TINY]], %[[X]], %[[C]] : f64
// CHECK:         %[[INF:.*]] = arith.constant 0x7FF0000000000000 : f64
// CHECK:         %[[ISINF:.*]] = arith.cmpf oeq, %[[U]], %[[INF]] : f64
// CHECK:         %[[R:.*]] = arith.select %[[ISINF]], %[[U]], %[[S]] : f64
// CHECK:         return %[[R]]
func.func @log1p_f64(%x: f64) -> f64 {
  %y = math.log1p %x : f64
  return %y : f64
}

// expm1(x) = (u - 1) * (x / log(u)), u = exp(x); x where u == 1, -1 where
// u - 1 == -1, u where u == +inf. On vectors, with splat constants.
// CHECK-LABEL: func.func @expm1_f32_vector
// CHECK-SAME:    (%[[X:.*]]: vector<8xf32>)
// CHECK-NOT:     math.expm1
// CHECK:         %[[ONE:.*]] = arith.constant dense<1.000000e+00> : vector<8xf32>
// CHECK:         %[[U:.*]] = math.exp %[[X]] : vector<8xf32>
// CHECK:         %[[UM1:.*]] = arith.subf %[[U]], %[[ONE]] : vector<8xf32>
// CHECK:         %[[LOG:.*]] = math.log %[[U]] : vector<8xf32>
// CHECK:         %[[Q:.*]] = arith.divf %[[X]], %[[LOG]] : vector<8xf32>
// CHECK:         %[[C:.*]] = arith.mulf %[[UM1]], %[[Q]] : vector<8xf32>
// CHECK:         %[[TINY:.*]] = arith.cmpf oeq, %[[U]], %[[ONE]] : vector<8xf32>
// CHECK:         %[[S1:.*]] = arith.select %[[TINY]], %[[X]], %[[C]] : vector<8xi1>, vector<8xf32>
// CHECK:         %[[MONE:.*]] = arith.constant dense<-1.000000e+00> : vector<8xf32>
// CHECK:         %[[NEG:.*]] = arith.cmpf oeq, %[[UM1]], %[[MONE]] : vector<8xf32>
// CHECK:         %[[S2:.*]] = arith.select %[[NEG]], %[[UM1]], %[[S1]] : vector<8xi1>, vector<8xf32>
// CHECK:         %[[ISINF:.*]] = arith.cmpf oeq, %[[U]], %{{.*}} : vector<8xf32>
// CHECK:         %[[R:.*]] = arith.select %[[ISINF]], %[[U]], %[[S2]] : vector<8xi1>, vector<8xf32>
// CHECK:         return %[[R]]
func.func @expm1_f32_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %y = math.expm1 %x : vector<8xf32>
  return %y : vector<8xf32>
}

// Fast-math flags are carried over to log and exp.
// CHECK-LABEL: func.func @flags
// CHECK:         math.exp %{{.*}} fastmath<afn> : f32
// CHECK:         math.log %{{.*}} fastmath<afn> : f32
func.func @flags(%x: f32) -> f32 {
  %y = math.expm1 %x fastmath<afn> : f32
  return %y : f32
}

// Other element types are left to the usual lowering.
// CHECK-LABEL: func.func @f16_untouched
// CHECK:         math.log1p %{{.*}} : f16
// CHECK:         math.expm1 %{{.*}} : f16
func.func @f16_untouched(%x: f16) -> f16 {
  %y = math.log1p %x : f16
  %z = math.expm1 %y : f16
  return %z : f16
}
