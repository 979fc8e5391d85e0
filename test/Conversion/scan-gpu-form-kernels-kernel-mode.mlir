// A loop whose every step allocates memory cannot run in one kernel (a
// device allocation is a host call): mode=kernel is an error naming the
// reason; mode=auto and mode=host run that loop on the host.
//
// RUN: not scan-opt %s --scan-to-nvvm=mode=kernel 2>&1 | FileCheck %s --check-prefix=KERNEL
// RUN: scan-opt %s --pass-pipeline="builtin.module(scan-optimize,convert-scan-to-scf{block-steps=0},canonicalize,cse,scan-gpu-bufferize-loops,scan-buffers-to-gpu,canonicalize)" | FileCheck %s --check-prefix=AUTO
// RUN: scan-opt %s --scan-to-nvvm=mode=host | FileCheck %s --check-prefix=HOST

// The outer scan reads every row of an inner `until` scan whose number of
// steps is a sequence element: the inner output buffer is allocated in
// every outer step, with a size that changes from step to step.
// KERNEL: error: scan-gpu-form-kernels: mode=kernel cannot run this loop in one kernel: every step allocates memory (a device allocation is a host call), e.g. the buffers of a nested scan whose sizes change from step to step; compile with mode=auto or mode=host, which run it on the host
// KERNEL: note: the allocation
//
// Auto: the outer loop is the host's; the inner until loop's steps are one
// block kernel (growing its buffer from the host when full).
// AUTO-LABEL: func.func @f
// AUTO: scf.for
// AUTO: gpu.alloc async
// AUTO: scf.while
// AUTO: gpu.launch_func async [%{{.*}}] @{{.*}} blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// HOST: llvm.func @f
// HOST: gpu.binary
func.func @f(%ks: tensor<?xindex>, %v: tensor<8xf64>, %lim: f64) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %ks, %c0 : tensor<?xindex>
  %r = scan.scan steps(%n) sequences(%ks : tensor<?xindex>) nonsequences(%v, %lim : tensor<8xf64>, f64) {
  ^bb0(%k: index, %vv: tensor<8xf64>, %l: f64):
    %inner = scan.scan steps(%k) until sitsot(%vv : tensor<8xf64>) nonsequences(%l : f64) {
    ^bb0(%h: tensor<8xf64>, %ll: f64):
      %d = arith.addf %h, %h : tensor<8xf64>
      %c0i = arith.constant 0 : index
      %e = tensor.extract %d[%c0i] : tensor<8xf64>
      %stop = arith.cmpf ogt, %e, %ll : f64
      scan.yield %d, %stop : tensor<8xf64>, i1
    } -> (tensor<?x8xf64>)
    %c0j = arith.constant 0 : index
    %rows = tensor.dim %inner, %c0j : tensor<?x8xf64>
    %c1 = arith.constant 1 : index
    %last = arith.subi %rows, %c1 : index
    %x = tensor.extract %inner[%last, %c0j] : tensor<?x8xf64>
    %first = tensor.extract %inner[%c0j, %c0j] : tensor<?x8xf64>
    %sum = arith.addf %x, %first : f64
    scan.yield %sum : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}
