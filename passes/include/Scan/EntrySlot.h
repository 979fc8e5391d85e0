//===- EntrySlot.h - where calls of a compiled program go -------*- C++ -*-===//
//
// Shared by the JIT (python/capi/ScanJIT.cpp), which fills the slots, and the
// run-time library (python/runtime/ScanRuntime.cpp), whose calls read them;
// no MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_ENTRYSLOT_H
#define SCAN_ENTRYSLOT_H

#include <atomic>
#include <cstdint>

namespace mlir {
namespace scan {

/// What `EntrySlot::address` holds while LLVM compiles the program's quick
/// code on the JIT's background thread ...
inline constexpr uint64_t kEntryPending = 0;
/// ... and if LLVM could not compile it.
inline constexpr uint64_t kEntryFailed = 1;

/// One public function of a compiled program, as its calls see it. Python
/// reads `address` as the slot's first 64-bit word.
struct EntrySlot {
  /// The packed entry point in the program's current tier, or kEntryPending
  /// or kEntryFailed.
  std::atomic<uint64_t> address{kEntryPending};
  /// While the program's optimized tier is being compiled: when it is
  /// expected to be ready (steady clock, ns), which a call in the quick code
  /// may wait for (__mlir_scan_poll_upgrade); else 0.
  std::atomic<int64_t> upgradeDueNs{0};
  /// Calls in progress through this slot (the run-time library counts them:
  /// the JIT holds an optimized compile back for other programs' calls
  /// longer than for its own).
  mutable std::atomic<int32_t> callsRunning{0};
};

} // namespace scan
} // namespace mlir

#endif // SCAN_ENTRYSLOT_H
