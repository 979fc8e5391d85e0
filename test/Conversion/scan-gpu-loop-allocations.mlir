// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(scan-gpu-loop-allocations))" | FileCheck %s

// The `until` loop of a scan whose step count is an argument, as
// convert-scan-to-scf and one-shot-bufferize leave it: its output buffer
// starts with min(n, 32768) rows and is grown (twice the rows, a copy) at
// the start of a step that finds it full. The outer loop keeps the growth;
// the inner loop runs the steps until the scan stops or the buffer is full,
// carries only the step index, and allocates nothing.
// CHECK-LABEL: func.func @grow
// CHECK: scf.while (%[[I:.*]] = %{{.*}}, %[[STOP:.*]] = %{{.*}}, %[[BUF:.*]] = %{{.*}}) : (index, i1, memref<?x8xf32>)
// CHECK: scf.condition
// CHECK: } do {
// CHECK: ^bb0(%[[I1:.*]]: index, %[[B1:.*]]: memref<?x8xf32>):
// CHECK: %[[DIM:.*]] = memref.dim %[[B1]]
// CHECK: %[[FULL:.*]] = arith.cmpi eq, %[[I1]], %[[DIM]]
// CHECK: %[[GROWN:.*]] = scf.if %[[FULL]] -> (memref<?x8xf32>) {
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK: }
// CHECK: %[[INNER:.*]]:2 = scf.while (%[[J:.*]] = %[[I1]]) : (index) -> (index, i1) {
// CHECK-NOT: memref.alloc
// CHECK: memref.subview %[[GROWN]][%[[J]], 0]
// CHECK: linalg.generic
// CHECK: %[[NEXT:.*]] = arith.addi %[[J]], %{{.*}} : index
// The next step runs here unless the scan stops or the buffer is full.
// CHECK: %[[GO:.*]] = scf.if %{{.*}} -> (i1) {
// CHECK: %[[D2:.*]] = memref.dim %[[GROWN]]
// CHECK: %[[AT:.*]] = arith.cmpi eq, %[[NEXT]], %[[D2]]
// CHECK: %[[ROOM:.*]] = arith.xori %[[AT]], %true
// CHECK: scf.yield %[[ROOM]] : i1
// CHECK: } else {
// CHECK: scf.yield %false : i1
// CHECK: }
// CHECK: scf.condition(%[[GO]]) %[[NEXT]], %{{.*}} : index, i1
// CHECK: } do {
// CHECK: }
// CHECK: scf.yield %[[INNER]]#0, %[[INNER]]#1, %[[GROWN]] : index, i1, memref<?x8xf32>
#map = affine_map<(d0) -> (d0)>
func.func @grow(%h0: memref<8xf32>, %limit: f32, %n: index) -> memref<?x8xf32> {
  %true = arith.constant true
  %false = arith.constant false
  %c-1 = arith.constant -1 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32768 = arith.constant 32768 : index
  %rows = arith.minsi %n, %c32768 : index
  %alloc = memref.alloc(%rows) : memref<?x8xf32>
  %r:2 = scf.while (%i = %c0, %stop = %false, %buf = %alloc) : (index, i1, memref<?x8xf32>) -> (index, memref<?x8xf32>) {
    %more = arith.cmpi slt, %i, %n : index
    %go = arith.xori %stop, %true : i1
    %c = arith.andi %more, %go : i1
    scf.condition(%c) %i, %buf : index, memref<?x8xf32>
  } do {
  ^bb0(%i: index, %buf: memref<?x8xf32>):
    %dim = memref.dim %buf, %c0 : memref<?x8xf32>
    %full = arith.cmpi eq, %i, %dim : index
    %grown = scf.if %full -> (memref<?x8xf32>) {
      %twice = arith.addi %dim, %dim : index
      %new = memref.alloc(%twice) : memref<?x8xf32>
      %to = memref.subview %new[0, 0] [%i, 8] [1, 1] : memref<?x8xf32> to memref<?x8xf32, strided<[8, 1]>>
      %from = memref.subview %buf[0, 0] [%i, 8] [1, 1] : memref<?x8xf32> to memref<?x8xf32, strided<[8, 1]>>
      memref.copy %from, %to : memref<?x8xf32, strided<[8, 1]>> to memref<?x8xf32, strided<[8, 1]>>
      scf.yield %new : memref<?x8xf32>
    } else {
      scf.yield %buf : memref<?x8xf32>
    }
    %first = arith.cmpi slt, %i, %c1 : index
    %prev = arith.addi %i, %c-1 : index
    %row = memref.subview %grown[%i, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%h0 : memref<8xf32>) outs(%row : memref<8xf32, strided<[1], offset: ?>>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    }
    %v = memref.load %row[%c0] : memref<8xf32, strided<[1], offset: ?>>
    %s = arith.cmpf ogt, %v, %limit : f32
    %next = arith.addi %i, %c1 : index
    scf.yield %next, %s, %grown : index, i1, memref<?x8xf32>
  }
  %out = memref.subview %r#1[0, 0] [%r#0, 8] [1, 1] : memref<?x8xf32> to memref<?x8xf32, strided<[8, 1]>>
  %res = memref.alloc(%r#0) : memref<?x8xf32>
  memref.copy %out, %res : memref<?x8xf32, strided<[8, 1]>> to memref<?x8xf32>
  return %res : memref<?x8xf32>
}

// -----

// A step that allocates after its growths (here: a temporary of dynamic
// size) would still allocate in the inner loop: the loop is left alone.
// CHECK-LABEL: func.func @allocating_step
// CHECK: scf.while
// CHECK-NOT: scf.while
// CHECK: return
func.func @allocating_step(%n: index) -> memref<?xf32> {
  %false = arith.constant false
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %alloc = memref.alloc(%n) : memref<?xf32>
  %r:2 = scf.while (%i = %c0, %buf = %alloc) : (index, memref<?xf32>) -> (index, memref<?xf32>) {
    %c = arith.cmpi slt, %i, %n : index
    scf.condition(%c) %i, %buf : index, memref<?xf32>
  } do {
  ^bb0(%i: index, %buf: memref<?xf32>):
    %dim = memref.dim %buf, %c0 : memref<?xf32>
    %full = arith.cmpi eq, %i, %dim : index
    %grown = scf.if %full -> (memref<?xf32>) {
      %new = memref.alloc(%n) : memref<?xf32>
      scf.yield %new : memref<?xf32>
    } else {
      scf.yield %buf : memref<?xf32>
    }
    %tmp = memref.alloc(%i) : memref<?xf32>
    memref.dealloc %tmp : memref<?xf32>
    %next = arith.addi %i, %c1 : index
    scf.yield %next, %grown : index, memref<?xf32>
  }
  return %r#1 : memref<?xf32>
}

// -----

// The zero row of an inner scan's `keep` output (used when no inner step
// ran), allocated in a branch of the outer step: a fixed size, or the size
// of an existing buffer, is allocated before the branch (buffer-loop-hoisting
// then takes it out of the loop). A size computed in the step stays in the
// branch, which may be what makes it valid.
// CHECK-LABEL: func.func @zero_rows
// CHECK: scf.for
// CHECK-DAG: %[[FIXED:.*]] = memref.alloc() : memref<4xf64>
// CHECK-DAG: %[[SAME:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// CHECK: scf.if
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%[[FIXED]] : memref<4xf64>)
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%[[SAME]] : memref<?xf64>)
// CHECK: %[[COMPUTED:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f64) outs(%[[COMPUTED]] : memref<?xf64>)
func.func @zero_rows(%n: index, %m: index, %v: memref<?xf64>, %out: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %len = memref.dim %v, %c0 : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %none = arith.cmpi slt, %m, %c0 : index
    scf.if %none {
      %fixed = memref.alloc() : memref<4xf64>
      linalg.fill ins(%zero : f64) outs(%fixed : memref<4xf64>)
      %same = memref.alloc(%len) : memref<?xf64>
      linalg.fill ins(%zero : f64) outs(%same : memref<?xf64>)
      %k = arith.subi %m, %i : index
      %computed = memref.alloc(%k) : memref<?xf64>
      linalg.fill ins(%zero : f64) outs(%computed : memref<?xf64>)
      memref.copy %same, %out : memref<?xf64> to memref<?xf64>
    }
  }
  return
}
