// RUN: scan-opt %s --scan-push-out-accumulation | FileCheck %s
// RUN: scan-opt %s --scan-optimize | FileCheck %s --check-prefix=OPT

// scan-push-out-accumulation (PyTensor's push-out of gradient accumulations):
// a sitsot matrix of which only the final value is used (keep = 1), updated
// as acc + outer(a_t, b_t), becomes two nitsots stacking a_t and b_t and one
// contraction over the stacked rows after the loop, computed into the init.
// The public functions are also run by test/python/test_rewrites.py.

// CHECK-DAG:   #[[$A:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG:   #[[$B:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG:   #[[$C:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG:   #[[$A3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d0, 0)>
// CHECK-DAG:   #[[$B3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, 0, d1)>

// The outer product as a linalg.generic of two vectors, added with arith.addf:
// the scan stacks x_t and y_t; x^T y is added to the init after the loop.
// CHECK-LABEL: func.func @outer_generic_add
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%arg0)
// CHECK-NEXT:      sequences(%arg1 : tensor<?x4xf64>, %arg2 : tensor<?x3xf64>)
// CHECK-NEXT:      nonsequences(%arg3 : tensor<4x3xf64>) {
// CHECK-NOT:       arith.addf
// CHECK:           scan.yield %{{.*}}, %{{.*}} : tensor<4xf64>, tensor<3xf64>
// CHECK-NEXT:    } -> (tensor<?x4xf64>, tensor<?x3xf64>)
// CHECK:         %[[S:.*]] = linalg.generic {indexing_maps = [#[[$A]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[R]]#0, %[[R]]#1 : tensor<?x4xf64>, tensor<?x3xf64>) outs(%arg3 : tensor<4x3xf64>)
// CHECK:           arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK:         %[[E:.*]] = tensor.expand_shape %[[S]] {{\[\[}}0, 1], [2]] output_shape [1, 4, 3] : tensor<4x3xf64> into tensor<1x4x3xf64>
// CHECK:         return %[[E]]
func.func @outer_generic_add(%n: index, %xs: tensor<?x4xf64>, %ys: tensor<?x3xf64>, %acc0: tensor<4x3xf64>) -> tensor<1x4x3xf64> {
  %r = scan.scan steps(%n) sequences(%xs, %ys : tensor<?x4xf64>, tensor<?x3xf64>) sitsot(%acc0 : tensor<4x3xf64>) keep [1] {
  ^bb0(%x: tensor<4xf64>, %y: tensor<3xf64>, %acc: tensor<4x3xf64>):
    %e = tensor.empty() : tensor<4x3xf64>
    %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4xf64>, tensor<3xf64>) outs(%e : tensor<4x3xf64>) {
    ^bb0(%a: f64, %b: f64, %o: f64):
      %m = arith.mulf %a, %b : f64
      linalg.yield %m : f64
    } -> tensor<4x3xf64>
    %next = arith.addf %acc, %p : tensor<4x3xf64>
    scan.yield %next : tensor<4x3xf64>
  } -> (tensor<1x4x3xf64>)
  return %r : tensor<1x4x3xf64>
}

// linalg.matmul of a [4, 1] column and a [1, 3] row into zeros, added by an
// elementwise linalg.generic (the form of the builder's T.dot(col, row)), f32.
// CHECK-LABEL: func.func @matmul_column_row
// CHECK:         %[[R:.*]]:2 = scan.scan
// CHECK-NOT:       linalg.matmul
// CHECK:           scan.yield %{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<1x3xf32>
// CHECK-NEXT:    } -> (tensor<?x4x1xf32>, tensor<?x1x3xf32>)
// CHECK:         linalg.generic {indexing_maps = [#[[$A3]], #[[$B3]], #[[$C]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[R]]#0, %[[R]]#1 : tensor<?x4x1xf32>, tensor<?x1x3xf32>) outs(%arg3 : tensor<4x3xf32>)
func.func @matmul_column_row(%n: index, %cs: tensor<?x4x1xf32>, %rs: tensor<?x1x3xf32>, %acc0: tensor<4x3xf32>) -> tensor<1x4x3xf32> {
  %r = scan.scan steps(%n) sequences(%cs, %rs : tensor<?x4x1xf32>, tensor<?x1x3xf32>) sitsot(%acc0 : tensor<4x3xf32>) keep [1] {
  ^bb0(%c: tensor<4x1xf32>, %w: tensor<1x3xf32>, %acc: tensor<4x3xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x3xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
    %p = linalg.matmul ins(%c, %w : tensor<4x1xf32>, tensor<1x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
    %e2 = tensor.empty() : tensor<4x3xf32>
    %next = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                            iterator_types = ["parallel", "parallel"]} ins(%p, %acc : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e2 : tensor<4x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<4x3xf32>
    scan.yield %next : tensor<4x3xf32>
  } -> (tensor<1x4x3xf32>)
  return %r : tensor<1x4x3xf32>
}

// A matmul accumulating into the state itself.
// CHECK-LABEL: func.func @matmul_accumulate
// CHECK:         %[[R:.*]]:2 = scan.scan
// CHECK-NOT:       linalg.matmul
// CHECK:         } -> (tensor<?x4x1xf64>, tensor<?x1x3xf64>)
// CHECK:         linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#1 : tensor<?x4x1xf64>, tensor<?x1x3xf64>) outs(%arg3 : tensor<4x3xf64>)
func.func @matmul_accumulate(%n: index, %cs: tensor<?x4x1xf64>, %rs: tensor<?x1x3xf64>, %acc0: tensor<4x3xf64>) -> tensor<1x4x3xf64> {
  %r = scan.scan steps(%n) sequences(%cs, %rs : tensor<?x4x1xf64>, tensor<?x1x3xf64>) sitsot(%acc0 : tensor<4x3xf64>) keep [1] {
  ^bb0(%c: tensor<4x1xf64>, %w: tensor<1x3xf64>, %acc: tensor<4x3xf64>):
    %next = linalg.matmul ins(%c, %w : tensor<4x1xf64>, tensor<1x3xf64>) outs(%acc : tensor<4x3xf64>) -> tensor<4x3xf64>
    scan.yield %next : tensor<4x3xf64>
  } -> (tensor<1x4x3xf64>)
  return %r : tensor<1x4x3xf64>
}

// acc + x * y in one generic (the builder's fused broadcasting add of
// T.outer), factors computed in the step: tanh(x_t) and 2 y_t.
// CHECK-LABEL: func.func @fused_update
// CHECK:         %[[R:.*]]:2 = scan.scan
// CHECK:           math.tanh
// CHECK:           scan.yield %{{.*}}, %{{.*}} : tensor<4xf64>, tensor<3xf64>
// CHECK:         linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#1 : tensor<?x4xf64>, tensor<?x3xf64>) outs(%arg3 : tensor<4x3xf64>)
func.func @fused_update(%n: index, %xs: tensor<?x4xf64>, %ys: tensor<?x3xf64>, %acc0: tensor<4x3xf64>) -> tensor<1x4x3xf64> {
  %r = scan.scan steps(%n) sequences(%xs, %ys : tensor<?x4xf64>, tensor<?x3xf64>) sitsot(%acc0 : tensor<4x3xf64>) keep [1] {
  ^bb0(%x: tensor<4xf64>, %y: tensor<3xf64>, %acc: tensor<4x3xf64>):
    %tx = math.tanh %x : tensor<4xf64>
    %y2 = arith.addf %y, %y : tensor<3xf64>
    %e = tensor.empty() : tensor<4x3xf64>
    %next = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                            iterator_types = ["parallel", "parallel"]} ins(%acc, %tx, %y2 : tensor<4x3xf64>, tensor<4xf64>, tensor<3xf64>) outs(%e : tensor<4x3xf64>) {
    ^bb0(%a: f64, %b: f64, %c: f64, %o: f64):
      %m = arith.mulf %b, %c : f64
      %s = arith.addf %a, %m : f64
      linalg.yield %s : f64
    } -> tensor<4x3xf64>
    scan.yield %next : tensor<4x3xf64>
  } -> (tensor<1x4x3xf64>)
  return %r : tensor<1x4x3xf64>
}

// A generic accumulating into the state (outs(acc), acc + x * y).
// CHECK-LABEL: func.func @generic_into_state
// CHECK:         %[[R:.*]]:2 = scan.scan
// CHECK:         } -> (tensor<?x4xf64>, tensor<?x3xf64>)
// CHECK:         linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#1 : tensor<?x4xf64>, tensor<?x3xf64>) outs(%arg3 : tensor<4x3xf64>)
func.func @generic_into_state(%n: index, %xs: tensor<?x4xf64>, %ys: tensor<?x3xf64>, %acc0: tensor<4x3xf64>) -> tensor<1x4x3xf64> {
  %r = scan.scan steps(%n) sequences(%xs, %ys : tensor<?x4xf64>, tensor<?x3xf64>) sitsot(%acc0 : tensor<4x3xf64>) keep [1] {
  ^bb0(%x: tensor<4xf64>, %y: tensor<3xf64>, %acc: tensor<4x3xf64>):
    %next = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                            iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4xf64>, tensor<3xf64>) outs(%acc : tensor<4x3xf64>) {
    ^bb0(%a: f64, %b: f64, %o: f64):
      %m = arith.mulf %a, %b : f64
      %s = arith.addf %o, %m : f64
      linalg.yield %s : f64
    } -> tensor<4x3xf64>
    scan.yield %next : tensor<4x3xf64>
  } -> (tensor<1x4x3xf64>)
  return %r : tensor<1x4x3xf64>
}

// The RNN gradient written as PyTensor's grad produces it, before any
// push-out: a backward scan whose MITMOT carries the gradient of h and whose
// sitsot accumulates dW += outer(h_{t-1}, delta_t), delta_t = (dh_t + 1)
// (1 - h_t^2) computed from the mitmot row. dW leaves the loop: the scan
// stacks h_{t-1} and delta_t; the MITMOT stays.
// CHECK-LABEL: func.func @rnn_grad_dW
// CHECK:         %[[R:.*]]:3 = scan.scan steps(%arg0) go_backwards
// CHECK-NEXT:      sequences(%arg1 : tensor<?x4xf64>, %arg2 : tensor<?x4xf64>)
// CHECK-NEXT:      mitmot(%arg3[0, 1] -> [1] : tensor<?x4xf64>)
// CHECK-NEXT:      nonsequences(%arg5 : tensor<4x4xf64>, %arg4 : tensor<4x4xf64>) {
// CHECK:           linalg.matvec
// CHECK-NOT:       tensor<4x4xf64>) outs
// CHECK:           scan.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
// CHECK-NEXT:    } -> (tensor<?x4xf64>, tensor<?x4xf64>, tensor<?x4xf64>)
// CHECK:         %[[DW:.*]] = linalg.generic {indexing_maps = [#[[$A]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[R]]#1, %[[R]]#2 : tensor<?x4xf64>, tensor<?x4xf64>) outs(%arg4 : tensor<4x4xf64>)
// CHECK:         tensor.expand_shape %[[DW]]
func.func @rnn_grad_dW(%n: index, %hprev: tensor<?x4xf64>, %hs: tensor<?x4xf64>, %g: tensor<?x4xf64>, %dW0: tensor<4x4xf64>, %W: tensor<4x4xf64>) -> (tensor<1x4x4xf64>, tensor<?x4xf64>) {
  %mm, %dW = scan.scan steps(%n) go_backwards sequences(%hprev, %hs : tensor<?x4xf64>, tensor<?x4xf64>)
      mitmot(%g[0, 1] -> [1] : tensor<?x4xf64>) sitsot(%dW0 : tensor<4x4xf64>) nonsequences(%W : tensor<4x4xf64>) keep [0, 1] {
  ^bb0(%hp: tensor<4xf64>, %h: tensor<4xf64>, %dh: tensor<4xf64>, %dprev: tensor<4xf64>, %acc: tensor<4x4xf64>, %w: tensor<4x4xf64>):
    %one = arith.constant dense<1.0> : tensor<4xf64>
    %zero = arith.constant 0.0 : f64
    %d1 = arith.addf %dh, %one : tensor<4xf64>
    %hh = arith.mulf %h, %h : tensor<4xf64>
    %dt = arith.subf %one, %hh : tensor<4xf64>
    %delta = arith.mulf %d1, %dt : tensor<4xf64>
    %e = tensor.empty() : tensor<4xf64>
    %f = linalg.fill ins(%zero : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
    %back = linalg.matvec ins(%w, %delta : tensor<4x4xf64>, tensor<4xf64>) outs(%f : tensor<4xf64>) -> tensor<4xf64>
    %dnext = arith.addf %dprev, %back : tensor<4xf64>
    %e2 = tensor.empty() : tensor<4x4xf64>
    %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]} ins(%hp, %delta : tensor<4xf64>, tensor<4xf64>) outs(%e2 : tensor<4x4xf64>) {
    ^bb0(%a: f64, %b: f64, %o: f64):
      %m = arith.mulf %a, %b : f64
      linalg.yield %m : f64
    } -> tensor<4x4xf64>
    %accn = arith.addf %acc, %p : tensor<4x4xf64>
    scan.yield %dnext, %accn : tensor<4xf64>, tensor<4x4xf64>
  } -> (tensor<?x4xf64>, tensor<1x4x4xf64>)
  return %dW, %mm : tensor<1x4x4xf64>, tensor<?x4xf64>
}

// The builder's form: sizes read from the state (tensor.dim), the product
// clipped to them by a slice; the factors are sliced alike in the step.
// CHECK-LABEL: func.func @clipped_product
// CHECK:         %[[R:.*]]:2 = scan.scan
// CHECK-NEXT:      sequences(%arg1 : tensor<?x?xf64>, %arg2 : tensor<?x?xf64>)
// CHECK-NEXT:      nonsequences(%arg3 : tensor<?x?xf64>) {
// CHECK:           tensor.dim %{{.*}}, %{{.*}} : tensor<?x?xf64>
// CHECK-DAG:       %[[CS:.*]] = tensor.extract_slice %{{.*}}[0, 0] [%{{.*}}, 1] [1, 1] : tensor<?x1xf64> to tensor<?x1xf64>
// CHECK-DAG:       %[[RS:.*]] = tensor.extract_slice %{{.*}}[0, 0] [1, %{{.*}}] [1, 1] : tensor<1x?xf64> to tensor<1x?xf64>
// CHECK:           scan.yield %[[CS]], %[[RS]] : tensor<?x1xf64>, tensor<1x?xf64>
// CHECK:         scf.if
// CHECK:           func.call @__mlir_scan_fail
// CHECK:         linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#1 : tensor<?x?x1xf64>, tensor<?x1x?xf64>) outs(%arg3 : tensor<?x?xf64>)
func.func @clipped_product(%n: index, %xs: tensor<?x?xf64>, %ys: tensor<?x?xf64>, %acc0: tensor<?x?xf64>) -> tensor<1x?x?xf64> {
  %r = scan.scan steps(%n) sequences(%xs, %ys : tensor<?x?xf64>, tensor<?x?xf64>) sitsot(%acc0 : tensor<?x?xf64>) keep [1] {
  ^bb0(%x: tensor<?xf64>, %y: tensor<?xf64>, %acc: tensor<?x?xf64>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f64
    %m = tensor.dim %acc, %c0 : tensor<?x?xf64>
    %k = tensor.dim %acc, %c1 : tensor<?x?xf64>
    %mx = tensor.dim %x, %c0 : tensor<?xf64>
    %ky = tensor.dim %y, %c0 : tensor<?xf64>
    %col = tensor.expand_shape %x [[0, 1]] output_shape [%mx, 1] : tensor<?xf64> into tensor<?x1xf64>
    %row = tensor.expand_shape %y [[0, 1]] output_shape [1, %ky] : tensor<?xf64> into tensor<1x?xf64>
    %e = tensor.empty(%mx, %ky) : tensor<?x?xf64>
    %f = linalg.fill ins(%zero : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
    %p = linalg.matmul ins(%col, %row : tensor<?x1xf64>, tensor<1x?xf64>) outs(%f : tensor<?x?xf64>) -> tensor<?x?xf64>
    %clip = tensor.extract_slice %p[0, 0] [%m, %k] [1, 1] : tensor<?x?xf64> to tensor<?x?xf64>
    %next = arith.addf %acc, %clip : tensor<?x?xf64>
    scan.yield %next : tensor<?x?xf64>
  } -> (tensor<1x?x?xf64>)
  return %r : tensor<1x?x?xf64>
}

// With `until`: the contraction sums the rows of the steps that ran.
// CHECK-LABEL: func.func @until_steps
// CHECK:         %[[R:.*]]:2 = scan.scan steps(%arg0) until
// CHECK:         } -> (tensor<?x4xf64>, tensor<?x3xf64>)
// CHECK:         linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#1
func.func @until_steps(%n: index, %xs: tensor<?x4xf64>, %ys: tensor<?x3xf64>, %acc0: tensor<4x3xf64>) -> tensor<1x4x3xf64> {
  %r = scan.scan steps(%n) until sequences(%xs, %ys : tensor<?x4xf64>, tensor<?x3xf64>) sitsot(%acc0 : tensor<4x3xf64>) keep [1] {
  ^bb0(%x: tensor<4xf64>, %y: tensor<3xf64>, %acc: tensor<4x3xf64>):
    %c0 = arith.constant 0 : index
    %lim = arith.constant 0.5 : f64
    %e = tensor.empty() : tensor<4x3xf64>
    %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4xf64>, tensor<3xf64>) outs(%e : tensor<4x3xf64>) {
    ^bb0(%a: f64, %b: f64, %o: f64):
      %m = arith.mulf %a, %b : f64
      linalg.yield %m : f64
    } -> tensor<4x3xf64>
    %next = arith.addf %p, %acc : tensor<4x3xf64>
    %x0 = tensor.extract %x[%c0] : tensor<4xf64>
    %stop = arith.cmpf ogt, %x0, %lim : f64
    scan.yield %next, %stop : tensor<4x3xf64>, i1
  } -> (tensor<1x4x3xf64>)
  return %r : tensor<1x4x3xf64>
}

// Not rewritten: every row of the state is used (no keep).
// CHECK-LABEL: func.func @all_rows_used
// CHECK:         scan.scan
// CHECK-NEXT:      sequences
// CHECK-NEXT:      sitsot(%arg3 : tensor<4x3xf64>) {
// CHECK:         } -> (tensor<?x4x3xf64>)
func.func @all_rows_used(%n: index, %xs: tensor<?x4xf64>, %ys: tensor<?x3xf64>, %acc0: tensor<4x3xf64>) -> tensor<?x4x3xf64> {
  %r = scan.scan steps(%n) sequences(%xs, %ys : tensor<?x4xf64>, tensor<?x3xf64>) sitsot(%acc0 : tensor<4x3xf64>) {
  ^bb0(%x: tensor<4xf64>, %y: tensor<3xf64>, %acc: tensor<4x3xf64>):
    %e = tensor.empty() : tensor<4x3xf64>
    %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4xf64>, tensor<3xf64>) outs(%e : tensor<4x3xf64>) {
    ^bb0(%a: f64, %b: f64, %o: f64):
      %m = arith.mulf %a, %b : f64
      linalg.yield %m : f64
    } -> tensor<4x3xf64>
    %next = arith.addf %acc, %p : tensor<4x3xf64>
    scan.yield %next : tensor<4x3xf64>
  } -> (tensor<?x4x3xf64>)
  return %r : tensor<?x4x3xf64>
}

// Not rewritten: the step also reads the accumulator (a nitsot of acc[0, 0]).
// CHECK-LABEL: func.func @state_read_in_step
// CHECK:         scan.scan
// CHECK-NEXT:      sequences
// CHECK-NEXT:      sitsot(%arg3 : tensor<4x3xf64>) keep [1, 0] {
func.func @state_read_in_step(%n: index, %xs: tensor<?x4xf64>, %ys: tensor<?x3xf64>, %acc0: tensor<4x3xf64>) -> (tensor<1x4x3xf64>, tensor<?xf64>) {
  %r, %firsts = scan.scan steps(%n) sequences(%xs, %ys : tensor<?x4xf64>, tensor<?x3xf64>) sitsot(%acc0 : tensor<4x3xf64>) keep [1, 0] {
  ^bb0(%x: tensor<4xf64>, %y: tensor<3xf64>, %acc: tensor<4x3xf64>):
    %c0 = arith.constant 0 : index
    %e = tensor.empty() : tensor<4x3xf64>
    %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4xf64>, tensor<3xf64>) outs(%e : tensor<4x3xf64>) {
    ^bb0(%a: f64, %b: f64, %o: f64):
      %m = arith.mulf %a, %b : f64
      linalg.yield %m : f64
    } -> tensor<4x3xf64>
    %next = arith.addf %acc, %p : tensor<4x3xf64>
    %first = tensor.extract %acc[%c0, %c0] : tensor<4x3xf64>
    scan.yield %next, %first : tensor<4x3xf64>, f64
  } -> (tensor<1x4x3xf64>, tensor<?xf64>)
  return %r, %firsts : tensor<1x4x3xf64>, tensor<?xf64>
}

// Not rewritten: a product of rank 2 (a [4, 2] x [2, 3] matmul), not rank 1.
// CHECK-LABEL: func.func @rank_two_product
// CHECK:         scan.scan
// CHECK-NEXT:      sequences
// CHECK-NEXT:      sitsot(%arg3 : tensor<4x3xf64>) keep [1] {
func.func @rank_two_product(%n: index, %as: tensor<?x4x2xf64>, %bs: tensor<?x2x3xf64>, %acc0: tensor<4x3xf64>) -> tensor<1x4x3xf64> {
  %r = scan.scan steps(%n) sequences(%as, %bs : tensor<?x4x2xf64>, tensor<?x2x3xf64>) sitsot(%acc0 : tensor<4x3xf64>) keep [1] {
  ^bb0(%a: tensor<4x2xf64>, %b: tensor<2x3xf64>, %acc: tensor<4x3xf64>):
    %next = linalg.matmul ins(%a, %b : tensor<4x2xf64>, tensor<2x3xf64>) outs(%acc : tensor<4x3xf64>) -> tensor<4x3xf64>
    scan.yield %next : tensor<4x3xf64>
  } -> (tensor<1x4x3xf64>)
  return %r : tensor<1x4x3xf64>
}

// In scan-optimize, the accumulation leaves the loop after save-mem gives the
// state keep = 1 (the program reads only the last row). The row factor is a
// running sum s_t (a state), so the product is no sequence-only work. The
// other factor's rows are the sequence's own: scan-push-out-seq replaces that
// nitsot by them.
// OPT-LABEL: func.func @last_row_read
// OPT:         %[[R:.*]]:2 = scan.scan
// OPT-NEXT:      sequences(%arg2 : tensor<?x3xf64>)
// OPT-NEXT:      sitsot(%arg4 : tensor<3xf64>) {
// OPT:         } -> (tensor<?x3xf64>, tensor<?x3xf64>)
// OPT:         %[[X:.*]] = tensor.extract_slice %arg1[0, 0] [%arg0, 4] [1, 1]
// OPT:         linalg.generic {{.*}} ins(%[[X]], %[[R]]#1 : tensor<?x4xf64>, tensor<?x3xf64>) outs(%arg3 : tensor<4x3xf64>)
func.func @last_row_read(%n: index, %xs: tensor<?x4xf64>, %ys: tensor<?x3xf64>, %acc0: tensor<4x3xf64>, %s0: tensor<3xf64>) -> tensor<4x3xf64> {
  %r, %ss = scan.scan steps(%n) sequences(%xs, %ys : tensor<?x4xf64>, tensor<?x3xf64>) sitsot(%acc0, %s0 : tensor<4x3xf64>, tensor<3xf64>) {
  ^bb0(%x: tensor<4xf64>, %y: tensor<3xf64>, %acc: tensor<4x3xf64>, %s: tensor<3xf64>):
    %sn = arith.addf %s, %y : tensor<3xf64>
    %e = tensor.empty() : tensor<4x3xf64>
    %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]} ins(%x, %sn : tensor<4xf64>, tensor<3xf64>) outs(%e : tensor<4x3xf64>) {
    ^bb0(%a: f64, %b: f64, %o: f64):
      %m = arith.mulf %a, %b : f64
      linalg.yield %m : f64
    } -> tensor<4x3xf64>
    %next = arith.addf %acc, %p : tensor<4x3xf64>
    scan.yield %next, %sn : tensor<4x3xf64>, tensor<3xf64>
  } -> (tensor<?x4x3xf64>, tensor<?x3xf64>)
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %nr = tensor.dim %r, %c0 : tensor<?x4x3xf64>
  %last = arith.subi %nr, %c1 : index
  %row = tensor.extract_slice %r[%last, 0, 0] [1, 4, 3] [1, 1, 1] : tensor<?x4x3xf64> to tensor<4x3xf64>
  return %row : tensor<4x3xf64>
}
