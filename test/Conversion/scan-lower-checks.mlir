// RUN: scan-opt %s --scan-lower-checks | FileCheck %s

// scan-lower-checks: each scan.check becomes a branch on its condition and a
// call of the run-time library's failure function with the code, the check
// id and the two values as i64; the function is declared once.

// CHECK-LABEL: func.func @two_checks
// CHECK-SAME:    (%[[BAD:.*]]: i1, %[[HAVE:.*]]: index, %[[NEED:.*]]: i64, %[[OTHER:.*]]: i1)
// CHECK:         scf.if %[[BAD]] {
// CHECK-DAG:       %[[C100:.*]] = arith.constant 100 : i64
// CHECK-DAG:       %[[C7:.*]] = arith.constant 7 : i64
// CHECK-DAG:       %[[H:.*]] = arith.index_cast %[[HAVE]] : index to i64
// CHECK:           func.call @__mlir_scan_fail(%[[C100]], %[[C7]], %[[H]], %{{.*}}) : (i64, i64, i64, i64) -> ()
// CHECK:         }
// CHECK:         scf.if %[[OTHER]] {
// CHECK-DAG:       %[[C101:.*]] = arith.constant 101 : i64
// CHECK:           func.call @__mlir_scan_fail(%[[C101]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:         }
// CHECK-NOT:     scan.check
// CHECK:         return
func.func @two_checks(%bad: i1, %have: index, %need: i64, %other: i1) {
  scan.check %bad code 100 id 7 (%have, %need : index, i64)
  scan.check %other code 101 id 8 (%have, %have : index, index)
  return
}

// A check in a scan body is lowered in place (the scan is lowered later).
// CHECK-LABEL: func.func @in_scan
// CHECK:         scan.scan
// CHECK:           scf.if
// CHECK:             func.call @__mlir_scan_fail
// CHECK:           scan.yield
func.func @in_scan(%n: index, %h0: f64) -> tensor<?xf64> {
  %r = scan.scan steps(%n) sitsot(%h0 : f64) {
  ^bb0(%h: f64):
    %zero = arith.constant 0.0 : f64
    %neg = arith.cmpf olt, %h, %zero : f64
    %c0 = arith.constant 0 : index
    scan.check %neg code 100 id 0 (%c0, %c0 : index, index)
    scan.yield %h : f64
  } -> (tensor<?xf64>)
  return %r : tensor<?xf64>
}

// CHECK:       func.func private @__mlir_scan_fail(i64, i64, i64, i64)
// CHECK-NOT:   func.func private @__mlir_scan_fail
