// RUN: scan-opt %s --canonicalize | FileCheck %s

// scan.check: a condition known to be false never fails (the check goes);
// a condition known to be true always fails (the check stays).

// CHECK-LABEL: func.func @check_false
// CHECK-NOT:     scan.check
// CHECK:         return
func.func @check_false(%a: index) {
  %false = arith.constant false
  scan.check %false code 100 id 0 (%a, %a : index, index)
  return
}

// CHECK-LABEL: func.func @check_true_or_unknown
// CHECK:         scan.check %{{.*}} code 100 id 0
// CHECK:         scan.check %arg0 code 100 id 1
func.func @check_true_or_unknown(%bad: i1, %a: index) {
  %true = arith.constant true
  scan.check %true code 100 id 0 (%a, %a : index, index)
  scan.check %bad code 100 id 1 (%a, %a : index, index)
  return
}

// The same sizes: a check of `%a != %a` folds away.
// CHECK-LABEL: func.func @check_same_sizes
// CHECK-NOT:     scan.check
func.func @check_same_sizes(%a: index) {
  %bad = arith.cmpi ne, %a, %a : index
  scan.check %bad code 100 id 0 (%a, %a : index, index)
  return
}
