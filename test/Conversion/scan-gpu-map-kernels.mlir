// RUN: scan-opt %s --split-input-file --scan-gpu-map-kernels --canonicalize | FileCheck %s

// Grid kernel: iteration i (of the 2-D loop, linearized, the last dimension
// fastest) runs on thread blockIdx.x * blockDim.x + threadIdx.x, if i is in
// range.
// CHECK-LABEL: func.func @grid
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[BDX:.*]] = %c128,
// CHECK: %[[B0:.*]] = arith.muli %[[BX]], %[[BDX]]
// CHECK: %[[LIN:.*]] = arith.addi %[[B0]], %[[TX]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LIN]], %{{.*}}
// CHECK: scf.if %[[IN]] {
// CHECK: %[[J:.*]] = arith.remui %[[LIN]], %c8
// CHECK: %[[Q:.*]] = arith.divui %[[LIN]], %c8
// CHECK: %[[I:.*]] = arith.remui %[[Q]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]]
// CHECK-NOT: scf.parallel
func.func @grid(%buf: memref<?x8xf32>, %n: index, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
      memref.store %s, %buf[%i, %j] : memref<?x8xf32>
      scf.reduce
    }
    gpu.terminator
  } {scan.kernel = "grid"}
  return
}

// -----

// Block kernel: the threads run the time loop together. Each parallel loop
// strides over them and ends with a barrier; the scalar write is thread 0's,
// after a barrier (the other threads have just read %acc) and before one;
// the value a thread-0 op yields reaches the others through workgroup
// memory.
// CHECK-LABEL: func.func @block
// CHECK: gpu.launch {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[BDX:.*]] = %c32,
// CHECK-SAME: workgroup(%[[SHARED:.*]] : memref<1xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %[[T:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK-NEXT: scf.for %{{.*}} = %[[TX]] to %c8 step %[[BDX]] {
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK: %[[SUM:.*]] = arith.addf
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[ZERO:.*]] = arith.cmpi eq, %[[TX]], %c0
// CHECK-NEXT: scf.if %[[ZERO]] {
// CHECK-NEXT: memref.store %[[SUM]]
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for %{{.*}} = %[[TX]] to %c8 step %[[BDX]] {
// CHECK: gpu.barrier
// CHECK: %[[ZERO2:.*]] = arith.cmpi eq, %[[TX]], %c0
// CHECK-NEXT: scf.if %[[ZERO2]] {
// CHECK: memref.store %{{.*}}, %[[SHARED]][%c0]
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[YALL:.*]] = memref.load %[[SHARED]][%c0]
// CHECK: scf.for %{{.*}} = %[[TX]] to %c8 step %[[BDX]] {
// CHECK: arith.mulf %{{.*}}, %[[YALL]]
func.func @block(%h: memref<8xf32>, %acc: memref<1xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    scf.for %t = %c0 to %n step %c1 {
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
        %v = memref.load %h[%i] : memref<8xf32>
        %w = arith.addf %v, %v : f32
        memref.store %w, %h[%i] : memref<8xf32>
        scf.reduce
      }
      %first = memref.load %h[%c0] : memref<8xf32>
      %old = memref.load %acc[%c0] : memref<1xf32>
      %sum = arith.addf %old, %first : f32
      memref.store %sum, %acc[%c0] : memref<1xf32>
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
        %v = memref.load %h[%i] : memref<8xf32>
        %w = arith.subf %v, %sum : f32
        memref.store %w, %h[%i] : memref<8xf32>
        scf.reduce
      }
      %big = arith.cmpf ogt, %sum, %first : f32
      %y = scf.if %big -> f32 {
        memref.store %first, %acc[%c0] : memref<1xf32>
        scf.yield %first : f32
      } else {
        scf.yield %sum : f32
      }
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
        %v = memref.load %h[%i] : memref<8xf32>
        %w = arith.mulf %v, %y : f32
        memref.store %w, %h[%i] : memref<8xf32>
        scf.reduce
      }
    }
    gpu.terminator
  } {scan.kernel = "block"}
  return
}

// -----

// Serial kernel: nested parallel loops become scf.for nests.
// CHECK-LABEL: func.func @serial
// CHECK: gpu.launch
// CHECK-NEXT: scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]]
func.func @serial(%m: memref<4x4xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
      memref.store %s, %m[%i, %j] : memref<4x4xf32>
      scf.reduce
    }
    gpu.terminator
  } {scan.kernel = "serial"}
  return
}
