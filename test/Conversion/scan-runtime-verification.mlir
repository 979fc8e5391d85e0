// RUN: scan-opt %s --scan-runtime-verification -split-input-file | FileCheck %s

// scan-runtime-verification: run-time checks of a program's own ops, with
// messages naming the op's location ("file:line:col: what").

// An elementwise op on tensors becomes a linalg.generic whose operand sizes
// are checked against each other, inside a scan body too.
// CHECK-LABEL: func.func @elementwise_in_body
// CHECK:         scan.scan
// CHECK:           cf.assert %{{.*}}, "{{.*}}scan-runtime-verification.mlir:{{[0-9]+}}:{{[0-9]+}}: dimension #0 of input/output operand #1 is incompatible with inferred dimension size"
// CHECK:           linalg.generic
// CHECK:           scan.yield
func.func @elementwise_in_body(%xs: tensor<?x?xf64>, %w: tensor<?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x?xf64>
  %h0 = tensor.extract_slice %xs[0, 0] [1, %n] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf64>) sitsot(%w : tensor<?xf64>) {
  ^bb0(%row: tensor<?xf64>, %h: tensor<?xf64>):
    %m = arith.mulf %row, %h : tensor<?xf64>
    scan.yield %m : tensor<?xf64>
  } -> (tensor<?x?xf64>)
  return %r : tensor<?x?xf64>
}

// -----

// tensor.extract: the index against the size (the upstream model).
// CHECK-LABEL: func.func @extract
// CHECK:         cf.assert %{{.*}}, "{{.*}}: out-of-bounds access"
// CHECK:         tensor.extract
func.func @extract(%v: tensor<?xf64>, %i: index) -> f64 {
  %x = tensor.extract %v[%i] : tensor<?xf64>
  return %x : f64
}

// -----

// Slices: a size >= 0 and, unless the size is 0, first and last position in
// bounds (an empty slice is valid anywhere, unlike the upstream model of
// LLVM 22.1, which checks the offset of an empty slice too).
// CHECK-LABEL: func.func @slices
// CHECK-SAME:      (%[[V:.*]]: tensor<?xf64>, %[[O:.*]]: index, %[[S:.*]]: index
// CHECK:         %[[EMPTY:.*]] = arith.cmpi eq, %[[S]], %c0
// CHECK:         %[[OK:.*]] = arith.andi
// CHECK:         cf.assert %{{.*}}, "{{.*}}: slice out of bounds along dimension 0 (offset, size, stride against the size of the dimension)"
// CHECK:         tensor.extract_slice
// CHECK:         cf.assert %{{.*}}, "{{.*}}: slice out of bounds along dimension 0
// CHECK:         tensor.insert_slice
func.func @slices(%v: tensor<?xf64>, %o: index, %s: index, %d: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %a = tensor.extract_slice %v[%o] [%s] [1] : tensor<?xf64> to tensor<?xf64>
  %b = tensor.insert_slice %a into %d[%o] [%s] [1] : tensor<?xf64> into tensor<?xf64>
  return %a, %b : tensor<?xf64>, tensor<?xf64>
}

// -----

// Static shapes that agree need no check at all.
// CHECK-LABEL: func.func @static_ok
// CHECK-NOT:     cf.assert
// CHECK:         return
func.func @static_ok(%a: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<2xf64> {
  %m = arith.mulf %a, %b : tensor<4xf64>
  %s = tensor.extract_slice %m[1] [2] [1] : tensor<4xf64> to tensor<2xf64>
  return %s : tensor<2xf64>
}

// -----

// tensor.reshape takes its shape operand on trust (4 elements as 3 x 3 reads
// past the source): the sizes must be >= 0 and have as many elements as the
// source, the product checked for overflow. memref.reshape likewise.
// CHECK-LABEL: func.func @reshapes
// CHECK:         tensor.extract %arg1[%c0
// CHECK:         tensor.extract %arg1[%c1
// CHECK:         arith.mului_extended
// CHECK:         cf.assert %{{.*}}, "{{.*}}: the shape operand does not have as many elements as the source (or a size is negative, or differs from the result type)"
// CHECK-NEXT:    tensor.reshape
// CHECK:         memref.load %arg3[%c0
// CHECK:         cf.assert %{{.*}}, "{{.*}}: the shape operand does not have as many elements
// CHECK-NEXT:    memref.reshape
func.func @reshapes(%x: tensor<?xf64>, %s: tensor<2xindex>, %m: memref<?xf64>, %ms: memref<2xi32>) -> (tensor<?x?xf64>, memref<?x?xf64>) {
  %y = tensor.reshape %x(%s) : (tensor<?xf64>, tensor<2xindex>) -> tensor<?x?xf64>
  %z = memref.reshape %m(%ms) : (memref<?xf64>, memref<2xi32>) -> memref<?x?xf64>
  return %y, %z : tensor<?x?xf64>, memref<?x?xf64>
}

// -----

// expand_shape takes its dynamic output sizes on trust (7 elements into
// 2 x 3 drops one; -1 x 3 of 6 elements makes one row): each group's sizes
// must be >= 0 and multiply to the size they split. The memref form gets
// this check instead of the upstream one (which only checks that the
// source size divides by the group's static sizes). collapse_shape: a
// group's product must fit in 64 bits. Static groups need no check.
// CHECK-LABEL: func.func @expand_collapse
// CHECK:         cf.assert %{{.*}}, "{{.*}}: the output sizes of dimension 0 of the source do not multiply to its size (or one is negative)"
// CHECK-NEXT:    tensor.expand_shape
// CHECK:         cf.assert %{{.*}}, "{{.*}}: the output sizes of dimension 0 of the source do not multiply
// CHECK-NEXT:    memref.expand_shape
// CHECK:         cf.assert %{{.*}}, "{{.*}}: the collapsed size of result dimension 0 does not fit in 64 bits"
// CHECK-NEXT:    tensor.collapse_shape
// CHECK-NOT:     cf.assert
// CHECK:         tensor.expand_shape %arg4
// CHECK-NOT:     cf.assert
// CHECK:         return
func.func @expand_collapse(%x: tensor<?xf64>, %s: index, %m: memref<?xf64>, %c: tensor<?x?x2xf64>, %st: tensor<6xf64>)
    -> (tensor<?x3xf64>, memref<?x3xf64>, tensor<?x2xf64>, tensor<2x3xf64>) {
  %y = tensor.expand_shape %x [[0, 1]] output_shape [%s, 3] : tensor<?xf64> into tensor<?x3xf64>
  %z = memref.expand_shape %m [[0, 1]] output_shape [%s, 3] : memref<?xf64> into memref<?x3xf64>
  %w = tensor.collapse_shape %c [[0, 1], [2]] : tensor<?x?x2xf64> into tensor<?x2xf64>
  %v = tensor.expand_shape %st [[0, 1]] output_shape [2, 3] : tensor<6xf64> into tensor<2x3xf64>
  return %y, %z, %w, %v : tensor<?x3xf64>, memref<?x3xf64>, tensor<?x2xf64>, tensor<2x3xf64>
}

// -----

// tensor.pad: the padding must be >= 0 and the padded size fit in 64 bits
// (2**62 on each side of 3 elements wrapped to a negative size).
// CHECK-LABEL: func.func @pad
// CHECK:         cf.assert %{{.*}}, "{{.*}}: padding of dimension 0 is negative or the padded size does not fit in 64 bits"
// CHECK-NEXT:    tensor.pad
func.func @pad(%x: tensor<?xf64>, %l: index) -> tensor<?xf64> {
  %z = arith.constant 0.0 : f64
  %y = tensor.pad %x low[%l] high[2] {
  ^bb0(%i: index):
    tensor.yield %z : f64
  } : tensor<?xf64> to tensor<?xf64>
  return %y : tensor<?xf64>
}

// -----

// Integer division and remainder trap (SIGFPE) on a zero divisor, and the
// signed ones on the minimum value divided by -1: both are checked, for
// scalars and, inside the linalg.generic they become, for tensors.
// CHECK-LABEL: func.func @divisions
// CHECK:         %[[NZ:.*]] = arith.cmpi ne, %arg1, %c0_i64 : i64
// CHECK:         cf.assert %[[NZ]], "{{.*}}: integer division by zero"
// CHECK:         cf.assert %{{.*}}, "{{.*}}: signed integer division overflows (the minimum value divided by -1)"
// CHECK-NEXT:    arith.divsi %arg0, %arg1
// CHECK:         cf.assert %{{.*}}, "{{.*}}: integer division by zero"
// CHECK-NOT:     cf.assert
// CHECK:         arith.remui %arg0, %arg1
// CHECK:         cf.assert %{{.*}}, "{{.*}}: integer division by zero"
// CHECK:         cf.assert %{{.*}}, "{{.*}}: signed integer division overflows
// CHECK-NEXT:    arith.floordivsi %arg0, %arg1 : i64
// CHECK:         linalg.generic
// CHECK:           cf.assert %{{.*}}, "{{.*}}: integer division by zero"
// CHECK:           cf.assert %{{.*}}, "{{.*}}: signed integer division overflows
// CHECK-NEXT:      arith.divsi %in, %in_{{.*}} : i32
func.func @divisions(%a: i64, %b: i64, %t: tensor<?xi32>, %u: tensor<?xi32>) -> (i64, i64, i64, tensor<?xi32>) {
  %q = arith.divsi %a, %b : i64
  %r = arith.remui %a, %b : i64
  %f = arith.floordivsi %a, %b : i64
  %e = arith.divsi %t, %u : tensor<?xi32>
  return %q, %r, %f, %e : i64, i64, i64, tensor<?xi32>
}

// -----

// Divisors that cannot be 0 (or -1) need no check: a constant, and the
// graph builder's guarded `//` and `%`, select(y == 0 or y == -1, 1, y).
// A constant -1 divisor still needs the overflow check, unless the
// dividend is a constant other than the minimum.
// CHECK-LABEL: func.func @safe_divisors
// CHECK-NOT:     cf.assert
// CHECK:         arith.divsi %arg0, %c3_i64
// CHECK-NOT:     cf.assert
// CHECK:         arith.remsi %arg0, %[[SAFE:.*]] : i64
// CHECK:         cf.assert %{{.*}}, "{{.*}}: signed integer division overflows
// CHECK-NEXT:    arith.divsi %arg0, %c-1_i64
// CHECK-NOT:     cf.assert
// CHECK:         arith.divsi %c7_i64, %c-1_i64
// CHECK-NOT:     cf.assert
// CHECK:         return
func.func @safe_divisors(%x: i64, %y: i64) -> (i64, i64, i64, i64) {
  %c3 = arith.constant 3 : i64
  %a = arith.divsi %x, %c3 : i64
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %m1 = arith.constant -1 : i64
  %is0 = arith.cmpi eq, %y, %zero : i64
  %ism1 = arith.cmpi eq, %y, %m1 : i64
  %unsafe = arith.ori %is0, %ism1 : i1
  %safe = arith.select %unsafe, %one, %y : i64
  %b = arith.remsi %x, %safe : i64
  %c = arith.divsi %x, %m1 : i64
  %c7 = arith.constant 7 : i64
  %d = arith.divsi %c7, %m1 : i64
  return %a, %b, %c, %d : i64, i64, i64, i64
}

// -----

// Linalg ops whose maps take each operand dimension from one loop: each
// dimension is compared with its loop's size (the first operand dimension
// that is that loop), unless some loop is empty, as the upstream model does.
// Two inputs of one elementwise op: one check; the init, a tensor.empty of
// the first input's sizes, needs none.
// CHECK-LABEL: func.func @elementwise_sizes
// CHECK-SAME:      (%[[A:.*]]: tensor<?xf64>, %[[B:.*]]: tensor<?xf64>)
// CHECK-DAG:     %[[NA:.*]] = tensor.dim %[[A]], %c0
// CHECK-DAG:     %[[NB:.*]] = tensor.dim %[[B]], %c0
// CHECK:         %[[SAME:.*]] = arith.cmpi eq, %[[NB]], %[[NA]] : index
// CHECK:         %[[EMPTY:.*]] = arith.cmpi eq, %[[NA]], %{{.*}} : index
// CHECK:         %[[OK:.*]] = arith.ori %[[EMPTY]], %[[SAME]] : i1
// CHECK:         cf.assert %[[OK]], "{{.*}}: dimension #0 of input/output operand #1 is incompatible with inferred dimension size"
// CHECK-NOT:     cf.assert
// CHECK:         linalg.generic
func.func @elementwise_sizes(%a: tensor<?xf64>, %b: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%x: f64, %y: f64, %o: f64):
    %m = arith.mulf %x, %y : f64
    linalg.yield %m : f64
  } -> tensor<?xf64>
  return %g : tensor<?xf64>
}

// -----

// A transpose into a tensor.empty of its input's sizes, sizes read before it:
// every size is its loop's own, no check of the sizes at all (the asserts
// before are the upstream model of tensor.dim, which later canonicalization
// folds away on ranked tensors).
// CHECK-LABEL: func.func @transpose_own_sizes
// CHECK-NOT:     inferred dimension size
// CHECK:         linalg.transpose
func.func @transpose_own_sizes(%a: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?xf64>
  %d1 = tensor.dim %a, %c1 : tensor<?x?xf64>
  %e = tensor.empty(%d1, %d0) : tensor<?x?xf64>
  %t = linalg.transpose ins(%a : tensor<?x?xf64>) outs(%e : tensor<?x?xf64>) permutation = [1, 0]
  return %t : tensor<?x?xf64>
}

// -----

// A constant position (a broadcast row): inside a static dimension, no check;
// against a dynamic one, the position must be inside it (size > position).
// CHECK-LABEL: func.func @constant_positions
// CHECK-SAME:      (%[[R:.*]]: tensor<1x?xf64>, %[[S:.*]]: tensor<?x?xf64>, %[[O:.*]]: tensor<?x?xf64>)
// CHECK:         cf.assert %{{.*}}, "{{.*}}: dimension #1 of input/output operand #1 is incompatible with inferred dimension size"
// CHECK-NOT:     cf.assert
// CHECK:         linalg.generic
// CHECK:         %[[ROWS:.*]] = tensor.dim %[[S]], %c0
// CHECK:         %[[INSIDE:.*]] = arith.cmpi sgt, %[[ROWS]], %c2
// CHECK:         %[[OK:.*]] = arith.ori %{{.*}}, %[[INSIDE]] : i1
// CHECK:         cf.assert %[[OK]], "{{.*}}: dimension #0 of input/output operand #0 is incompatible with inferred dimension size"
// CHECK:         linalg.generic
func.func @constant_positions(%r: tensor<1x?xf64>, %s: tensor<?x?xf64>, %o: tensor<?x?xf64>) -> (tensor<?x?xf64>, tensor<?x?xf64>) {
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<1x?xf64>) outs(%o : tensor<?x?xf64>) {
  ^bb0(%x: f64, %y: f64):
    linalg.yield %x : f64
  } -> tensor<?x?xf64>
  %h = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (2, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<?x?xf64>) outs(%o : tensor<?x?xf64>) {
  ^bb0(%x: f64, %y: f64):
    linalg.yield %x : f64
  } -> tensor<?x?xf64>
  return %g, %h : tensor<?x?xf64>, tensor<?x?xf64>
}

// -----

// Other maps (`d0 + d1`) keep the upstream model's checks.
// CHECK-LABEL: func.func @sliding_window
// CHECK:         scf.if
// CHECK:           cf.assert %{{.*}}, "{{.*}}: unexpected negative result on dimension #0 of input/output operand #0"
// CHECK:           cf.assert %{{.*}}, "{{.*}}: dimension #0 of input/output operand #0 is incompatible with inferred dimension size"
// CHECK:         linalg.generic
func.func @sliding_window(%x: tensor<?xf64>, %o: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?xf64>) outs(%o : tensor<?x?xf64>) {
  ^bb0(%a: f64, %b: f64):
    linalg.yield %a : f64
  } -> tensor<?x?xf64>
  return %g : tensor<?x?xf64>
}
