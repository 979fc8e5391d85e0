// RUN: scan-opt %s --split-input-file --scan-gpu-emulate -verify-diagnostics | FileCheck %s

// Device memory becomes host memory; a grid kernel runs its blocks and
// threads in turn, a block kernel one thread (blockDim.x = 1); barriers go.
// CHECK-LABEL: func.func @kernels
// CHECK: %[[D:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT: memref.copy %{{.*}}, %[[D]]
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %[[GRID:.*]] step
// CHECK-NEXT: scf.for %[[T:.*]] = %{{.*}} to %[[THREADS:.*]] step
// CHECK-NEXT: arith.muli %[[B]], %[[THREADS]]
// CHECK: %[[SHARED:.*]] = memref.alloca() : memref<1xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-NEXT: scf.for %[[T1:.*]] = %{{.*}} to %[[ONE:.*]] step
// CHECK-NEXT: scf.for %{{.*}} = %[[T1]] to %{{.*}} step %[[ONE]]
// CHECK-NOT: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[SHARED]]
// CHECK-NOT: gpu.
// CHECK: memref.dealloc %[[D]]
func.func @kernels(%x: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %d = gpu.alloc () : memref<8xf32>
  gpu.memcpy %d, %x : memref<8xf32>, memref<8xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %i = arith.muli %bx, %sx : index
    %j = arith.addi %i, %tx : index
    %in = arith.cmpi ult, %j, %c8 : index
    scf.if %in {
      %v = memref.load %d[%j] : memref<8xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %d[%j] : memref<8xf32>
    }
    gpu.terminator
  } {scan.kernel = "grid"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%shared : memref<1xf32, #gpu.address_space<workgroup>>) {
    scf.for %k = %tx to %c8 step %sx {
      %v = memref.load %d[%k] : memref<8xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %d[%k] : memref<8xf32>
    }
    gpu.barrier
    %z = arith.cmpi eq, %tx, %c0 : index
    scf.if %z {
      %v = memref.load %d[%c0] : memref<8xf32>
      memref.store %v, %shared[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    gpu.terminator
  } {scan.kernel = "block"}
  gpu.memcpy %x, %d : memref<8xf32>, memref<8xf32>
  gpu.dealloc %d : memref<8xf32>
  return
}

// -----

func.func @foreign(%d: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{scan-gpu-emulate: only the kernels of scan-gpu-form-kernels can be emulated}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
