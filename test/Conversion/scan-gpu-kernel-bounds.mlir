// RUN: scan-opt %s --scan-gpu-kernel-bounds | FileCheck %s

// A kernel launched as one block is alone on the GPU: ptxas may give its
// threads all the registers they need (.minnctapersm 1). Kernels of grids
// keep ptxas's choice.
// CHECK-LABEL: gpu.module @kernels
// CHECK: gpu.func @block_kernel
// CHECK-SAME: nvvm.minctasm = 1 : i32
// CHECK: gpu.func @grid_kernel
// CHECK-NOT: nvvm.minctasm
// CHECK: gpu.return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @block_kernel(%m: memref<128xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      gpu.barrier
      gpu.return
    }
    gpu.func @grid_kernel(%m: memref<128xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
}
