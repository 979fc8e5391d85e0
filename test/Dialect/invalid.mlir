// RUN: scan-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of `scan.scan` / `scan.yield`: the verifier of
// dialect/lib/ScanOps.cpp (verify, verifyRegions and their helpers, with and
// without a static n_steps), the custom parser, and the ODS constraints of
// ScanOps.td (mostly reached through the generic form).

//===----------------------------------------------------------------------===//
// n_steps
//===----------------------------------------------------------------------===//

func.func @negative_steps(%x0: f32) {
  %c = arith.constant -1 : index
  // expected-error @+1 {{'scan.scan' op n_steps is -1, must be >= 0}}
  %r = scan.scan steps(%c) sitsot(%x0 : f32) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @steps_not_index(%n: i32, %x0: f32) {
  // expected-error @+1 {{operand #0 must be index, but got 'i32'}}
  %r = "scan.scan"(%n, %x0) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 1, 0>}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (i32, f32) -> tensor<?xf32>
  return
}

//===----------------------------------------------------------------------===//
// Tap lists: one per item of their group
//===----------------------------------------------------------------------===//

// -----

func.func @sequence_taps_count(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{'sequence_taps' has 0 tap lists but there are 1 sequences}}
  %r = "scan.scan"(%n, %u) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>, sequence_taps = []}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (index, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @mitmot_in_taps_count(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{'mitmot_in_taps' has 2 tap lists but there are 1 mitmot buffers}}
  %r = "scan.scan"(%n, %b) <{operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 0>,
                             mitmot_in_taps = [array<i64: 0>, array<i64: 0>], mitmot_out_taps = [array<i64: 0>]}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (index, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @mitmot_out_taps_count(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{'mitmot_out_taps' has 0 tap lists but there are 1 mitmot buffers}}
  %r = "scan.scan"(%n, %b) <{operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 0>, mitmot_in_taps = [array<i64: 0>]}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (index, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @mitsot_taps_count(%n: index, %x0: tensor<1xf32>) {
  // expected-error @+1 {{'mitsot_taps' has 0 tap lists but there are 1 mitsot inits}}
  %r = "scan.scan"(%n, %x0) <{operandSegmentSizes = array<i32: 1, 0, 0, 1, 0, 0>}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (index, tensor<1xf32>) -> tensor<?xf32>
  return
}

//===----------------------------------------------------------------------===//
// Result count and keep
//===----------------------------------------------------------------------===//

// -----

func.func @too_few_results(%n: index, %b: tensor<?xf32>, %x0: tensor<1xf32>, %s0: f32) {
  // expected-error @+1 {{has 2 results but its mitmot, mitsot and sitsot groups need at least 3}}
  %r:2 = scan.scan steps(%n) mitmot(%b[0] -> [0] : tensor<?xf32>) mitsot(%x0[-1] : tensor<1xf32>) sitsot(%s0 : f32) {
  ^bb0(%a: f32, %x: f32, %s: f32):
    scan.yield %a, %x, %s : f32, f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

func.func @keep_size(%n: index, %s0: f32) {
  // expected-error @+1 {{'keep' has 2 entries but the op has 1 results}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) keep [1, 0] {
  ^bb0(%s: f32):
    scan.yield %s : f32
  } -> (tensor<1xf32>)
  return
}

// -----

func.func @keep_negative(%n: index, %s0: f32) {
  // expected-error @+1 {{'keep' entry #1 is -2, must be >= 0}}
  %r:2 = scan.scan steps(%n) sitsot(%s0 : f32) keep [0, -2] {
  ^bb0(%s: f32):
    scan.yield %s, %s : f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

func.func @keep_on_mitmot(%n: index, %b: tensor<?xf32>, %c: tensor<?xf32>) {
  // expected-error @+1 {{mitmot #1: 'keep' must be 0 for a mitmot, got 1}}
  %r:2 = scan.scan steps(%n) mitmot(%b[0] -> [0] : tensor<?xf32>, %c[0] -> [0] : tensor<?xf32>) keep [0, 1] {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x, %y : f32, f32
  } -> (tensor<?xf32>, tensor<1xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

// -----

func.func @sequence_not_a_tensor(%n: index, %u: f32) {
  // expected-error @+1 {{operand #1 must be variadic of ranked tensor of any type values, but got 'f32'}}
  %r = scan.scan steps(%n) sequences(%u : f32) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @sequence_rank0(%n: index, %u: tensor<f32>) {
  // expected-error @+1 {{'scan.scan' op sequence #0: must be a tensor of rank >= 1, got 'tensor<f32>'}}
  %r = scan.scan steps(%n) sequences(%u : tensor<f32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

#CSR = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
func.func @sequence_encoding(%n: index, %u: tensor<?x4xf32, #CSR>) {
  // expected-error @+1 {{sequence #0: the encoding of 'tensor<?x4xf32, #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>>' is not valid for its rows: dimension-rank mismatch between encoding and tensor shape: 2 != 1}}
  %r = scan.scan steps(%n) sequences(%u : tensor<?x4xf32, #CSR>) {
  ^bb0(%x: tensor<4xf32>):
    scan.yield %x : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return
}

// -----

func.func @sequence_empty_taps(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{sequence #0: taps must not be empty}}
  %r = "scan.scan"(%n, %u) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>, sequence_taps = [array<i64>]}> ({
    %z = arith.constant 0.0 : f32
    "scan.yield"(%z) : (f32) -> ()
  }) : (index, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @sequence_taps_unordered(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{sequence #0: taps must be strictly increasing, got [1, -1]}}
  %r = scan.scan steps(%n) sequences(%u[1, -1] : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @sequence_taps_repeated(%n: index, %u: tensor<?xf32>, %v: tensor<?xf32>) {
  // expected-error @+1 {{sequence #1: taps must be strictly increasing, got [0, 0]}}
  %r = scan.scan steps(%n) sequences(%u : tensor<?xf32>, %v[0, 0] : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

// Without a static n_steps only the tap window is known: 4 - (-1) = 5 rows.
func.func @sequence_too_short(%n: index, %u: tensor<4xf32>) {
  // expected-error @+1 {{sequence #0: has 4 rows but taps [-1, 4] need 5}}
  %r = scan.scan steps(%n) sequences(%u[-1, 4] : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

// With a static n_steps: 3 steps + window 4 = 7 rows.
func.func @sequence_too_short_static(%u: tensor<?x2xf32>, %v: tensor<6x2xf32>) {
  %c3 = arith.constant 3 : index
  // expected-error @+1 {{sequence #1: has 6 rows but taps [-4, 0] over 3 steps need 7}}
  %r = scan.scan steps(%c3) sequences(%u : tensor<?x2xf32>, %v[-4, 0] : tensor<6x2xf32>) {
  ^bb0(%x: tensor<2xf32>, %y: tensor<2xf32>, %z: tensor<2xf32>):
    scan.yield %x : tensor<2xf32>
  } -> (tensor<3x2xf32>)
  return
}

// -----

// The default tap [0] over 5 steps needs 5 rows.
func.func @sequence_default_tap_too_short(%u: tensor<4xi32>) {
  %c5 = arith.constant 5 : index
  // expected-error @+1 {{sequence #0: has 4 rows but taps [0] over 5 steps need 5}}
  %r = scan.scan steps(%c5) sequences(%u : tensor<4xi32>) {
  ^bb0(%x: i32):
    scan.yield %x : i32
  } -> (tensor<5xi32>)
  return
}

// -----

// A window wider than any tensor: an error even for a dynamic length.
func.func @sequence_window_overflow(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{sequence #0: taps [-9223372036854775808, 1] need more rows than a tensor can have}}
  %r = scan.scan steps(%n) sequences(%u[-9223372036854775808, 1] : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

// n_steps + window overflows int64: must not wrap around and pass.
func.func @sequence_steps_overflow(%u: tensor<4xf32>) {
  %c = arith.constant 9223372036854775807 : index
  // expected-error @+1 {{sequence #0: taps [0, 1] over 9223372036854775807 steps need more rows than a tensor can have}}
  %r = scan.scan steps(%c) sequences(%u[0, 1] : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x : f32
  } -> (tensor<9223372036854775807xf32>)
  return
}

//===----------------------------------------------------------------------===//
// MITMOT
//===----------------------------------------------------------------------===//

// -----

func.func @mitmot_rank0(%n: index, %b: tensor<f32>) {
  // expected-error @+1 {{mitmot #0: must be a tensor of rank >= 1, got 'tensor<f32>'}}
  %r = scan.scan steps(%n) mitmot(%b[0] -> [0] : tensor<f32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<f32>)
  return
}

// -----

func.func @mitmot_not_a_tensor(%n: index, %b: memref<?xf32>) {
  // expected-error @+1 {{operand #1 must be variadic of ranked tensor of any type values, but got 'memref<?xf32>'}}
  %r = scan.scan steps(%n) mitmot(%b[0] -> [0] : memref<?xf32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (memref<?xf32>)
  return
}

// -----

#CSR = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
func.func @mitmot_encoding(%n: index, %b: tensor<?x4xf32, #CSR>) {
  // expected-error @+1 {{mitmot #0: the encoding of}}
  %r = scan.scan steps(%n) mitmot(%b[0] -> [0] : tensor<?x4xf32, #CSR>) {
  ^bb0(%x: tensor<4xf32>):
    scan.yield %x : tensor<4xf32>
  } -> (tensor<?x4xf32, #CSR>)
  return
}

// -----

func.func @mitmot_in_taps_unordered(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{mitmot #0: in taps must be strictly increasing, got [2, 1]}}
  %r = scan.scan steps(%n) mitmot(%b[2, 1] -> [0] : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitmot_out_taps_empty(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{mitmot #0: out taps must not be empty}}
  %r = scan.scan steps(%n) mitmot(%b[0] -> [] : tensor<?xf32>) {
  ^bb0(%x: f32):
    scan.yield
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitmot_out_taps_unordered(%n: index, %b: tensor<?xf32>, %c: tensor<?xf32>) {
  // expected-error @+1 {{mitmot #1: out taps must be strictly increasing, got [0, -1]}}
  %r:2 = scan.scan steps(%n) mitmot(%b[] -> [0] : tensor<?xf32>, %c[] -> [0, -1] : tensor<?xf32>) {
    %z = arith.constant 0.0 : f32
    scan.yield %z, %z, %z : f32, f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

// The window spans in and out taps: [-2] -> [1] covers 3 rows.
func.func @mitmot_too_short(%n: index, %b: tensor<2xf32>) {
  // expected-error @+1 {{mitmot #0: has 2 rows but taps [-2] -> [1] need 3}}
  %r = scan.scan steps(%n) mitmot(%b[-2] -> [1] : tensor<2xf32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<2xf32>)
  return
}

// -----

func.func @mitmot_too_short_static(%b: tensor<4x3xf32>) {
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{mitmot #0: has 4 rows but taps [] -> [0, 1] over 4 steps need 5}}
  %r = scan.scan steps(%c4) mitmot(%b[] -> [0, 1] : tensor<4x3xf32>) {
    %z = arith.constant dense<0.0> : tensor<3xf32>
    scan.yield %z, %z : tensor<3xf32>, tensor<3xf32>
  } -> (tensor<4x3xf32>)
  return
}

// -----

func.func @mitmot_window_overflow(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{mitmot #0: taps [-9223372036854775807] -> [9223372036854775807] need more rows than a tensor can have}}
  %r = scan.scan steps(%n) mitmot(%b[-9223372036854775807] -> [9223372036854775807] : tensor<?xf32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitmot_result_type(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{mitmot #0: result #0 has type 'tensor<5xf32>' but the buffer has type 'tensor<?xf32>'}}
  %r = scan.scan steps(%n) mitmot(%b[0] -> [0] : tensor<?xf32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<5xf32>)
  return
}

//===----------------------------------------------------------------------===//
// MITSOT
//===----------------------------------------------------------------------===//

// -----

func.func @mitsot_rank0(%n: index, %x0: tensor<f32>) {
  // expected-error @+1 {{mitsot #0: must be a tensor of rank >= 1, got 'tensor<f32>'}}
  %r = scan.scan steps(%n) mitsot(%x0[-1] : tensor<f32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitsot_empty_taps(%n: index, %x0: tensor<1xf32>) {
  // expected-error @+1 {{mitsot #0: taps must not be empty}}
  %r = scan.scan steps(%n) mitsot(%x0[] : tensor<1xf32>) {
    %z = arith.constant 0.0 : f32
    scan.yield %z : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitsot_taps_unordered(%n: index, %x0: tensor<3xf32>) {
  // expected-error @+1 {{mitsot #0: taps must be strictly increasing, got [-1, -3]}}
  %r = scan.scan steps(%n) mitsot(%x0[-1, -3] : tensor<3xf32>) {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitsot_tap_not_negative(%n: index, %x0: tensor<2xf32>) {
  // expected-error @+1 {{mitsot #0: taps must all be negative, got [-2, 0]}}
  %r = scan.scan steps(%n) mitsot(%x0[-2, 0] : tensor<2xf32>) {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

#CSR = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
func.func @mitsot_encoding(%n: index, %x0: tensor<1x4xf32, #CSR>) {
  // expected-error @+1 {{mitsot #0: the encoding of}}
  %r = scan.scan steps(%n) mitsot(%x0[-1] : tensor<1x4xf32, #CSR>) {
  ^bb0(%x: tensor<4xf32>):
    scan.yield %x : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return
}

// -----

func.func @mitsot_init_rows(%n: index, %x0: tensor<5xf32>, %x1: tensor<2x16xf32>) {
  // expected-error @+1 {{'scan.scan' op mitsot #1: init has 2 rows but taps [-3, -1] need 3}}
  %r:2 = scan.scan steps(%n) mitsot(%x0[-5] : tensor<5xf32>, %x1[-3, -1] : tensor<2x16xf32>) {
  ^bb0(%a: f32, %b: tensor<16xf32>, %c: tensor<16xf32>):
    scan.yield %a, %b : f32, tensor<16xf32>
  } -> (tensor<?xf32>, tensor<?x16xf32>)
  return
}

// -----

// K = -min(taps) exactly: more init rows than the taps need is an error too.
func.func @mitsot_init_rows_extra(%n: index, %x0: tensor<3xf32>) {
  // expected-error @+1 {{mitsot #0: init has 3 rows but taps [-2] need 2}}
  %r = scan.scan steps(%n) mitsot(%x0[-2] : tensor<3xf32>) {
  ^bb0(%a: f32):
    scan.yield %a : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitsot_min_tap_overflow(%n: index, %x0: tensor<?xf32>) {
  // expected-error @+1 {{mitsot #0: taps [-9223372036854775808] need more init rows than a tensor can have}}
  %r = scan.scan steps(%n) mitsot(%x0[-9223372036854775808] : tensor<?xf32>) {
  ^bb0(%a: f32):
    scan.yield %a : f32
  } -> (tensor<?xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Stacked results (mitsot, sitsot, nitsot)
//===----------------------------------------------------------------------===//

// -----

func.func @mitsot_result_not_tensor(%n: index, %x0: tensor<1xf32>) {
  // expected-error @+1 {{mitsot #0: result #0 must be a tensor of rank >= 1, got 'f32'}}
  %r = scan.scan steps(%n) mitsot(%x0[-1] : tensor<1xf32>) {
  ^bb0(%a: f32):
    scan.yield %a : f32
  } -> (f32)
  return
}

// -----

func.func @mitsot_result_rows(%n: index, %x0: tensor<1x4xf32>) {
  // expected-error @+1 {{mitsot #0: result #0 has type 'tensor<?x5xf32>' but its rows must be 'tensor<4xf32>'}}
  %r = scan.scan steps(%n) mitsot(%x0[-1] : tensor<1x4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    scan.yield %a : tensor<4xf32>
  } -> (tensor<?x5xf32>)
  return
}

// -----

func.func @sitsot_result_rank0(%n: index, %s0: f32) {
  // expected-error @+1 {{sitsot #0: result #0 must be a tensor of rank >= 1, got 'tensor<f32>'}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) {
  ^bb0(%s: f32):
    scan.yield %s : f32
  } -> (tensor<f32>)
  return
}

// -----

func.func @sitsot_result_rows(%n: index, %s0: tensor<4xf32>) {
  // expected-error @+1 {{sitsot #0: result #0 has type 'tensor<?xf32>' but its rows must be 'tensor<4xf32>'}}
  %r = scan.scan steps(%n) sitsot(%s0 : tensor<4xf32>) {
  ^bb0(%s: tensor<4xf32>):
    scan.yield %s : tensor<4xf32>
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @sitsot_result_element_type(%n: index, %s0: f64) {
  // expected-error @+1 {{sitsot #0: result #0 has type 'tensor<?xf32>' but its rows must be 'f64'}}
  %r = scan.scan steps(%n) sitsot(%s0 : f64) {
  ^bb0(%s: f64):
    scan.yield %s : f64
  } -> (tensor<?xf32>)
  return
}

// -----

#CSR = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
func.func @sitsot_result_encoding(%n: index, %s0: tensor<4xf32>) {
  // expected-error @+1 {{sitsot #0: the encoding of}}
  %r = scan.scan steps(%n) sitsot(%s0 : tensor<4xf32>) {
  ^bb0(%s: tensor<4xf32>):
    scan.yield %s : tensor<4xf32>
  } -> (tensor<?x4xf32, #CSR>)
  return
}

// -----

func.func @keep_rows(%n: index, %s0: f32) {
  // expected-error @+1 {{sitsot #0: result #0 has keep 2 so its type must have 2 rows, got 'tensor<?xf32>'}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) keep [2] {
  ^bb0(%s: f32):
    scan.yield %s : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @keep_rows_static(%s0: f32) {
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{nitsot #0: result #1 has keep 3 so its type must have 3 rows, got 'tensor<4xf32>'}}
  %r:2 = scan.scan steps(%c4) sitsot(%s0 : f32) keep [0, 3] {
  ^bb0(%s: f32):
    scan.yield %s, %s : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @until_static_rows(%s0: f32) {
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{sitsot #0: result #0 must have a dynamic leading size because the scan has 'until', got 'tensor<4xf32>'}}
  %r = scan.scan steps(%c4) until sitsot(%s0 : f32) {
  ^bb0(%s: f32):
    %t = arith.constant true
    scan.yield %s, %t : f32, i1
  } -> (tensor<4xf32>)
  return
}

// -----

func.func @static_rows_dynamic_steps(%n: index, %x0: tensor<1xf32>) {
  // expected-error @+1 {{mitsot #0: result #0 has static leading size 4 but n_steps is not a constant}}
  %r = scan.scan steps(%n) mitsot(%x0[-1] : tensor<1xf32>) {
  ^bb0(%a: f32):
    scan.yield %a : f32
  } -> (tensor<4xf32>)
  return
}

// -----

func.func @static_rows_wrong(%s0: f32) {
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{sitsot #0: result #0 has 5 rows but n_steps is 4}}
  %r = scan.scan steps(%c4) sitsot(%s0 : f32) {
  ^bb0(%s: f32):
    scan.yield %s : f32
  } -> (tensor<5xf32>)
  return
}

// -----

func.func @nitsot_result_not_tensor(%n: index) {
  // expected-error @+1 {{nitsot #0: result #0 must be a tensor of rank >= 1, got 'f32'}}
  %r = scan.scan steps(%n) {
    %z = arith.constant 0.0 : f32
    scan.yield %z : f32
  } -> (f32)
  return
}

// -----

func.func @nitsot_static_rows(%n: index, %s0: f32) {
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{nitsot #1: result #2 has 3 rows but n_steps is 2}}
  %r:3 = scan.scan steps(%c2) sitsot(%s0 : f32) {
  ^bb0(%s: f32):
    scan.yield %s, %s, %s : f32, f32, f32
  } -> (tensor<2xf32>, tensor<2xf32>, tensor<3xf32>)
  return
}

// -----

func.func @nitsot_until_static(%s0: f32) {
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{nitsot #0: result #0 must have a dynamic leading size because the scan has 'until', got 'tensor<2xf32>'}}
  %r = scan.scan steps(%c2) until {
    %z = arith.constant 0.0 : f32
    %t = arith.constant true
    scan.yield %z, %t : f32, i1
  } -> (tensor<2xf32>)
  return
}

//===----------------------------------------------------------------------===//
// SITSOT inits
//===----------------------------------------------------------------------===//

// -----

func.func @sitsot_rank0(%n: index, %s0: tensor<f32>) {
  // expected-error @+1 {{sitsot #0: rank-0 tensor 'tensor<f32>' is not allowed; use the scalar element type}}
  %r = scan.scan steps(%n) sitsot(%s0 : tensor<f32>) {
  ^bb0(%s: tensor<f32>):
    scan.yield %s : tensor<f32>
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @sitsot_unranked(%n: index, %s0: f32, %s1: tensor<*xf32>) {
  // expected-error @+1 {{sitsot #1: unranked tensor 'tensor<*xf32>' is not allowed}}
  %r:2 = scan.scan steps(%n) sitsot(%s0, %s1 : f32, tensor<*xf32>) {
  ^bb0(%s: f32, %t: tensor<*xf32>):
    scan.yield %s, %t : f32, tensor<*xf32>
  } -> (tensor<?xf32>, tensor<?xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Body: terminator, block arguments, yields
//===----------------------------------------------------------------------===//

// -----

func.func @body_terminator(%n: index) {
  // expected-error @+1 {{'scan.scan' op body must end with 'scan.yield'}}
  scan.scan steps(%n) {
    llvm.unreachable
  } -> ()
  return
}

// -----

func.func @body_num_args(%n: index, %u: tensor<?xf32>, %s0: f32) {
  // expected-error @+1 {{body has 2 arguments but the operand groups need 3 (one per sequence tap, mitmot in tap, mitsot tap, sitsot and non-sequence)}}
  %r = scan.scan steps(%n) sequences(%u[-1, 0] : tensor<?xf32>) sitsot(%s0 : f32) {
  ^bb0(%a: f32, %s: f32):
    scan.yield %s : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @yield_count(%n: index, %s0: f32) {
  // expected-error @+1 {{'scan.yield' has 2 operands but the outputs need 1 (one per mitmot out tap, mitsot, sitsot and nitsot)}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) {
  ^bb0(%s: f32):
    scan.yield %s, %s : f32, f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @yield_count_until(%n: index, %s0: f32) {
  // expected-error @+1 {{'scan.yield' has 1 operands but the outputs need 2 (one per mitmot out tap, mitsot, sitsot and nitsot, then the 'until' condition)}}
  %r = scan.scan steps(%n) until sitsot(%s0 : f32) {
  ^bb0(%s: f32):
    scan.yield %s : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @sequence_arg_type(%n: index, %u: tensor<?x4xf32>) {
  // expected-error @+1 {{sequence #0: block argument #1 has type 'tensor<5xf32>' but must be 'tensor<4xf32>'}}
  %r = scan.scan steps(%n) sequences(%u[0, 1] : tensor<?x4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<5xf32>):
    scan.yield %a : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return
}

// -----

func.func @mitmot_arg_type(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{mitmot #0: block argument #0 has type 'f64' but must be 'f32'}}
  %r = scan.scan steps(%n) mitmot(%b[0] -> [0] : tensor<?xf32>) {
  ^bb0(%a: f64):
    %z = arith.constant 0.0 : f32
    scan.yield %z : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitmot_yield_type(%n: index, %b: tensor<?x2xf32>) {
  // expected-error @+1 {{mitmot #0: yields a value of type 'f32' but must yield 'tensor<2xf32>'}}
  %r = scan.scan steps(%n) mitmot(%b[] -> [0, 1] : tensor<?x2xf32>) {
    %z = arith.constant 0.0 : f32
    %t = arith.constant dense<0.0> : tensor<2xf32>
    scan.yield %t, %z : tensor<2xf32>, f32
  } -> (tensor<?x2xf32>)
  return
}

// -----

func.func @mitsot_arg_type(%n: index, %x0: tensor<2xi32>) {
  // expected-error @+1 {{mitsot #0: block argument #1 has type 'i64' but must be 'i32'}}
  %r = scan.scan steps(%n) mitsot(%x0[-2, -1] : tensor<2xi32>) {
  ^bb0(%a: i32, %b: i64):
    scan.yield %a : i32
  } -> (tensor<?xi32>)
  return
}

// -----

func.func @mitsot_yield_type(%n: index, %x0: tensor<1xi32>) {
  // expected-error @+1 {{mitsot #0: yields a value of type 'i64' but must yield 'i32'}}
  %r = scan.scan steps(%n) mitsot(%x0[-1] : tensor<1xi32>) {
  ^bb0(%a: i32):
    %b = arith.extsi %a : i32 to i64
    scan.yield %b : i64
  } -> (tensor<?xi32>)
  return
}

// -----

func.func @sitsot_arg_type(%n: index, %s0: tensor<4xf32>) {
  // expected-error @+1 {{sitsot #0: block argument #0 has type 'tensor<?xf32>' but must be 'tensor<4xf32>'}}
  %r = scan.scan steps(%n) sitsot(%s0 : tensor<4xf32>) {
  ^bb0(%s: tensor<?xf32>):
    %t = arith.constant dense<0.0> : tensor<4xf32>
    scan.yield %t : tensor<4xf32>
  } -> (tensor<?x4xf32>)
  return
}

// -----

func.func @sitsot_yield_type(%n: index, %s0: i1) {
  // expected-error @+1 {{sitsot #0: yields a value of type 'i32' but must yield 'i1'}}
  %r = scan.scan steps(%n) sitsot(%s0 : i1) {
  ^bb0(%s: i1):
    %c = arith.constant 1 : i32
    scan.yield %c : i32
  } -> (tensor<?xi1>)
  return
}

// -----

func.func @nitsot_yield_type(%n: index) {
  // expected-error @+1 {{nitsot #0: yields a value of type 'index' but must yield 'i64'}}
  %r = scan.scan steps(%n) {
    %c = arith.constant 1 : index
    scan.yield %c : index
  } -> (tensor<?xi64>)
  return
}

// -----

func.func @nonsequence_arg_type(%n: index, %w: tensor<3x3xf32>, %k: index) {
  // expected-error @+1 {{non-sequence #1: block argument #1 has type 'i64' but must be 'index'}}
  scan.scan steps(%n) nonsequences(%w, %k : tensor<3x3xf32>, index) {
  ^bb0(%a: tensor<3x3xf32>, %b: i64):
    scan.yield
  } -> ()
  return
}

// -----

func.func @until_condition_type(%n: index, %s0: f32) {
  // expected-error @+1 {{'until' condition (last 'scan.yield' operand) must be i1, got 'f32'}}
  %r = scan.scan steps(%n) until sitsot(%s0 : f32) {
  ^bb0(%s: f32):
    scan.yield %s, %s : f32, f32
  } -> (tensor<?xf32>)
  return
}

//===----------------------------------------------------------------------===//
// scan.yield
//===----------------------------------------------------------------------===//

// -----

func.func @yield_outside_scan(%x: f32) {
  // expected-error @+1 {{'scan.yield' op expects parent op 'scan.scan'}}
  scan.yield %x : f32
}

// -----

func.func @yield_in_nested_region(%n: index, %c: i1) {
  scan.scan steps(%n) nonsequences(%c : i1) {
  ^bb0(%b: i1):
    scf.if %b {
      // expected-error @+1 {{'scan.yield' op expects parent op 'scan.scan'}}
      scan.yield
    }
    scan.yield
  } -> ()
  return
}

//===----------------------------------------------------------------------===//
// Region structure and IsolatedFromAbove
//===----------------------------------------------------------------------===//

// -----

func.func @no_block(%n: index) {
  // expected-error @+1 {{region #0 ('body') failed to verify constraint: region with 1 blocks}}
  "scan.scan"(%n) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0>}> ({
  }) : (index) -> ()
  return
}

// -----

func.func @two_blocks(%n: index) {
  // expected-error @+1 {{expects region #0 to have 0 or 1 blocks}}
  "scan.scan"(%n) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0>}> ({
    "scan.yield"() : () -> ()
  ^bb1:
    "scan.yield"() : () -> ()
  }) : (index) -> ()
  return
}

// -----

func.func @two_regions(%n: index) {
  // expected-error @+1 {{'scan.scan' op requires one region}}
  "scan.scan"(%n) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0>}> ({
    "scan.yield"() : () -> ()
  }, {
    "scan.yield"() : () -> ()
  }) : (index) -> ()
  return
}

// -----

func.func @isolated_from_above(%n: index, %w: f32) {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = scan.scan steps(%n) {
    // expected-error @+1 {{using value defined outside the region}}
    scan.yield %w : f32
  } -> (tensor<?xf32>)
  return
}

//===----------------------------------------------------------------------===//
// ODS constraints in the generic form
//===----------------------------------------------------------------------===//

// -----

func.func @segments_negative(%n: index) {
  // expected-error @+1 {{'operandSegmentSizes' attribute cannot have negative elements}}
  "scan.scan"(%n) <{operandSegmentSizes = array<i32: 1, 1, -1, 0, 0, 0>}> ({
    "scan.yield"() : () -> ()
  }) : (index) -> ()
  return
}

// -----

func.func @segments_total(%n: index, %s0: f32) {
  // expected-error @+1 {{operand count (2) does not match with the total size (1) specified in attribute 'operandSegmentSizes'}}
  "scan.scan"(%n, %s0) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0>}> ({
    "scan.yield"() : () -> ()
  }) : (index, f32) -> ()
  return
}

// -----

func.func @segments_length(%n: index) {
  // expected-error @+1 {{size mismatch in attribute conversion: 5 vs 6}}
  "scan.scan"(%n) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0>}> ({
    "scan.yield"() : () -> ()
  }) : (index) -> ()
  return
}

// -----

func.func @segments_missing(%n: index) {
  // expected-error @+1 {{operand count (1) does not match with the total size (0) specified in attribute 'operandSegmentSizes'}}
  "scan.scan"(%n) ({
    "scan.yield"() : () -> ()
  }) : (index) -> ()
  return
}

// -----

func.func @taps_not_arrays(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{attribute 'sequence_taps' failed to satisfy constraint: one list of taps per item}}
  %r = "scan.scan"(%n, %u) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>, sequence_taps = [[0]]}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (index, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @taps_i32(%n: index, %x0: tensor<1xf32>) {
  // expected-error @+1 {{attribute 'mitsot_taps' failed to satisfy constraint: one list of taps per item}}
  %r = "scan.scan"(%n, %x0) <{operandSegmentSizes = array<i32: 1, 0, 0, 1, 0, 0>, mitsot_taps = [array<i32: -1>]}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (index, tensor<1xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @taps_not_a_list(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{Invalid attribute `mitmot_out_taps` in property conversion: 0 : i64}}
  %r = "scan.scan"(%n, %b) <{operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 0>,
                             mitmot_in_taps = [array<i64: 0>], mitmot_out_taps = 0}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (index, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @keep_not_dense_array(%n: index, %s0: f32) {
  // expected-error @+1 {{Invalid attribute `keep` in property conversion: [1]}}
  %r = "scan.scan"(%n, %s0) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 1, 0>, keep = [1]}> ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) : (index, f32) -> tensor<1xf32>
  return
}

// -----

func.func @go_backwards_not_unit(%n: index) {
  // expected-error @+1 {{Invalid attribute `go_backwards` in property conversion: true}}
  "scan.scan"(%n) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0>, go_backwards = true}> ({
    "scan.yield"() : () -> ()
  }) : (index) -> ()
  return
}

// -----

// Inherent attributes in the discardable dictionary are checked as well.
func.func @until_not_unit_discardable(%n: index) {
  // expected-error @+1 {{attribute 'until' failed to satisfy constraint: unit attribute}}
  "scan.scan"(%n) ({
    "scan.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0>, until = 1 : i32} : (index) -> ()
  return
}

// -----

func.func @keep_not_dense_array_discardable(%n: index, %s0: f32) {
  // expected-error @+1 {{attribute 'keep' failed to satisfy constraint: i64 dense array attribute}}
  %r = "scan.scan"(%n, %s0) ({
  ^bb0(%x: f32):
    "scan.yield"(%x) : (f32) -> ()
  }) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 1, 0>, keep = array<i32: 1>} : (index, f32) -> tensor<1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Custom syntax
//===----------------------------------------------------------------------===//

// -----

func.func @sitsot_count_mismatch(%n: index, %a: f32, %b: f32) {
  // expected-error @+1 {{'sitsot' lists 2 operands but 1 types}}
  %r:2 = scan.scan steps(%n) sitsot(%a, %b : f32) {
  ^bb0(%x: f32, %y: f32):
    scan.yield %x, %y : f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

func.func @nonsequences_count_mismatch(%n: index, %a: f32) {
  // expected-error @+1 {{'nonsequences' lists 1 operands but 2 types}}
  scan.scan steps(%n) nonsequences(%a : f32, f32) {
  ^bb0(%x: f32):
    scan.yield
  } -> ()
  return
}

// -----

// A run of items sharing one type list, in a tapped group: the count is
// checked per run.
func.func @sequences_count_mismatch(%n: index, %a: tensor<?xf32>, %b: tensor<?xf32>) {
  // expected-error @+1 {{'sequences' lists 2 operands but 1 types}}
  scan.scan steps(%n) sequences(%a[-1, 0], %b : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    scan.yield
  } -> ()
  return
}

// -----

func.func @mitsot_second_run_count_mismatch(%n: index, %a: tensor<1xf32>, %b: tensor<2xf32>, %c: tensor<1xf32>) {
  // expected-error @+1 {{'mitsot' lists 2 operands but 3 types}}
  %r:3 = scan.scan steps(%n) mitsot(%a[-1] : tensor<1xf32>, %b[-2], %c[-1] : tensor<2xf32>, tensor<1xf32>, f32) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    scan.yield %x, %y, %z : f32, f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

func.func @missing_arrow(%n: index, %s0: f32) {
  %r = scan.scan steps(%n) sitsot(%s0 : f32) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  // expected-error @+1 {{expected '->'}}
  } (tensor<?xf32>)
  return
}

// -----

func.func @result_types_without_parens(%n: index, %s0: f32) {
  %r = scan.scan steps(%n) sitsot(%s0 : f32) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  // expected-error @+1 {{expected '('}}
  } -> tensor<?xf32>
  return
}

// -----

func.func @missing_steps(%n: index, %s0: f32) {
  // expected-error @+1 {{expected 'steps'}}
  %r = scan.scan sitsot(%s0 : f32) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @steps_wrong_type(%n: i64, %s0: f32) {
  // expected-note @-1 {{prior use here}}
  // expected-error @+1 {{use of value '%n' expects different type than prior uses: 'index' vs 'i64'}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitmot_missing_arrow(%n: index, %b: tensor<?xf32>) {
  // expected-error @+1 {{expected '->'}}
  %r = scan.scan steps(%n) mitmot(%b[0] [0] : tensor<?xf32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @mitsot_missing_taps(%n: index, %x0: tensor<1xf32>) {
  // expected-error @+1 {{expected '['}}
  %r = scan.scan steps(%n) mitsot(%x0 : tensor<1xf32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @sequence_empty_tap_brackets(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{expected integer value}}
  %r = scan.scan steps(%n) sequences(%u[] : tensor<?xf32>) {
    %z = arith.constant 0.0 : f32
    scan.yield %z : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @tap_not_integer(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{expected integer value}}
  %r = scan.scan steps(%n) sequences(%u[0.5] : tensor<?xf32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @tap_too_large(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{integer value too large}}
  %r = scan.scan steps(%n) sequences(%u[99999999999999999999] : tensor<?xf32>) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @groups_out_of_order(%n: index, %u: tensor<?xf32>, %s0: f32) {
  // expected-error @+1 {{expected '{' to begin a region}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) sequences(%u : tensor<?xf32>) {
  ^bb0(%x: f32, %s: f32):
    scan.yield %s : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @keep_without_list(%n: index, %s0: f32) {
  // expected-error @+1 {{expected '['}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) keep 1 {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<1xf32>)
  return
}

// -----

// An inherent attribute written in `attributes {...}` with the wrong type is
// an error, not silently dropped.
func.func @keep_wrong_type_in_attr_dict(%n: index, %s0: f32) {
  // expected-error @+1 {{attribute 'keep' failed to satisfy constraint: i64 dense array attribute}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) attributes {keep = 3} {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @until_wrong_type_in_attr_dict(%n: index, %s0: f32) {
  // expected-error @+1 {{attribute 'until' failed to satisfy constraint: unit attribute}}
  %r = scan.scan steps(%n) sitsot(%s0 : f32) attributes {until = 1 : i32} {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @taps_given_twice(%n: index, %u: tensor<?xf32>) {
  // expected-error @+1 {{attribute 'sequence_taps' occurs more than once in the attribute list}}
  %r = scan.scan steps(%n) sequences(%u : tensor<?xf32>) attributes {sequence_taps = [array<i64: 0>]} {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

// -----

func.func @result_count_mismatch(%n: index, %s0: f32) {
  // expected-error @+1 {{operation defines 1 results but was provided 2 to bind}}
  %a, %b = scan.scan steps(%n) sitsot(%s0 : f32) {
  ^bb0(%x: f32):
    scan.yield %x : f32
  } -> (tensor<?xf32>)
  return
}

//===----------------------------------------------------------------------===//
// scan.check
//===----------------------------------------------------------------------===//

// -----

func.func @check_unknown_code(%bad: i1, %a: index) {
  // expected-error @+1 {{'scan.check' op 'code' 5 is not an error __mlir_scan_fail reports (1-4, 8, 9, 100, 101)}}
  scan.check %bad code 5 id 0 (%a, %a : index, index)
  return
}

// -----

func.func @check_code_not_positive(%bad: i1, %a: index) {
  // expected-error @+1 {{'scan.check' op attribute 'code' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  scan.check %bad code 0 id 0 (%a, %a : index, index)
  return
}

// -----

func.func @check_negative_id(%bad: i1, %a: index) {
  // expected-error @+1 {{'scan.check' op attribute 'id' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  scan.check %bad code 100 id -1 (%a, %a : index, index)
  return
}

// -----

func.func @check_condition_not_i1(%bad: i32, %a: index) {
  // expected-error @+1 {{'scan.check' op operand #0 must be 1-bit signless integer, but got 'i32'}}
  "scan.check"(%bad, %a, %a) <{code = 100 : i64, id = 0 : i64}> : (i32, index, index) -> ()
  return
}

// -----

func.func @check_have_f64(%bad: i1, %a: index, %x: f64) {
  // expected-error @+1 {{'scan.check' op operand #1 must be index or 64-bit signless integer, but got 'f64'}}
  "scan.check"(%bad, %x, %a) <{code = 100 : i64, id = 0 : i64}> : (i1, f64, index) -> ()
  return
}
