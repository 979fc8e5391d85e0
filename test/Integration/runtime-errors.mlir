// RUN: scan-opt %s --scan-to-llvm | not mlir-runner -e negative_steps -entry-point-result=void -shared-libs=%scan_runtime_lib,%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so 2>&1 | FileCheck %s --check-prefix=STEPS
// RUN: scan-opt %s --scan-to-llvm | not mlir-runner -e huge_buffer -entry-point-result=void -shared-libs=%scan_runtime_lib,%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: scan-opt %s --scan-to-llvm | not mlir-runner -e mismatch -entry-point-result=void -shared-libs=%scan_runtime_lib,%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so 2>&1 | FileCheck %s --check-prefix=VERIFY

// Outside Python, a failed run-time check prints its message and exits with
// status 1 (python/runtime/ScanRuntime.h); nothing is read or written out of
// bounds first.

func.func private @printMemrefF64(tensor<*xf64>) attributes {llvm.emit_c_interface}

func.func @count(%n: index) -> tensor<?xf64> {
  %x0 = arith.constant 0.0 : f64
  %r = scan.scan steps(%n) sitsot(%x0 : f64) {
  ^bb0(%p: f64):
    %c = arith.constant 1.0 : f64
    %x = arith.addf %p, %c : f64
    scan.yield %x : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// STEPS: mlir-scan: run-time error: scan: n_steps is -3, must be >= 0
// STEPS-NOT: Unranked
func.func @negative_steps() {
  %n = arith.constant -3 : index
  %r = call @count(%n) : (index) -> tensor<?xf64>
  %u = tensor.cast %r : tensor<?xf64> to tensor<*xf64>
  call @printMemrefF64(%u) : (tensor<*xf64>) -> ()
  return
}

// 2**61 + 1 rows of 8 bytes: the byte count wraps around 64 bits.
// HUGE: mlir-scan: run-time error: cannot allocate a buffer of shape (2305843009213693953) of 8-byte elements
func.func @huge_buffer() {
  %n = arith.constant 2305843009213693953 : index
  %r = call @count(%n) : (index) -> tensor<?xf64>
  %u = tensor.cast %r : tensor<?xf64> to tensor<*xf64>
  call @printMemrefF64(%u) : (tensor<*xf64>) -> ()
  return
}

// Run-time verification: the rows of %a have 3 elements, %b has 2; the
// message names the arith.mulf below (line 50, column 10).
// VERIFY: mlir-scan: run-time error: {{.*}}runtime-errors.mlir:50:10: dimension #0 of input/output operand #1 is incompatible with inferred dimension size
func.func @scale(%a: tensor<?x?xf64>, %b: tensor<?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x?xf64>
  %r = scan.scan steps(%n) sequences(%a : tensor<?x?xf64>) sitsot(%b : tensor<?xf64>) {
  ^bb0(%row: tensor<?xf64>, %acc: tensor<?xf64>):
    %m = arith.mulf %row, %acc : tensor<?xf64>
    scan.yield %m : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

func.func @mismatch() {
  %a = arith.constant dense<1.0> : tensor<4x3xf64>
  %b = arith.constant dense<2.0> : tensor<2xf64>
  %ad = tensor.cast %a : tensor<4x3xf64> to tensor<?x?xf64>
  %bd = tensor.cast %b : tensor<2xf64> to tensor<?xf64>
  %r = call @scale(%ad, %bd) : (tensor<?x?xf64>, tensor<?xf64>) -> tensor<?x?xf64>
  %u = tensor.cast %r : tensor<?x?xf64> to tensor<*xf64>
  call @printMemrefF64(%u) : (tensor<*xf64>) -> ()
  return
}
