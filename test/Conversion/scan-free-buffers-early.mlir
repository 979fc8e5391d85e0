// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(scan-free-buffers-early))" | FileCheck %s

// A temporary read by the first loop only is freed when that loop ends, not
// at the end of the function: the second loop's buffer can take its memory.

// CHECK-LABEL: func.func @two_phases(
// CHECK:         %[[XU:.*]] = memref.alloc(
// CHECK:         scf.for
// CHECK:           memref.load %[[XU]]
// CHECK:         }
// CHECK-NEXT:    memref.dealloc %[[XU]]
// CHECK-NEXT:    %[[D:.*]] = memref.alloc(
// CHECK:         scf.for
// CHECK:         }
// CHECK-NEXT:    memref.dealloc %[[D]]
// CHECK-NEXT:    return
func.func @two_phases(%n: index, %out: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %xu = memref.alloc(%n) : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %xu[%i] : memref<?xf64>
    memref.store %v, %out[%i] : memref<?xf64>
  }
  %d = memref.alloc(%n) : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %out[%i] : memref<?xf64>
    memref.store %v, %d[%i] : memref<?xf64>
  }
  memref.dealloc %xu : memref<?xf64>
  memref.dealloc %d : memref<?xf64>
  return
}

// -----

// A view counts as the buffer: freed after the view's last use. So does a
// value that may be the buffer (an scf.if that yields it or another one).

// CHECK-LABEL: func.func @views(
// CHECK:         %[[A:.*]] = memref.alloc(
// CHECK:         %[[B:.*]] = memref.alloc(
// CHECK:         %[[S:.*]] = memref.subview %[[A]]
// CHECK:         %[[P:.*]] = scf.if
// CHECK:         memref.copy %[[P]], %{{.*}}
// CHECK-NEXT:    memref.dealloc %[[B]]
// CHECK-NEXT:    memref.copy %[[S]], %{{.*}}
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    %[[N:.*]] = arith.addi
// CHECK-NEXT:    return %[[N]]
func.func @views(%n: index, %c: i1, %out: memref<4xf64>, %out2: memref<8xf64>) -> index {
  %a = memref.alloc() : memref<8xf64>
  %b = memref.alloc() : memref<8xf64>
  %s = memref.subview %a[2] [4] [1] : memref<8xf64> to memref<4xf64, strided<[1], offset: 2>>
  %p = scf.if %c -> memref<8xf64> {
    scf.yield %a : memref<8xf64>
  } else {
    scf.yield %b : memref<8xf64>
  }
  memref.copy %p, %out2 : memref<8xf64> to memref<8xf64>
  memref.copy %s, %out : memref<4xf64, strided<[1], offset: 2>> to memref<4xf64>
  %m = arith.addi %n, %n : index
  memref.dealloc %a : memref<8xf64>
  memref.dealloc %b : memref<8xf64>
  return %m : index
}

// -----

// A buffer nothing uses is freed right after its allocation; one used in a
// nested region is freed after the op that holds the region.

// CHECK-LABEL: func.func @unused_and_nested(
// CHECK:         %[[U:.*]] = memref.alloc()
// CHECK-NEXT:    memref.dealloc %[[U]]
// CHECK:         %[[T:.*]] = memref.alloc()
// CHECK:         scf.if
// CHECK:           memref.store %{{.*}}, %[[T]]
// CHECK:         }
// CHECK-NEXT:    memref.dealloc %[[T]]
// CHECK:         arith.addf
func.func @unused_and_nested(%c: i1, %x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %u = memref.alloc() : memref<16xf64>
  %t = memref.alloc() : memref<16xf64>
  scf.if %c {
    memref.store %x, %t[%c0] : memref<16xf64>
  }
  %y = arith.addf %x, %x : f64
  memref.dealloc %u : memref<16xf64>
  memref.dealloc %t : memref<16xf64>
  return %y : f64
}

// -----

// Left where they are: a buffer whose address is taken (a later op could
// read through it), a freed value that is not an allocation (the base of a
// view, which the analysis does not relate to the allocation), and a
// buffer used after the block of its dealloc.

// CHECK-LABEL: func.func @left_alone(
// CHECK:         memref.extract_aligned_pointer_as_index
// CHECK:         arith.addi
// CHECK-NEXT:    memref.dealloc %{{.*}} : memref<8xf64>
// CHECK-NEXT:    memref.dealloc %{{.*}} : memref<f64>
// CHECK-NEXT:    return
func.func @left_alone(%n: index, %v: memref<8xf64, strided<[1], offset: ?>>) -> index {
  %a = memref.alloc() : memref<8xf64>
  %p = memref.extract_aligned_pointer_as_index %a : memref<8xf64> -> index
  %base, %off, %size, %stride = memref.extract_strided_metadata %v : memref<8xf64, strided<[1], offset: ?>> -> memref<f64>, index, index, index
  %m = arith.addi %p, %n : index
  memref.dealloc %a : memref<8xf64>
  memref.dealloc %base : memref<f64>
  return %m : index
}

// CHECK-LABEL: func.func @used_in_another_block(
// CHECK:         scf.for
// CHECK:           memref.dealloc
// CHECK-NEXT:    }
func.func @used_in_another_block(%n: index, %out: memref<8xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<8xf64>
  scf.for %i = %c0 to %n step %c1 {
    memref.copy %a, %out : memref<8xf64> to memref<8xf64>
    memref.dealloc %a : memref<8xf64>
  }
  return
}
