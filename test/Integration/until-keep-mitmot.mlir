// RUN: scan-opt %s --scan-to-llvm | mlir-runner -e main -entry-point-result=void -shared-libs=%scan_runtime_lib,%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so | FileCheck %s

func.func private @printMemrefF64(tensor<*xf64>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI64(tensor<*xi64>) attributes {llvm.emit_c_interface}

// The guide's "powers of two until > 45" (until; the stopping step is kept).
func.func @pow2(%max: i64) -> tensor<?xi64> {
  %c1024 = arith.constant 1024 : index
  %one = arith.constant 1 : i64
  %r = scan.scan steps(%c1024) until sitsot(%one : i64) nonsequences(%max : i64) {
  ^bb0(%p: i64, %m: i64):
    %two = arith.constant 2 : i64
    %x = arith.muli %p, %two : i64
    %stop = arith.cmpi sgt, %x, %m : i64
    scan.yield %x, %stop : i64, i1
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}

// keep [3] of a counter: the last three of (init, 1, 2, ...), zero-padded.
func.func @last3(%n: index) -> tensor<3xf64> {
  %x0 = arith.constant 0.0 : f64
  %r = scan.scan steps(%n) sitsot(%x0 : f64) keep [3] {
  ^bb0(%p: f64):
    %c = arith.constant 1.0 : f64
    %x = arith.addf %p, %c : f64
    scan.yield %x : f64
  } -> (tensor<3xf64>)
  return %r : tensor<3xf64>
}

// go_backwards differences of a sequence read at taps [-1, 0] (a nitsot).
func.func @back_diff(%xs: tensor<5xf64>) -> tensor<4xf64> {
  %c4 = arith.constant 4 : index
  %r = scan.scan steps(%c4) go_backwards sequences(%xs[-1, 0] : tensor<5xf64>) {
  ^bb0(%a: f64, %b: f64):
    %d = arith.subf %a, %b : f64
    scan.yield %d : f64
  } -> (tensor<4xf64>)
  return %r : tensor<4xf64>
}

// A mitmot accumulating row t+1 into row t, in taps [0, 1] -> out tap [0].
func.func @accumulate(%buf: tensor<4x2xf64>) -> tensor<4x2xf64> {
  %c3 = arith.constant 3 : index
  %r = scan.scan steps(%c3) mitmot(%buf[0, 1] -> [0] : tensor<4x2xf64>) {
  ^bb0(%g0: tensor<2xf64>, %g1: tensor<2xf64>):
    %s = arith.addf %g0, %g1 : tensor<2xf64>
    scan.yield %s : tensor<2xf64>
  } -> (tensor<4x2xf64>)
  return %r : tensor<4x2xf64>
}

func.func @main() {
  %max = arith.constant 45 : i64
  %p = call @pow2(%max) : (i64) -> tensor<?xi64>
  %pu = tensor.cast %p : tensor<?xi64> to tensor<*xi64>
  call @printMemrefI64(%pu) : (tensor<*xi64>) -> ()
  // CHECK: [2,  4,  8,  16,  32,  64]

  %c5 = arith.constant 5 : index
  %l = call @last3(%c5) : (index) -> tensor<3xf64>
  %lu = tensor.cast %l : tensor<3xf64> to tensor<*xf64>
  call @printMemrefF64(%lu) : (tensor<*xf64>) -> ()
  // CHECK: [3,  4,  5]
  %c1 = arith.constant 1 : index
  %l1 = call @last3(%c1) : (index) -> tensor<3xf64>
  %l1u = tensor.cast %l1 : tensor<3xf64> to tensor<*xf64>
  call @printMemrefF64(%l1u) : (tensor<*xf64>) -> ()
  // CHECK: [0,  0,  1]

  %xs = arith.constant dense<[1.0, 4.0, 9.0, 16.0, 25.0]> : tensor<5xf64>
  %d = call @back_diff(%xs) : (tensor<5xf64>) -> tensor<4xf64>
  %du = tensor.cast %d : tensor<4xf64> to tensor<*xf64>
  call @printMemrefF64(%du) : (tensor<*xf64>) -> ()
  // Reversed: [25, 16, 9, 4, 1]; step t reads rows t and t+1.
  // CHECK: [9,  7,  5,  3]

  %buf = arith.constant dense<[[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [4.0, 1.0]]> : tensor<4x2xf64>
  %m = call @accumulate(%buf) : (tensor<4x2xf64>) -> tensor<4x2xf64>
  %mu = tensor.cast %m : tensor<4x2xf64> to tensor<*xf64>
  call @printMemrefF64(%mu) : (tensor<*xf64>) -> ()
  // CHECK:      [3,   0]
  // CHECK-NEXT: [5,   0]
  // CHECK-NEXT: [7,   1]
  // CHECK-NEXT: [4,   1]
  return
}
