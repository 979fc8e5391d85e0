// RUN: scan-opt %s | scan-opt | FileCheck %s
// RUN: scan-opt %s -mlir-print-op-generic | scan-opt | FileCheck %s

// Every group, tap form and flag of `scan.scan` survives printing and
// re-parsing, in the custom form and through the generic form. The CHECK
// lines pin the syntax that carries meaning: groups, taps, flags, keep, block
// argument and result types.

// Sequences: negative, zero and positive taps, the default tap [0] (printed
// without taps), a single non-zero tap, several sequences of different types.
// CHECK-LABEL: func.func @sequence_taps
// CHECK-SAME: (%[[N:arg[0-9]+]]: index, %[[U:arg[0-9]+]]: tensor<?x8xf32>, %[[V:arg[0-9]+]]: tensor<?xf64>, %[[W:arg[0-9]+]]: tensor<12xi32>)
// CHECK: scan.scan steps(%[[N]])
// CHECK-NEXT: sequences(%[[U]][-2, 0, 3] : tensor<?x8xf32>, %[[V]] : tensor<?xf64>, %[[W]][1] : tensor<12xi32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8xf32>, %{{.*}}: tensor<8xf32>, %{{.*}}: tensor<8xf32>, %{{.*}}: f64, %{{.*}}: i32):
// CHECK: scan.yield %{{.*}} : f64
// CHECK-NEXT: } -> (tensor<?xf64>)
func.func @sequence_taps(%n: index, %u: tensor<?x8xf32>, %v: tensor<?xf64>, %w: tensor<12xi32>) -> tensor<?xf64> {
  %r = scan.scan steps(%n)
      sequences(%u[-2, 0, 3] : tensor<?x8xf32>, %v : tensor<?xf64>, %w[1] : tensor<12xi32>) {
  ^bb0(%u_m2: tensor<8xf32>, %u_0: tensor<8xf32>, %u_p3: tensor<8xf32>, %v_t: f64, %w_p1: i32):
    %y = arith.addf %v_t, %v_t : f64
    scan.yield %y : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// An explicit [0] is the default and prints as no taps; only negative taps.
// CHECK-LABEL: func.func @sequence_default_and_negative_taps
// CHECK: sequences(%{{[a-z0-9]+}} : tensor<?xf32>, %{{[a-z0-9]+}}[-5, -4] : tensor<?xf32>)
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK: } -> (tensor<?xf32>)
func.func @sequence_default_and_negative_taps(%n: index, %a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %r = scan.scan steps(%n) sequences(%a[0] : tensor<?xf32>, %b[-5, -4] : tensor<?xf32>) {
  ^bb0(%a_t: f32, %b_m5: f32, %b_m4: f32):
    %s = arith.addf %a_t, %b_m5 : f32
    scan.yield %s : f32
  } -> (tensor<?xf32>)
  return %r : tensor<?xf32>
}

// MITMOT buffers: in and out taps, empty in taps, several buffers; the
// results are the buffers' types.
// CHECK-LABEL: func.func @mitmot
// CHECK: scan.scan steps(%{{.*}})
// CHECK-NEXT: sequences(%{{.*}} : tensor<?x4xf32>)
// CHECK-NEXT: mitmot(%{{.*}}[0] -> [0] : tensor<?x4xf32>, %{{.*}}[] -> [0, 1] : tensor<?xf64>, %{{.*}}[-1, 1] -> [-1] : tensor<9x2xf32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<2xf32>, %{{.*}}: tensor<2xf32>):
// CHECK: scan.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4xf32>, f64, f64, tensor<2xf32>
// CHECK-NEXT: } -> (tensor<?x4xf32>, tensor<?xf64>, tensor<9x2xf32>)
func.func @mitmot(%n: index, %x: tensor<?x4xf32>, %g: tensor<?x4xf32>, %h: tensor<?xf64>, %k: tensor<9x2xf32>)
    -> (tensor<?x4xf32>, tensor<?xf64>, tensor<9x2xf32>) {
  %r:3 = scan.scan steps(%n)
      sequences(%x : tensor<?x4xf32>)
      mitmot(%g[0] -> [0] : tensor<?x4xf32>, %h[] -> [0, 1] : tensor<?xf64>, %k[-1, 1] -> [-1] : tensor<9x2xf32>) {
  ^bb0(%xt: tensor<4xf32>, %gt: tensor<4xf32>, %k_m1: tensor<2xf32>, %k_p1: tensor<2xf32>):
    %s = arith.addf %gt, %xt : tensor<4xf32>
    %z = arith.constant 0.0 : f64
    scan.yield %s, %z, %z, %k_p1 : tensor<4xf32>, f64, f64, tensor<2xf32>
  } -> (tensor<?x4xf32>, tensor<?xf64>, tensor<9x2xf32>)
  return %r#0, %r#1, %r#2 : tensor<?x4xf32>, tensor<?xf64>, tensor<9x2xf32>
}

// MITSOT: several items, scalar and tensor rows, static and dynamic inits.
// CHECK-LABEL: func.func @mitsot
// CHECK: mitsot(%{{.*}}[-3, -1] : tensor<3x16xf32>, %{{.*}}[-2] : tensor<2xi64>, %{{.*}}[-4, -3, -2] : tensor<?xf64>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<16xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: i64, %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
// CHECK: } -> (tensor<?x16xf32>, tensor<?xi64>, tensor<?xf64>)
func.func @mitsot(%n: index, %x0: tensor<3x16xf32>, %y0: tensor<2xi64>, %z0: tensor<?xf64>)
    -> (tensor<?x16xf32>, tensor<?xi64>, tensor<?xf64>) {
  %r:3 = scan.scan steps(%n) mitsot(%x0[-3, -1] : tensor<3x16xf32>, %y0[-2] : tensor<2xi64>, %z0[-4, -3, -2] : tensor<?xf64>) {
  ^bb0(%x_m3: tensor<16xf32>, %x_m1: tensor<16xf32>, %y_m2: i64, %z_m4: f64, %z_m3: f64, %z_m2: f64):
    %x = arith.addf %x_m3, %x_m1 : tensor<16xf32>
    %z = arith.addf %z_m4, %z_m2 : f64
    scan.yield %x, %y_m2, %z : tensor<16xf32>, i64, f64
  } -> (tensor<?x16xf32>, tensor<?xi64>, tensor<?xf64>)
  return %r#0, %r#1, %r#2 : tensor<?x16xf32>, tensor<?xi64>, tensor<?xf64>
}

// SITSOT: scalar and tensor states, several items in one group.
// CHECK-LABEL: func.func @sitsot
// CHECK: sitsot(%{{.*}} : f64, %{{.*}} : tensor<4xf32>, %{{.*}} : tensor<2x3xi32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: f64, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<2x3xi32>):
// CHECK: scan.yield %{{.*}}, %{{.*}}, %{{.*}} : f64, tensor<4xf32>, tensor<2x3xi32>
// CHECK-NEXT: } -> (tensor<?xf64>, tensor<?x4xf32>, tensor<?x2x3xi32>)
func.func @sitsot(%n: index, %a: f64, %b: tensor<4xf32>, %c: tensor<2x3xi32>)
    -> (tensor<?xf64>, tensor<?x4xf32>, tensor<?x2x3xi32>) {
  %r:3 = scan.scan steps(%n) sitsot(%a, %b, %c : f64, tensor<4xf32>, tensor<2x3xi32>) {
  ^bb0(%pa: f64, %pb: tensor<4xf32>, %pc: tensor<2x3xi32>):
    %na = arith.mulf %pa, %pa : f64
    scan.yield %na, %pb, %pc : f64, tensor<4xf32>, tensor<2x3xi32>
  } -> (tensor<?xf64>, tensor<?x4xf32>, tensor<?x2x3xi32>)
  return %r#0, %r#1, %r#2 : tensor<?xf64>, tensor<?x4xf32>, tensor<?x2x3xi32>
}

// NITSOT only, no operand group at all: a body without block arguments.
// CHECK-LABEL: func.func @nitsot_without_inputs
// CHECK: scan.scan steps(%{{.*}}) {
// CHECK-NEXT: arith.constant
// CHECK: scan.yield %{{.*}}, %{{.*}} : i32, tensor<3xf32>
// CHECK-NEXT: } -> (tensor<?xi32>, tensor<?x3xf32>)
func.func @nitsot_without_inputs(%n: index) -> (tensor<?xi32>, tensor<?x3xf32>) {
  %r:2 = scan.scan steps(%n) {
    %c = arith.constant 7 : i32
    %t = arith.constant dense<1.0> : tensor<3xf32>
    scan.yield %c, %t : i32, tensor<3xf32>
  } -> (tensor<?xi32>, tensor<?x3xf32>)
  return %r#0, %r#1 : tensor<?xi32>, tensor<?x3xf32>
}

// Non-sequences of any type (tensors, scalars, index, i1, a memref), passed
// to the body unchanged; a scan with no results at all.
// CHECK-LABEL: func.func @nonsequences_no_results
// CHECK: scan.scan steps(%{{.*}})
// CHECK-NEXT: nonsequences(%{{.*}} : tensor<16x16xf32>, %{{.*}} : f32, %{{.*}} : index, %{{.*}} : i1, %{{.*}} : memref<4xf32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<16x16xf32>, %{{.*}}: f32, %{{.*}}: index, %{{.*}}: i1, %{{.*}}: memref<4xf32>):
// CHECK-NEXT: scan.yield{{$}}
// CHECK-NEXT: } -> (){{$}}
func.func @nonsequences_no_results(%n: index, %w: tensor<16x16xf32>, %f: f32, %i: index, %b: i1, %m: memref<4xf32>) {
  scan.scan steps(%n) nonsequences(%w, %f, %i, %b, %m : tensor<16x16xf32>, f32, index, i1, memref<4xf32>) {
  ^bb0(%w_: tensor<16x16xf32>, %f_: f32, %i_: index, %b_: i1, %m_: memref<4xf32>):
    scan.yield
  } -> ()
  return
}

// go_backwards, with a sequence and a sitsot.
// CHECK-LABEL: func.func @go_backwards
// CHECK: scan.scan steps(%{{.*}}) go_backwards{{$}}
// CHECK-NEXT: sequences(%{{.*}}[-1, 0] : tensor<?xf64>)
// CHECK-NEXT: sitsot(%{{.*}} : f64) {
// CHECK: } -> (tensor<?xf64>)
func.func @go_backwards(%n: index, %v: tensor<?xf64>, %s0: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) go_backwards sequences(%v[-1, 0] : tensor<?xf64>) sitsot(%s0 : f64) {
  ^bb0(%a: f64, %b: f64, %s: f64):
    %t = arith.addf %a, %b : f64
    %u = arith.addf %t, %s : f64
    scan.yield %u : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// until with a static n_steps: results keep a dynamic leading size, the
// yield ends with the i1 condition; go_backwards and until together.
// CHECK-LABEL: func.func @until
// CHECK: %[[C:.*]] = arith.constant 1024 : index
// CHECK: scan.scan steps(%[[C]]) go_backwards until{{$}}
// CHECK-NEXT: sequences(%{{.*}} : tensor<2048xi64>)
// CHECK-NEXT: sitsot(%{{.*}} : i64)
// CHECK-NEXT: nonsequences(%{{.*}} : i64) {
// CHECK: scan.yield %{{.*}}, %{{.*}}, %{{.*}} : i64, i64, i1
// CHECK-NEXT: } -> (tensor<?xi64>, tensor<?xi64>)
func.func @until(%seq: tensor<2048xi64>, %one: i64, %max: i64) -> (tensor<?xi64>, tensor<?xi64>) {
  %c1024 = arith.constant 1024 : index
  %r:2 = scan.scan steps(%c1024) go_backwards until
      sequences(%seq : tensor<2048xi64>) sitsot(%one : i64) nonsequences(%max : i64) {
  ^bb0(%x: i64, %prev: i64, %m: i64):
    %two = arith.constant 2 : i64
    %next = arith.muli %prev, %two : i64
    %stop = arith.cmpi sgt, %next, %m : i64
    scan.yield %next, %x, %stop : i64, i64, i1
  } -> (tensor<?xi64>, tensor<?xi64>)
  return %r#0, %r#1 : tensor<?xi64>, tensor<?xi64>
}

// keep: one entry per result, 0 on the mitmot, k rows on the others, with
// and without until.
// CHECK-LABEL: func.func @keep
// CHECK: scan.scan steps(%{{.*}}) until{{$}}
// CHECK-NEXT: mitmot(%{{.*}}[0] -> [0] : tensor<?xf32>)
// CHECK-NEXT: mitsot(%{{.*}}[-2, -1] : tensor<2xf32>)
// CHECK-NEXT: sitsot(%{{.*}} : tensor<3xf32>) keep [0, 2, 1, 5, 0] {
// CHECK: } -> (tensor<?xf32>, tensor<2xf32>, tensor<1x3xf32>, tensor<5xi1>, tensor<?xf32>)
func.func @keep(%n: index, %g: tensor<?xf32>, %x0: tensor<2xf32>, %s0: tensor<3xf32>)
    -> (tensor<?xf32>, tensor<2xf32>, tensor<1x3xf32>, tensor<5xi1>, tensor<?xf32>) {
  %r:5 = scan.scan steps(%n) until mitmot(%g[0] -> [0] : tensor<?xf32>) mitsot(%x0[-2, -1] : tensor<2xf32>)
      sitsot(%s0 : tensor<3xf32>) keep [0, 2, 1, 5, 0] {
  ^bb0(%gt: f32, %a: f32, %b: f32, %s: tensor<3xf32>):
    %c = arith.cmpf ogt, %a, %b : f32
    scan.yield %gt, %a, %s, %c, %b, %c : f32, f32, tensor<3xf32>, i1, f32, i1
  } -> (tensor<?xf32>, tensor<2xf32>, tensor<1x3xf32>, tensor<5xi1>, tensor<?xf32>)
  return %r#0, %r#1, %r#2, %r#3, %r#4 : tensor<?xf32>, tensor<2xf32>, tensor<1x3xf32>, tensor<5xi1>, tensor<?xf32>
}

// keep with a static n_steps and no until: kept results have k rows, the
// others n_steps rows; keep [0] alone is kept as written.
// CHECK-LABEL: func.func @keep_static
// CHECK: %[[C:.*]] = arith.constant 6 : index
// CHECK: scan.scan steps(%[[C]])
// CHECK-NEXT: sitsot(%{{.*}} : i32, %{{.*}} : i32) keep [1, 0] {
// CHECK: } -> (tensor<1xi32>, tensor<6xi32>)
// CHECK: scan.scan steps(%[[C]])
// CHECK-NEXT: sitsot(%{{.*}} : i32) keep [0] {
// CHECK: } -> (tensor<6xi32>)
func.func @keep_static(%a: i32) -> (tensor<1xi32>, tensor<6xi32>, tensor<6xi32>) {
  %c6 = arith.constant 6 : index
  %r:2 = scan.scan steps(%c6) sitsot(%a, %a : i32, i32) keep [1, 0] {
  ^bb0(%p: i32, %q: i32):
    %s = arith.addi %p, %q : i32
    scan.yield %s, %q : i32, i32
  } -> (tensor<1xi32>, tensor<6xi32>)
  %t = scan.scan steps(%c6) sitsot(%a : i32) keep [0] {
  ^bb0(%p: i32):
    scan.yield %p : i32
  } -> (tensor<6xi32>)
  return %r#0, %r#1, %t : tensor<1xi32>, tensor<6xi32>, tensor<6xi32>
}

// A static n_steps: static result sizes, static sequence and mitmot lengths
// that fit the taps exactly (10 steps + window 3 = 13 rows), zero steps.
// CHECK-LABEL: func.func @static_steps
// CHECK: %[[C10:.*]] = arith.constant 10 : index
// CHECK: scan.scan steps(%[[C10]])
// CHECK-NEXT: sequences(%{{.*}}[-1, 2] : tensor<13x2xf32>)
// CHECK-NEXT: mitmot(%{{.*}}[] -> [-3] : tensor<13xf64>)
// CHECK-NEXT: mitsot(%{{.*}}[-1] : tensor<1x2xf32>) {
// CHECK: } -> (tensor<13xf64>, tensor<10x2xf32>, tensor<10xindex>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: scan.scan steps(%[[C0]])
// CHECK-NEXT: sitsot(%{{.*}} : f32) {
// CHECK: } -> (tensor<0xf32>)
func.func @static_steps(%u: tensor<13x2xf32>, %m: tensor<13xf64>, %x0: tensor<1x2xf32>, %f: f32)
    -> (tensor<13xf64>, tensor<10x2xf32>, tensor<10xindex>, tensor<0xf32>) {
  %c10 = arith.constant 10 : index
  %r:3 = scan.scan steps(%c10) sequences(%u[-1, 2] : tensor<13x2xf32>) mitmot(%m[] -> [-3] : tensor<13xf64>)
      mitsot(%x0[-1] : tensor<1x2xf32>) {
  ^bb0(%u_m1: tensor<2xf32>, %u_p2: tensor<2xf32>, %x_m1: tensor<2xf32>):
    %z = arith.constant 0.0 : f64
    %i = arith.constant 3 : index
    scan.yield %z, %u_p2, %i : f64, tensor<2xf32>, index
  } -> (tensor<13xf64>, tensor<10x2xf32>, tensor<10xindex>)
  %c0 = arith.constant 0 : index
  %e = scan.scan steps(%c0) sitsot(%f : f32) {
  ^bb0(%p: f32):
    scan.yield %p : f32
  } -> (tensor<0xf32>)
  return %r#0, %r#1, %r#2, %e : tensor<13xf64>, tensor<10x2xf32>, tensor<10xindex>, tensor<0xf32>
}

// Element types f32, f64, i32, i64, i1 and index, as scalar rows and as
// tensor rows, in every group.
// CHECK-LABEL: func.func @element_types
// CHECK: scan.scan steps(%{{.*}})
// CHECK-NEXT: sequences(%{{.*}} : tensor<?xi1>, %{{.*}} : tensor<?xindex>, %{{.*}} : tensor<?x2xi64>)
// CHECK-NEXT: mitmot(%{{.*}}[0] -> [0] : tensor<?x3xi32>)
// CHECK-NEXT: mitsot(%{{.*}}[-1] : tensor<1xindex>)
// CHECK-NEXT: sitsot(%{{.*}} : i1, %{{.*}} : tensor<2xf64>, %{{.*}} : f32)
// CHECK-NEXT: nonsequences(%{{.*}} : i64) {
// CHECK-NEXT: ^bb0(%{{.*}}: i1, %{{.*}}: index, %{{.*}}: tensor<2xi64>, %{{.*}}: tensor<3xi32>, %{{.*}}: index, %{{.*}}: i1, %{{.*}}: tensor<2xf64>, %{{.*}}: f32, %{{.*}}: i64):
// CHECK: scan.yield %{{.*}} : tensor<3xi32>, index, i1, tensor<2xf64>, f32, i64, tensor<2xi64>
// CHECK-NEXT: } -> (tensor<?x3xi32>, tensor<?xindex>, tensor<?xi1>, tensor<?x2xf64>, tensor<?xf32>, tensor<?xi64>, tensor<?x2xi64>)
func.func @element_types(%n: index, %a: tensor<?xi1>, %b: tensor<?xindex>, %c: tensor<?x2xi64>, %d: tensor<?x3xi32>,
                         %e: tensor<1xindex>, %f: i1, %g: tensor<2xf64>, %h: f32, %k: i64) {
  %r:7 = scan.scan steps(%n)
      sequences(%a : tensor<?xi1>, %b : tensor<?xindex>, %c : tensor<?x2xi64>)
      mitmot(%d[0] -> [0] : tensor<?x3xi32>)
      mitsot(%e[-1] : tensor<1xindex>)
      sitsot(%f, %g, %h : i1, tensor<2xf64>, f32)
      nonsequences(%k : i64) {
  ^bb0(%a_: i1, %b_: index, %c_: tensor<2xi64>, %d_: tensor<3xi32>, %e_: index, %f_: i1, %g_: tensor<2xf64>, %h_: f32, %k_: i64):
    scan.yield %d_, %e_, %f_, %g_, %h_, %k_, %c_ : tensor<3xi32>, index, i1, tensor<2xf64>, f32, i64, tensor<2xi64>
  } -> (tensor<?x3xi32>, tensor<?xindex>, tensor<?xi1>, tensor<?x2xf64>, tensor<?xf32>, tensor<?xi64>, tensor<?x2xi64>)
  return
}

// Every group at once, in the shape of SPEC §4's example, plus a nitsot and
// a discardable attribute (printed after keep, before the body).
// CHECK-LABEL: func.func @all_groups
// CHECK: %{{.*}}:5 = scan.scan steps(%{{.*}}) go_backwards{{$}}
// CHECK-NEXT: sequences(%{{.*}}[-4, 0] : tensor<?x8xf32>)
// CHECK-NEXT: mitmot(%{{.*}}[0] -> [0, 1] : tensor<?x16xf32>)
// CHECK-NEXT: mitsot(%{{.*}}[-3, -1] : tensor<3x16xf32>)
// CHECK-NEXT: sitsot(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT: nonsequences(%{{.*}} : tensor<16x16xf32>, %{{.*}} : tensor<8x16xf32>) keep [0, 0, 1, 0, 0] attributes {note = "rnn"} {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8xf32>, %{{.*}}: tensor<8xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<16x16xf32>, %{{.*}}: tensor<8x16xf32>):
// CHECK: scan.yield %{{.*}} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<4xf32>, f32, tensor<16xf32>
// CHECK-NEXT: } -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<1x4xf32>, tensor<?xf32>, tensor<?x16xf32>)
func.func @all_groups(%n: index, %u: tensor<?x8xf32>, %gb: tensor<?x16xf32>, %x0: tensor<3x16xf32>, %y0: tensor<4xf32>,
                      %W: tensor<16x16xf32>, %Win: tensor<8x16xf32>) {
  %r:5 = scan.scan steps(%n) go_backwards
      sequences(%u[-4, 0] : tensor<?x8xf32>)
      mitmot(%gb[0] -> [0, 1] : tensor<?x16xf32>)
      mitsot(%x0[-3, -1] : tensor<3x16xf32>)
      sitsot(%y0 : tensor<4xf32>)
      nonsequences(%W, %Win : tensor<16x16xf32>, tensor<8x16xf32>)
      keep [0, 0, 1, 0, 0] attributes {note = "rnn"} {
  ^bb0(%u_tm4: tensor<8xf32>, %u_t: tensor<8xf32>, %g_t: tensor<16xf32>, %x_tm3: tensor<16xf32>, %x_tm1: tensor<16xf32>,
       %y_tm1: tensor<4xf32>, %w: tensor<16x16xf32>, %win: tensor<8x16xf32>):
    %x_t = arith.addf %x_tm3, %x_tm1 : tensor<16xf32>
    %s = arith.constant 1.0 : f32
    scan.yield %g_t, %g_t, %x_t, %y_tm1, %s, %x_t : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<4xf32>, f32, tensor<16xf32>
  } -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<1x4xf32>, tensor<?xf32>, tensor<?x16xf32>)
  return
}

// A scan nested in the body of another scan.
// CHECK-LABEL: func.func @nested
// CHECK: scan.scan steps(%{{.*}})
// CHECK-NEXT: sequences(%{{.*}} : tensor<?x5xf32>)
// CHECK-NEXT: nonsequences(%{{.*}} : index) {
// CHECK: scan.scan steps(%{{.*}})
// CHECK-NEXT: sequences(%{{.*}} : tensor<5xf32>)
// CHECK-NEXT: sitsot(%{{.*}} : f32) {
// CHECK: } -> (tensor<?xf32>)
// CHECK: } -> (tensor<?x?xf32>)
func.func @nested(%n: index, %m: tensor<?x5xf32>) -> tensor<?x?xf32> {
  %c5 = arith.constant 5 : index
  %r = scan.scan steps(%n) sequences(%m : tensor<?x5xf32>) nonsequences(%c5 : index) {
  ^bb0(%row: tensor<5xf32>, %k: index):
    %z = arith.constant 0.0 : f32
    %inner = scan.scan steps(%k) sequences(%row : tensor<5xf32>) sitsot(%z : f32) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      scan.yield %s : f32
    } -> (tensor<?xf32>)
    scan.yield %inner : tensor<?xf32>
  } -> (tensor<?x?xf32>)
  return %r : tensor<?x?xf32>
}

// Every group prints each item with its type; the parser also reads runs of
// items that share one type list (the form sitsot and nonsequences were
// printed in before), in every group, mixed with the printed form.
// CHECK-LABEL: func.func @item_forms
// CHECK: scan.scan steps(%{{.*}})
// CHECK-NEXT: sequences(%{{.*}}[-1, 0] : tensor<?xf32>, %{{.*}} : tensor<?xf64>, %{{.*}}[2] : tensor<?xf32>)
// CHECK-NEXT: mitmot(%{{.*}}[0] -> [0] : tensor<?xf32>, %{{.*}}[] -> [0] : tensor<?xf32>)
// CHECK-NEXT: mitsot(%{{.*}}[-2, -1] : tensor<2xf32>, %{{.*}}[-1] : tensor<1xf64>)
// CHECK-NEXT: sitsot(%{{.*}} : f32, %{{.*}} : tensor<3xf32>, %{{.*}} : i64)
// CHECK-NEXT: nonsequences(%{{.*}} : f32, %{{.*}} : index, %{{.*}} : f64) {
func.func @item_forms(%n: index, %s0: tensor<?xf32>, %s1: tensor<?xf64>, %s2: tensor<?xf32>,
                      %b0: tensor<?xf32>, %b1: tensor<?xf32>, %m0: tensor<2xf32>, %m1: tensor<1xf64>,
                      %a: f32, %t: tensor<3xf32>, %i: i64, %w: f32, %k: index, %v: f64) {
  %r:7 = scan.scan steps(%n)
      sequences(%s0[-1, 0], %s1 : tensor<?xf32>, tensor<?xf64>, %s2[2] : tensor<?xf32>)
      mitmot(%b0[0] -> [0], %b1[] -> [0] : tensor<?xf32>, tensor<?xf32>)
      mitsot(%m0[-2, -1] : tensor<2xf32>, %m1[-1] : tensor<1xf64>)
      sitsot(%a : f32, %t, %i : tensor<3xf32>, i64)
      nonsequences(%w, %k : f32, index, %v : f64) {
  ^bb0(%s0m1: f32, %s00: f32, %s10: f64, %s22: f32, %b00: f32, %m0m2: f32, %m0m1: f32, %m1m1: f64,
       %pa: f32, %pt: tensor<3xf32>, %pi: i64, %pw: f32, %pk: index, %pv: f64):
    scan.yield %b00, %b00, %m0m1, %m1m1, %pa, %pt, %pi : f32, f32, f32, f64, f32, tensor<3xf32>, i64
  } -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf64>, tensor<?xf32>, tensor<?x3xf32>, tensor<?xi64>)
  return
}

// An empty group parses as no items (and is not printed).
// CHECK-LABEL: func.func @empty_groups
// CHECK: scan.scan steps(%{{.*}})
// CHECK-NEXT: nonsequences(%{{.*}} : f32) {
func.func @empty_groups(%n: index, %w: f32) {
  scan.scan steps(%n) sequences() sitsot() nonsequences(%w : f32) {
  ^bb0(%pw: f32):
    scan.yield
  } -> ()
  return
}

// scan.check: condition, code, id, have and need (index or i64), here in a
// scan body (where the graph builder emits it).
// CHECK-LABEL: func.func @check
// CHECK: scan.check %{{.*}} code 100 id 3 (%{{.*}}, %{{.*}} : index, i64)
// CHECK: scan.check %{{.*}} code 101 id 0 (%{{.*}}, %{{.*}} : i64, index)
func.func @check(%n: index, %h0: f64, %bad: i1, %a: index, %b: i64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%bad, %a, %b : i1, index, i64) {
  ^bb0(%h: f64, %c: i1, %x: index, %y: i64):
    scan.check %c code 100 id 3 (%x, %y : index, i64)
    scan.check %c code 101 id 0 (%y, %x : i64, index)
    scan.yield %h : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
