// RUN: scan-opt %s --convert-scan-to-scf -split-input-file -verify-diagnostics

// A nitsot row with dynamic sizes verifies but cannot be lowered: its buffer
// is created before the first step.
func.func @dynamic_nitsot_rows(%xs: tensor<?x?xf32>, %n: index) -> tensor<?x?xf32> {
  // expected-error @+2 {{nitsot #0: cannot lower rows of type 'tensor<?xf32>' with dynamic sizes}}
  // expected-error @+1 {{could not be lowered to scf}}
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x?xf32>) {
  ^bb0(%x: tensor<?xf32>):
    scan.yield %x : tensor<?xf32>
  } -> (tensor<?x?xf32>)
  return %r : tensor<?x?xf32>
}
