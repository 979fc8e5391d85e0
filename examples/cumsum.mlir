// A running sum: one sequence read at tap 0 and one scalar SITSOT state.
// Used by the README ("From Python"); examples/cumsum_main.mlir runs it with
// mlir-runner.
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
