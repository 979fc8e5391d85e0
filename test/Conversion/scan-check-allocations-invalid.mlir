// RUN: scan-opt %s --scan-check-allocations -split-input-file -verify-diagnostics

// scan-check-allocations moves a static memref.alloca over the stack limit
// (1 MiB) to the heap, freed at the end of its block; one whose buffer
// outlives its block cannot be freed there: a located error with its size.

func.func @returned_from_a_loop(%n: index) -> memref<1000000xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = memref.alloca() : memref<1xf64>
  %init = memref.cast %z : memref<1xf64> to memref<?xf64>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> memref<?xf64> {
    // expected-error @+1 {{'memref.alloca' op of 8000000 bytes ('memref<1000000xf64>') is too large for the stack (at most 1048576 bytes) and its buffer is used outside its block, so it cannot be moved to the heap: use memref.alloc}}
    %a = memref.alloca() : memref<1000000xf64>
    %v = memref.cast %a : memref<1000000xf64> to memref<?xf64>
    scf.yield %v : memref<?xf64>
  }
  // expected-error @+1 {{'memref.alloca' op of 8000000 bytes ('memref<1000000xf64>') is too large for the stack}}
  %s = memref.alloca() : memref<1000000xf64>
  return %s : memref<1000000xf64>
}

// -----

func.func @passed_to_a_call(%x: f64) -> memref<?xf64> {
  // expected-error @+1 {{'memref.alloca' op of more than 2**63 bytes ('memref<9223372036854775807xf64>') is too large for the stack}}
  %a = memref.alloca() : memref<9223372036854775807xf64>
  %r = func.call @keep(%a) : (memref<9223372036854775807xf64>) -> memref<?xf64>
  return %r : memref<?xf64>
}
func.func private @keep(memref<9223372036854775807xf64>) -> memref<?xf64>
