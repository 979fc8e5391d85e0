"""A**k by repeated multiplication, the first example of Theano's scan guide.

    result, updates = theano.scan(fn=lambda prior, A: prior * A,
                                  outputs_info=T.ones_like(A),
                                  non_sequences=A, n_steps=k)
    final = result[-1]

written directly as a `scan.scan` (a SITSOT state, one non-sequence, only the
last row kept), compiled to native code and run on NumPy arrays.
"""

import numpy as np

import mlir_scan

POWER = """
func.func @power(%A: tensor<?xf64>, %k: index) -> tensor<1x?xf64> {
  %c0 = arith.constant 0 : index
  %len = tensor.dim %A, %c0 : tensor<?xf64>
  %one = arith.constant 1.0 : f64
  %empty = tensor.empty(%len) : tensor<?xf64>
  %ones = linalg.fill ins(%one : f64) outs(%empty : tensor<?xf64>) -> tensor<?xf64>
  %last = scan.scan steps(%k)
      sitsot(%ones : tensor<?xf64>)
      nonsequences(%A : tensor<?xf64>) keep [1] {
  ^bb0(%prior: tensor<?xf64>, %a: tensor<?xf64>):
    %next = arith.mulf %prior, %a : tensor<?xf64>
    scan.yield %next : tensor<?xf64>
  } -> (tensor<1x?xf64>)
  return %last : tensor<1x?xf64>
}
"""


def main() -> None:
    program = mlir_scan.compile(POWER)
    A = np.arange(10, dtype=np.float64)
    for k in (2, 4):
        print(f"A**{k} =", program.power(A, k)[0])
    assert np.array_equal(program.power(A, 4)[0], A**4)


if __name__ == "__main__":
    main()
