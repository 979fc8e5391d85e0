// RUN: scan-opt %s --scan-push-out-seq | FileCheck %s
// RUN: scan-opt %s --scan-push-out-seq --scan-remove-unused --canonicalize | FileCheck %s --check-prefix=CLEAN

// scan-push-out-seq (Theano's PushOutSeqScan): pure body work that reads only
// sequence taps, non-sequences and constants runs once before the scan on all
// the rows the loop reads, and its result becomes a new sequence (tap 0).
// The public functions are also run by test/python/test_rewrites.py.

// The affine maps of the batched ops (printed at the top of the module).
// CHECK-DAG:   #[[$XMAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG:   #[[$UMAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG:   #[[$OMAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG:   #[[$ID:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG:   #[[$SCALAR:map[0-9]*]] = affine_map<(d0) -> ()>
// CHECK-DAG:   #[[$ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG:   #[[$COL:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG:   #[[$ID2:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>

// Elementwise scalar work: 2 * x_t becomes a linalg.generic over the rows of
// xs (n rows, clamped to the rows available), read by the scan as a new
// sequence. The original length check (n rows) is emitted before the scan.
// CHECK-LABEL: func.func @scalar_elementwise
// CHECK:         %[[LEN:.*]] = tensor.dim %arg1
// CHECK:         %[[AV:.*]] = arith.subi %[[LEN]], %c0
// CHECK:         %[[MIN:.*]] = arith.minsi %arg0, %[[AV]]
// CHECK:         %[[ROWS:.*]] = arith.maxsi %[[MIN]], %c0
// CHECK:         %[[XS:.*]] = tensor.extract_slice %arg1[0] [%[[ROWS]]] [1]
// CHECK:         %[[E:.*]] = tensor.empty(%[[ROWS]]) : tensor<?xf64>
// CHECK:         %[[TWO:.*]] = linalg.generic {{.*}} ins(%[[XS]], %{{.*}} : tensor<?xf64>, f64) outs(%[[E]] : tensor<?xf64>)
// CHECK:           arith.mulf
// CHECK:         %[[HAVE:.*]] = tensor.dim %arg1
// CHECK:         %[[NEED:.*]] = arith.addi %arg0, %c0
// CHECK:         arith.cmpi ult, %[[HAVE]], %[[NEED]]
// CHECK:         scf.if
// CHECK:           func.call @__mlir_scan_fail
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?xf64>, %[[TWO]] : tensor<?xf64>)
// CHECK-NEXT:      sitsot(%arg2 : f64) {
// CHECK-NEXT:    ^bb0(%{{.*}}: f64, %[[T:.*]]: f64, %[[H:.*]]: f64):
// CHECK-NEXT:      %[[Y:.*]] = arith.addf %[[H]], %[[T]] : f64
// CHECK-NEXT:      scan.yield %[[Y]]
// CLEAN-LABEL: func.func @scalar_elementwise
// CLEAN:         scan.scan steps(%arg0)
// CLEAN-NEXT:      sequences(%{{.*}} : tensor<?xf64>)
// CLEAN-NEXT:      sitsot(%arg2 : f64) {
func.func @scalar_elementwise(%n: index, %xs: tensor<?xf64>, %h0: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%h0 : f64) {
  ^bb0(%x: f64, %h: f64):
    %two = arith.constant 2.0 : f64
    %t = arith.mulf %x, %two : f64
    %y = arith.addf %h, %t : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// U·x_t (linalg.vecmat of a sequence row and a non-sequence matrix, into a
// fill) + b: one matmul-shaped linalg.generic over all rows (row, column,
// reduction), then the bias over all rows. Only W·h and tanh stay.
// CHECK-LABEL: func.func @rnn_input_projection
// CHECK:         %[[X:.*]] = tensor.extract_slice %arg1[0, 0] [%{{.*}}, 3] [1, 1] : tensor<?x3xf32> to tensor<?x3xf32>
// CHECK:         %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x4xf32>)
// CHECK:         %[[UX:.*]] = linalg.generic {indexing_maps = [#[[$XMAP]], #[[$UMAP]], #[[$OMAP]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %arg3 : tensor<?x3xf32>, tensor<3x4xf32>) outs(%[[F]] : tensor<?x4xf32>)
// CHECK:         %[[UXB:.*]] = linalg.generic {{.*}} ins(%[[UX]], %arg4 : tensor<?x4xf32>, tensor<4xf32>)
// CHECK:           arith.addf
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?x3xf32>, %[[UXB]] : tensor<?x4xf32>)
// CHECK:           linalg.vecmat
// CHECK-NOT:       linalg.vecmat
// CHECK:           math.tanh
// CHECK:           scan.yield
func.func @rnn_input_projection(%n: index, %xs: tensor<?x3xf32>, %h0: tensor<4xf32>, %U: tensor<3x4xf32>, %b: tensor<4xf32>, %W: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x3xf32>) sitsot(%h0 : tensor<4xf32>) nonsequences(%U, %b, %W : tensor<3x4xf32>, tensor<4xf32>, tensor<4x4xf32>) {
  ^bb0(%x: tensor<3xf32>, %h: tensor<4xf32>, %u: tensor<3x4xf32>, %bb: tensor<4xf32>, %w: tensor<4x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %ux = linalg.vecmat ins(%x, %u : tensor<3xf32>, tensor<3x4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    %uxb = arith.addf %ux, %bb : tensor<4xf32>
    %e2 = tensor.empty() : tensor<4xf32>
    %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
    %wh = linalg.vecmat ins(%h, %w : tensor<4xf32>, tensor<4x4xf32>) outs(%f2 : tensor<4xf32>) -> tensor<4xf32>
    %s = arith.addf %wh, %uxb : tensor<4xf32>
    %t = math.tanh %s : tensor<4xf32>
    scan.yield %t : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return %r : tensor<?x4xf32>
}

// Taps: x[t+1] - x[t-1] reads two windows of xs, at offsets 2 and 0 (lo is
// -1); the rows are the fewest any tap has left.
// CHECK-LABEL: func.func @taps
// CHECK:         %[[L0:.*]] = tensor.dim %arg1
// CHECK:         %[[A0:.*]] = arith.subi %[[L0]], %c0
// CHECK:         %[[M0:.*]] = arith.minsi %arg0, %[[A0]]
// CHECK:         %[[L1:.*]] = tensor.dim %arg1
// CHECK:         %[[A1:.*]] = arith.subi %[[L1]], %c2
// CHECK:         %[[M1:.*]] = arith.minsi %[[M0]], %[[A1]]
// CHECK:         %[[ROWS:.*]] = arith.maxsi %[[M1]], %c0
// CHECK:         %[[LO:.*]] = tensor.extract_slice %arg1[0] [%[[ROWS]]] [1]
// CHECK:         %[[HI:.*]] = tensor.extract_slice %arg1[2] [%[[ROWS]]] [1]
// CHECK:         %[[D:.*]] = linalg.generic {{.*}} ins(%[[HI]], %[[LO]] : tensor<?xi32>, tensor<?xi32>)
// CHECK:           arith.subi
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1[-1, 1] : tensor<?xi32>, %[[D]] : tensor<?xi32>) {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %{{.*}}: i32, %[[NEW:.*]]: i32):
// CHECK-NEXT:      scan.yield %[[NEW]] : i32
func.func @taps(%n: index, %xs: tensor<?xi32>) -> tensor<?xi32> {
  %r = scan.scan steps(%n) sequences(%xs[-1, 1] : tensor<?xi32>) {
  ^bb0(%a: i32, %b: i32):
    %d = arith.subi %b, %a : i32
    scan.yield %d : i32
  } -> (tensor<?xi32>)
  return %r : tensor<?xi32>
}

// go_backwards: the scan reads the reversed sequence; tap k's rows are the
// window ending k - lo rows before the end (here [len - 2 - rows, len - 2)
// for tap 1), and the new sequence is read reversed too.
// CHECK-LABEL: func.func @taps_backwards
// CHECK:         %[[ROWS:.*]] = arith.maxsi
// CHECK:         %[[E0:.*]] = arith.subi %{{.*}}, %c0
// CHECK-NEXT:    %[[O0:.*]] = arith.subi %[[E0]], %[[ROWS]]
// CHECK-NEXT:    %[[LO:.*]] = tensor.extract_slice %arg1[%[[O0]]] [%[[ROWS]]] [1]
// CHECK:         %[[E1:.*]] = arith.subi %{{.*}}, %c2
// CHECK-NEXT:    %[[O1:.*]] = arith.subi %[[E1]], %[[ROWS]]
// CHECK-NEXT:    %[[HI:.*]] = tensor.extract_slice %arg1[%[[O1]]] [%[[ROWS]]] [1]
// CHECK:         %[[D:.*]] = linalg.generic {{.*}} ins(%[[HI]], %[[LO]] : tensor<?xi32>, tensor<?xi32>)
// CHECK:         scan.scan steps(%arg0) go_backwards
// CHECK-NEXT:      sequences(%arg1[-1, 1] : tensor<?xi32>, %[[D]] : tensor<?xi32>)
func.func @taps_backwards(%n: index, %xs: tensor<?xi32>) -> tensor<?xi32> {
  %r = scan.scan steps(%n) go_backwards sequences(%xs[-1, 1] : tensor<?xi32>) {
  ^bb0(%a: i32, %b: i32):
    %d = arith.subi %b, %a : i32
    scan.yield %d : i32
  } -> (tensor<?xi32>)
  return %r : tensor<?xi32>
}

// Two sequences and a non-sequence scalar (broadcast by its indexing map),
// in a scan with a mitsot and until: x_t * w + y_t moves out, the state
// stays.
// CHECK-LABEL: func.func @two_sequences_until
// CHECK:         %[[M:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$SCALAR]], #[[$ID]]], {{.*}} ins(%{{.*}}, %arg4 : tensor<?xf64>, f64)
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%[[M]], %{{.*}} : tensor<?xf64>, tensor<?xf64>)
// CHECK:         scan.scan steps(%arg0) until
// CHECK-NEXT:      sequences(%arg1 : tensor<?xf64>, %arg2 : tensor<?xf64>, %[[S]] : tensor<?xf64>)
// CHECK-NEXT:      mitsot(%arg3[-2, -1] : tensor<2xf64>)
func.func @two_sequences_until(%n: index, %xs: tensor<?xf64>, %ys: tensor<?xf64>, %init: tensor<2xf64>, %w: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) until sequences(%xs : tensor<?xf64>, %ys : tensor<?xf64>) mitsot(%init[-2, -1] : tensor<2xf64>) nonsequences(%w : f64) {
  ^bb0(%x: f64, %y: f64, %a: f64, %b: f64, %ww: f64):
    %m = arith.mulf %x, %ww : f64
    %s = arith.addf %m, %y : f64
    %ab = arith.addf %a, %b : f64
    %v = arith.addf %ab, %s : f64
    %lim = arith.constant 100.0 : f64
    %stop = arith.cmpf ogt, %v, %lim : f64
    scan.yield %v, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A scalar condition row selecting between tensor rows: the condition is
// read once per row (map (d0, d1) -> (d0)); regression: it got an identity
// map and the pass produced an invalid linalg.generic.
// CHECK-LABEL: func.func @select_scalar_condition
// CHECK:         linalg.generic {indexing_maps = [#[[$ROW]], #[[$COL]], #[[$COL]], #[[$ID2]]], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %arg2, %arg3 : tensor<?xi1>, tensor<4xf64>, tensor<4xf64>) outs(%{{.*}} : tensor<?x4xf64>)
// CHECK:           arith.select %{{.*}}, %{{.*}}, %{{.*}} : f64
func.func @select_scalar_condition(%n: index, %cs: tensor<?xi1>, %a: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<?x4xf64> {
  %r = scan.scan steps(%n) sequences(%cs : tensor<?xi1>) nonsequences(%a, %b : tensor<4xf64>, tensor<4xf64>) {
  ^bb0(%c: i1, %aa: tensor<4xf64>, %bb: tensor<4xf64>):
    %s = arith.select %c, %aa, %bb : tensor<4xf64>
    scan.yield %s : tensor<4xf64>
  } -> (tensor<?x4xf64>)
  return %r : tensor<?x4xf64>
}

// NEGATIVE: work that reads a state (x_t * h), a division that may trap
// (not speculatable: it would run on rows the loop never reaches with until),
// a non-batchable op (tensor.extract) and an op with side effects (a call):
// nothing moves, nothing is emitted before the scan.
// CHECK-LABEL: func.func private @nothing_moves
// CHECK-NEXT:    scan.scan
// CHECK-NEXT:      sequences(%arg1 : tensor<?xi32>, %arg2 : tensor<?x2xi32>)
// CHECK-NEXT:      sitsot(%arg3 : i32) {
// CHECK:           arith.muli
// CHECK:           arith.divsi
// CHECK:           tensor.extract
// CHECK:           func.call @effect
// A call (unknown side effects to the passes; defined, so the JIT links).
func.func private @effect(%v: i32) -> i32 {
  return %v : i32
}
func.func private @nothing_moves(%n: index, %xs: tensor<?xi32>, %vs: tensor<?x2xi32>, %h0: i32) -> tensor<?xi32> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xi32>, %vs : tensor<?x2xi32>) sitsot(%h0 : i32) {
  ^bb0(%x: i32, %v: tensor<2xi32>, %h: i32):
    %m = arith.muli %x, %h : i32
    %seven = arith.constant 7 : i32
    %q = arith.divsi %seven, %x : i32
    %c1 = arith.constant 1 : index
    %e = tensor.extract %v[%c1] : tensor<2xi32>
    %k = func.call @effect(%x) : (i32) -> i32
    %a = arith.addi %m, %q : i32
    %b = arith.addi %e, %k : i32
    %y = arith.addi %a, %b : i32
    scan.yield %y : i32
  } -> (tensor<?xi32>)
  return %r : tensor<?xi32>
}

// NEGATIVE: the destination of x_t·U is a fill of the state's last element
// (a per-step value): the op cannot be batched, and the pass leaves the IR as
// it was (regression: it left a run-time check, slices and dead ops before
// the scan and the vecmat generalized, so scan-optimize never reached its
// fixed point).
// CHECK-LABEL: func.func @state_destination
// CHECK-NEXT:    scan.scan
// CHECK:           linalg.fill
// CHECK:           linalg.vecmat
// CHECK:           scan.yield
// CHECK-NEXT:    } -> (tensor<?x2xf64>)
// CHECK-NEXT:    return
func.func @state_destination(%n: index, %xs: tensor<?x2xf64>, %h0: tensor<2xf64>, %U: tensor<2x2xf64>) -> tensor<?x2xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x2xf64>) sitsot(%h0 : tensor<2xf64>) nonsequences(%U : tensor<2x2xf64>) {
  ^bb0(%x: tensor<2xf64>, %h: tensor<2xf64>, %u: tensor<2x2xf64>):
    %c1 = arith.constant 1 : index
    %last = tensor.extract %h[%c1] : tensor<2xf64>
    %e = tensor.empty() : tensor<2xf64>
    %f = linalg.fill ins(%last : f64) outs(%e : tensor<2xf64>) -> tensor<2xf64>
    %ux = linalg.vecmat ins(%x, %u : tensor<2xf64>, tensor<2x2xf64>) outs(%f : tensor<2xf64>) -> tensor<2xf64>
    scan.yield %ux : tensor<2xf64>
  } -> (tensor<?x2xf64>)
  return %r : tensor<?x2xf64>
}

// A pushed-out row (1 * x) whose only other user is dead (it reads the
// state): the row is not turned into a sequence (regression: rebuild erased
// the dead user and the row with it, then the pass replaced the erased
// value: segfault, found by the random differential tests).
// CHECK-LABEL: func.func @dead_user
// CHECK:           arith.muli
// CHECK:         %[[M:.*]] = linalg.generic
// CHECK:           arith.maxsi
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?xi32>, %[[M]] : tensor<?xi32>)
// CHECK-NEXT:      sitsot(%arg2 : i32, %arg3 : i32) {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ROW:.*]]: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK-NEXT:      scan.yield %[[ROW]], %[[ROW]] : i32, i32
func.func @dead_user(%n: index, %xs: tensor<?xi32>, %s0: i32, %t0: i32) -> (tensor<?xi32>, tensor<?xi32>) {
  %r0, %r1 = scan.scan steps(%n) sequences(%xs : tensor<?xi32>) sitsot(%s0, %t0 : i32, i32) {
  ^bb0(%x: i32, %s: i32, %t: i32):
    %c = arith.constant 1 : i32
    %a = arith.muli %c, %x : i32
    %b = arith.addi %a, %t : i32
    %m = arith.maxsi %c, %x : i32
    scan.yield %m, %m : i32, i32
  } -> (tensor<?xi32>, tensor<?xi32>)
  return %r0, %r1 : tensor<?xi32>, tensor<?xi32>
}

// Rows of dynamic size: the destination of U·x_t is a fill of a
// tensor.empty whose size is a non-sequence; batched, it is an empty of
// n_steps rows of that size.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK:         %[[E:.*]] = tensor.empty(%{{.*}}, %arg4) : tensor<?x?xf64>
// CHECK:         %[[F:.*]] = linalg.fill ins(%{{.*}} : f64) outs(%[[E]] : tensor<?x?xf64>)
// CHECK:         %[[UX:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %arg3 : tensor<?x?xf64>, tensor<?x?xf64>) outs(%[[F]] : tensor<?x?xf64>)
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?x?xf64>, %[[UX]] : tensor<?x?xf64>)
// CHECK-NOT:       linalg.vecmat
// CHECK:           scan.yield
func.func @dynamic_rows(%n: index, %xs: tensor<?x?xf64>, %h0: tensor<?xf64>, %u: tensor<?x?xf64>, %m: index) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%h0 : tensor<?xf64>) nonsequences(%u, %m : tensor<?x?xf64>, index) {
  ^bb0(%x: tensor<?xf64>, %h: tensor<?xf64>, %uu: tensor<?x?xf64>, %mm: index):
    %zero = arith.constant 0.0 : f64
    %e = tensor.empty(%mm) : tensor<?xf64>
    %f = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
    %ux = linalg.vecmat ins(%x, %uu : tensor<?xf64>, tensor<?x?xf64>) outs(%f : tensor<?xf64>) -> tensor<?xf64>
    %y = arith.addf %h, %ux : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// NEGATIVE: behind a check that stays in the loop (it reads the state), the
// contraction may rely on it and stays; so does the elementwise op after it.
// The scalar multiply before the check does not rely on it and leaves.
// CHECK-LABEL: func.func @behind_variant_check
// CHECK:         %[[X2:.*]] = linalg.generic
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?x?xf64>, %[[X2]] : tensor<?x?xf64>)
// CHECK:           scan.check
// CHECK:           linalg.vecmat
func.func @behind_variant_check(%n: index, %xs: tensor<?x?xf64>, %h0: tensor<?xf64>, %u: tensor<?x?xf64>, %m: index) -> tensor<?x?xf64> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%h0 : tensor<?xf64>) nonsequences(%u, %m : tensor<?x?xf64>, index) {
  ^bb0(%x: tensor<?xf64>, %h: tensor<?xf64>, %uu: tensor<?x?xf64>, %mm: index):
    %x2 = arith.mulf %x, %x : tensor<?xf64>
    %c0 = arith.constant 0 : index
    %first = tensor.extract %h[%c0] : tensor<?xf64>
    %big = arith.constant 1.0e6 : f64
    %huge = arith.cmpf ogt, %first, %big : f64
    scan.check %huge code 100 id 0 (%c0, %c0 : index, index)
    %zero = arith.constant 0.0 : f64
    %e = tensor.empty(%mm) : tensor<?xf64>
    %f = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
    %ux = linalg.vecmat ins(%x2, %uu : tensor<?xf64>, tensor<?x?xf64>) outs(%f : tensor<?xf64>) -> tensor<?xf64>
    %y = arith.addf %h, %ux : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// A map (the scan guide's polynomial, c_i * x**p_i): once its work is pushed
// out the step only yields the new sequence's row, so the nitsot's result is
// the rows of that sequence the loop reads, sliced after the scan behind a
// check of n_steps (the scan, left without outputs, is dead).
// CHECK-LABEL: func.func @map_step
// CHECK:         %[[POW:.*]] = linalg.generic
// CHECK:           math.powf
// CHECK:         %[[TERMS:.*]] = linalg.generic
// CHECK:           arith.mulf
// CHECK:         scan.scan steps(%arg0)
// CHECK:         %[[NEG:.*]] = arith.cmpi slt, %arg0, %{{.*}} : index
// CHECK-NEXT:    scf.if %[[NEG]]
// CHECK-NEXT:      %[[CODE:.*]] = arith.constant 1 : i64
// CHECK:           func.call @__mlir_scan_fail(%[[CODE]],
// CHECK:         %[[ROWS:.*]] = tensor.extract_slice %[[TERMS]][0] [%arg0] [1] : tensor<?xf64> to tensor<?xf64>
// CHECK-NEXT:    return %[[ROWS]]
// CLEAN-LABEL: func.func @map_step
// CLEAN-NOT:     scan.scan
// CLEAN:         return
func.func @map_step(%n: index, %c: tensor<?xf64>, %p: tensor<?xf64>, %x: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sequences(%c, %p : tensor<?xf64>, tensor<?xf64>) nonsequences(%x : f64) {
  ^bb0(%ci: f64, %pi: f64, %xx: f64):
    %xp = math.powf %xx, %pi : f64
    %term = arith.mulf %ci, %xp : f64
    scan.yield %term : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// A step that yields a later tap of a sequence as it is, with a constant
// n_steps: the rows from the tap's offset (2 - lo = 3), statically sized,
// and no step count check. The other nitsot is computed and stays.
// CHECK-LABEL: func.func @forwarded_tap
// CHECK:         %[[S:.*]]:2 = scan.scan steps(%c3)
// CHECK-NOT:     __mlir_scan_fail
// CHECK:         %[[ROWS:.*]] = tensor.extract_slice %arg0[3, 0] [3, 2] [1, 1] : tensor<7x2xf32> to tensor<3x2xf32>
// CHECK-NEXT:    return %[[ROWS]], %[[S]]#0
func.func @forwarded_tap(%xs: tensor<7x2xf32>, %h: f32) -> (tensor<3x2xf32>, tensor<3xf32>) {
  %c3 = arith.constant 3 : index
  %r:2 = scan.scan steps(%c3) sequences(%xs[-1, 2] : tensor<7x2xf32>) sitsot(%h : f32) {
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>, %s: f32):
    %c0 = arith.constant 0 : index
    %e = tensor.extract %a[%c0] : tensor<2xf32>
    %t = arith.addf %s, %e : f32
    scan.yield %t, %b : f32, tensor<2xf32>
  } -> (tensor<3xf32>, tensor<3x2xf32>)
  return %r#1, %r#0 : tensor<3x2xf32>, tensor<3xf32>
}

// NEGATIVE: rows that would need reversing (go_backwards) or that depend on
// where the loop stops (until) keep the nitsot.
// CHECK-LABEL: func.func @not_forwarded
// CHECK:         %[[B:.*]] = scan.scan steps(%arg0) go_backwards
// CHECK:         %[[U:.*]] = scan.scan steps(%arg0) until
// CHECK:         return %[[B]], %[[U]]
func.func @not_forwarded(%n: index, %xs: tensor<?xf64>, %limit: f64) -> (tensor<?xf64>, tensor<?xf64>) {
  %b = scan.scan steps(%n) go_backwards sequences(%xs : tensor<?xf64>) {
  ^bb0(%x: f64):
    scan.yield %x : f64
  } -> (tensor<?xf64>)
  %u = scan.scan steps(%n) until sequences(%xs : tensor<?xf64>) nonsequences(%limit : f64) {
  ^bb0(%x: f64, %l: f64):
    %stop = arith.cmpf ogt, %x, %l : f64
    scan.yield %x, %stop : f64, i1
  } -> (tensor<?xf64>)
  return %b, %u : tensor<?xf64>, tensor<?xf64>
}
