"""Python op classes of the Scan dialect (generated from ``ScanOps.td``).

Example::

    import mlir_scan
    from mlir import ir
    from mlir_scan.dialect import ScanOp

    with ir.Context():
        module = ir.Module.parse('''
          func.func @f(%n: index, %x0: f64) -> tensor<?xf64> {
            %r = scan.scan steps(%n) sitsot(%x0 : f64) {
            ^bb0(%x: f64):
              %y = arith.addf %x, %x : f64
              scan.yield %y : f64
            } -> (tensor<?xf64>)
            return %r : tensor<?xf64>
          }''')
        scan = module.body.operations[0].regions[0].blocks[0].operations[0]
        assert isinstance(scan, ScanOp)
"""

from ._scan_ops_gen import *  # noqa: F401,F403
from ._scan_ops_gen import _Dialect  # noqa: F401
