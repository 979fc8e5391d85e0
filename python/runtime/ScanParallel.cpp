//===- ScanParallel.cpp - one loop's iterations on every core -------------===//
//
// `scan-parallelize-linalg` outlines a large linalg op into a function that
// computes the iterations [lo, hi) of one parallel dimension, and calls
// `__mlir_scan_parallel_for` with it. This file runs those calls: the
// iterations are split into one part per core, the calling thread runs the
// first part and the pool's workers the others, and the call returns when
// all parts are done.
//
// Why not MLIR's async runtime: a scan calls the same op once per step, every
// few tens of microseconds. The async runtime wakes a sleeping worker through
// a condition variable for every task (tens of microseconds on these VMs) and
// allocates a coroutine frame per task. Here a worker that finished a part
// spins for a while before it sleeps, so the next step's part reaches it in
// well under a microsecond; a worker that has slept is woken as usual.
//
// The parts are pure array computations (the outlined ops have no calls and
// do not allocate), so nothing here interacts with call frames or failures.
// One parallel loop runs on the pool at a time; a thread that finds the pool
// busy (another program's call, on another Python thread) runs its loop
// itself, so concurrent calls never wait for each other.
//
// MLIR_SCAN_NUM_THREADS sets the number of threads (the calling thread
// included); 1 turns the pool off. The default is the number of cores this
// process may run on. A child process made by fork() runs its loops on one
// thread.
//
//===----------------------------------------------------------------------===//

#include "ScanRuntime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <vector>

namespace {

using ChunkFn = void (*)(void *context, int64_t lo, int64_t hi);

/// Below this much work (iteration points of the op) a loop is not split:
/// waking a worker and waiting for it would cost more than it saves.
constexpr int64_t kMinWorkPerPart = int64_t(1) << 17;
/// Parts start at multiples of this many iterations (whole vectors, and
/// output elements of different parts in different cache lines).
constexpr int64_t kAlign = 16;
/// How many loops run on one thread after the pool found the cores busy
/// (doubled while they stay busy, up to the maximum).
constexpr int kBackoffLoops = 64;
constexpr int kMaxBackoffLoops = 4096;
/// How long a worker spins for the next part before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

int configuredThreads() {
  if (const char *text = std::getenv("MLIR_SCAN_NUM_THREADS")) {
    int n = std::atoi(text);
    if (n >= 1)
      return std::min(n, 256);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

/// A loop's parts are claimed through one atomic word, the ticket: the
/// loop's generation, its number of parts and the next unclaimed part.
/// Claiming is a compare-and-swap on the whole word, so a worker that wakes
/// late can only claim parts of the loop being run now, whose description
/// (fn, context, bounds) stays unchanged until every part is done.
struct Ticket {
  static uint64_t pack(uint64_t generation, uint64_t parts, uint64_t next) {
    return generation << 32 | parts << 16 | next;
  }
  static uint64_t parts(uint64_t t) { return t >> 16 & 0xffff; }
  static uint64_t next(uint64_t t) { return t & 0xffff; }
  static uint64_t generation(uint64_t t) { return t >> 32; }
};

class Pool {
public:
  explicit Pool(int threads) : threads(threads) {
    for (int w = 1; w < threads; ++w)
      workers.emplace_back([this] { work(); });
  }
  // Never destroyed (see instance()): workers may be parked at exit.

  /// Runs fn on [lo, hi) in `parts` parts (1 < parts <= 65535); false when
  /// the pool is busy with another loop.
  bool run(ChunkFn fn, void *context, int64_t lo, int64_t hi, int parts) {
    std::unique_lock<std::mutex> owner(busy, std::try_to_lock);
    if (!owner.owns_lock())
      return false;
    // Every part of the previous loop is done (pending reached 0), and its
    // ticket is exhausted: no worker reads these fields now.
    this->fn = fn;
    this->context = context;
    this->lo = lo;
    this->hi = hi;
    this->parts = parts;
    pending.store(parts, std::memory_order_relaxed);
    uint64_t generation = Ticket::generation(ticket.load()) + 1;
    {
      // Published under the mutex: a worker about to sleep either sees the
      // new ticket or is woken by the notify below.
      std::lock_guard<std::mutex> lock(sleep);
      ticket.store(Ticket::pack(generation, parts, 0), std::memory_order_release);
    }
    wake.notify_all();
    // This thread claims parts too: with busy workers it may run them all.
    auto start = std::chrono::steady_clock::now();
    while (claimAndRun()) {
    }
    auto done = std::chrono::steady_clock::now();
    // A worker that claimed a part may have been descheduled (more threads
    // than free cores): after a short spin, give it this core.
    for (int spins = 0; pending.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < 64)
        relax();
      else
        std::this_thread::yield();
    }
    // Waiting for the workers more than half as long as working oneself
    // (they should finish together), three loops in a row, means the cores
    // are busy with other work: the next loops run on one thread. The first
    // loop after that probes again; if it is late too, the next wait is
    // twice as long (a probe costs up to a scheduler time slice).
    bool late = 2 * (std::chrono::steady_clock::now() - done) > done - start;
    if (late) {
      if (probing || ++strikes >= 3) {
        strikes = 0;
        probing = true;
        backoff.store(backoffLength, std::memory_order_relaxed);
        backoffLength = std::min(2 * backoffLength, kMaxBackoffLoops);
      }
    } else {
      strikes = 0;
      if (probing) {
        probing = false;
        backoffLength = kBackoffLoops;
      }
    }
    return true;
  }

private:
  /// Claims the next part of the current loop and runs it; false when
  /// every part has been claimed.
  bool claimAndRun() {
    uint64_t t = ticket.load(std::memory_order_acquire);
    while (Ticket::next(t) < Ticket::parts(t)) {
      if (ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        runPart(int(Ticket::next(t)));
        pending.fetch_sub(1, std::memory_order_release);
        return true;
      }
    }
    return false;
  }

  void runPart(int part) {
    int64_t n = hi - lo;
    // Equal parts, rounded to whole kAlign blocks.
    int64_t blocks = (n + kAlign - 1) / kAlign;
    int64_t begin = lo + std::min(n, blocks * part / parts * kAlign);
    int64_t end = lo + std::min(n, blocks * (part + 1) / parts * kAlign);
    if (begin < end)
      fn(context, begin, end);
  }

  void work() {
    for (;;) {
      if (claimAndRun())
        continue;
      // Nothing to claim: spin for the next loop, then sleep until it comes.
      uint64_t seen = ticket.load(std::memory_order_acquire);
      auto until = std::chrono::steady_clock::now() + kSpin;
      bool changed = false;
      while (!(changed = ticket.load(std::memory_order_acquire) != seen) &&
             std::chrono::steady_clock::now() < until)
        for (int i = 0; i < 64; ++i)
          relax();
      if (!changed) {
        std::unique_lock<std::mutex> lock(sleep);
        wake.wait(lock, [&] {
          return ticket.load(std::memory_order_acquire) != seen;
        });
      }
    }
  }

  const int threads;
  std::vector<std::thread> workers;
  std::mutex busy;
  std::mutex sleep;
  std::condition_variable wake;
  std::atomic<uint64_t> ticket{0};
  std::atomic<int> pending{0};
  // Guarded by `busy`: the lateness of the last loops and the backoff.
  int strikes = 0;
  bool probing = false;
  int backoffLength = kBackoffLoops;

public:
  /// Loops left to run on their caller's thread (the cores were busy).
  std::atomic<int> backoff{0};

private:
  // The loop being run (written before its ticket is published).
  ChunkFn fn = nullptr;
  void *context = nullptr;
  int64_t lo = 0, hi = 0;
  int parts = 0;
};

int threadCount() {
  static const int count = configuredThreads();
  return count;
}

/// Set in a child process made by fork(): it has none of the pool's threads
/// (and its mutexes may have been copied locked), so it runs every loop on
/// the calling thread.
std::atomic<bool> forked{false};

void markForked() { forked.store(true, std::memory_order_relaxed); }

Pool &instance() {
  // Started at the first parallel loop, never destroyed: a worker must not
  // be joined while the interpreter exits with programs still loaded.
  static Pool *pool = [] {
    pthread_atfork(nullptr, nullptr, markForked);
    return new Pool(threadCount());
  }();
  return *pool;
}

} // namespace

extern "C" {

/// Runs `fn(context, a, b)` over consecutive ranges [a, b) covering [lo, hi),
/// on every core when `work` (the op's iteration points) is large enough,
/// else on this thread in one call.
MLIR_SCAN_RUNTIME_EXPORT void __mlir_scan_parallel_for(int64_t lo, int64_t hi,
                                                       int64_t work, ChunkFn fn,
                                                       void *context) {
  if (hi <= lo)
    return;
  int64_t parts = std::min<int64_t>(threadCount(), work / kMinWorkPerPart);
  parts = std::min({parts, (hi - lo + kAlign - 1) / kAlign, int64_t(0xffff)});
  if (parts > 1 && !forked.load(std::memory_order_relaxed)) {
    Pool &pool = instance();
    int backoff = pool.backoff.load(std::memory_order_relaxed);
    if (backoff > 0)
      pool.backoff.store(backoff - 1, std::memory_order_relaxed);
    else if (pool.run(fn, context, lo, hi, int(parts)))
      return;
  }
  fn(context, lo, hi);
}

/// The number of threads parallel loops use (MLIR_SCAN_NUM_THREADS).
MLIR_SCAN_RUNTIME_EXPORT int64_t mlirScanNumThreads() { return threadCount(); }

} // extern "C"
