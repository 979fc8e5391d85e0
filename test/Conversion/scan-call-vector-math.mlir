// RUN: scan-opt %s --split-input-file --scan-call-vector-math | FileCheck %s
// RUN: scan-opt %s --split-input-file --scan-call-vector-math="functions=exp,log" | FileCheck %s --check-prefix=ONLY
// RUN: scan-opt %s --split-input-file --scan-call-vector-math="isa=none" | FileCheck %s --check-prefix=NONE
// RUN: not scan-opt %s --split-input-file --scan-call-vector-math="isa=avx512" 2>&1 | FileCheck %s --check-prefix=BAD

// scan-call-vector-math: math ops on vectors whose length is a multiple of an
// AVX2 register (4 f64, 8 f32) become calls of glibc's libmvec functions on
// register-wide slices; everything else is left to convert-math-to-llvm.
// test/python/test_vector_math.py runs the calls against libm's results.

// pow of vector<8xf64>: two calls of the 4-lane, two-argument pow, the
// slices taken and put back together with vector.shuffle.
// CHECK-LABEL: func.func @pow_f64(
// CHECK:         %[[X0:.*]] = vector.shuffle %arg0, %arg0 [0, 1, 2, 3] : vector<8xf64>, vector<8xf64>
// CHECK:         %[[P0:.*]] = vector.shuffle %arg1, %arg1 [0, 1, 2, 3] : vector<8xf64>, vector<8xf64>
// CHECK:         %[[Y0:.*]] = call @_ZGVdN4vv_pow(%[[X0]], %[[P0]]) : (vector<4xf64>, vector<4xf64>) -> vector<4xf64>
// CHECK:         %[[X1:.*]] = vector.shuffle %arg0, %arg0 [4, 5, 6, 7] : vector<8xf64>, vector<8xf64>
// CHECK:         %[[P1:.*]] = vector.shuffle %arg1, %arg1 [4, 5, 6, 7] : vector<8xf64>, vector<8xf64>
// CHECK:         %[[Y1:.*]] = call @_ZGVdN4vv_pow(%[[X1]], %[[P1]])
// CHECK:         %[[Y:.*]] = vector.shuffle %[[Y0]], %[[Y1]] [0, 1, 2, 3, 4, 5, 6, 7] : vector<4xf64>, vector<4xf64>
// CHECK:         return %[[Y]]
// CHECK:       func.func private @_ZGVdN4vv_pow(vector<4xf64>, vector<4xf64>) -> vector<4xf64>
// ONLY-LABEL:  func.func @pow_f64(
// ONLY:          math.powf
// NONE-LABEL:  func.func @pow_f64(
// NONE:          math.powf
// NONE-NOT:      call
// BAD:         error: scan-call-vector-math: isa must be avx2 or none, not 'avx512'
func.func @pow_f64(%x: vector<8xf64>, %p: vector<8xf64>) -> vector<8xf64> {
  %y = math.powf %x, %p : vector<8xf64>
  return %y : vector<8xf64>
}

// -----

// f32 takes 8 lanes and the `f` names; three slices of a 24-lane vector are
// concatenated left to right. One declaration serves every call.
// CHECK-LABEL: func.func @exp_log_f32(
// CHECK-COUNT-2: call @_ZGVdN8v_expf(
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xf32>, vector<8xf32>
// CHECK:         call @_ZGVdN8v_expf(
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23] : vector<16xf32>, vector<8xf32>
// CHECK:         call @_ZGVdN8v_logf(
// CHECK-COUNT-1: func.func private @_ZGVdN8v_expf(vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:     func.func private @_ZGVdN8v_expf
// ONLY-LABEL:  func.func @exp_log_f32(
// ONLY:          call @_ZGVdN8v_expf(
// ONLY:          call @_ZGVdN8v_logf(
func.func @exp_log_f32(%x: vector<24xf32>, %z: vector<8xf32>) -> (vector<24xf32>, vector<8xf32>) {
  %y = math.exp %x : vector<24xf32>
  %l = math.log %z : vector<8xf32>
  return %y, %l : vector<24xf32>, vector<8xf32>
}

// -----

// NEGATIVE: scalars, lengths that are not whole registers, other element
// types, ops libmvec does not have, log1p (scan-expand-log1p-expm1 computes
// it from libm's log), and tensors (not lowered yet) stay.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT:     call
// CHECK:         math.exp %arg0 : f64
// CHECK:         math.log %arg1 : vector<6xf64>
// CHECK:         math.sin %arg2 : vector<8xf16>
// CHECK:         math.sqrt %arg3 : vector<8xf64>
// CHECK:         math.exp %arg4 : tensor<8xf64>
// CHECK:         math.log1p %arg3 : vector<8xf64>
func.func @left_alone(%a: f64, %b: vector<6xf64>, %c: vector<8xf16>, %d: vector<8xf64>, %e: tensor<8xf64>)
    -> (f64, vector<6xf64>, vector<8xf16>, vector<8xf64>, tensor<8xf64>, vector<8xf64>) {
  %0 = math.exp %a : f64
  %1 = math.log %b : vector<6xf64>
  %2 = math.sin %c : vector<8xf16>
  %3 = math.sqrt %d : vector<8xf64>
  %4 = math.exp %e : tensor<8xf64>
  %5 = math.log1p %d : vector<8xf64>
  return %0, %1, %2, %3, %4, %5 : f64, vector<6xf64>, vector<8xf16>, vector<8xf64>, tensor<8xf64>, vector<8xf64>
}
