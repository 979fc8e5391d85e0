//===- ErrorCodes.h - run-time error codes of compiled scan programs ------===//
//
// Shared by the passes that emit run-time checks and by the run-time library
// (python/runtime/), which formats the messages; no MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_ERRORCODES_H
#define SCAN_ERRORCODES_H

#include <cstdint>

namespace mlir {
namespace scan {

/// The `code` argument of `__mlir_scan_fail(code, item, have, need)`.
enum class ScanErrorCode : int64_t {
  None = 0,
  NegativeSteps = 1,    // have = n_steps
  SequenceTooShort = 2, // item = sequence, have = rows, need = rows needed
  MitMotTooShort = 3,   // item = mitmot buffer, have = rows, need = rows needed
  MitSotInitRows = 4,   // item = mitsot, have = init rows, need = K
  OutOfMemory = 5,      // have = bytes requested (raised by the allocator)
  BadAllocation = 6,    // a buffer's shape is negative or its size overflows
                        // (`__mlir_scan_fail_alloc`)
  VerificationFailed = 7, // a `cf.assert` of generate-runtime-verification
                          // (`__mlir_scan_fail_message`)
  RowSizeMismatch = 8,  // item = result, have = size of the yielded row (the
                        // first dimension that differs), need = the rows'
                        // size along it
  NitSotRowSize = 9,      // item = nitsot, have = a step's row size, need =
                          // the size of the first step's rows (a nitsot
                          // whose rows have dynamic sizes)
  CodeNotCompiled = 10,   // LLVM could not compile the program's quick code
                          // (raised by the call: python/capi/ScanJIT.cpp)
  // Checks of the Python graph builder: item = the builder's check id, whose
  // message the builder keeps; the code tells the exception type.
  BuilderValueError = 100,
  BuilderIndexError = 101,
};

} // namespace scan
} // namespace mlir

#endif // SCAN_ERRORCODES_H
