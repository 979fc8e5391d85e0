// examples/cumsum.mlir with an entry point for mlir-runner (see the README):
//   scan-opt examples/cumsum_main.mlir --scan-to-llvm \
//     | $(python -m mlir_scan --mlir-runner) -e main -entry-point-result=void \
//         $(python -m mlir_scan --shared-libs)
// prints [1,  3,  6,  10]. (`printMemrefF64` comes from MLIR's runner
// utilities, which mlir_scan.compile does not load: this file is for
// mlir-runner only.)

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

func.func private @printMemrefF64(tensor<*xf64>) attributes {llvm.emit_c_interface}
func.func @main() {
  %xs = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf64>
  %dyn = tensor.cast %xs : tensor<4xf64> to tensor<?xf64>
  %zero = arith.constant 0.0 : f64
  %r = call @cumsum(%dyn, %zero) : (tensor<?xf64>, f64) -> tensor<?xf64>
  %u = tensor.cast %r : tensor<?xf64> to tensor<*xf64>
  call @printMemrefF64(%u) : (tensor<*xf64>) -> ()
  return
}
