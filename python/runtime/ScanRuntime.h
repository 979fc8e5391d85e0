//===- ScanRuntime.h - the run-time library of compiled scan programs -----===//
//
// Compiled programs are called through `mlirScanInvoke`, which gives each call
// its own frame: an error record and the list of the blocks the call has
// allocated. A failed run-time check, a failed allocation or a size that does
// not fit in 64 bits ends the call at once (`longjmp` back to the frame):
// the blocks it allocated are freed and the caller reads the error record.
// Nothing is global, so calls from many threads never see each other's
// errors. A call through an entry slot (`mlirScanInvokeSlot`, the tiers of
// python/capi/ScanJIT.cpp) that the JIT points at optimized code while the
// call runs in the quick code ends the same way and starts again. Outside any frame (a program run by `mlir-runner` with this library
// in `-shared-libs`) a failure prints the message and exits with status 1.
//
// The entry points compiled programs call are named in
// passes/include/Scan/RuntimeChecks.h; Python's side is mlir_scan/runtime.py.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_RUNTIME_H
#define SCAN_RUNTIME_H

#include "Scan/EntrySlot.h"

#include <atomic>
#include <csetjmp>
#include <cstddef>
#include <cstdint>

#define MLIR_SCAN_RUNTIME_EXPORT extern "C" __attribute__((visibility("default")))

namespace mlir_scan_runtime {

/// What kind of Python exception an error becomes.
enum class ErrorKind : int64_t {
  None = 0,
  Value = 1,
  Index = 2,
  Memory = 3,
  // Not an error: the call ran in quick code whose optimized version is now
  // ready (`__mlir_scan_poll_upgrade`); `mlirScanInvokeSlot` starts it again
  // there. Python never sees it.
  Restart = 4,
  // LLVM could not compile the program's quick code (on the JIT's
  // background thread, after the program was created): RuntimeError.
  Compile = 5,
};

/// The error record of one call (read by Python through ctypes: keep the
/// layout in sync with `_CallError` in mlir_scan/runtime.py).
struct CallError {
  int64_t kind;  // ErrorKind
  int64_t code;  // ScanErrorCode (passes/include/Scan/RuntimeChecks.h)
  int64_t item;
  int64_t have;
  int64_t need;
  char message[1024];
};

struct BlockHeader;

/// One call in progress on this thread.
struct CallFrame {
  std::jmp_buf resume;
  CallError *error = nullptr;
  BlockHeader *blocks = nullptr; // allocated by this call, not yet freed
  CallFrame *outer = nullptr;    // a call further up this thread's stack
  // The entry slot the call went through (mlirScanInvokeSlot) and the entry
  // point it read there: when the slot moves on, the call may restart.
  const mlir::scan::EntrySlot *slot = nullptr;
  uint64_t entry = 0;
  // For calls through a slot: when the call started (steady clock, ns), and
  // the outermost loop the last upgrade poll came from (its id, and when its
  // first iteration began).
  int64_t startNs = 0;
  int64_t loop = -1;
  int64_t loopStartNs = 0;
};

/// The innermost call in progress on this thread, or null.
CallFrame *currentFrame();

/// Records `error` in the current call and ends it; outside a call, prints
/// the message and exits the process with status 1.
[[noreturn]] void fail(const CallError &error);

/// Frees every block `frame` allocated and did not free (a failed call), or
/// hands them to the caller (a call that returned: they are its results).
void releaseFrameBlocks(CallFrame &frame);
void detachFrameBlocks(CallFrame &frame);

} // namespace mlir_scan_runtime

#endif // SCAN_RUNTIME_H
