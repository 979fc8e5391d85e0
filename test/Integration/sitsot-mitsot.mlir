// RUN: scan-opt %s --scan-to-llvm | mlir-runner -e main -entry-point-result=void -shared-libs=%scan_runtime_lib,%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so | FileCheck %s

func.func private @printMemrefF64(tensor<*xf64>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI64(tensor<*xi64>) attributes {llvm.emit_c_interface}

// Fibonacci as a MITSOT with taps [-2, -1].
func.func @fib(%n: index) -> tensor<?xi64> {
  %init = arith.constant dense<[0, 1]> : tensor<2xi64>
  %r = scan.scan steps(%n) mitsot(%init[-2, -1] : tensor<2xi64>) {
  ^bb0(%a: i64, %b: i64):
    %s = arith.addi %a, %b : i64
    scan.yield %s : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}

// A tensor SITSOT: x_t = x_{t-1} * a, all rows.
func.func @powers(%a: tensor<3xf64>, %n: index) -> tensor<?x3xf64> {
  %r = scan.scan steps(%n) sitsot(%a : tensor<3xf64>) nonsequences(%a : tensor<3xf64>) {
  ^bb0(%x: tensor<3xf64>, %aa: tensor<3xf64>):
    %y = arith.mulf %x, %aa : tensor<3xf64>
    scan.yield %y : tensor<3xf64>
  } -> (tensor<?x3xf64>)
  return %r : tensor<?x3xf64>
}

func.func @main() {
  %c8 = arith.constant 8 : index
  %f = call @fib(%c8) : (index) -> tensor<?xi64>
  %fu = tensor.cast %f : tensor<?xi64> to tensor<*xi64>
  call @printMemrefI64(%fu) : (tensor<*xi64>) -> ()
  // CHECK: [1,  2,  3,  5,  8,  13,  21,  34]

  %c3 = arith.constant 3 : index
  %a = arith.constant dense<[1.0, 2.0, 0.5]> : tensor<3xf64>
  %p = call @powers(%a, %c3) : (tensor<3xf64>, index) -> tensor<?x3xf64>
  %pu = tensor.cast %p : tensor<?x3xf64> to tensor<*xf64>
  call @printMemrefF64(%pu) : (tensor<*xf64>) -> ()
  // CHECK:      [1,   4,   0.25]
  // CHECK-NEXT: [1,   8,   0.125]
  // CHECK-NEXT: [1,   16,   0.0625]
  return
}
