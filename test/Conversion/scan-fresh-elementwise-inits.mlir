// RUN: scan-opt %s --pass-pipeline="builtin.module(func.func(scan-fresh-elementwise-inits))" | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// An input reused as the destination of an elementwise op (what
// convert-elementwise-to-linalg produces) becomes a tensor.empty.
// CHECK-LABEL: func.func @input_as_destination
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<8xf32>
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<8xf32>)
func.func @input_as_destination(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%a : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// Dynamic sizes come from the replaced destination.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<?xf64>)
// CHECK:         %[[D:.*]] = tensor.dim %[[A]], %c0
// CHECK:         tensor.empty(%[[D]]) : tensor<?xf64>
func.func @dynamic(%a: tensor<?xf64>) -> tensor<?xf64> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf64>) outs(%a : tensor<?xf64>) {
  ^bb0(%x: f64, %o: f64):
    %t = math.tanh %x : f64
    linalg.yield %t : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}

// Kept: an intermediate only this op uses (writing over it is free) ...
// CHECK-LABEL: func.func @intermediate_destination
// CHECK:         %[[F:.*]] = linalg.fill
// CHECK:         linalg.generic {{.*}} ins(%[[F]] : tensor<8xf32>) outs(%[[F]] : tensor<8xf32>)
func.func @intermediate_destination(%c: f32) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%c : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%f : tensor<8xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// ... a destination whose value the payload reads (an accumulation) ...
// CHECK-LABEL: func.func @destination_is_read
// CHECK-NOT:     tensor.empty
// CHECK:         outs(%arg1 : tensor<8xf32>)
func.func @destination_is_read(%a: tensor<8xf32>, %acc: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// ... and reductions.
// CHECK-LABEL: func.func @reduction
// CHECK-NOT:     tensor.empty
// CHECK:         outs(%arg1 : tensor<f32>)
func.func @reduction(%a: tensor<8xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%a : tensor<8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// A buffer row handed to the step writable (a MITMOT row its only reader
// updates in place, see convert-scan-to-scf) stays the destination.
// CHECK-LABEL: func.func @writable_row_stays_the_destination
// CHECK:         %[[ROW:.*]] = bufferization.to_tensor %arg0 restrict writable
// CHECK-NOT:     tensor.empty
// CHECK:         outs(%[[ROW]] : tensor<8xf32>)
func.func @writable_row_stays_the_destination(%m: memref<8xf32>, %a: tensor<8xf32>) -> tensor<8xf32> {
  %row = bufferization.to_tensor %m restrict writable : memref<8xf32> to tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%row, %a : tensor<8xf32>, tensor<8xf32>) outs(%row : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// The same row cast to the step's static sizes (canonicalization's doing)
// stays the destination too. And a temporary (%q) never becomes the
// destination of an op that also reads such a row: eliminate-empty-tensors
// would then make the temporary's producer write the row, over the old
// state this op reads (a keep [1] accumulator returned 2 q instead of
// acc + q).
// CHECK-LABEL: func.func @cast_row_stays_the_destination
// CHECK:         %[[ROW:.*]] = bufferization.to_tensor %arg0 restrict writable
// CHECK:         %[[CAST:.*]] = tensor.cast %[[ROW]] : tensor<?xf32> to tensor<8xf32>
// CHECK:         %[[Q:.*]] = linalg.generic
// CHECK:         linalg.generic {{.*}} ins(%[[CAST]], %[[Q]] : tensor<8xf32>, tensor<8xf32>) outs(%[[CAST]] : tensor<8xf32>)
// CHECK-LABEL: func.func @no_temporary_as_destination_beside_a_row
// CHECK:         %[[Q:.*]] = linalg.generic
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[Q]] : tensor<8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<8xf32>)
func.func @cast_row_stays_the_destination(%m: memref<?xf32>, %p: tensor<8xf32>) -> tensor<8xf32> {
  %row = bufferization.to_tensor %m restrict writable : memref<?xf32> to tensor<?xf32>
  %cast = tensor.cast %row : tensor<?xf32> to tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.addf %x, %x : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%cast, %q : tensor<8xf32>, tensor<8xf32>) outs(%cast : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @no_temporary_as_destination_beside_a_row(%m: memref<?xf32>, %p: tensor<8xf32>) -> tensor<8xf32> {
  %row = bufferization.to_tensor %m restrict writable : memref<?xf32> to tensor<?xf32>
  %cast = tensor.cast %row : tensor<?xf32> to tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.addf %x, %x : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%cast, %q : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
