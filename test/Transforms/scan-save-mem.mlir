// RUN: scan-opt %s --scan-save-mem | FileCheck %s

// scan-save-mem (Theano's ScanSaveMem): a mitsot, sitsot or nitsot output
// whose users only read rows at a fixed distance from its end gets keep = k
// (the largest distance); the reads move to the k kept rows. The public
// functions are also run by test/python/test_rewrites.py.

// A**k with only the last row used (n_steps - 1): keep [1]. The kept row
// is the init when no step ran, where the read was out of bounds: a check
// that n_steps >= 1 (the message scan-runtime-verification gives the read).
// CHECK-LABEL: func.func @power_last
// CHECK:         %[[R:.*]] = scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : tensor<3xf64>)
// CHECK-NEXT:      nonsequences(%arg2 : tensor<3xf64>) keep [1] {
// CHECK:         } -> (tensor<1x3xf64>)
// CHECK:         %[[OK:.*]] = arith.cmpi sge, %arg0, %{{.*}} : index
// CHECK:         cf.assert %[[OK]], "{{.*}}scan-save-mem.mlir:{{[0-9]+}}:8: slice out of bounds along dimension 0 (offset, size, stride against the size of the dimension)"
// CHECK:         %[[ROW:.*]] = arith.constant 0 : index
// CHECK:         tensor.extract_slice %[[R]][%[[ROW]], 0] [1, 3] [1, 1] : tensor<1x3xf64> to tensor<3xf64>
func.func @power_last(%k: index, %ones: tensor<3xf64>, %A: tensor<3xf64>) -> tensor<3xf64> {
  %r = scan.scan steps(%k) sitsot(%ones : tensor<3xf64>) nonsequences(%A : tensor<3xf64>) {
  ^bb0(%p: tensor<3xf64>, %a: tensor<3xf64>):
    %q = arith.mulf %p, %a : tensor<3xf64>
    scan.yield %q : tensor<3xf64>
  } -> (tensor<?x3xf64>)
  %c1 = arith.constant 1 : index
  %last = arith.subi %k, %c1 : index
  %a = tensor.extract_slice %r[%last, 0] [1, 3] [1, 1] : tensor<?x3xf64> to tensor<3xf64>
  return %a : tensor<3xf64>
}

// Reads at rows - 1 (tensor.dim form) and rows - 3 (addi of -3) of a scalar
// sitsot: keep [3]; the reads become rows 2 and 0 of the kept rows.
// CHECK-LABEL: func.func @two_reads
// CHECK:         %[[R:.*]] = scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : i64) keep [3] {
// CHECK:         } -> (tensor<3xi64>)
// CHECK:         %[[C2:.*]] = arith.constant 2 : index
// CHECK:         tensor.extract %[[R]][%[[C2]]] : tensor<3xi64>
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         tensor.extract %[[R]][%[[C0]]] : tensor<3xi64>
func.func @two_reads(%n: index, %s0: i64) -> (i64, i64) {
  %r = scan.scan steps(%n) sitsot(%s0 : i64) {
  ^bb0(%s: i64):
    %s2 = arith.muli %s, %s : i64
    %one = arith.constant 1 : i64
    %t = arith.addi %s2, %one : i64
    scan.yield %t : i64
  } -> (tensor<?xi64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cm3 = arith.constant -3 : index
  %rows = tensor.dim %r, %c0 : tensor<?xi64>
  %i = arith.subi %rows, %c1 : index
  %j = arith.addi %rows, %cm3 : index
  %a = tensor.extract %r[%i] : tensor<?xi64>
  %b = tensor.extract %r[%j] : tensor<?xi64>
  return %a, %b : i64, i64
}

// A static result read at constant rows: a slice of the last 3 rows and row
// 8 of 10 (distance 2): keep [3]; a mitsot and a nitsot of the same scan.
// CHECK-LABEL: func.func @static_rows
// CHECK-NOT:     cf.assert
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%{{.*}})
// CHECK-NEXT:      mitsot(%arg0[-2, -1] : tensor<2xf32>) keep [3, 1] {
// CHECK:         } -> (tensor<3xf32>, tensor<1xf32>)
// CHECK:         tensor.extract_slice %[[R]]#0[%c0{{.*}}] [3] [1] : tensor<3xf32> to tensor<3xf32>
// CHECK:         tensor.extract %[[R]]#0[%c1{{.*}}] : tensor<3xf32>
// CHECK:         tensor.extract %[[R]]#1[%c0{{.*}}] : tensor<1xf32>
func.func @static_rows(%init: tensor<2xf32>) -> (tensor<3xf32>, f32, f32) {
  %c10 = arith.constant 10 : index
  %m, %y = scan.scan steps(%c10) mitsot(%init[-2, -1] : tensor<2xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    %half = arith.constant 0.5 : f32
    %t = arith.mulf %s, %half : f32
    %u = arith.subf %a, %b : f32
    scan.yield %t, %u : f32, f32
  } -> (tensor<10xf32>, tensor<10xf32>)
  %tail = tensor.extract_slice %m[7] [3] [1] : tensor<10xf32> to tensor<3xf32>
  %c8 = arith.constant 8 : index
  %e = tensor.extract %m[%c8] : tensor<10xf32>
  %c9 = arith.constant 9 : index
  %f = tensor.extract %y[%c9] : tensor<10xf32>
  return %tail, %e, %f : tensor<3xf32>, f32, f32
}

// With until the result has as many rows as steps ran: tensor.dim is the
// row count, n_steps is not. The first scan's last row is kept (dim form),
// with a step counter for the read's bounds check; the second (n_steps form)
// is left alone.
// CHECK-LABEL: func.func @until
// CHECK:         scan.scan steps(%arg0) until
// CHECK-NEXT:      sitsot(%arg1 : f64, %{{.*}} : index) keep [1, 1] {
// CHECK:         %[[RAN:.*]] = tensor.extract %{{.*}}#1[%{{.*}}] : tensor<1xindex>
// CHECK:         %[[OK:.*]] = arith.cmpi sge, %[[RAN]], %{{.*}} : index
// CHECK:         cf.assert %[[OK]], "{{.*}}: out-of-bounds access"
// CHECK:         scan.scan steps(%arg0) until
// CHECK-NEXT:      sitsot(%arg1 : f64) {
// CHECK:         } -> (tensor<?xf64>)
func.func @until(%n: index, %s0: f64) -> (f64, f64) {
  %r = scan.scan steps(%n) until sitsot(%s0 : f64) {
  ^bb0(%s: f64):
    %two = arith.constant 2.0 : f64
    %t = arith.mulf %s, %two : f64
    %lim = arith.constant 100.0 : f64
    %stop = arith.cmpf ogt, %t, %lim : f64
    scan.yield %t, %stop : f64, i1
  } -> (tensor<?xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %r, %c0 : tensor<?xf64>
  %i = arith.subi %rows, %c1 : index
  %a = tensor.extract %r[%i] : tensor<?xf64>
  %r2 = scan.scan steps(%n) until sitsot(%s0 : f64) {
  ^bb0(%s: f64):
    %two = arith.constant 2.0 : f64
    %t = arith.mulf %s, %two : f64
    %lim = arith.constant 100.0 : f64
    %stop = arith.cmpf ogt, %t, %lim : f64
    scan.yield %t, %stop : f64, i1
  } -> (tensor<?xf64>)
  %j = arith.subi %n, %c1 : index
  %b = tensor.extract %r2[%j] : tensor<?xf64>
  return %a, %b : f64, f64
}

// result[-1, j] of a stacked tensor state: the column index stays
// (regression: the rewritten tensor.extract lost every index but the first,
// invalid IR).
// CHECK-LABEL: func.func @last_row_column
// CHECK:         %[[R:.*]] = scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : tensor<3xf64>) keep [1] {
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         tensor.extract %[[R]][%[[C0]], %arg2] : tensor<1x3xf64>
func.func @last_row_column(%n: index, %h0: tensor<3xf64>, %j: index) -> f64 {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<3xf64>) {
  ^bb0(%h: tensor<3xf64>):
    %y = arith.addf %h, %h : tensor<3xf64>
    scan.yield %y : tensor<3xf64>
  } -> (tensor<?x3xf64>)
  %c1 = arith.constant 1 : index
  %last = arith.subi %n, %c1 : index
  %v = tensor.extract %r[%last, %j] : tensor<?x3xf64>
  return %v : f64
}

// The size of another dimension of the result is that of the kept rows too:
// the tensor.dim moves to the new result (regression: it was rewired to
// ub.poison).
// CHECK-LABEL: func.func @other_dimension
// CHECK:         %[[R:.*]] = scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : tensor<?xf64>) keep [1] {
// CHECK:         } -> (tensor<1x?xf64>)
// CHECK-NOT:     ub.poison
// CHECK:         %[[COLS:.*]] = tensor.dim %[[R]], %c1 : tensor<1x?xf64>
// CHECK:         %[[W:.*]] = arith.subi %[[COLS]], %c1
// CHECK:         tensor.extract_slice %[[R]][%{{.*}}, 1] [1, %[[W]]] [1, 1] : tensor<1x?xf64> to tensor<?xf64>
func.func @other_dimension(%n: index, %h0: tensor<?xf64>) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<?xf64>) {
  ^bb0(%h: tensor<?xf64>):
    %y = arith.addf %h, %h : tensor<?xf64>
    scan.yield %y : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %r, %c0 : tensor<?x?xf64>
  %cols = tensor.dim %r, %c1 : tensor<?x?xf64>
  %last = arith.subi %rows, %c1 : index
  %w = arith.subi %cols, %c1 : index
  %v = tensor.extract_slice %r[%last, 1] [1, %w] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
  return %v : tensor<?xf64>
}

// Without `until`, the row count (tensor.dim) is n_steps: used elsewhere too
// (here as another index and as a result, like the graph builder's bounds
// checks), it becomes %n and the output is still trimmed.
// CHECK-LABEL: func.func @row_count_used_elsewhere
// CHECK-SAME:      (%[[N:.*]]: index,
// CHECK:         %[[R:.*]] = scan.scan steps(%[[N]])
// CHECK-NEXT:      sitsot({{.*}}) keep [1]
// CHECK:         %[[LAST:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK:         tensor.extract %[[R]][%{{.*}}, %[[LAST]]] : tensor<1x4xf64>
// CHECK:         return %{{.*}}, %[[LAST]]
func.func @row_count_used_elsewhere(%n: index, %h0: tensor<4xf64>) -> (f64, index) {
  %r = scan.scan steps(%n) sitsot(%h0 : tensor<4xf64>) {
  ^bb0(%h: tensor<4xf64>):
    %y = arith.addf %h, %h : tensor<4xf64>
    scan.yield %y : tensor<4xf64>
  } -> (tensor<?x4xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %r, %c0 : tensor<?x4xf64>
  %last = arith.subi %rows, %c1 : index
  %v = tensor.extract %r[%last, %last] : tensor<?x4xf64>
  return %v, %last : f64, index
}

// With `until` the row count is the number of steps taken, which the kept
// rows no longer tell: used outside the reads (returned here; the graph
// builder's bounds check of result[-1] in general), it comes from a step
// counter added to the scan, an index sitsot from 0 with keep [1].
// CHECK-LABEL: func.func @until_row_count_used_elsewhere
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%arg0) until
// CHECK-NEXT:      sitsot(%arg1 : f64, %[[ZERO]] : index) keep [1, 1] {
// CHECK-NEXT:    ^bb0(%{{.*}}: f64, %[[COUNT:.*]]: index):
// CHECK:           %[[NEXT:.*]] = arith.addi %[[COUNT]], %{{.*}} : index
// CHECK:           scan.yield %{{.*}}, %[[NEXT]], %{{.*}} : f64, index, i1
// CHECK:         } -> (tensor<1xf64>, tensor<1xindex>)
// CHECK:         %[[STEPS:.*]] = tensor.extract %[[R]]#1[%{{.*}}] : tensor<1xindex>
// CHECK:         %[[LAST:.*]] = tensor.extract %[[R]]#0[%{{.*}}] : tensor<1xf64>
// CHECK:         return %[[LAST]], %[[STEPS]] : f64, index
func.func @until_row_count_used_elsewhere(%n: index, %h0: f64) -> (f64, index) {
  %r = scan.scan steps(%n) until sitsot(%h0 : f64) {
  ^bb0(%h: f64):
    %y = arith.addf %h, %h : f64
    %big = arith.constant 100.0 : f64
    %stop = arith.cmpf ogt, %y, %big : f64
    scan.yield %y, %stop : f64, i1
  } -> (tensor<?xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %r, %c0 : tensor<?xf64>
  %last = arith.subi %rows, %c1 : index
  %v = tensor.extract %r[%last] : tensor<?xf64>
  return %v, %rows : f64, index
}

// Several outputs of one `until` scan (a mitsot and a nitsot read at their
// last rows, with the graph builder's bounds check of the index) share one
// step counter.
// CHECK-LABEL: func.func @until_counter_shared
// CHECK:         %[[R:.*]]:3 = scan.scan steps(%arg0) until
// CHECK-NEXT:      mitsot(%arg1[-2, -1] : tensor<2xf64>)
// CHECK-NEXT:      sitsot(%{{.*}} : index) keep [2, 1, 1] {
// CHECK:         } -> (tensor<2xf64>, tensor<1xindex>, tensor<1xf64>)
// CHECK:         %[[STEPS:.*]] = tensor.extract %[[R]]#1
// CHECK:         arith.subi %[[STEPS]], %c2
// CHECK:         scan.check
// CHECK:         tensor.extract %[[R]]#0[%c0
// CHECK:         arith.subi %[[STEPS]], %c1
// CHECK:         scan.check
// CHECK:         tensor.extract %[[R]]#2[%c0
// CHECK-NOT:     scan.scan
// CHECK:         return
func.func @until_counter_shared(%n: index, %x0: tensor<2xf64>) -> (f64, f64) {
  %r:2 = scan.scan steps(%n) until mitsot(%x0[-2, -1] : tensor<2xf64>) {
  ^bb0(%a: f64, %b: f64):
    %s = arith.addf %a, %b : f64
    %h = arith.constant 0.5 : f64
    %y = arith.mulf %s, %h : f64
    %lim = arith.constant 50.0 : f64
    %stop = arith.cmpf ogt, %s, %lim : f64
    scan.yield %s, %y, %stop : f64, f64, i1
  } -> (tensor<?xf64>, tensor<?xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %rows = tensor.dim %r#0, %c0 : tensor<?xf64>
  %i = arith.subi %rows, %c2 : index
  %neg = arith.cmpi slt, %i, %c0 : index
  scan.check %neg code 101 id 0 (%i, %rows : index, index)
  %a = tensor.extract %r#0[%i] : tensor<?xf64>
  %rows1 = tensor.dim %r#1, %c0 : tensor<?xf64>
  %j = arith.subi %rows1, %c1 : index
  %neg1 = arith.cmpi slt, %j, %c0 : index
  scan.check %neg1 code 101 id 1 (%j, %rows1 : index, index)
  %b = tensor.extract %r#1[%j] : tensor<?xf64>
  return %a, %b : f64, f64
}

// NEGATIVE: a whole-output use (returned), a row counted from the start, a
// strided or dynamically sized slice, a static result whose rows are all
// read anyway: no keep.
// CHECK-LABEL: func.func @whole_reads
// CHECK-NOT:     keep
// CHECK:         return
func.func @whole_reads(%n: index, %s0: f64, %m: index) -> (tensor<?xf64>, f64, tensor<2xf64>, tensor<?xf64>, tensor<4xf64>) {
  %a, %b, %c, %d = scan.scan steps(%n) sitsot(%s0, %s0, %s0, %s0 : f64, f64, f64, f64) {
  ^bb0(%s: f64, %t: f64, %u: f64, %v: f64):
    %one = arith.constant 1.0 : f64
    %x = arith.addf %s, %one : f64
    %y = arith.addf %t, %one : f64
    %z = arith.addf %u, %one : f64
    %w = arith.addf %v, %one : f64
    scan.yield %x, %y, %z, %w : f64, f64, f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %first = tensor.extract %b[%c0] : tensor<?xf64>
  %back4 = arith.subi %n, %c4 : index
  %strided = tensor.extract_slice %c[%back4] [2] [2] : tensor<?xf64> to tensor<2xf64>
  %back1 = arith.subi %n, %c1 : index
  %dyn = tensor.extract_slice %d[%back1] [%m] [1] : tensor<?xf64> to tensor<?xf64>
  %c3 = arith.constant 3 : index
  %e = scan.scan steps(%c3) sitsot(%s0 : f64) {
  ^bb0(%s: f64):
    %one = arith.constant 1.0 : f64
    %x = arith.addf %s, %one : f64
    scan.yield %x : f64
  } -> (tensor<3xf64>)
  %c2 = arith.constant 2 : index
  %e0 = tensor.extract %e[%c0] : tensor<3xf64>
  %e1 = tensor.extract %e[%c2] : tensor<3xf64>
  %all = tensor.from_elements %e0, %e1, %e0, %e1 : tensor<4xf64>
  return %a, %first, %strided, %dyn, %all : tensor<?xf64>, f64, tensor<2xf64>, tensor<?xf64>, tensor<4xf64>
}

// NEGATIVE: a mitmot's final buffer read at its last row is never trimmed
// (its rows are read and written at any position).
// CHECK-LABEL: func.func @mitmot
// CHECK-NOT:     keep
// CHECK:         return
func.func @mitmot(%n: index, %buf: tensor<?xf64>) -> f64 {
  %g = scan.scan steps(%n) mitmot(%buf[0, 1] -> [1] : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64):
    %s = arith.addf %a, %b : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %g, %c0 : tensor<?xf64>
  %last = arith.subi %rows, %c1 : index
  %v = tensor.extract %g[%last] : tensor<?xf64>
  return %v : f64
}
