// RUN: scan-opt %s -convert-to-llvm -reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   | FileCheck %s

// The tools the integration tests use: scan-opt lowers, mlir-runner runs with
// the wheel's runtime library (%mlir_lib_dir). A scan-free program, so this
// only checks the lit configuration.

// CHECK: 42
func.func private @printI64(i64)
func.func private @printNewline()

func.func @main() {
  %a = arith.constant 40 : i64
  %b = arith.constant 2 : i64
  %c = arith.addi %a, %b : i64
  call @printI64(%c) : (i64) -> ()
  call @printNewline() : () -> ()
  return
}
