// RUN: scan-opt %s --split-input-file --scan-gpu-device-memory -verify-diagnostics | FileCheck %s

// Arguments are copied to the device once, at entry; the function's
// allocations are device allocations; the result is copied into a new host
// buffer, which is returned, and its device buffer is freed. An argument the
// function only reads is not copied back.
// CHECK-LABEL: func.func @scale
// CHECK-SAME: (%[[X:.*]]: memref<?xf32>, %[[S:.*]]: f32) -> memref<?xf32>
// CHECK: %[[N0:.*]] = memref.dim %[[X]]
// CHECK: %[[DX:.*]] = gpu.alloc  (%[[N0]]) : memref<?xf32>
// CHECK-NEXT: gpu.memcpy  %[[DX]], %[[X]]
// CHECK: %[[N:.*]] = memref.dim %[[DX]]
// CHECK: %[[Y:.*]] = gpu.alloc  (%[[N]]) : memref<?xf32>
// CHECK: linalg.generic {{.*}} ins(%[[DX]] : memref<?xf32>) outs(%[[Y]] : memref<?xf32>)
// CHECK: %[[TMP:.*]] = gpu.alloc  () : memref<4xf32>
// CHECK: gpu.dealloc  %[[TMP]]
// CHECK: %[[H:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK-NEXT: gpu.memcpy  %[[H]], %[[Y]]
// CHECK-NEXT: gpu.dealloc  %[[Y]]
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.dealloc  %[[DX]]
// CHECK-NEXT: return %[[H]]
func.func @scale(%x: memref<?xf32>, %s: f32) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %y = memref.alloc(%n) : memref<?xf32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  }
  %tmp = memref.alloc() : memref<4xf32>
  memref.dealloc %tmp : memref<4xf32>
  return %y : memref<?xf32>
}

// -----

// An argument written in place is copied back at the return; a global is
// copied in once, at entry; a copy between device buffers becomes a
// linalg.copy (a kernel later).
// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[B:.*]]: memref<3xf32>)
// CHECK: %[[G:.*]] = memref.get_global @table
// CHECK: %[[DG:.*]] = gpu.alloc  () : memref<3xf32>
// CHECK-NEXT: gpu.memcpy  %[[DG]], %[[G]]
// CHECK: %[[DB:.*]] = gpu.alloc  () : memref<3xf32>
// CHECK-NEXT: gpu.memcpy  %[[DB]], %[[B]]
// CHECK: linalg.copy ins(%[[DG]] : memref<3xf32>) outs(%[[DB]] : memref<3xf32>)
// CHECK: gpu.memcpy  %[[B]], %[[DB]]
// CHECK: gpu.dealloc  %[[DB]]
// CHECK: gpu.dealloc  %[[DG]]
// CHECK: return
memref.global "private" constant @table : memref<3xf32> = dense<[1.0, 2.0, 3.0]>
func.func @in_place(%b: memref<3xf32>) {
  %g = memref.get_global @table : memref<3xf32>
  memref.copy %g, %b : memref<3xf32> to memref<3xf32>
  return
}

// -----

// The arrays handed to a host function (the deallocation helper's
// bookkeeping) stay in host memory.
// CHECK-LABEL: func.func @bookkeeping
// CHECK: %[[P:.*]] = memref.alloc() : memref<2xindex>
// CHECK: call @helper(%[[P]])
// CHECK: memref.dealloc %[[P]]
func.func private @helper(memref<2xindex>)
func.func @bookkeeping(%i: index) {
  %p = memref.alloc() : memref<2xindex>
  %c0 = arith.constant 0 : index
  memref.store %i, %p[%c0] : memref<2xindex>
  call @helper(%p) : (memref<2xindex>) -> ()
  memref.dealloc %p : memref<2xindex>
  return
}

// -----

// expected-error @+1 {{scan-gpu-device-memory: argument #0 has type 'memref<4xf32, strided<[2]>>'; only memrefs with the identity layout can be copied to the device}}
func.func @strided(%x: memref<4xf32, strided<[2]>>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32, strided<[2]>>
  return %v : f32
}
