// RUN: scan-opt %s --split-input-file --verify-diagnostics --scan-lower-parallel-calls | FileCheck %s

// A chunk function of scan-parallelize-linalg after convert-to-llvm (its
// memref arguments expanded into scalars) and a call asking for its chunks:
// the arguments go to stack slots allocated once in the caller's entry
// block, an entry function loads them back, and the run-time library runs
// the chunks.

// CHECK-LABEL: llvm.func internal @__mlir_scan_chunk0(
// CHECK-LABEL: llvm.func internal @__mlir_scan_chunk0_entry(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr, %[[LO:.*]]: i64, %[[HI:.*]]: i64)
// CHECK:         %[[S0:.*]] = llvm.getelementptr %[[CTX]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[P:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[S1:.*]] = llvm.getelementptr %[[CTX]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[N:.*]] = llvm.load %[[S1]] : !llvm.ptr -> i64
// CHECK:         %[[S2:.*]] = llvm.getelementptr %[[CTX]][2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[X:.*]] = llvm.load %[[S2]] : !llvm.ptr -> f32
// CHECK:         llvm.call @__mlir_scan_chunk0(%[[LO]], %[[HI]], %[[P]], %[[N]], %[[X]])
// CHECK-NOT:   @__mlir_scan_run_chunks0
// CHECK-LABEL: llvm.func @caller(
// CHECK:         %[[SLOTS:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64}
// CHECK:         llvm.br ^bb1
// CHECK:       ^bb1:
// CHECK:         llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK:         llvm.store %{{.*}}, %{{.*}} : i64, !llvm.ptr
// CHECK:         llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:         %[[FN:.*]] = llvm.mlir.addressof @__mlir_scan_chunk0_entry
// CHECK:         llvm.call @__mlir_scan_parallel_for(%{{.*}}, %{{.*}}, %{{.*}}, %[[FN]], %[[SLOTS]])
// CHECK:       llvm.func @__mlir_scan_parallel_for(i64, i64, i64, !llvm.ptr, !llvm.ptr)
module {
  llvm.func @__mlir_scan_chunk0(%lo: i64, %hi: i64, %p: !llvm.ptr, %n: i64, %x: f32) {
    llvm.return
  }
  llvm.func @__mlir_scan_run_chunks0(i64, i64, i64, !llvm.ptr, i64, f32)
  llvm.func @caller(%p: !llvm.ptr, %n: i64, %x: f32) {
    %lo = llvm.mlir.constant(0 : i64) : i64
    llvm.br ^bb1
  ^bb1:
    llvm.call @__mlir_scan_run_chunks0(%lo, %n, %n, %p, %n, %x) : (i64, i64, i64, !llvm.ptr, i64, f32) -> ()
    llvm.return
  }
}

// -----

// A call asking for parts of a reduction split (scan-parallelize-linalg's
// `@__mlir_scan_run_parts<N>`) goes to `__mlir_scan_parallel_parts`, which
// runs ranges of whole parts; the slots and the entry function are as above.

// CHECK-LABEL: llvm.func internal @__mlir_scan_chunk3_entry(
// CHECK:         llvm.call @__mlir_scan_chunk3(
// CHECK-NOT:   @__mlir_scan_run_parts3
// CHECK-LABEL: llvm.func @parts(
// CHECK:         %[[FN:.*]] = llvm.mlir.addressof @__mlir_scan_chunk3_entry
// CHECK:         llvm.call @__mlir_scan_parallel_parts(%{{.*}}, %{{.*}}, %{{.*}}, %[[FN]], %{{.*}})
// CHECK-NOT:     __mlir_scan_parallel_for
// CHECK:       llvm.func @__mlir_scan_parallel_parts(i64, i64, i64, !llvm.ptr, !llvm.ptr)
module {
  llvm.func @__mlir_scan_chunk3(%lo: i64, %hi: i64, %p: !llvm.ptr) {
    llvm.return
  }
  llvm.func @__mlir_scan_run_parts3(i64, i64, i64, !llvm.ptr)
  llvm.func @parts(%p: !llvm.ptr, %n: i64) {
    %lo = llvm.mlir.constant(0 : i64) : i64
    llvm.call @__mlir_scan_run_parts3(%lo, %n, %n, %p) : (i64, i64, i64, !llvm.ptr) -> ()
    llvm.return
  }
}

// -----

module {
  // expected-error @+1 {{scan-lower-parallel-calls: no chunk function @__mlir_scan_chunk7 for this declaration}}
  llvm.func @__mlir_scan_run_chunks7(i64, i64, i64)
}

// -----

module {
  // expected-error @+1 {{scan-lower-parallel-calls: an argument of type '!llvm.struct<(i64, i64)>' does not fit an 8-byte slot}}
  llvm.func @__mlir_scan_chunk1(%lo: i64, %hi: i64, %s: !llvm.struct<(i64, i64)>) {
    llvm.return
  }
  llvm.func @__mlir_scan_run_chunks1(i64, i64, i64, !llvm.struct<(i64, i64)>)
}
