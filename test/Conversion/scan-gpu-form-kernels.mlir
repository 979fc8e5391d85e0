// RUN: scan-opt %s --split-input-file --scan-gpu-form-kernels=mode=host --canonicalize | FileCheck %s --check-prefix=HOST
// RUN: scan-opt %s --split-input-file --scan-gpu-form-kernels=mode=kernel --canonicalize | FileCheck %s --check-prefix=KERNEL
// RUN: scan-opt %s --split-input-file --scan-gpu-form-kernels --canonicalize | FileCheck %s --check-prefix=AUTO
// RUN: scan-opt %s --split-input-file --scan-gpu-form-kernels=kernel-limit=4 --canonicalize | FileCheck %s --check-prefix=HOST

// A time loop whose step has parallel work (8 iterations). Host mode: the
// host runs the loop, the parallel loop is a grid kernel launched in every
// step. Kernel mode (and auto: 8 <= kernel-limit): one block of 32 threads
// runs the whole loop. kernel-limit=4 makes auto choose the host.
// HOST-LABEL: func.func @steps
// HOST: scf.for
// HOST-NEXT: gpu.launch
// HOST-SAME: threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c128
// HOST-NEXT: scf.parallel
// HOST: } {scan.kernel = "grid"}
// HOST-NEXT: }
// HOST-NEXT: gpu.dealloc
// KERNEL-LABEL: func.func @steps
// KERNEL: gpu.launch
// KERNEL-SAME: in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c32,
// KERNEL-NEXT: scf.for
// KERNEL-NEXT: scf.parallel
// KERNEL: } {scan.kernel = "block"}
// AUTO-LABEL: func.func @steps
// AUTO: } {scan.kernel = "block"}
func.func @steps(%n: index, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %buf = gpu.alloc () : memref<8xf32>
  scf.for %t = %c0 to %n step %c1 {
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %buf[%i] : memref<8xf32>
      %w = arith.addf %v, %s : f32
      memref.store %w, %buf[%i] : memref<8xf32>
      scf.reduce
    }
  }
  gpu.dealloc %buf : memref<8xf32>
  return
}

// -----

// A scalar state next to the parallel work. Host mode: the host loop cannot
// carry a value the device computes, so it lives in a device cell (a view of
// the per-call arena) for the whole loop: stored before the loop, read and
// written by a serial kernel in every step, read back once after the loop
// for the return. No copy in the loop.
// HOST-LABEL: func.func @mixed
// HOST-SAME: (%[[N:.*]]: index, %[[X0:.*]]: f32)
// HOST: %[[HOSTCELLS:.*]] = memref.alloca() : memref<8xi8>
// HOST: %[[HCELL:.*]] = memref.view %[[HOSTCELLS]]
// HOST: %[[ARENA:.*]] = gpu.alloc  (%{{.*}}) : memref<?xi8>
// HOST: %[[CELL:.*]] = memref.view %[[ARENA]]{{.*}} to memref<1xf32>
// HOST: gpu.launch
// HOST-NEXT: memref.store %[[X0]], %[[CELL]]
// HOST: } {scan.kernel = "serial"}
// HOST: scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} {
// HOST-NOT: gpu.memcpy
// HOST: } {scan.kernel = "grid"}
// HOST-NOT: gpu.memcpy
// HOST: memref.load %[[CELL]]
// HOST: arith.addf
// HOST: memref.store %{{.*}}, %[[CELL]]
// HOST: } {scan.kernel = "serial"}
// HOST-NEXT: }
// HOST: gpu.memcpy  %[[HCELL]], %[[CELL]]
// HOST-NEXT: %[[R:.*]] = memref.load %[[HCELL]]
// HOST: gpu.dealloc  %[[ARENA]]
// HOST-NEXT: return %[[R]] : f32
//
// Kernel mode: the loop and its iteration value are in the kernel; the
// result leaves it through a cell.
// KERNEL-LABEL: func.func @mixed
// KERNEL: gpu.launch
// KERNEL: %[[R:.*]] = scf.for {{.*}} -> (f32)
// KERNEL: memref.store %[[R]]
// KERNEL: } {scan.kernel = "block"}
// KERNEL-NEXT: gpu.memcpy
func.func @mixed(%n: index, %x0: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  %buf = gpu.alloc () : memref<8xf32>
  %r = scf.for %t = %c0 to %n step %c1 iter_args(%acc = %x0) -> (f32) {
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %buf[%i] : memref<8xf32>
      %w = arith.addf %v, %one : f32
      memref.store %w, %buf[%i] : memref<8xf32>
      scf.reduce
    }
    %v = memref.load %buf[%c0] : memref<8xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  gpu.dealloc %buf : memref<8xf32>
  return %r : f32
}

// -----

// Error reports. A check the host can make (on `%n`) stays a host call. One
// the device makes (on a loaded value, inside a serial kernel) records the
// callee and its arguments in the zeroed device error word; the host reads
// the word back before the return and makes the recorded call.
// HOST-LABEL: func.func @report
// HOST: %[[WORD:.*]] = memref.view %{{.*}} to memref<5xi64>
// HOST: gpu.memset
// HOST: scf.if
// HOST-NEXT: arith.index_cast
// HOST-NEXT: func.call @__mlir_scan_fail
// HOST: gpu.launch
// HOST: scf.for
// HOST: scf.if
// HOST: memref.load %[[WORD]]
// HOST: scf.if
// HOST-NOT: func.call
// HOST: memref.store %{{.*}}, %[[WORD]]
// HOST: } {scan.kernel = "serial"}
// HOST: gpu.memcpy  %[[HOSTWORD:.*]], %[[WORD]]
// HOST: %[[ID:.*]] = memref.load %[[HOSTWORD]]
// HOST: scf.if
// HOST: func.call @__mlir_scan_fail
// HOST: return
func.func private @__mlir_scan_fail(i64, i64, i64, i64)
func.func @report(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %neg = arith.cmpi slt, %n, %c0 : index
  scf.if %neg {
    %ni = arith.index_cast %n : index to i64
    func.call @__mlir_scan_fail(%c1_i64, %c0_i64, %ni, %c0_i64) : (i64, i64, i64, i64) -> ()
  }
  %buf = gpu.alloc (%n) : memref<?xi64>
  scf.for %t = %c0 to %n step %c1 {
    %v = memref.load %buf[%t] : memref<?xi64>
    %bad = arith.cmpi slt, %v, %c0_i64 : i64
    scf.if %bad {
      func.call @__mlir_scan_fail(%c1_i64, %c0_i64, %v, %c0_i64) : (i64, i64, i64, i64) -> ()
    }
  }
  gpu.dealloc %buf : memref<?xi64>
  return
}
