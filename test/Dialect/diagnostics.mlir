// RUN: not scan-opt %s 2>&1 | FileCheck %s

// scan-opt exits non-zero on an invalid scan and prints a diagnostic located
// at the op in this file (SPEC §7), followed by the op in generic form.

// CHECK: diagnostics.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'scan.scan' op mitsot #0: init has 1 rows but taps [-2, -1] need 2
// CHECK-NEXT: %r = scan.scan steps(%n) mitsot(%x0[-2, -1] : tensor<1xf32>) {
// CHECK: note: see current operation:
// CHECK: "scan.scan"
func.func @f(%n: index, %x0: tensor<1xf32>) {
  %r = scan.scan steps(%n) mitsot(%x0[-2, -1] : tensor<1xf32>) {
  ^bb0(%a: f32, %b: f32):
    scan.yield %b : f32
  } -> (tensor<?xf32>)
  return
}
