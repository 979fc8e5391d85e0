// RUN: scan-opt %s --convert-scan-to-scf --canonicalize | FileCheck %s
// RUN: scan-opt %s --convert-scan-to-scf="private-nonsequences=0" --canonicalize | FileCheck %s --check-prefix=NOPRIV

// Scalar SITSOT over a reversed sequence: the state is an iter_arg, each step
// stores its row into the output buffer, the sequence is read at L-1-t.

// CHECK-LABEL: func.func @sitsot_scalar_backwards
// CHECK-SAME:    (%[[XS:[^:]*]]: tensor<?xf64>, %[[X0:[^:]*]]: f64)
// CHECK:         call @__mlir_scan_fail
// CHECK:         %[[N:.*]] = arith.select
// CHECK:         %[[BUF:.*]] = memref.alloc(%[[N]]) {{.*}} : memref<?xf64>
// CHECK:         scf.for %[[T:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[X0]]) -> (f64)
// CHECK:           %[[LAST:.*]] = arith.subi %{{.*}}, %c1
// CHECK:           %[[ROW:.*]] = arith.subi %[[LAST]], %[[T]]
// CHECK:           %[[X:.*]] = tensor.extract %[[XS]][%[[ROW]]]
// CHECK:           %[[S:.*]] = arith.addf %[[ACC]], %[[X]]
// CHECK:           memref.store %[[S]], %[[BUF]][%[[T]]]
// CHECK:           scf.yield %[[S]] : f64
// CHECK:         %[[R:.*]] = bufferization.to_tensor %[[BUF]] restrict
// CHECK:         return %[[R]]
func.func @sitsot_scalar_backwards(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %r = scan.scan steps(%n) go_backwards sequences(%xs : tensor<?xf64>) sitsot(%x0 : f64) {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// Scalar MITSOT with taps [-2, -1]: a shift register of two iter_args.

// CHECK-LABEL: func.func @mitsot_scalar
// CHECK:         %[[A0:.*]] = tensor.extract %{{.*}}[%c0] : tensor<2xi64>
// CHECK:         %[[B0:.*]] = tensor.extract %{{.*}}[%c1] : tensor<2xi64>
// CHECK:         scf.for %[[T:.*]] = {{.*}} iter_args(%[[A:.*]] = %[[A0]], %[[B:.*]] = %[[B0]]) -> (i64, i64)
// CHECK:           %[[S:.*]] = arith.addi %[[A]], %[[B]]
// CHECK:           memref.store %[[S]], %{{.*}}[%[[T]]]
// CHECK:           scf.yield %[[B]], %[[S]] : i64, i64
func.func @mitsot_scalar(%n: index, %init: tensor<2xi64>) -> tensor<?xi64> {
  %r = scan.scan steps(%n) mitsot(%init[-2, -1] : tensor<2xi64>) {
  ^bb0(%a: i64, %b: i64):
    %s = arith.addi %a, %b : i64
    scan.yield %s : i64
  } -> (tensor<?xi64>)
  return %r : tensor<?xi64>
}

// Sequence taps [-2, 0, 1]: lo = -2, so the taps read rows t, t+2 and t+3.

// CHECK-LABEL: func.func @sequence_taps
// CHECK-SAME:    (%[[XS:[^:]*]]: tensor<?x4xf32>
// CHECK:         scf.for %[[T:[^ ]*]] =
// CHECK-DAG:       tensor.extract_slice %[[XS]][%[[T]], 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<4xf32>
// CHECK-DAG:       %[[T2:.*]] = arith.addi %[[T]], %c2
// CHECK-DAG:       %[[T3:.*]] = arith.addi %[[T]], %c3
// CHECK-DAG:       tensor.extract_slice %[[XS]][%[[T2]], 0] [1, 4] [1, 1]
// CHECK-DAG:       tensor.extract_slice %[[XS]][%[[T3]], 0] [1, 4] [1, 1]
// CHECK:           bufferization.materialize_in_destination %{{.*}} in restrict writable
func.func @sequence_taps(%xs: tensor<?x4xf32>, %n: index) -> tensor<?x4xf32> {
  %r = scan.scan steps(%n) sequences(%xs[-2, 0, 1] : tensor<?x4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
    %s = arith.addf %a, %b : tensor<4xf32>
    %t = arith.mulf %s, %c : tensor<4xf32>
    scan.yield %t : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return %r : tensor<?x4xf32>
}

// Tensor SITSOT: the init is copied (once, if the loop runs) into a one-row
// buffer laid out like the output rows, so that both branches below read a
// unit-stride row view; step 0 reads that copy, later steps a restrict view of
// row t-1; the new state is materialized into row t, after the body.

// CHECK-LABEL: func.func @sitsot_tensor
// CHECK-SAME:    (%[[H0:[^:]*]]: tensor<16xf32>
// CHECK:         %[[BUF:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x16xf32>
// CHECK:         %[[INIT:.*]] = memref.alloc() {{.*}} : memref<1x16xf32>
// CHECK:         scf.if
// CHECK:           memref.subview %[[INIT]][0, 0] [1, 16] [1, 1]
// CHECK:           bufferization.materialize_in_destination %[[H0]] in restrict writable
// CHECK:         scf.for %[[T:[^ ]*]] =
// CHECK:           %[[FIRST:.*]] = arith.cmpi slt, %[[T]], %c1
// CHECK:           %[[H:.*]] = scf.if %[[FIRST]] -> (tensor<16xf32>) {
// CHECK:             %[[IV:.*]] = memref.subview %[[INIT]][%[[T]], 0] [1, 16] [1, 1] : memref<1x16xf32> to memref<16xf32, strided<[1], offset: ?>>
// CHECK:             %[[IROW:.*]] = bufferization.to_tensor %[[IV]] restrict
// CHECK:             scf.yield %[[IROW]]
// CHECK:           } else {
// CHECK:             %[[PREV:.*]] = arith.addi %[[T]], %c-1
// CHECK:             %[[VIEW:.*]] = memref.subview %[[BUF]][%[[PREV]], 0] [1, 16] [1, 1]
// CHECK:             %[[ROW:.*]] = bufferization.to_tensor %[[VIEW]] restrict
// CHECK:             scf.yield %[[ROW]]
// CHECK:           linalg.vecmat ins(%[[H]],
// CHECK:           %[[DEST:.*]] = memref.subview %[[BUF]][%[[T]], 0] [1, 16] [1, 1]
// CHECK:           bufferization.materialize_in_destination %{{.*}} in restrict writable %[[DEST]]
func.func @sitsot_tensor(%h0: tensor<16xf32>, %W: tensor<16x16xf32>, %n: index) -> tensor<?x16xf32> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<16xf32>) nonsequences(%W : tensor<16x16xf32>) {
  ^bb0(%h: tensor<16xf32>, %w: tensor<16x16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %z = arith.constant 0.0 : f32
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %a = linalg.vecmat ins(%h, %w : tensor<16xf32>, tensor<16x16xf32>) outs(%f : tensor<16xf32>) -> tensor<16xf32>
    %t = math.tanh %a : tensor<16xf32>
    scan.yield %t : tensor<16xf32>
  } -> (tensor<?x16xf32>)
  return %r : tensor<?x16xf32>
}

// MITMOT with in taps [0, 1] and out tap [0]: the operand is copied once;
// the in tap 0 row is overwritten by the out tap, so it is read from a copy.

// CHECK-LABEL: func.func @mitmot
// CHECK-SAME:    (%[[G:[^:]*]]: tensor<?x8xf64>
// CHECK:         %[[BUF:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x8xf64>
// CHECK:         bufferization.materialize_in_destination %[[G]] in restrict writable %[[BUF]]
// CHECK:         %[[SCRATCH:.*]] = memref.alloc() {{.*}} : memref<8xf64>
// CHECK:         scf.for %[[T:[^ ]*]] =
// CHECK:           %[[ROW0:.*]] = memref.subview %[[BUF]][%[[T]], 0]
// CHECK:           memref.copy %[[ROW0]], %[[SCRATCH]]
// CHECK:           bufferization.to_tensor %[[SCRATCH]] restrict
// CHECK:           %[[T1:.*]] = arith.addi %[[T]], %c1
// CHECK:           memref.subview %[[BUF]][%[[T1]], 0]
// CHECK:           bufferization.materialize_in_destination {{.*}} in restrict writable
// CHECK:         bufferization.to_tensor %[[BUF]] restrict
func.func @mitmot(%g: tensor<?x8xf64>, %xs: tensor<?x8xf64>, %n: index) -> tensor<?x8xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x8xf64>) mitmot(%g[0, 1] -> [0] : tensor<?x8xf64>) {
  ^bb0(%x: tensor<8xf64>, %g0: tensor<8xf64>, %g1: tensor<8xf64>):
    %s = arith.addf %g0, %g1 : tensor<8xf64>
    %t = arith.mulf %s, %x : tensor<8xf64>
    scan.yield %t : tensor<8xf64>
  } -> (tensor<?x8xf64>)
  return %r : tensor<?x8xf64>
}

// MITMOT taps [0, 1] -> [1], the gradient of a state: the row in tap 1 reads
// is the row out tap 1 writes, and its only reader is the elementwise op that
// computes the new row. That op writes into the row (it becomes the op's
// destination), which is read in place: no copy, no scratch row.

// CHECK-LABEL: func.func @mitmot_row_updated_in_place
// CHECK-NOT:     memref.alloc() {{.*}} : memref<8xf64>
// CHECK:         scf.for %[[T:[^ ]*]] =
// CHECK-NOT:       memref.copy
// CHECK:           %[[T1:.*]] = arith.addi %[[T]], %c1
// CHECK:           %[[ROW:.*]] = memref.subview %{{.*}}[%[[T1]], 0]
// CHECK:           %[[G1:.*]] = bufferization.to_tensor %[[ROW]] restrict writable
// CHECK:           linalg.generic {{.*}} ins(%[[G1]], %{{.*}} : tensor<8xf64>, tensor<8xf64>) outs(%[[G1]] : tensor<8xf64>)
// CHECK-NOT:       memref.copy
// CHECK:           bufferization.materialize_in_destination {{.*}} in restrict writable
// CHECK:         }
func.func @mitmot_row_updated_in_place(%g: tensor<?x8xf64>, %xs: tensor<?x8xf64>, %n: index) -> tensor<?x8xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x8xf64>) mitmot(%g[0, 1] -> [1] : tensor<?x8xf64>) {
  ^bb0(%x: tensor<8xf64>, %g0: tensor<8xf64>, %g1: tensor<8xf64>):
    %d = arith.mulf %g0, %x : tensor<8xf64>
    %e = tensor.empty() : tensor<8xf64>
    %u = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                         iterator_types = ["parallel"]}
        ins(%g1, %d : tensor<8xf64>, tensor<8xf64>) outs(%e : tensor<8xf64>) {
    ^bb0(%a: f64, %b: f64, %c: f64):
      %s = arith.addf %a, %b : f64
      linalg.yield %s : f64
    } -> tensor<8xf64>
    scan.yield %u : tensor<8xf64>
  } -> (tensor<?x8xf64>)
  return %r : tensor<?x8xf64>
}

// keep [1] on a tensor state: a ring of max(1, K+1) = 2 rows indexed t mod 2,
// rotated into the result after the loop.

// CHECK-LABEL: func.func @keep_ring
// CHECK:         %[[RING:.*]] = memref.alloc() {{.*}} : memref<2x16xf32>
// CHECK:         scf.for %[[T:[^ ]*]] =
// CHECK:             %[[PREV:.*]] = arith.addi %[[T]], %c-1
// CHECK:             %[[PSLOT:.*]] = arith.remui %[[PREV]], %c2
// CHECK:             memref.subview %[[RING]][%[[PSLOT]], 0]
// CHECK:           %[[SLOT:.*]] = arith.remui %[[T]], %c2
// CHECK:           %[[DEST:.*]] = memref.subview %[[RING]][%[[SLOT]], 0]
// CHECK:           bufferization.materialize_in_destination %{{.*}} in restrict writable %[[DEST]]
// CHECK:         tensor.empty() : tensor<1x16xf32>
// CHECK:         arith.remui
// CHECK:         tensor.insert_slice {{.*}} into {{.*}} : tensor<16xf32> into tensor<1x16xf32>
func.func @keep_ring(%h0: tensor<16xf32>, %W: tensor<16x16xf32>, %n: index) -> tensor<1x16xf32> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<16xf32>) nonsequences(%W : tensor<16x16xf32>) keep [1] {
  ^bb0(%h: tensor<16xf32>, %w: tensor<16x16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %z = arith.constant 0.0 : f32
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %a = linalg.vecmat ins(%h, %w : tensor<16xf32>, tensor<16x16xf32>) outs(%f : tensor<16xf32>) -> tensor<16xf32>
    scan.yield %a : tensor<16xf32>
  } -> (tensor<1x16xf32>)
  return %r : tensor<1x16xf32>
}

// keep [1] on a tensor state that the step only reads to compute the new
// one, element by element (an accumulator `acc + x_t`): one row, loaded with
// the init before the loop and updated in place; the step's add computes
// into the row itself (no ring, no copy of the init into a second buffer).

// CHECK-LABEL: func.func @keep_accumulator_in_place
// CHECK:         %[[ROW:.*]] = memref.alloc() {{.*}} : memref<1x16xf32>
// CHECK:         scf.if
// CHECK:           bufferization.materialize_in_destination %arg0 in restrict writable
// CHECK:         scf.for
// CHECK:           memref.subview %[[ROW]][0, 0]
// CHECK:           %[[ACC:.*]] = bufferization.to_tensor %{{.*}} restrict writable
// CHECK:           linalg.generic {{.*}} ins(%[[ACC]], %{{.*}} : {{.*}}) outs(%[[ACC]] : tensor<16xf32>)
// CHECK-NOT:     memref.alloc() {{.*}} : memref<2x16xf32>
func.func @keep_accumulator_in_place(%acc0: tensor<16xf32>, %xs: tensor<?x16xf32>, %n: index) -> tensor<1x16xf32> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x16xf32>) sitsot(%acc0 : tensor<16xf32>) keep [1] {
  ^bb0(%x: tensor<16xf32>, %acc: tensor<16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                         iterator_types = ["parallel"]}
        ins(%acc, %x : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %t = arith.addf %a, %b : f32
      linalg.yield %t : f32
    } -> tensor<16xf32>
    scan.yield %s : tensor<16xf32>
  } -> (tensor<1x16xf32>)
  return %r : tensor<1x16xf32>
}

// until: an scf.while carrying (t, stopped, state); the result is the first
// steps_run rows of the buffer.

// CHECK-LABEL: func.func @until_scalar
// CHECK:         %[[BUF:.*]] = memref.alloc() {{.*}} : memref<100xf64>
// CHECK:         %[[CAST:.*]] = memref.cast %[[BUF]] : memref<100xf64> to memref<?xf64>
// CHECK:         %[[W:.*]]:2 = scf.while (%[[T:.*]] = %c0, %[[STOP:.*]] = %false, %[[X:.*]] = %{{.*}}) : (index, i1, f64)
// CHECK:           %[[MORE:.*]] = arith.cmpi slt, %[[T]], %c100
// CHECK:           %[[GO:.*]] = arith.xori %[[STOP]], %true
// CHECK:           %[[COND:.*]] = arith.andi %[[MORE]], %[[GO]]
// CHECK:           scf.condition(%[[COND]])
// CHECK:         } do {
// CHECK:           %[[Y:.*]] = arith.mulf
// CHECK:           %[[DONE:.*]] = arith.cmpf ogt, %[[Y]]
// CHECK:           memref.store %[[Y]], %[[BUF]]
// CHECK:           scf.yield %{{.*}}, %[[DONE]], %[[Y]]
// CHECK:         %[[ALL:.*]] = bufferization.to_tensor %[[CAST]] restrict
// CHECK:         tensor.extract_slice %[[ALL]][0] [%[[W]]#0] [1]
func.func @until_scalar(%x0: f64, %max: f64) -> tensor<?xf64> {
  %c100 = arith.constant 100 : index
  %r = scan.scan steps(%c100) until sitsot(%x0 : f64) nonsequences(%max : f64) {
  ^bb0(%x: f64, %m: f64):
    %two = arith.constant 2.0 : f64
    %y = arith.mulf %x, %two : f64
    %stop = arith.cmpf ogt, %y, %m : f64
    scan.yield %y, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// until with a dynamic n_steps: the buffer is never sized from n_steps. It
// starts at min(n_steps, 131072) rows (1 MiB of f64), is carried by the
// scf.while, and a step that finds it full moves the t rows written so far
// into a buffer of min(2 * capacity, n_steps) rows.

// CHECK-LABEL: func.func @until_grows
// CHECK-SAME:    (%[[N:[^:]*]]: index
// CHECK:         %[[STEPS:.*]] = arith.select
// CHECK:         %[[FIRST:.*]] = arith.minsi %[[STEPS]], %c131072
// CHECK:         %[[BUF:.*]] = memref.alloc(%[[FIRST]])
// CHECK:         scf.while ({{.*}}, %{{.*}} = %[[BUF]]) : (index, i1, f64, memref<?xf64>)
// CHECK:         } do {
// CHECK:         ^bb0(%[[T:.*]]: index, %{{.*}}: f64, %[[CUR:.*]]: memref<?xf64>):
// CHECK:           %[[CAP:.*]] = memref.dim %[[CUR]], %c0
// CHECK:           %[[FULL:.*]] = arith.cmpi eq, %[[T]], %[[CAP]]
// CHECK:           %[[STEP_BUF:.*]] = scf.if %[[FULL]] -> (memref<?xf64>) {
// CHECK:             %[[DOUBLED:.*]] = arith.addi %[[CAP]], %[[CAP]]
// CHECK:             %[[ROWS:.*]] = arith.select %{{.*}}, %[[STEPS]], %[[DOUBLED]]
// CHECK:             %[[NEW:.*]] = memref.alloc(%[[ROWS]])
// CHECK:             memref.copy
// CHECK:             scf.yield %[[NEW]]
// CHECK:           } else {
// CHECK:             scf.yield %[[CUR]]
// CHECK:           memref.store %{{.*}}, %[[STEP_BUF]][%[[T]]]
// CHECK:           scf.yield {{.*}}, %[[STEP_BUF]] :
func.func @until_grows(%n: index, %x0: f64, %max: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) until sitsot(%x0 : f64) nonsequences(%max : f64) {
  ^bb0(%x: f64, %m: f64):
    %two = arith.constant 2.0 : f64
    %y = arith.mulf %x, %two : f64
    %stop = arith.cmpf ogt, %y, %m : f64
    scan.yield %y, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A yielded row with dynamic sizes is checked against the buffer's rows
// before it is written (code 8): the verifier only checks types, and a
// longer row would be written past its row.

// CHECK-LABEL: func.func @row_sizes_checked
// CHECK-SAME:    (%{{.*}}: index, %[[H0:[^:]*]]: tensor<?xf64>
// CHECK:         %[[NEED:.*]] = tensor.dim %[[H0]], %c0
// CHECK:         scf.for
// CHECK:           %[[HAVE:.*]] = {{tensor|memref}}.dim %{{.*}}, %c0 : {{tensor|memref}}<?xf64>
// CHECK:           %[[BAD:.*]] = arith.cmpi ne, %[[HAVE]], %[[NEED]]
// CHECK:           scf.if %[[BAD]] {
// CHECK:             call @__mlir_scan_fail(%c8_i64,
// CHECK:           bufferization.materialize_in_destination
func.func @row_sizes_checked(%n: index, %h0: tensor<?xf64>, %o: tensor<?xf64>) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<?xf64>) nonsequences(%o : tensor<?xf64>) {
  ^bb0(%h: tensor<?xf64>, %other: tensor<?xf64>):
    scan.yield %other : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// A nitsot whose rows have a size known only when a step runs (%k rows, %k a
// non-sequence): the buffer starts with row size 0 and is carried by the
// loop; step 0 allocates it with its row's size (Theano's way), every later
// step checks its row against it (code 9, NitSotRowSize).

// CHECK-LABEL: func.func @nitsot_dynamic_rows
// CHECK-SAME:    (%[[N:[^:]*]]: index, %[[K:[^:]*]]: index
// CHECK:         %[[ROWS:.*]] = arith.select
// CHECK:         %[[B0:.*]] = memref.alloc(%[[ROWS]]) {{.*}} : memref<?x0xf32>
// CHECK:         %[[C0:.*]] = memref.cast %[[B0]] : memref<?x0xf32> to memref<?x?xf32>
// CHECK:         %[[LOOP:.*]] = scf.for %[[T:.*]] = %{{.*}} to %[[ROWS]] step %{{.*}} iter_args(%[[BUF:.*]] = %[[C0]]) -> (memref<?x?xf32>)
// CHECK:           %[[ROW:.*]] = linalg.fill
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %c0
// CHECK:           %[[LATER:.*]] = arith.cmpi ne, %[[T]], %c0
// CHECK:           %[[HAVE:.*]] = memref.dim %[[BUF]], %c1
// CHECK:           %[[DIFF:.*]] = arith.cmpi ne, %[[K]], %[[HAVE]]
// CHECK:           %[[BAD:.*]] = arith.andi %[[LATER]], %[[DIFF]]
// CHECK:           scf.if %[[BAD]] {
// CHECK:             func.call @__mlir_scan_fail(%c9_i64,
// CHECK:           %[[NEW:.*]] = scf.if %[[FIRST]] -> (memref<?x?xf32>) {
// CHECK:             memref.alloc(%{{.*}}, %[[K]])
// CHECK:           } else {
// CHECK:             scf.yield %[[BUF]]
// CHECK:           memref.subview %[[NEW]][%[[T]], 0]
// CHECK:           bufferization.materialize_in_destination %[[ROW]]
// CHECK:           scf.yield %[[NEW]] : memref<?x?xf32>
// CHECK:         bufferization.to_tensor %[[LOOP]] restrict
func.func @nitsot_dynamic_rows(%n: index, %k: index, %v: f32) -> tensor<?x?xf32> {
  %r = scan.scan steps(%n) nonsequences(%k, %v : index, f32) {
  ^bb0(%kk: index, %vv: f32):
    %e = tensor.empty(%kk) : tensor<?xf32>
    %f = linalg.fill ins(%vv : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    scan.yield %f : tensor<?xf32>
  } -> (tensor<?x?xf32>)
  return %r : tensor<?x?xf32>
}

// With `until`, such a buffer also grows: both are carried by the scf.while,
// growing keeps the row size of the buffer it copies.

// CHECK-LABEL: func.func @nitsot_dynamic_rows_until
// CHECK:         %[[B0:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x0xf32>
// CHECK:         scf.while ({{.*}}, %{{.*}} = %{{.*}}) : (index, i1, memref<?x?xf32>)
// CHECK:         } do {
// CHECK:         ^bb0(%[[T:.*]]: index, %[[BUF:.*]]: memref<?x?xf32>):
// CHECK:           %[[CAP:.*]] = memref.dim %[[BUF]], %c0
// CHECK:           %[[GROWN:.*]] = scf.if
// CHECK:             %[[RS:.*]] = memref.dim %[[BUF]], %c1
// CHECK:             memref.alloc(%{{.*}}, %[[RS]])
// CHECK:             memref.copy
// CHECK:           func.call @__mlir_scan_fail(%c9_i64,
// CHECK:           %[[NEW:.*]] = scf.if %{{.*}} -> (memref<?x?xf32>) {
// CHECK:             memref.alloc
// CHECK:           } else {
// CHECK:             scf.yield %[[GROWN]]
// CHECK:           scf.yield %{{.*}}, %{{.*}}, %[[NEW]] : index, i1, memref<?x?xf32>
func.func @nitsot_dynamic_rows_until(%n: index, %lens: tensor<?xindex>) -> tensor<?x?xf32> {
  %r = scan.scan steps(%n) until sequences(%lens : tensor<?xindex>) {
  ^bb0(%l: index):
    %e = tensor.empty(%l) : tensor<?xf32>
    %c = arith.constant 1.0 : f32
    %f = linalg.fill ins(%c : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    %c0 = arith.constant 0 : index
    %stop = arith.cmpi eq, %l, %c0 : index
    scan.yield %f, %stop : tensor<?xf32>, i1
  } -> (tensor<?x?xf32>)
  return %r : tensor<?x?xf32>
}

// A scalar mitsot whose window is too large for registers (more than 8
// rows; here 10**7, which used to make 10**7 loop-carried values and take
// minutes to compile): its rows are read from its buffer, the rows before
// step 0 from one copy of the whole init; the loop carries no state.
// CHECK-LABEL: func.func @wide_scalar_window
// CHECK:         %[[INIT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<10000000xf64>
// CHECK:         scf.if
// CHECK:           %[[CAST:.*]] = tensor.cast %arg1 : tensor<?xf64> to tensor<10000000xf64>
// CHECK:           bufferization.materialize_in_destination %[[CAST]] in restrict writable %[[INIT]]
// CHECK:         scf.for %[[T:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK:           memref.load %[[INIT]]
// CHECK:           memref.load
// CHECK:           arith.addf
// CHECK:           memref.store
// CHECK:         }
func.func @wide_scalar_window(%n: index, %x0: tensor<?xf64>) -> tensor<?xf64> {
  %r = scan.scan steps(%n) mitsot(%x0[-10000000, -1] : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64):
    %s = arith.addf %a, %b : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A window of 8 rows still lives in registers.
// CHECK-LABEL: func.func @register_window
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f64, f64, f64, f64, f64, f64, f64, f64)
func.func @register_window(%n: index, %x0: tensor<8xf64>) -> tensor<?xf64> {
  %r = scan.scan steps(%n) mitsot(%x0[-8, -1] : tensor<8xf64>) {
  ^bb0(%a: f64, %b: f64):
    %s = arith.addf %a, %b : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// An unused mitmot result with a wide window: its ring's first rows are
// loaded by a loop, not one op per row.
// CHECK-LABEL: func.func @wide_mitmot_ring
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<1001xf64>
// CHECK:         scf.if
// CHECK:           scf.for %{{.*}} = %c0 to %c1000 step %c1 {
// CHECK:             tensor.extract %arg1
// CHECK:             memref.store
func.func @wide_mitmot_ring(%n: index, %buf: tensor<?xf64>) -> index {
  %r = scan.scan steps(%n) mitmot(%buf[0] -> [1000] : tensor<?xf64>) {
  ^bb0(%a: f64):
    scan.yield %a : f64
  } -> (tensor<?xf64>)
  return %n : index
}

// Rows without elements (a static size 0): MLIR rejects every slice of such
// a value ("offset 1 is out-of-bounds: 0 >= 0"), so the lowering reads each
// row as a tensor.empty and writes none (the loop, left without effects,
// canonicalizes away).
// CHECK-LABEL: func.func @empty_rows
// CHECK-NOT:     memref.subview
// CHECK-NOT:     tensor.extract_slice
// CHECK:         memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x0xf32>
// CHECK-NOT:     memref.subview
// CHECK-NOT:     tensor.extract_slice
// CHECK:         tensor.empty() : tensor<2x0xf32>
// CHECK:         return
func.func @empty_rows(%n: index, %x0: tensor<0xf32>, %xs: tensor<?x0xf32>) -> (tensor<?x0xf32>, tensor<?x0xf32>, tensor<2x0xf32>) {
  %r:3 = scan.scan steps(%n) sequences(%xs : tensor<?x0xf32>) sitsot(%x0 : tensor<0xf32>, %x0 : tensor<0xf32>) keep [0, 2, 0] {
  ^bb0(%x: tensor<0xf32>, %a: tensor<0xf32>, %b: tensor<0xf32>):
    scan.yield %a, %b, %x : tensor<0xf32>, tensor<0xf32>, tensor<0xf32>
  } -> (tensor<?x0xf32>, tensor<2x0xf32>, tensor<?x0xf32>)
  return %r#0, %r#2, %r#1 : tensor<?x0xf32>, tensor<?x0xf32>, tensor<2x0xf32>
}

// Non-sequences of 1 MiB to 64 MiB are copied into a fresh buffer (the
// runtime's huge-page blocks) before the loop: every step reads all of such
// a matrix, when its bytes are in range and at most twice the scan's
// outputs'. Static sizes decide at compile time (V, 32 KiB: never), dynamic
// ones at run time (W, 2 MiB, against the states of T rows; D).

// With private-nonsequences=0 (the GPU pipelines), the body reads them all
// where they are.

// NOPRIV-LABEL: func.func @large_nonsequences
// NOPRIV-NOT:     alloc_tensor() copy
// NOPRIV:         scf.for
// NOPRIV-NOT:     alloc_tensor() copy
// NOPRIV:         return

// CHECK-LABEL: func.func @large_nonsequences
// CHECK-SAME:    (%{{[^:]*}}: tensor<?x512xf64>, %{{[^:]*}}: tensor<512xf64>, %[[W:[^:]*]]: tensor<512x512xf64>, %[[V:[^:]*]]: tensor<64x64xf64>, %[[D:[^:]*]]: tensor<?x?xf64>
// The states' bytes (T x 4096): W (2 MiB) is copied when they are at least
// 1 MiB, so that the copy is at most twice the outputs.
// CHECK:         %[[STATES:.*]] = arith.muli %{{.*}}, %c4096
// CHECK:         %[[TWICE:.*]] = arith.addi %[[STATES]], %[[STATES]]
// CHECK:         %[[WBIG:.*]] = arith.cmpi sge, %[[TWICE]], %c2097152
// CHECK:         %[[WREAD:.*]] = scf.if %[[WBIG]] -> (tensor<512x512xf64>) {
// CHECK:           %[[WC:.*]] = bufferization.alloc_tensor() copy(%[[W]])
// CHECK:           scf.yield %[[WC]]
// CHECK:         } else {
// CHECK:           scf.yield %[[W]]
// CHECK:         }
// D: its bytes in range and at most twice the states', at run time. D is
// an argument nothing writes (bufferization.writable = false): its copy is
// a buffer of all rows or none, allocated unconditionally (freed after the
// loop), and the loop reads a memref select of it and D's buffer.
// CHECK:         arith.muli %{{.*}}, %c8
// CHECK:         %[[BYTES:.*]] = arith.muli
// CHECK:         %[[ROOM:.*]] = arith.cmpi sle, %[[BYTES]], %{{.*}}
// CHECK:         %[[LE:.*]] = arith.cmpi sle, %[[BYTES]], %c67108864
// CHECK:         %[[GE:.*]] = arith.cmpi sge, %[[BYTES]], %c1048576
// CHECK:         %[[IN:.*]] = arith.andi %[[GE]], %[[LE]]
// CHECK:         %[[DBIG:.*]] = arith.andi %[[IN]], %[[ROOM]]
// CHECK:         %[[DROWS:.*]] = arith.select %[[DBIG]], %{{.*}}, %c0
// CHECK:         %[[DC:.*]] = memref.alloc(%[[DROWS]], %{{.*}}) {{.*}} : memref<?x?xf64>
// CHECK:         scf.if %[[DBIG]] {
// CHECK:           bufferization.materialize_in_destination %[[D]] in restrict writable %[[DC]]
// CHECK:         }
// CHECK:         %[[DBUF:.*]] = bufferization.to_buffer %[[D]] read_only
// CHECK:         %[[DPICK:.*]] = arith.select %[[DBIG]], %[[DC]], %[[DBUF]] : memref<?x?xf64>
// CHECK:         %[[DREAD:.*]] = bufferization.to_tensor %[[DPICK]] restrict
// V (32 KiB) is never copied.
// CHECK-NOT:     materialize_in_destination %[[V]]
// CHECK:         scf.for
// CHECK-DAG:       linalg.vecmat ins(%{{.*}}, %[[WREAD]] :
// CHECK-DAG:       linalg.vecmat ins(%{{.*}}, %[[V]] :
// CHECK-DAG:       tensor.extract %[[DREAD]]
func.func @large_nonsequences(%xs: tensor<?x512xf64>, %h0: tensor<512xf64>, %w: tensor<512x512xf64>,
                              %v: tensor<64x64xf64>, %d: tensor<?x?xf64> {bufferization.writable = false}) -> tensor<?x512xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x512xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x512xf64>) sitsot(%h0 : tensor<512xf64>)
      nonsequences(%w, %v, %d : tensor<512x512xf64>, tensor<64x64xf64>, tensor<?x?xf64>) {
  ^bb0(%x: tensor<512xf64>, %h: tensor<512xf64>, %ww: tensor<512x512xf64>, %vv: tensor<64x64xf64>, %dd: tensor<?x?xf64>):
    %z = arith.constant 0.0 : f64
    %i0 = arith.constant 0 : index
    %e = tensor.empty() : tensor<512xf64>
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<512xf64>) -> tensor<512xf64>
    %wh = linalg.vecmat ins(%h, %ww : tensor<512xf64>, tensor<512x512xf64>) outs(%f : tensor<512xf64>) -> tensor<512xf64>
    %e2 = tensor.empty() : tensor<64xf64>
    %f2 = linalg.fill ins(%z : f64) outs(%e2 : tensor<64xf64>) -> tensor<64xf64>
    %hv = tensor.extract_slice %h[0] [64] [1] : tensor<512xf64> to tensor<64xf64>
    %vh = linalg.vecmat ins(%hv, %vv : tensor<64xf64>, tensor<64x64xf64>) outs(%f2 : tensor<64xf64>) -> tensor<64xf64>
    %s0 = tensor.extract %vh[%i0] : tensor<64xf64>
    %d0 = tensor.extract %dd[%i0, %i0] : tensor<?x?xf64>
    %s = arith.addf %s0, %d0 : f64
    %b = tensor.splat %s : tensor<512xf64>
    %sum = arith.addf %wh, %b : tensor<512xf64>
    %next = arith.addf %sum, %x : tensor<512xf64>
    scan.yield %next : tensor<512xf64>
  } -> (tensor<?x512xf64>)
  return %r : tensor<?x512xf64>
}

// The run-time library's failure function is declared once per module (an
// external function: no global error state).

// CHECK:       func.func private @__mlir_scan_fail(i64, i64, i64, i64)
// CHECK-NOT:   func.func private @__mlir_scan_fail
// CHECK-NOT:   memref.global
