// RUN: scan-opt %s --scan-lower-asserts | FileCheck %s

// scan-lower-asserts: a cf.assert becomes a call of the run-time library's
// failure function with the message as a constant string (upstream it
// would print and abort the process). A run-time verification message
// ("ERROR: Runtime op verification failed\n^ what\nLocation: loc(...)")
// is rewritten as "file:line:col: what"; other messages are kept. One global
// per distinct message.

// CHECK-DAG: llvm.mlir.global internal constant @[[MSG0:__mlir_scan_assert_message_[0-9]+]]("my message\00
// CHECK-DAG: llvm.mlir.global internal constant @[[MSG1:__mlir_scan_assert_message_[0-9]+]]("model.mlir:3:4: out-of-bounds access\00

// CHECK-LABEL: func.func @checks
// CHECK-SAME:      (%[[OK:.*]]: i1, %[[OK2:.*]]: i1)
// CHECK:         %[[BAD:.*]] = arith.xori %[[OK]], %true : i1
// CHECK:         scf.if %[[BAD]] {
// CHECK:           %[[P:.*]] = llvm.mlir.addressof @[[MSG0]] : !llvm.ptr
// CHECK:           func.call @__mlir_scan_fail_message(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK:         }
// CHECK:         scf.if
// CHECK:           llvm.mlir.addressof @[[MSG1]]
// CHECK:         scf.if
// CHECK:           llvm.mlir.addressof @[[MSG0]]
// CHECK-NOT:     cf.assert
// CHECK:         return
func.func @checks(%ok: i1, %ok2: i1) {
  cf.assert %ok, "my message"
  cf.assert %ok2, "ERROR: Runtime op verification failed\0A^ out-of-bounds access\0ALocation: loc(\22model.mlir\22:3:4)"
  cf.assert %ok2, "my message"
  return
}

// Device code is left alone: a kernel cannot call the run-time library
// (the GPU lowering turns its asserts into the device's own trap).
// CHECK-LABEL: gpu.module @kernels
// CHECK:         gpu.func @kernel
// CHECK-NEXT:      cf.assert %{{.*}}, "in a kernel"
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%ok: i1) kernel {
      cf.assert %ok, "in a kernel"
      gpu.return
    }
  }
}
// CHECK: func.func private @__mlir_scan_fail_message(!llvm.ptr)
