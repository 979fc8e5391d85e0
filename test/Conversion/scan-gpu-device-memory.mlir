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

// -----

// A call of a host function that takes a device buffer (or a cast of one:
// here the device copy of an argument) gets a host copy, copied back after
// the call (the callee may write it; so the argument is copied back too).
// A buffer that only host functions see stays host memory.
// CHECK-LABEL: func.func @host_call
// CHECK-SAME: (%[[X:.*]]: memref<4xf64>)
// CHECK: %[[D:.*]] = gpu.alloc  () : memref<4xf64>
// CHECK-NEXT: gpu.memcpy  %[[D]], %[[X]]
// CHECK: %[[H:.*]] = memref.alloc() : memref<4xf64>
// CHECK-NEXT: gpu.memcpy  %[[H]], %[[D]]
// CHECK-NEXT: %[[U:.*]] = memref.cast %[[H]] : memref<4xf64> to memref<*xf64>
// CHECK-NEXT: call @print(%[[U]])
// CHECK-NEXT: gpu.memcpy  %[[D]], %[[H]]
// CHECK-NEXT: memref.dealloc %[[H]]
// CHECK: %[[HOSTONLY:.*]] = memref.alloc() : memref<2xf64>
// CHECK: call @print(%{{.*}})
// CHECK: gpu.memcpy  %[[X]], %[[D]]
// CHECK-NEXT: gpu.dealloc  %[[D]]
func.func private @print(memref<*xf64>)
func.func @host_call(%x: memref<4xf64>) {
  %u = memref.cast %x : memref<4xf64> to memref<*xf64>
  call @print(%u) : (memref<*xf64>) -> ()
  %b = memref.alloc() : memref<2xf64>
  %v = memref.cast %b : memref<2xf64> to memref<*xf64>
  call @print(%v) : (memref<*xf64>) -> ()
  memref.dealloc %b : memref<2xf64>
  return
}

// -----

// A copy between a device buffer and a host buffer (one handed to a host
// function) is a gpu.memcpy.
// CHECK-LABEL: func.func @to_host_buffer
// CHECK: %[[D:.*]] = gpu.alloc  () : memref<4xf64>
// CHECK: %[[H:.*]] = memref.alloc() : memref<4xf64>
// CHECK: gpu.memcpy  %[[H]], %[[D]]
// CHECK-NOT: memref.copy
func.func private @consume(memref<4xf64>)
func.func @to_host_buffer(%x: f64) {
  %b = memref.alloc() : memref<4xf64>
  linalg.fill ins(%x : f64) outs(%b : memref<4xf64>)
  %h = memref.alloc() : memref<4xf64>
  memref.copy %b, %h : memref<4xf64> to memref<4xf64>
  call @consume(%h) : (memref<4xf64>) -> ()
  memref.dealloc %b : memref<4xf64>
  memref.dealloc %h : memref<4xf64>
  return
}

// -----

func.func private @make(memref<4xf64>) -> memref<4xf64>
func.func @returns_buffer(%x: memref<4xf64>) -> f64 {
  // expected-error @+1 {{scan-gpu-device-memory: a call of a host function that returns a buffer ('memref<4xf64>') and takes device memory}}
  %r = call @make(%x) : (memref<4xf64>) -> memref<4xf64>
  %c0 = arith.constant 0 : index
  %v = memref.load %r[%c0] : memref<4xf64>
  return %v : f64
}
