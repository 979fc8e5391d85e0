//===- ScanRuntime.cpp - calls, failures and helpers of compiled programs -===//
//
// See ScanRuntime.h for the design. Exported here:
//   * `mlirScanInvoke`: what Python calls, with a program's packed entry
//     point (`_mlir_<name>`, made by the ExecutionEngine), and
//     `mlirScanInvokeSlot`, with the JIT's slot holding that entry point
//     (restarting a call that the quick tier's `__mlir_scan_poll_upgrade`
//     ends);
//   * the failure entry points compiled programs call: `__mlir_scan_fail`,
//     `__mlir_scan_fail_alloc`, `__mlir_scan_fail_message`;
//   * `memrefCopy`, which `memref.copy` of strided memrefs lowers to.
//
//===----------------------------------------------------------------------===//

#include "ScanRuntime.h"

#include "Scan/ErrorCodes.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace mlir_scan_runtime;
using mlir::scan::ScanErrorCode;

namespace {

thread_local CallFrame *innermostFrame = nullptr;

/// How many calls restarted in optimized code (for tests: mlirScanRestarts).
std::atomic<int64_t> restarts{0};

/// Optimized tiers being compiled in this process (for tests: when each is
/// due is in its program's entry slots, for __mlir_scan_poll_upgrade).
std::atomic<int> upgradesPending{0};

/// What a user of the process waits for (__mlir_scan_foreground): calls
/// entered through an entry slot (tiered programs) that are computing, not
/// waiting for optimized code; how many of them have returned; compiles
/// (mlirScanCompileBegins/Ends).
std::atomic<int> slotCallsRunning{0};
std::atomic<int64_t> slotCallsEnded{0};
std::atomic<int> compilesRunning{0};

/// Calls that wait for a program's quick code (an entry slot holding
/// kEntryPending) sleep here until the JIT fills entry slots
/// (__mlir_scan_entries_ready). Never destroyed: a background compile may
/// still notify while the process exits.
std::mutex &entriesMutex() {
  static std::mutex *mutex = new std::mutex();
  return *mutex;
}
std::condition_variable &entriesFilled() {
  static std::condition_variable *filled = new std::condition_variable();
  return *filled;
}

/// The entry point `slot` holds once the quick code is compiled: an
/// address, or kEntryFailed.
uint64_t awaitEntry(const mlir::scan::EntrySlot &slot) {
  std::unique_lock<std::mutex> lock(entriesMutex());
  entriesFilled().wait(lock, [&] {
    return slot.address.load(std::memory_order_acquire) !=
           mlir::scan::kEntryPending;
  });
  return slot.address.load(std::memory_order_acquire);
}

/// A quick-tier call waits for its optimized code once it has run this long
/// and twice as long as the optimized code should still take (see
/// __mlir_scan_poll_upgrade).
constexpr int64_t kWaitForUpgradeAfterNs = 10'000'000;

int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void format(CallError &error, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void format(CallError &error, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(error.message, sizeof(error.message), fmt, args);
  va_end(args);
}

/// The message of a scan check (codes 1-4 and 8), from its numbers.
void formatScanCheck(CallError &e) {
  switch (static_cast<ScanErrorCode>(e.code)) {
  case ScanErrorCode::NegativeSteps:
    format(e, "scan: n_steps is %" PRId64 ", must be >= 0", e.have);
    return;
  // `need` is n_steps + window, which may pass 2**63 - 1: it is exact as an
  // unsigned number (both terms are below 2**63).
  case ScanErrorCode::SequenceTooShort:
    format(e,
           "scan: sequence #%" PRId64 " has %" PRId64
           " rows but the steps and taps need %" PRIu64,
           e.item, e.have, static_cast<uint64_t>(e.need));
    return;
  case ScanErrorCode::MitMotTooShort:
    format(e,
           "scan: mitmot buffer #%" PRId64 " has %" PRId64
           " rows but the steps and taps need %" PRIu64,
           e.item, e.have, static_cast<uint64_t>(e.need));
    return;
  case ScanErrorCode::MitSotInitRows:
    format(e,
           "scan: mitsot #%" PRId64 " init has %" PRId64
           " rows but its taps need %" PRId64,
           e.item, e.have, e.need);
    return;
  case ScanErrorCode::RowSizeMismatch:
    format(e,
           "scan: result #%" PRId64 ": a step yielded a row of size %" PRId64
           " where the result's rows have size %" PRId64
           " (every step must yield rows of one shape, the init's for a state)",
             e.item, e.have, e.need);
    return;
  case ScanErrorCode::NitSotRowSize:
    format(e,
           "scan: nitsot #%" PRId64 ": a step's row has size %" PRId64
           " where the first step's rows have %" PRId64
           " (all rows of an output must have one shape)",
           e.item, e.have, e.need);
    return;
  case ScanErrorCode::BuilderValueError:
  case ScanErrorCode::BuilderIndexError:
    // The builder formats its own messages; this one is for mlir-runner.
    format(e, "run-time check #%" PRId64 " failed (%" PRId64 ", %" PRId64 ")",
           e.item, e.have, e.need);
    return;
  default:
    format(e, "run-time check %" PRId64 " failed", e.code);
  }
}

/// Runs `fn(args)` in `frame`; true when the call failed (longjmp). Not
/// inlined: the frame lives in the caller, so nothing that changes between
/// setjmp and longjmp is a local of this function.
__attribute__((noinline)) bool runInFrame(CallFrame *frame,
                                          void (*fn)(void **), void **args) {
  if (setjmp(frame->resume) != 0)
    return true;
  fn(args);
  return false;
}

/// Runs `fn` in a fresh call frame (entered through `slot`, if not null).
/// Returns 0, or 1 after a failure described in `*error` (nothing the call
/// allocated survives it).
int invokeInFrame(void (*fn)(void **), void **args, CallError *error,
                  const mlir::scan::EntrySlot *slot) {
  std::memset(error, 0, sizeof(CallError));
  CallFrame frame;
  frame.error = error;
  frame.outer = innermostFrame;
  frame.slot = slot;
  frame.entry = reinterpret_cast<uint64_t>(fn);
  if (slot)
    frame.startNs = steadyNowNs();
  innermostFrame = &frame;
  bool failed = runInFrame(&frame, fn, args);
  innermostFrame = frame.outer;
  if (failed)
    releaseFrameBlocks(frame);
  else
    detachFrameBlocks(frame);
  return failed ? 1 : 0;
}

} // namespace

CallFrame *mlir_scan_runtime::currentFrame() { return innermostFrame; }

void mlir_scan_runtime::fail(const CallError &error) {
  CallFrame *frame = innermostFrame;
  if (!frame) {
    std::fflush(stdout);
    std::fprintf(stderr, "mlir-scan: run-time error: %s\n", error.message);
    std::fflush(stderr);
    std::_Exit(1);
  }
  *frame->error = error;
  std::longjmp(frame->resume, 1);
}

extern "C" {

/// Calls the packed entry point `fn` of a compiled function (`args[i]`
/// points at argument i, the last at the result) in a fresh call frame.
/// Returns 0, or 1 after a failure described in `*error` (nothing the call
/// allocated survives it).
MLIR_SCAN_RUNTIME_EXPORT int mlirScanInvoke(void (*fn)(void **), void **args,
                                            CallError *error) {
  return invokeInFrame(fn, args, error, nullptr);
}

/// Calls the entry point that `*slot` holds, as mlirScanInvoke does; when
/// the call ends at `__mlir_scan_poll_upgrade` (the slot now holds the
/// optimized code), frees what it allocated and calls the new entry point.
/// A slot whose quick code is still being compiled is waited for; one whose
/// quick code LLVM could not compile fails the call (ErrorKind::Compile).
MLIR_SCAN_RUNTIME_EXPORT int
mlirScanInvokeSlot(const mlir::scan::EntrySlot *slot, void **args,
                   CallError *error) {
  uint64_t entry = slot->address.load(std::memory_order_acquire);
  if (entry == mlir::scan::kEntryPending)
    entry = awaitEntry(*slot);
  if (entry == mlir::scan::kEntryFailed) {
    // Python replaces the message by LLVM's (mlirScanJitQuickError).
    std::memset(error, 0, sizeof(CallError));
    error->kind = static_cast<int64_t>(ErrorKind::Compile);
    error->code = static_cast<int64_t>(ScanErrorCode::CodeNotCompiled);
    format(*error, "LLVM could not compile the program");
    return 1;
  }
  slotCallsRunning.fetch_add(1, std::memory_order_relaxed);
  slot->callsRunning.fetch_add(1, std::memory_order_relaxed);
  for (;;) {
    entry = slot->address.load(std::memory_order_acquire);
    int failed = invokeInFrame(reinterpret_cast<void (*)(void **)>(entry), args,
                               error, slot);
    if (!failed || error->kind != static_cast<int64_t>(ErrorKind::Restart)) {
      slot->callsRunning.fetch_sub(1, std::memory_order_relaxed);
      slotCallsRunning.fetch_sub(1, std::memory_order_relaxed);
      slotCallsEnded.fetch_add(1, std::memory_order_relaxed);
      return failed;
    }
    restarts.fetch_add(1, std::memory_order_relaxed);
  }
}

/// What the process's user is waiting for now: `*calls` calls of tiered
/// programs computing (entered through an entry slot, not waiting for
/// optimized code) and `*compiles` compiles; `*callsEnded` such calls have
/// returned so far. The JIT holds an optimized compile back while the
/// process compiles and until the first call after that has returned,
/// within a bound (ScanJIT.cpp), so that the compiles and the first call a
/// user waits for run on every core.
MLIR_SCAN_RUNTIME_EXPORT void __mlir_scan_foreground(int32_t *calls,
                                                     int32_t *compiles,
                                                     int64_t *callsEnded) {
  *callsEnded = slotCallsEnded.load(std::memory_order_relaxed);
  *calls = slotCallsRunning.load(std::memory_order_relaxed);
  *compiles = compilesRunning.load(std::memory_order_relaxed);
}

/// The JIT has filled entry slots that held kEntryPending (the quick code
/// of a program is linked, or LLVM failed there): wakes the calls waiting
/// for them (mlirScanInvokeSlot).
MLIR_SCAN_RUNTIME_EXPORT void __mlir_scan_entries_ready() {
  std::lock_guard<std::mutex> lock(entriesMutex());
  entriesFilled().notify_all();
}

/// How many optimized tiers are being compiled now (started, not held back:
/// for tests).
MLIR_SCAN_RUNTIME_EXPORT int32_t mlirScanUpgradesPending() {
  return upgradesPending.load(std::memory_order_relaxed);
}

/// mlir_scan.compile begins and ends compiling a program (its passes and
/// its quick tier): see __mlir_scan_foreground.
MLIR_SCAN_RUNTIME_EXPORT void mlirScanCompileBegins() {
  compilesRunning.fetch_add(1, std::memory_order_relaxed);
}
MLIR_SCAN_RUNTIME_EXPORT void mlirScanCompileEnds() {
  compilesRunning.fetch_sub(1, std::memory_order_relaxed);
}

/// How many calls of this process restarted in a program's optimized tier.
MLIR_SCAN_RUNTIME_EXPORT int64_t mlirScanRestarts() {
  return restarts.load(std::memory_order_relaxed);
}

/// Whether a quick-tier call that has run `callNs` should finish in the
/// quick code, its loop having done `done` of `total` iterations in the
/// last `loopNs`: when it has less left to do than it has run so far.
/// Restarting would redo all of it in code that is rarely more than a few
/// times faster (the hand-written W5 at H = 1024: 0.1 s at -O0 against
/// 0.05 s at -O3 in f32, 0.34 against 0.08 s in f64), and waiting for that
/// code would only add the wait. Unknown progress (`total` 0) says no.
static bool finishesInQuickCode(int64_t callNs, int64_t loopNs, int64_t done,
                                int64_t total) {
  if (total <= 0 || done <= 0)
    return false;
  // A blocked loop's last test of its bound sees `done` past `total`.
  done = std::min(done, total);
  double remaining = double(loopNs) * double(total - done) / double(done);
  return remaining <= double(callNs);
}

static bool mostlyDone(const CallFrame &frame, int64_t loop, int64_t done,
                       int64_t total, int64_t now) {
  return frame.loop == loop &&
         finishesInQuickCode(now - frame.startNs, now - frame.loopStartNs,
                             done, total);
}

/// finishesInQuickCode, for tests.
MLIR_SCAN_RUNTIME_EXPORT int32_t mlirScanFinishesInQuickCode(int64_t callNs,
                                                             int64_t loopNs,
                                                             int64_t done,
                                                             int64_t total) {
  return finishesInQuickCode(callNs, loopNs, done, total);
}

/// Ends the current call for a restart if it entered through a slot that
/// now holds another entry point (the quick tier's loops call it once per
/// iteration of every outermost loop, with the loop's id and how far it
/// is: `done` of `total` iterations, 0 of 0 when unknown); otherwise
/// returns at once.
///
/// A call still running in the quick tier while its program's optimized
/// code is compiled shares the cores with that compile, and restarts once
/// it is ready: what it computed until then is lost. So a call that has run
/// for 10 ms and for twice as long as the compile is expected to still take
/// (its slot's upgradeDueNs; other programs' compiles are not waited for)
/// (the best guess of its own remaining time is what it has run so far;
/// twice, because the optimized code must then still run, and a compile
/// often takes longer than expected) stops computing and waits for the
/// optimized code, leaving the compile its core. (With "as long as", the
/// hand-written W5's first call at H = 512 often stopped shortly before its
/// end to wait some 0.1 s: 1.46 times JAX's first call against 0.89, medians
/// of three.) If no optimized code comes (the compile failed), it goes on.
/// A call whose loop shows it has less left than it has run
/// (finishesInQuickCode) neither waits nor restarts.
MLIR_SCAN_RUNTIME_EXPORT void __mlir_scan_poll_upgrade(int64_t loop,
                                                       int64_t done,
                                                       int64_t total) {
  CallFrame *frame = innermostFrame;
  if (!frame || !frame->slot)
    return;
  if (total > 0 && (done == 0 || loop != frame->loop)) {
    frame->loop = loop;
    frame->loopStartNs = steadyNowNs();
  }
  const mlir::scan::EntrySlot &slot = *frame->slot;
  if (slot.address.load(std::memory_order_relaxed) == frame->entry) {
    int64_t due = slot.upgradeDueNs.load(std::memory_order_relaxed);
    if (due == 0)
      return;
    int64_t now = steadyNowNs();
    int64_t elapsed = now - frame->startNs;
    int64_t remaining = due - now;
    if (elapsed < kWaitForUpgradeAfterNs || 2 * remaining > elapsed ||
        mostlyDone(*frame, loop, done, total, now))
      return;
    slotCallsRunning.fetch_sub(1, std::memory_order_relaxed);
    while (slot.address.load(std::memory_order_acquire) == frame->entry &&
           slot.upgradeDueNs.load(std::memory_order_acquire) != 0)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    slotCallsRunning.fetch_add(1, std::memory_order_relaxed);
    if (slot.address.load(std::memory_order_acquire) == frame->entry)
      return;
  } else if (mostlyDone(*frame, loop, done, total, steadyNowNs())) {
    return;
  }
  CallError e{};
  e.kind = static_cast<int64_t>(ErrorKind::Restart);
  fail(e);
}

/// The JIT (python/capi/ScanJIT.cpp) starts compiling an optimized tier
/// (and has set when it is due in the program's entry slots) ...
MLIR_SCAN_RUNTIME_EXPORT void __mlir_scan_upgrade_begins() {
  upgradesPending.fetch_add(1, std::memory_order_release);
}

/// ... and is done with it (installed or failed).
MLIR_SCAN_RUNTIME_EXPORT void __mlir_scan_upgrade_ends() {
  upgradesPending.fetch_sub(1, std::memory_order_release);
}

/// A failed scan or builder check (emitScanErrorIf, the builder's checks).
MLIR_SCAN_RUNTIME_EXPORT [[noreturn]] void
__mlir_scan_fail(int64_t code, int64_t item, int64_t have, int64_t need) {
  CallError e{};
  e.code = code;
  e.item = item;
  e.have = have;
  e.need = need;
  e.kind = static_cast<int64_t>(
      code == static_cast<int64_t>(ScanErrorCode::BuilderIndexError)
          ? ErrorKind::Index
          : ErrorKind::Value);
  formatScanCheck(e);
  fail(e);
}

/// A buffer whose shape (`rank` sizes at `sizes`, elements of `elementBytes`
/// bytes) has a negative size or more bytes than `limit` (2**63 - 1 for the
/// heap: a byte count that does not fit in 63 bits; less for the stack)
/// (scan-check-allocations).
MLIR_SCAN_RUNTIME_EXPORT [[noreturn]] void
__mlir_scan_fail_alloc(int64_t elementBytes, int64_t rank, const int64_t *sizes,
                       int64_t limit) {
  CallError e{};
  e.code = static_cast<int64_t>(ScanErrorCode::BadAllocation);
  e.item = elementBytes;
  e.need = limit;
  bool negative = false, empty = false;
  char shape[640] = "";
  size_t used = 0;
  for (int64_t d = 0; d < rank; ++d) {
    negative |= sizes[d] < 0;
    empty |= sizes[d] == 0;
    if (used < sizeof(shape))
      used += std::snprintf(shape + used, sizeof(shape) - used,
                            d ? ", %" PRId64 : "%" PRId64, sizes[d]);
  }
  e.kind = static_cast<int64_t>(negative || empty ? ErrorKind::Value
                                                  : ErrorKind::Memory);
  if (negative)
    format(e, "cannot allocate a buffer of shape (%s): negative size", shape);
  else if (empty)
    // (NumPy's "array is too big" for np.empty of such a shape)
    format(e,
           "cannot allocate a buffer of shape (%s) of %" PRId64
           "-byte elements: it holds no element, but its sizes other than "
           "0 times the element size exceed 2**63 bytes, which no NumPy "
           "array can have",
           shape, elementBytes);
  else if (limit == INT64_MAX)
    format(e,
           "cannot allocate a buffer of shape (%s) of %" PRId64
           "-byte elements: its size does not fit in memory (more than "
           "2**63 bytes)",
           shape, elementBytes);
  else
    format(e,
           "cannot allocate a buffer of shape (%s) of %" PRId64
           "-byte elements on the stack: more than %" PRId64
           " bytes (memref.alloca; use memref.alloc)",
           shape, elementBytes, limit);
  fail(e);
}

/// A failed `cf.assert` (run-time verification of raw IR): `message` is the
/// assertion's text, which names the op's location.
MLIR_SCAN_RUNTIME_EXPORT [[noreturn]] void
__mlir_scan_fail_message(const char *message) {
  CallError e{};
  e.code = static_cast<int64_t>(ScanErrorCode::VerificationFailed);
  e.kind = static_cast<int64_t>(ErrorKind::Value);
  format(e, "%s", message);
  fail(e);
}

/// The run-time helper that `memref.copy` of non-contiguous memrefs lowers
/// to (`memrefCopy`, normally from libmlir_c_runner_utils.so, which links
/// libMLIR.so and must not be loaded next to the Python bindings).
struct ScanUnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

static void copyStrided(int64_t elemSize, int64_t rank, const int64_t *sizes,
                        const int64_t *srcStrides, const int64_t *dstStrides,
                        const char *src, char *dst) {
  if (rank == 0) {
    std::memcpy(dst, src, elemSize);
    return;
  }
  if (rank == 1 && srcStrides[0] == 1 && dstStrides[0] == 1) {
    std::memcpy(dst, src, sizes[0] * elemSize);
    return;
  }
  for (int64_t i = 0; i < sizes[0]; ++i)
    copyStrided(elemSize, rank - 1, sizes + 1, srcStrides + 1, dstStrides + 1,
                src + i * srcStrides[0] * elemSize,
                dst + i * dstStrides[0] * elemSize);
}

MLIR_SCAN_RUNTIME_EXPORT void mlirScanMemrefCopy(int64_t elemSize,
                                                 ScanUnrankedMemRef *src,
                                                 ScanUnrankedMemRef *dst) {
  // Descriptor: allocated, aligned, offset, sizes[rank], strides[rank].
  auto fields = [](ScanUnrankedMemRef *m, char *&aligned, int64_t *&sizes,
                   int64_t *&strides) {
    auto *words = static_cast<int64_t *>(m->descriptor);
    aligned = reinterpret_cast<char *>(words[1]);
    int64_t offset = words[2];
    sizes = words + 3;
    strides = words + 3 + m->rank;
    return offset;
  };
  char *srcData, *dstData;
  int64_t *sizes, *srcStrides, *dstSizes, *dstStrides;
  int64_t srcOffset = fields(src, srcData, sizes, srcStrides);
  int64_t dstOffset = fields(dst, dstData, dstSizes, dstStrides);
  for (int64_t d = 0; d < src->rank; ++d)
    if (sizes[d] == 0)
      return;
  copyStrided(elemSize, src->rank, sizes, srcStrides, dstStrides,
              srcData + srcOffset * elemSize, dstData + dstOffset * elemSize);
}

} // extern "C"
