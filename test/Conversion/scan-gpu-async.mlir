// RUN: scan-opt %s --split-input-file --scan-gpu-async | FileCheck %s

// One stream: each GPU op depends on the previous one, the token is carried
// through the host loop (no wait in the loop), and the host waits for the
// stream (mgpuStreamSynchronize on the stream the token lowers to) only
// before it reads what a copy wrote, and before the return, where the
// stream is destroyed.
// CHECK-LABEL: func.func @chain
// CHECK: %[[S:.*]] = gpu.wait async
// CHECK-NEXT: %[[D:.*]], %[[T0:.*]] = gpu.alloc async [%[[S]]] ()
// CHECK-NEXT: %[[T1:.*]] = gpu.memcpy async [%[[T0]]] %[[D]]
// CHECK-NEXT: %[[T2:.*]] = scf.for {{.*}} iter_args(%[[TI:.*]] = %[[T1]]) -> (!gpu.async.token) {
// CHECK-NEXT: %[[TL:.*]] = gpu.launch async [%[[TI]]]
// CHECK-NOT: mgpuStreamSynchronize
// CHECK: scf.yield %[[TL]] : !gpu.async.token
// CHECK-NEXT: }
// CHECK-NEXT: %[[H:.*]] = memref.alloca()
// CHECK-NEXT: %[[T3:.*]] = gpu.memcpy async [%[[T2]]] %[[H]], %[[D]]
// CHECK-NEXT: %[[P3:.*]] = builtin.unrealized_conversion_cast %[[T3]] : !gpu.async.token to !llvm.ptr
// CHECK-NEXT: llvm.call @mgpuStreamSynchronize(%[[P3]])
// CHECK-NEXT: %[[R:.*]] = memref.load %[[H]]
// CHECK-NEXT: %[[T4:.*]] = gpu.dealloc async [%[[T3]]] %[[D]]
// CHECK-NEXT: %[[P4:.*]] = builtin.unrealized_conversion_cast %[[T4]]
// CHECK-NEXT: llvm.call @mgpuStreamSynchronize(%[[P4]])
// CHECK-NEXT: %[[P5:.*]] = builtin.unrealized_conversion_cast %[[T4]]
// CHECK-NEXT: llvm.call @mgpuStreamDestroy(%[[P5]])
// CHECK-NEXT: return %[[R]]
func.func @chain(%n: index, %x: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = gpu.alloc () : memref<8xf32>
  gpu.memcpy %d, %x : memref<8xf32>, memref<8xf32>
  scf.for %t = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %d[%c0] : memref<8xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %d[%c0] : memref<8xf32>
      gpu.terminator
    }
  }
  %h = memref.alloca() : memref<8xf32>
  gpu.memcpy %h, %d : memref<8xf32>, memref<8xf32>
  %r = memref.load %h[%c0] : memref<8xf32>
  gpu.dealloc %d : memref<8xf32>
  return %r : f32
}

// -----

// scf.while: the token is an extra value of both regions; a host-mode
// `until` reads its flag back in the condition region, after a wait for the
// stream, which goes on. scf.if yields its branch's token.
// CHECK-LABEL: func.func @until
// CHECK: %[[W:.*]]:2 = scf.while (%{{.*}} = %{{.*}}, %[[TB:.*]] = %{{.*}}) : (index, !gpu.async.token) -> (index, !gpu.async.token)
// CHECK: %[[TC:.*]] = gpu.memcpy async [%[[TB]]]
// CHECK-NEXT: %[[PC:.*]] = builtin.unrealized_conversion_cast %[[TC]]
// CHECK-NEXT: llvm.call @mgpuStreamSynchronize(%[[PC]])
// CHECK-NEXT: memref.load
// CHECK: scf.condition(%{{.*}}) %{{.*}}, %[[TC]] : index, !gpu.async.token
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %[[TA:.*]]: !gpu.async.token):
// CHECK: %[[TIF:.*]] = scf.if %{{.*}} -> (!gpu.async.token) {
// CHECK-NEXT: %[[TK:.*]] = gpu.launch async [%[[TA]]]
// CHECK: scf.yield %[[TK]] : !gpu.async.token
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[TA]] : !gpu.async.token
// CHECK: scf.yield %{{.*}}, %[[TIF]] : index, !gpu.async.token
func.func @until(%flag: memref<1xi8>, %n: index, %p: i1) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %h = memref.alloca() : memref<1xi8>
  %r = scf.while (%t = %c0) : (index) -> index {
    gpu.memcpy %h, %flag : memref<1xi8>, memref<1xi8>
    %f = memref.load %h[%c0] : memref<1xi8>
    %z = arith.constant 0 : i8
    %go = arith.cmpi eq, %f, %z : i8
    %more = arith.cmpi slt, %t, %n : index
    %c = arith.andi %go, %more : i1
    scf.condition(%c) %t : index
  } do {
  ^bb0(%t: index):
    scf.if %p {
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
        %one = arith.constant 1 : i8
        memref.store %one, %flag[%c0] : memref<1xi8>
        gpu.terminator
      }
    }
    %next = arith.addi %t, %c1 : index
    scf.yield %next : index
  }
  return %r : index
}
