// The structure of the two GPU modes (docs/GPU.md), after the kernels are
// outlined (scan-buffers-to-gpu), and the PTX of the whole pipeline.
//
// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(scan-optimize,convert-scan-to-scf{block-steps=0},canonicalize,cse,scan-gpu-bufferize-loops,scan-buffers-to-gpu{mode=host},canonicalize)" | FileCheck %s --check-prefix=HOST
// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(scan-optimize,convert-scan-to-scf{block-steps=0},canonicalize,cse,scan-gpu-bufferize-loops,scan-buffers-to-gpu{mode=kernel},canonicalize)" | FileCheck %s --check-prefix=KERNEL
// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(scan-to-nvvm{chip=sm_90 mode=kernel})" | FileCheck %s --check-prefix=PTX
// RUN: scan-opt %s --split-input-file --scan-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(scan-optimize,convert-scan-to-scf{block-steps=0},canonicalize,cse,scan-gpu-bufferize-loops,scan-buffers-to-gpu,canonicalize)" | FileCheck %s --check-prefix=AUTO
// RUN: not scan-opt %s --pass-pipeline="builtin.module(scan-to-nvvm{mode=fast})" 2>&1 | FileCheck %s --check-prefix=BADMODE
// RUN: not scan-opt %s --pass-pipeline="builtin.module(scan-to-nvvm{chip=x86})" 2>&1 | FileCheck %s --check-prefix=BADCHIP
// RUN: not scan-opt %s --pass-pipeline="builtin.module(scan-to-nvvm{chip=sm_101})" 2>&1 | FileCheck %s --check-prefix=BADCHIP101
// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(scan-to-nvvm{chip=sm_120})" | FileCheck %s --check-prefix=SM120
// RUN: not scan-opt %s --pass-pipeline="builtin.module(scan-to-nvvm{format=elf})" 2>&1 | FileCheck %s --check-prefix=BADFORMAT

// BADMODE: scan-to-nvvm: mode must be auto, host or kernel, not 'fast'
// BADCHIP: scan-to-nvvm: chip must be one of the NVIDIA architectures sm_75, sm_80, {{.*}}, sm_121f, not 'x86'
// (sm_101 is known to LLVM but not to CUDA 13's ptxas, which calls it sm_110.)
// BADCHIP101: not 'sm_101'
// Each chip gets the PTX version it needs (LLVM aborts on sm_120 with PTX 8.0).
// SM120: .version 8.7
// SM120: .target sm_120
// BADFORMAT: scan-to-nvvm: format must be isa, bin or fatbin, not 'elf'

// An Elman RNN step (hidden size 8).
//
// Host mode: the time loop is an scf.for of the host that launches the
// step's kernels; the state stays in device memory: no copy in the loop.
// HOST-LABEL: func.func @rnn
// HOST: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!gpu.async.token)
// HOST-NOT: gpu.memcpy
// HOST: gpu.launch_func async
// HOST-NOT: gpu.memcpy
// HOST: scf.yield %{{.*}} : !gpu.async.token
// HOST-NEXT: }
// HOST: llvm.call @mgpuStreamSynchronize
// HOST: return
//
// Kernel mode: no loop on the host; one kernel of one block of 32 threads
// runs the time loop, the step's parallel loops strided over the threads
// with barriers between them.
// KERNEL-LABEL: func.func @rnn
// KERNEL-NOT: scf.for
// KERNEL: gpu.launch_func async [%{{.*}}] @[[K:rnn_kernel_[0-9]+]]::@rnn_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// KERNEL-NOT: scf.for
// KERNEL: return
// KERNEL: gpu.module @[[K]]
// KERNEL: gpu.func @rnn_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>, nvvm.minctasm = 1 : i32}
// KERNEL: %[[TX:.*]] = gpu.thread_id x
// KERNEL: %[[BX:.*]] = gpu.block_dim x
// KERNEL: scf.for
// KERNEL: scf.for %{{.*}} = %[[TX]] to %{{.*}} step %[[BX]]
// KERNEL: gpu.barrier
// KERNEL: scf.for %{{.*}} = %[[TX]] to %{{.*}} step %[[BX]]
// KERNEL: gpu.barrier
// KERNEL: gpu.return
//
// In the PTX, the block kernel synchronizes with bar.sync.
// PTX: gpu.binary @rnn_kernel
// PTX-SAME: .target sm_90
// PTX: bar.sync
//
// mode=auto runs a state of 8 elements in one kernel: as kernel mode, one
// block of 32 threads, no loop on the host.
// AUTO-LABEL: func.func @rnn
// AUTO-NOT: scf.for
// AUTO: gpu.launch_func async [%{{.*}}] @[[K:rnn_kernel_[0-9]+]]::@rnn_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// AUTO-NOT: scf.for
// AUTO: return
// AUTO: gpu.module @[[K]]
// AUTO: gpu.barrier
// The whole pipeline lowers the host code to the LLVM dialect.
// LLVM-LABEL: llvm.func @rnn
// LLVM: gpu.launch_func
// LLVM-SAME: blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) : i64
func.func @rnn(%xs: tensor<?x4xf32>, %h0: tensor<8xf32>, %W: tensor<8x8xf32>,
               %U: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?x4xf32>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x4xf32>) sitsot(%h0 : tensor<8xf32>)
      nonsequences(%W, %U, %b : tensor<8x8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<4xf32>, %h: tensor<8xf32>, %w: tensor<8x8xf32>, %u: tensor<4x8xf32>, %bb: tensor<8xf32>):
    %e = tensor.empty() : tensor<8xf32>
    %z = arith.constant 0.0 : f32
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %wh = linalg.vecmat ins(%h, %w : tensor<8xf32>, tensor<8x8xf32>) outs(%f : tensor<8xf32>) -> tensor<8xf32>
    %ux = linalg.vecmat ins(%x, %u : tensor<4xf32>, tensor<4x8xf32>) outs(%f : tensor<8xf32>) -> tensor<8xf32>
    %s = arith.addf %wh, %ux : tensor<8xf32>
    %sb = arith.addf %s, %bb : tensor<8xf32>
    %next = math.tanh %sb : tensor<8xf32>
    scan.yield %next : tensor<8xf32>
  } -> (tensor<?x8xf32>)
  return %r : tensor<?x8xf32>
}

// -----

// `until`. Host mode: the host runs the scf.while and must read the stop
// flag back in every step (the one copy a host-mode step makes).
// HOST-LABEL: func.func @grow
// HOST: scf.while
// HOST: gpu.launch_func async
// HOST: gpu.memcpy async
// HOST: llvm.call @mgpuStreamSynchronize
// HOST: scf.condition
//
// Kernel mode: the scf.while runs in the kernel; the host reads the number
// of steps run back once, after it.
// KERNEL-LABEL: func.func @grow
// KERNEL-NOT: scf.while
// KERNEL: gpu.launch_func async [%{{.*}}] @[[K:grow_kernel_[0-9]+]]::@grow_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// KERNEL-NEXT: gpu.memcpy async
// KERNEL-NOT: scf.while
// KERNEL: return
// KERNEL: gpu.module @[[K]]
// KERNEL: scf.while
// KERNEL: scf.condition
// KERNEL: gpu.barrier
// KERNEL: scf.for %{{.*}} = %thread_id_x to %{{.*}} step %block_dim_x
// KERNEL: gpu.barrier
// KERNEL: gpu.return
//
// PTX: gpu.binary @grow_kernel
// PTX-SAME: .target sm_90
func.func @grow(%h0: tensor<8xf32>, %limit: f32) -> tensor<?x8xf32> {
  %c64 = arith.constant 64 : index
  %r = scan.scan steps(%c64) until sitsot(%h0 : tensor<8xf32>) nonsequences(%limit : f32) {
  ^bb0(%h: tensor<8xf32>, %lim: f32):
    %d = arith.addf %h, %h : tensor<8xf32>
    %c0 = arith.constant 0 : index
    %first = tensor.extract %d[%c0] : tensor<8xf32>
    %stop = arith.cmpf ogt, %first, %lim : f32
    scan.yield %d, %stop : tensor<8xf32>, i1
  } -> (tensor<?x8xf32>)
  return %r : tensor<?x8xf32>
}

// -----

// A scalar recurrence has no parallel work: one single-thread kernel runs
// the whole loop in either mode.
// HOST-LABEL: func.func @cumsum
// HOST-NOT: scf.for
// HOST: gpu.launch_func async [%{{.*}}] @[[K:cumsum_kernel[_0-9]*]]::@cumsum_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
// HOST-NOT: scf.for
// HOST: return
// HOST: gpu.module @[[K]]
// HOST: scf.for
// KERNEL-LABEL: func.func @cumsum
// KERNEL-NOT: scf.for
// KERNEL: gpu.launch_func async [%{{.*}}] @{{.*}} blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
// KERNEL-NOT: scf.for
// KERNEL: return
func.func @cumsum(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%x0 : f64) {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// -----

// `until` with a step count known at run time only: the output buffer
// starts with min(n, 32768) rows and grows when full
// (scan-gpu-loop-allocations). Kernel mode (and auto, for 8 elements): the
// host's scf.while runs once per growth, allocating; the steps run in one
// block kernel (an scf.while with barriers); no second loop on the host.
// KERNEL-LABEL: func.func @grow_dynamic
// KERNEL: scf.while
// KERNEL: } do {
// KERNEL: scf.if
// KERNEL: gpu.alloc async
// KERNEL: gpu.launch_func async [%{{.*}}] @[[K:grow_dynamic_kernel_[0-9]+]]::@grow_dynamic_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// KERNEL-NOT: scf.while
// KERNEL: return
// KERNEL: gpu.module @[[K]]
// KERNEL: scf.while
// KERNEL: gpu.barrier
// KERNEL: scf.condition
// AUTO-LABEL: func.func @grow_dynamic
// AUTO: scf.while
// AUTO: } do {
// AUTO: gpu.launch_func async [%{{.*}}] @{{.*}} blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// AUTO-NOT: scf.while
// AUTO: return
// Host mode: the inner loop of steps is the host's, launching per step.
// HOST-LABEL: func.func @grow_dynamic
// HOST: scf.while
// HOST: scf.while
// HOST: gpu.launch_func async
// HOST: llvm.call @mgpuStreamSynchronize
// HOST: scf.condition
// PTX: gpu.binary @grow_dynamic_kernel
// PTX: bar.sync
func.func @grow_dynamic(%h0: tensor<8xf32>, %limit: f32, %n: i64) -> tensor<?x8xf32> {
  %steps = arith.index_cast %n : i64 to index
  %r = scan.scan steps(%steps) until sitsot(%h0 : tensor<8xf32>) nonsequences(%limit : f32) {
  ^bb0(%h: tensor<8xf32>, %lim: f32):
    %d = arith.addf %h, %h : tensor<8xf32>
    %c0 = arith.constant 0 : index
    %first = tensor.extract %d[%c0] : tensor<8xf32>
    %stop = arith.cmpf ogt, %first, %lim : f32
    scan.yield %d, %stop : tensor<8xf32>, i1
  } -> (tensor<?x8xf32>)
  return %r : tensor<?x8xf32>
}

// -----

// `until` + go_backwards + keep, scalar outputs, one of them stacked, and a
// run-time step count: the loop of steps is one single-thread kernel in
// every mode (the host loop around it runs once per growth).
// HOST-LABEL: func.func @backwards_until_keep
// HOST: scf.while
// HOST: gpu.launch_func async [%{{.*}}] @[[K:backwards_until_keep_kernel_[0-9]+]]::@backwards_until_keep_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
// HOST-NOT: scf.while
// HOST: return
// HOST: gpu.module @[[K]]
// HOST: scf.while
// KERNEL-LABEL: func.func @backwards_until_keep
// KERNEL: scf.while
// KERNEL: gpu.launch_func async [%{{.*}}] @[[K:backwards_until_keep_kernel_[0-9]+]]::@backwards_until_keep_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
// KERNEL-NOT: scf.while
// KERNEL: return
// KERNEL: gpu.module @[[K]]
// KERNEL: scf.while
func.func @backwards_until_keep(%xs: tensor<?xf64>, %n: i64, %lim: f64) -> (tensor<1xf64>, tensor<?xf64>) {
  %z = arith.constant 0.0 : f64
  %steps = arith.index_cast %n : i64 to index
  %r:2 = scan.scan steps(%steps) go_backwards until sequences(%xs : tensor<?xf64>) sitsot(%z, %z : f64, f64)
      nonsequences(%lim : f64) keep [1, 0] {
  ^bb0(%x: f64, %acc: f64, %b: f64, %l: f64):
    %s = arith.addf %acc, %x : f64
    %stop = arith.cmpf ogt, %s, %l : f64
    scan.yield %s, %x, %stop : f64, f64, i1
  } -> (tensor<1xf64>, tensor<?xf64>)
  return %r#0, %r#1 : tensor<1xf64>, tensor<?xf64>
}

// -----

// A nested scan with a run-time inner step count and keep [1]: the zero row
// (no inner step ran) is allocated outside the loops, so the outer loop is
// one block kernel in kernel mode.
// KERNEL-LABEL: func.func @nested_keep
// KERNEL-NOT: scf.for
// KERNEL: gpu.launch_func async [%{{.*}}] @[[K:nested_keep_kernel[_0-9]*]]::@nested_keep_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// KERNEL-NOT: scf.for
// KERNEL: return
// KERNEL: gpu.module @[[K]]
// KERNEL: scf.for
// KERNEL: gpu.barrier
func.func @nested_keep(%rows: tensor<2x3xf64>, %m: index, %h0: tensor<4xf64>) -> tensor<2x4xf64> {
  %c2 = arith.constant 2 : index
  %r = scan.scan steps(%c2) sequences(%rows : tensor<2x3xf64>) nonsequences(%m, %h0 : index, tensor<4xf64>) {
  ^bb0(%row: tensor<3xf64>, %mm: index, %h: tensor<4xf64>):
    %s = scan.scan steps(%mm) sequences(%row : tensor<3xf64>) sitsot(%h : tensor<4xf64>) keep [1] {
    ^bb0(%x: f64, %acc: tensor<4xf64>):
      %e = tensor.splat %x : tensor<4xf64>
      %a = arith.addf %acc, %e : tensor<4xf64>
      scan.yield %a : tensor<4xf64>
    } -> (tensor<1x4xf64>)
    %last = tensor.collapse_shape %s [[0, 1]] : tensor<1x4xf64> into tensor<4xf64>
    scan.yield %last : tensor<4xf64>
  } -> (tensor<2x4xf64>)
  return %r : tensor<2x4xf64>
}

// -----

// Calls between the module's functions are inlined (device memory is
// managed per public function); a private helper disappears.
// HOST-LABEL: func.func @twice
// HOST-NOT: call @helper
// HOST: return
// KERNEL-LABEL: func.func @twice
// KERNEL-NOT: call @helper
// KERNEL: return
// KERNEL-NOT: func.func private @helper
// PTX-NOT: llvm.func @helper
func.func private @helper(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %xs, %c0 : tensor<?xf64>
  %r = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%x0 : f64) {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    scan.yield %s : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
func.func @twice(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
  %a = call @helper(%xs, %x0) : (tensor<?xf64>, f64) -> tensor<?xf64>
  %b = call @helper(%a, %x0) : (tensor<?xf64>, f64) -> tensor<?xf64>
  return %b : tensor<?xf64>
}

// -----

// A call of an external host function (mlir-runner's printMemrefF64, as in
// examples/cumsum_main.mlir) gets a host buffer: the device result is copied
// into it and the host waits for the stream before the call.
// KERNEL-LABEL: func.func @print
// KERNEL: gpu.launch_func
// KERNEL: %[[HOSTBUF:.*]] = memref.alloc() {{.*}}: memref<4xf64>
// KERNEL: gpu.memcpy async [%{{.*}}] %[[HOSTBUF]], %{{.*}} : memref<4xf64>, memref<4xf64>
// KERNEL: %[[CAST:.*]] = memref.cast %[[HOSTBUF]] : memref<4xf64> to memref<*xf64>
// KERNEL: llvm.call @mgpuStreamSynchronize
// KERNEL-NEXT: call @printMemrefF64(%[[CAST]])
func.func private @printMemrefF64(tensor<*xf64>)
func.func @print(%xs: tensor<4xf64>) {
  %zero = arith.constant 0.0 : f64
  %c4 = arith.constant 4 : index
  %r = scan.scan steps(%c4) sequences(%xs : tensor<4xf64>) sitsot(%zero : f64) {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    scan.yield %s : f64
  } -> (tensor<4xf64>)
  %u = tensor.cast %r : tensor<4xf64> to tensor<*xf64>
  call @printMemrefF64(%u) : (tensor<*xf64>) -> ()
  return
}

