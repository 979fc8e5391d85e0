// RUN: scan-opt %s --scan-push-out-output | FileCheck %s

// scan-push-out-output (Theano's PushOutScanOutput / PushOutDot1): a nitsot
// whose row only needs rows the scan stacks anyway (the yields of states and
// other outputs kept whole), non-sequences and constants is computed after
// the loop, on all rows at once. The public functions are also run by
// test/python/test_rewrites.py.

// CHECK-DAG:   #[[$HMAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG:   #[[$WMAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG:   #[[$YMAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>

// The RNN readout y_t = h_t·V: one matmul-shaped linalg.generic on the
// stacked h after the loop; the scan only computes h.
// CHECK-LABEL: func.func @rnn_readout
// CHECK:         %[[H:.*]] = scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : tensor<4xf32>)
// CHECK-NEXT:      nonsequences(%arg2 : tensor<4x4xf32>, %arg3 : tensor<4x2xf32>) {
// CHECK-NOT:       linalg.vecmat ins(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4x2xf32>)
// CHECK:           scan.yield %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    } -> (tensor<?x4xf32>)
// CHECK:         %[[ROWS:.*]] = tensor.dim %[[H]], %c0
// CHECK:         %[[E:.*]] = tensor.empty(%[[ROWS]]) : tensor<?x2xf32>
// CHECK:         %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x2xf32>)
// CHECK:         %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$HMAP]], #[[$WMAP]], #[[$YMAP]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[H]], %arg3 : tensor<?x4xf32>, tensor<4x2xf32>) outs(%[[F]] : tensor<?x2xf32>)
// CHECK:         return %[[H]], %[[Y]]
func.func @rnn_readout(%n: index, %h0: tensor<4xf32>, %W: tensor<4x4xf32>, %V: tensor<4x2xf32>) -> (tensor<?x4xf32>, tensor<?x2xf32>) {
  %h, %y = scan.scan steps(%n) sitsot(%h0 : tensor<4xf32>) nonsequences(%W, %V : tensor<4x4xf32>, tensor<4x2xf32>) {
  ^bb0(%hp: tensor<4xf32>, %w: tensor<4x4xf32>, %v: tensor<4x2xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %wh = linalg.vecmat ins(%hp, %w : tensor<4xf32>, tensor<4x4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    %hn = math.tanh %wh : tensor<4xf32>
    %e2 = tensor.empty() : tensor<2xf32>
    %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
    %yy = linalg.vecmat ins(%hn, %v : tensor<4xf32>, tensor<4x2xf32>) outs(%f2 : tensor<2xf32>) -> tensor<2xf32>
    scan.yield %hn, %yy : tensor<4xf32>, tensor<2xf32>
  } -> (tensor<?x4xf32>, tensor<?x2xf32>)
  return %h, %y : tensor<?x4xf32>, tensor<?x2xf32>
}

// An elementwise tail over a mitsot's rows, another nitsot's rows, a
// non-sequence and a constant: (m_t + z_t) * w + 1 moves out; the nitsot z
// (it reads the sequence) stays.
// CHECK-LABEL: func.func @elementwise_tail
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?xf64>)
// CHECK-NEXT:      mitsot(%arg2[-2, -1] : tensor<2xf64>)
// CHECK-NEXT:      nonsequences(%arg3 : f64) {
// CHECK:         } -> (tensor<?xf64>, tensor<?xf64>)
// CHECK:         %[[ROWS:.*]] = tensor.dim %[[R]]#0, %c0
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#1 : tensor<?xf64>, tensor<?xf64>)
// CHECK:           arith.addf
// CHECK:         %[[M:.*]] = linalg.generic {{.*}} ins(%[[S]], %arg3 : tensor<?xf64>, f64)
// CHECK:           arith.mulf
// CHECK:         %[[P:.*]] = linalg.generic {{.*}} ins(%[[M]], %{{.*}} : tensor<?xf64>, f64)
// CHECK:           arith.addf
// CHECK:         return %[[R]]#0, %[[P]]
func.func @elementwise_tail(%n: index, %xs: tensor<?xf64>, %init: tensor<2xf64>, %w: f64) -> (tensor<?xf64>, tensor<?xf64>) {
  %m, %z, %y = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) mitsot(%init[-2, -1] : tensor<2xf64>) nonsequences(%w : f64) {
  ^bb0(%x: f64, %a: f64, %b: f64, %ww: f64):
    %half = arith.constant 0.5 : f64
    %ab = arith.addf %a, %b : f64
    %mn = arith.mulf %ab, %half : f64
    %zn = arith.subf %x, %mn : f64
    %s = arith.addf %mn, %zn : f64
    %sw = arith.mulf %s, %ww : f64
    %one = arith.constant 1.0 : f64
    %yn = arith.addf %sw, %one : f64
    scan.yield %mn, %zn, %yn : f64, f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>)
  return %m, %y : tensor<?xf64>, tensor<?xf64>
}

// With until the results have as many rows as steps ran: the rows of the
// pushed-out work come from the stacked result (tensor.dim), not n_steps.
// CHECK-LABEL: func.func @until_rows
// CHECK:         %[[R:.*]] = scan.scan steps(%arg0) until
// CHECK:         } -> (tensor<?xi64>)
// CHECK:         %[[ROWS:.*]] = tensor.dim %[[R]], %c0
// CHECK:         %[[E:.*]] = tensor.empty(%[[ROWS]]) : tensor<?xi64>
// CHECK:         %[[Y:.*]] = linalg.generic {{.*}} ins(%[[R]], %[[R]] : tensor<?xi64>, tensor<?xi64>) outs(%[[E]] : tensor<?xi64>)
// CHECK:           arith.muli
// CHECK:         return %[[R]], %[[Y]]
func.func @until_rows(%n: index, %s0: i64) -> (tensor<?xi64>, tensor<?xi64>) {
  %s, %y = scan.scan steps(%n) until sitsot(%s0 : i64) {
  ^bb0(%sp: i64):
    %three = arith.constant 3 : i64
    %sn = arith.addi %sp, %three : i64
    %sq = arith.muli %sn, %sn : i64
    %lim = arith.constant 20 : i64
    %stop = arith.cmpi sgt, %sn, %lim : i64
    scan.yield %sn, %sq, %stop : i64, i64, i1
  } -> (tensor<?xi64>, tensor<?xi64>)
  return %s, %y : tensor<?xi64>, tensor<?xi64>
}

// NEGATIVE: rows that need the loop. The nitsot a reads a sequence, b reads
// the state's previous value (a block argument), c is stacked twice
// (the same value as the state: scan-merge-inouts' job), d goes through
// tensor.extract (not batchable), e has keep (only its last rows exist),
// f reads the mitmot's row: all stay.
// CHECK-LABEL: func.func @nothing_moves
// CHECK-NOT:     linalg.generic
// CHECK:         scan.scan steps(%arg0)
// CHECK:           scan.yield
// CHECK-NEXT:    } -> (tensor<?xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?xf64>, tensor<?x2xf64>, tensor<2x2xf64>)
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @nothing_moves(%n: index, %xs: tensor<?x2xf64>, %buf: tensor<?xf64>, %h0: tensor<2xf64>) -> (tensor<?xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?xf64>, tensor<?x2xf64>, tensor<2x2xf64>) {
  %g, %h, %a, %b, %c, %d, %f, %e = scan.scan steps(%n) sequences(%xs : tensor<?x2xf64>) mitmot(%buf[0] -> [0] : tensor<?xf64>) sitsot(%h0 : tensor<2xf64>) keep [0, 0, 0, 0, 0, 0, 0, 2] {
  ^bb0(%x: tensor<2xf64>, %gg: f64, %hp: tensor<2xf64>):
    %hn = arith.addf %hp, %x : tensor<2xf64>
    %an = arith.mulf %hn, %x : tensor<2xf64>
    %bn = arith.mulf %hn, %hp : tensor<2xf64>
    %c1 = arith.constant 1 : index
    %dn = tensor.extract %hn[%c1] : tensor<2xf64>
    %en = arith.negf %hn : tensor<2xf64>
    %gn = arith.addf %gg, %dn : f64
    %fv = tensor.splat %gg : tensor<2xf64>
    %fn = arith.addf %hn, %fv : tensor<2xf64>
    scan.yield %gn, %hn, %an, %bn, %hn, %dn, %fn, %en : f64, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, f64, tensor<2xf64>, tensor<2xf64>
  } -> (tensor<?xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?xf64>, tensor<?x2xf64>, tensor<2x2xf64>)
  return %g, %h, %a, %b, %c, %d, %f, %e : tensor<?xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?x2xf64>, tensor<?xf64>, tensor<?x2xf64>, tensor<2x2xf64>
}

// NEGATIVE: the only stacked rows are those of a state with keep: the nitsot
// has nothing to be computed from after the loop.
// CHECK-LABEL: func.func @kept_state
// CHECK-NOT:     linalg.generic
// CHECK:         scan.scan steps(%arg0)
// CHECK-NEXT:      sitsot(%arg1 : f64) keep [1, 0] {
// CHECK:           scan.yield %[[S:.*]], %{{.*}} : f64, f64
// CHECK-NEXT:    } -> (tensor<1xf64>, tensor<?xf64>)
func.func @kept_state(%n: index, %s0: f64) -> (tensor<1xf64>, tensor<?xf64>) {
  %s, %y = scan.scan steps(%n) sitsot(%s0 : f64) keep [1, 0] {
  ^bb0(%sp: f64):
    %half = arith.constant 0.5 : f64
    %sn = arith.addf %sp, %half : f64
    %yn = arith.mulf %sn, %sn : f64
    scan.yield %sn, %yn : f64, f64
  } -> (tensor<1xf64>, tensor<?xf64>)
  return %s, %y : tensor<1xf64>, tensor<?xf64>
}
