// The structure of the two GPU modes (docs/GPU.md), after the kernels are
// outlined (scan-buffers-to-gpu), and the PTX of the whole pipeline.
//
// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(scan-optimize,convert-scan-to-scf,canonicalize,cse,scan-gpu-bufferize-loops,scan-buffers-to-gpu{mode=host},canonicalize)" | FileCheck %s --check-prefix=HOST
// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(scan-optimize,convert-scan-to-scf,canonicalize,cse,scan-gpu-bufferize-loops,scan-buffers-to-gpu{mode=kernel},canonicalize)" | FileCheck %s --check-prefix=KERNEL
// RUN: scan-opt %s --split-input-file --pass-pipeline="builtin.module(scan-to-nvvm{chip=sm_90 mode=kernel})" | FileCheck %s --check-prefix=PTX
// RUN: scan-opt %s --split-input-file --scan-to-nvvm | FileCheck %s --check-prefix=AUTO
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
// mode=auto runs a state of 8 elements in one kernel.
// AUTO-LABEL: llvm.func @rnn
// AUTO: gpu.launch_func
// AUTO-SAME: blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) : i64
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
