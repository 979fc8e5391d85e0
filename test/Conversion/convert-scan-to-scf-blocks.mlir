// RUN: scan-opt %s --split-input-file --convert-scan-to-scf --canonicalize --cse | FileCheck %s
// RUN: scan-opt %s --split-input-file --convert-scan-to-scf="block-steps=0" --canonicalize --cse | FileCheck %s --check-prefix=ONELOOP

// convert-scan-to-scf runs the steps in blocks of `block-steps` (64) when
// something can be computed a block at a time inside the loop instead of
// whole around it: a sequence computed by a row-wise linalg op that only the
// scan reads, and contractions over the rows of a nitsot (RowBlockFusion.h).
// Each saves a T x H array (the pushed-out `x U + b` of an RNN, the stacked
// deltas of its gradient). test_row_blocks.py compares the results with
// block-steps=0.

#mm_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#tn_a = affine_map<(d0, d1, d2) -> (d2, d0)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1) -> (d1)>

// The product and the bias are computed 64 rows at a time, in the loop over
// blocks, into buffers of min(64, T) rows (the last block recomputes a few
// rows: every block computes as many).
// CHECK-LABEL: func.func @tiled_sequence
// CHECK-NOT:     linalg.generic
// CHECK:         %[[ROWS:.*]] = arith.minsi %{{.*}}, %c64 : index
// CHECK:         scf.for %[[B:.*]] = %c0 to %{{.*}} step %c64 {
// CHECK:           %[[X:.*]] = tensor.extract_slice %arg0[%{{.*}}, 0] [%[[ROWS]], %{{.*}}] [1, 1]
// CHECK:           tensor.empty(%[[ROWS]], %{{.*}}) : tensor<?x?xf32>
// CHECK:           linalg.generic {{.*}}"reduction"]} ins(%[[X]], %arg1
// CHECK:           %[[TILE:.*]] = linalg.generic {{.*}}ins(%{{.*}}, %arg2
// CHECK:           scf.for %[[T:.*]] = %[[B]] to %{{.*}} step %c1 {
// CHECK:             tensor.extract_slice %[[TILE]]
// ONELOOP-LABEL: func.func @tiled_sequence
// ONELOOP:         linalg.generic {{.*}}"reduction"]}
// ONELOOP:         scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// ONELOOP-NOT:     scf.for
func.func @tiled_sequence(%x: tensor<?x?xf32>, %u: tensor<?x?xf32>, %b: tensor<?xf32>, %h0: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %t = tensor.dim %x, %c0 : tensor<?x?xf32>
  %h = tensor.dim %u, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%t, %h) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %xu = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %u : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %e2 = tensor.empty(%t, %h) : tensor<?x?xf32>
  %xub = linalg.generic {indexing_maps = [#row, #bcast, #row], iterator_types = ["parallel", "parallel"]} ins(%xu, %b : tensor<?x?xf32>, tensor<?xf32>) outs(%e2 : tensor<?x?xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %r = scan.scan steps(%t) sequences(%xub : tensor<?x?xf32>) sitsot(%h0 : tensor<?xf32>) {
  ^bb0(%xt: tensor<?xf32>, %hp: tensor<?xf32>):
    %n = arith.addf %xt, %hp : tensor<?xf32>
    scan.yield %n : tensor<?xf32>
  } -> (tensor<?x?xf32>)
  return %r : tensor<?x?xf32>
}

// -----

#mm_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1) -> (d1)>

// The same with one tensor.empty for the fill and the bias (as
// scan-push-out-seq leaves W5's `x U + b`): the tile is an empty tensor of
// the block's rows, not a slice of one of all T rows (which bufferized to an
// allocation of T x H, 8 MiB at W5's H = 1024, of which each block wrote 64
// rows).
// CHECK-LABEL: func.func @tiled_sequence_shared_empty
// CHECK-NOT:     tensor.empty
// CHECK:         %[[ROWS:.*]] = arith.minsi %{{.*}}, %c64 : index
// CHECK:         scf.for
// CHECK:           %[[E:.*]] = tensor.empty(%[[ROWS]], %{{.*}}) : tensor<?x?xf32>
// CHECK:           %[[F:.*]] = linalg.fill ins(%{{.*}}) outs(%[[E]] : tensor<?x?xf32>)
// CHECK:           linalg.generic {{.*}}"reduction"]} {{.*}} outs(%[[F]] : tensor<?x?xf32>)
// CHECK:           linalg.generic {{.*}}ins(%{{.*}}, %arg2 : {{.*}}) outs(%[[E]] : tensor<?x?xf32>)
// ONELOOP-LABEL: func.func @tiled_sequence_shared_empty
func.func @tiled_sequence_shared_empty(%x: tensor<?x?xf32>, %u: tensor<?x?xf32>, %b: tensor<?xf32>, %h0: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %t = tensor.dim %x, %c0 : tensor<?x?xf32>
  %h = tensor.dim %u, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%t, %h) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %xu = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %u : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %xub = linalg.generic {indexing_maps = [#row, #bcast, #row], iterator_types = ["parallel", "parallel"]} ins(%xu, %b : tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %r = scan.scan steps(%t) sequences(%xub : tensor<?x?xf32>) sitsot(%h0 : tensor<?xf32>) {
  ^bb0(%xt: tensor<?xf32>, %hp: tensor<?xf32>):
    %n = arith.addf %xt, %hp : tensor<?xf32>
    scan.yield %n : tensor<?xf32>
  } -> (tensor<?x?xf32>)
  return %r : tensor<?x?xf32>
}

// -----
#mm_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#tn_a = affine_map<(d0, d1, d2) -> (d2, d0)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1) -> (d1)>


// The rows of %d (the deltas) are summed into dW block by block: %d needs
// a buffer of min(64, n) rows, and dW is carried by the loop over blocks.
// The two contractions chained through their inits add into one
// accumulator; each reads the intersection of its rows with the block's.
// CHECK-LABEL: func.func @row_sums
// CHECK:         %[[INIT:.*]] = linalg.fill
// CHECK:         %[[ROWS:.*]] = arith.minsi %{{.*}}, %c64 : index
// CHECK:         %[[D:.*]] = memref.alloc(%[[ROWS]], %{{.*}}) {{.*}} : memref<?x?xf32>
// CHECK:         %[[DW:.*]] = scf.for %[[B:.*]] = %c0 to %{{.*}} step %c64 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (tensor<?x?xf32>) {
// CHECK:           scf.for %{{.*}} = %[[B]] to
// CHECK:             linalg.vecmat
// CHECK:             bufferization.materialize_in_destination {{.*}} in restrict writable
// CHECK:           %[[BLOCK:.*]] = bufferization.to_tensor %[[D]] restrict
// CHECK:           %[[DELTA0:.*]] = tensor.extract_slice %[[BLOCK]]
// CHECK:           %[[ACC1:.*]] = scf.if
// CHECK:             linalg.generic {{.*}}ins(%{{.*}}, %[[DELTA0]] : {{.*}}) outs(%[[ACC]] :
// CHECK:           %[[DELTA1:.*]] = tensor.extract_slice %[[BLOCK]]
// CHECK:           %[[ACC2:.*]] = scf.if
// CHECK:             linalg.generic {{.*}}ins(%{{.*}}, %[[DELTA1]] : {{.*}}) outs(%[[ACC1]] :
// CHECK:           scf.yield %[[ACC2]]
// CHECK:         return %[[DW]]
// ONELOOP-LABEL: func.func @row_sums
// ONELOOP:         scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args
// ONELOOP-NOT:     scf.for
// ONELOOP:         linalg.generic
// ONELOOP:         linalg.generic
func.func @row_sums(%hs: tensor<?x?xf32>, %w: tensor<?x?xf32>, %h0: tensor<1x?xf32>, %n: index) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %d = scan.scan steps(%n) go_backwards sequences(%hs : tensor<?x?xf32>) nonsequences(%w : tensor<?x?xf32>) {
  ^bb0(%ht: tensor<?xf32>, %ww: tensor<?x?xf32>):
    %z = arith.constant 0.0 : f32
    %k1 = arith.constant 1 : index
    %k = tensor.dim %ww, %k1 : tensor<?x?xf32>
    %e = tensor.empty(%k) : tensor<?xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    %v = linalg.vecmat ins(%ht, %ww : tensor<?xf32>, tensor<?x?xf32>) outs(%f : tensor<?xf32>) -> tensor<?xf32>
    scan.yield %v : tensor<?xf32>
  } -> (tensor<?x?xf32>)
  // dW = hs[0:n-1]^T d[1:n] + h0^T d[0:1], two contractions chained through
  // their inits, as the gradient of an RNN builds it.
  %cols = tensor.dim %d, %c1 : tensor<?x?xf32>
  %hcols = tensor.dim %hs, %c1 : tensor<?x?xf32>
  %m = arith.subi %n, %c1 : index
  %hm = tensor.extract_slice %hs[0, 0] [%m, %hcols] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %dm = tensor.extract_slice %d[1, 0] [%m, %cols] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %e = tensor.empty(%hcols, %cols) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %dw1 = linalg.generic {indexing_maps = [#tn_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%hm, %dm : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %mul = arith.mulf %p, %q : f32
    %s = arith.addf %o, %mul : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %d0 = tensor.extract_slice %d[0, 0] [1, %cols] [1, 1] : tensor<?x?xf32> to tensor<1x?xf32>
  %dw = linalg.generic {indexing_maps = [#tn_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h0, %d0 : tensor<1x?xf32>, tensor<1x?xf32>) outs(%dw1 : tensor<?x?xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %mul = arith.mulf %p, %q : f32
    %s = arith.addf %o, %mul : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %dw : tensor<?x?xf32>
}

// -----

#mm_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#tn_a = affine_map<(d0, d1, d2) -> (d2, d0)>

// Not in blocks: the product is also returned (it must exist whole), and so
// are the stacked rows (a contraction is not all that reads them).
// CHECK-LABEL: func.func @both_needed_whole
// CHECK:         linalg.generic {{.*}}"reduction"]}
// CHECK:         scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK-NOT:     scf.for
func.func @both_needed_whole(%x: tensor<?x?xf32>, %u: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %t = tensor.dim %x, %c0 : tensor<?x?xf32>
  %h = tensor.dim %u, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%t, %h) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %xu = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %u : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %r = scan.scan steps(%t) sequences(%xu : tensor<?x?xf32>) {
  ^bb0(%xt: tensor<?xf32>):
    %n = arith.mulf %xt, %xt : tensor<?xf32>
    scan.yield %n : tensor<?xf32>
  } -> (tensor<?x?xf32>)
  %e2 = tensor.empty(%h, %h) : tensor<?x?xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %g = linalg.generic {indexing_maps = [#tn_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r, %r : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f2 : tensor<?x?xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %xu, %r, %g : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
