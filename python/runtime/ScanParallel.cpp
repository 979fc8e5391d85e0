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
// itself, so concurrent calls never wait for each other. When other
// processes keep the cores busy, a split loop waits for a worker the
// scheduler runs a time slice at a time, so the loops run on the calling
// thread for a while (SplitJudge).
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
/// The parts of __mlir_scan_parallel_for start at multiples of this many
/// iterations (whole vectors, and output elements of different parts in
/// different cache lines).
constexpr int64_t kAlign = 16;
/// How much of the calling thread's work SplitJudge judges at a time:
/// longer than a scheduler time slice (about 3 ms with one more busy thread
/// than cores), so that a window beside a busy process sees a worker lose
/// its core.
constexpr auto kJudgedWork = std::chrono::milliseconds(4);
/// How many loops run on one thread after the cores were found busy
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

/// Decides from the loops' timings whether splitting pays, or the cores are
/// busy with other work and the next loops should run on one thread.
///
/// Each loop reports how long the calling thread worked on its own parts,
/// how long it then waited for the workers' parts (they should finish
/// together), and how many parts the workers ran. The workers did not pay
/// when, over the last kJudgedWork of work, the caller waited longer than
/// it worked (its part and its wait took longer than one thread takes for
/// two parts), or the workers ran fewer than half of the parts meant for
/// them (the caller ran them: the workers had no core). A worker that is
/// merely slower than the caller still pays: W9's loops, whose workers
/// took 1.5-1.8x the caller's time in some windows, ran at one thread's
/// speed for seconds when a wait of half the work made a backoff.
/// Then the next loops run on one thread; the loops after those probe
/// again. Each busy window doubles the next backoff and each free one
/// halves it: beside a process that keeps the other core busy, a probe
/// costs up to a time slice for each part a descheduled worker holds, and
/// one probe that happens to find the core free must not bring the shortest
/// backoff back.
///
/// Judged over windows, not loop by loop: a worker is late now and then on
/// a VM (an interrupt, its wake-up after a backoff, a `nice 19` process
/// taking the core for a tick), and a split that pays over the window still
/// pays. Judging each loop (three late loops in a row made a backoff, and
/// each late probe doubled it), the probe that had to wake the worker was
/// late, and W5 at H = 1024 ran at one thread's speed for good beside a
/// `nice 19` busy loop (docs/performance.md, "Eighth round").
class SplitJudge {
public:
  using Duration = std::chrono::steady_clock::duration;

  /// Records one split loop; returns how many of the next loops should run
  /// on one thread (0: keep splitting).
  int record(Duration worked, Duration waited, int helped, int expected) {
    windowWorked += worked;
    windowWaited += waited;
    windowHelped += helped;
    windowExpected += expected;
    if (windowWorked < kJudgedWork)
      return 0;
    bool busyCores =
        windowWaited > windowWorked || 2 * windowHelped < windowExpected;
    windowWorked = windowWaited = Duration::zero();
    windowHelped = windowExpected = 0;
    if (!busyCores) {
      backoffLength = std::max(backoffLength / 2, kBackoffLoops);
      return 0;
    }
    int loops = backoffLength;
    backoffLength = std::min(2 * backoffLength, kMaxBackoffLoops);
    return loops;
  }

private:
  Duration windowWorked{}, windowWaited{};
  int64_t windowHelped = 0, windowExpected = 0;
  int backoffLength = kBackoffLoops;
};

class Pool {
public:
  explicit Pool(int threads) : threads(threads) {
    for (int w = 1; w < threads; ++w)
      workers.emplace_back([this] { work(); });
  }
  // Never destroyed (see instance()): workers may be parked at exit.

  /// Runs fn on [lo, hi) in `parts` parts that start at multiples of
  /// `grain` iterations (1 < parts <= 65535); false when the pool is busy
  /// with another loop.
  bool run(ChunkFn fn, void *context, int64_t lo, int64_t hi, int64_t grain,
           int parts) {
    std::unique_lock<std::mutex> owner(busy, std::try_to_lock);
    if (!owner.owns_lock())
      return false;
    // Every part of the previous loop is done (pending reached 0), and its
    // ticket is exhausted: no worker reads these fields now.
    this->fn = fn;
    this->context = context;
    this->lo = lo;
    this->hi = hi;
    this->grain = grain;
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
    int ranHere = 0;
    while (claimAndRun())
      ++ranHere;
    auto done = std::chrono::steady_clock::now();
    // A worker that claimed a part may have been descheduled (more threads
    // than free cores): after a short spin, give it this core.
    for (int spins = 0; pending.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < 64)
        relax();
      else
        std::this_thread::yield();
    }
    if (int loops = judge.record(done - start,
                                 std::chrono::steady_clock::now() - done,
                                 parts - ranHere, parts - 1))
      backoff.store(loops, std::memory_order_relaxed);
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
    // Equal parts, rounded to whole grains.
    int64_t blocks = (n + grain - 1) / grain;
    int64_t begin = lo + std::min(n, blocks * part / parts * grain);
    int64_t end = lo + std::min(n, blocks * (part + 1) / parts * grain);
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
  /// Whether the loops' splitting pays (guarded by `busy`).
  SplitJudge judge;

public:
  /// Loops left to run on their caller's thread (the cores were busy).
  std::atomic<int> backoff{0};

private:
  // The loop being run (written before its ticket is published).
  ChunkFn fn = nullptr;
  void *context = nullptr;
  int64_t lo = 0, hi = 0, grain = 1;
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

/// Runs `fn(context, a, b)` over consecutive ranges [a, b) covering [lo, hi)
/// that start at multiples of `grain`, on every core when `work` is large
/// enough, else on this thread in one call.
void parallelFor(int64_t lo, int64_t hi, int64_t grain, int64_t work,
                 ChunkFn fn, void *context) {
  if (hi <= lo)
    return;
  int64_t parts = std::min<int64_t>(threadCount(), work / kMinWorkPerPart);
  parts = std::min({parts, (hi - lo + grain - 1) / grain, int64_t(0xffff)});
  if (parts > 1 && !forked.load(std::memory_order_relaxed)) {
    Pool &pool = instance();
    int backoff = pool.backoff.load(std::memory_order_relaxed);
    if (backoff > 0)
      pool.backoff.store(backoff - 1, std::memory_order_relaxed);
    else if (pool.run(fn, context, lo, hi, grain, int(parts)))
      return;
  }
  fn(context, lo, hi);
}

} // namespace

extern "C" {

/// Runs `fn(context, a, b)` over consecutive ranges [a, b) covering [lo, hi),
/// on every core when `work` (the op's iteration points) is large enough,
/// else on this thread in one call. The ranges start at multiples of 16.
MLIR_SCAN_RUNTIME_EXPORT void __mlir_scan_parallel_for(int64_t lo, int64_t hi,
                                                       int64_t work, ChunkFn fn,
                                                       void *context) {
  parallelFor(lo, hi, kAlign, work, fn, context);
}

/// As __mlir_scan_parallel_for, for [lo, hi) a range of parts, each a
/// whole unit of work (scan-parallelize-linalg's reduction splits): the
/// ranges are of whole parts, however few.
MLIR_SCAN_RUNTIME_EXPORT void __mlir_scan_parallel_parts(int64_t lo, int64_t hi,
                                                         int64_t work,
                                                         ChunkFn fn,
                                                         void *context) {
  parallelFor(lo, hi, 1, work, fn, context);
}

/// Feeds `count` loops to a new SplitJudge (tests): loop i worked
/// `workedNs[i]` and waited `waitedNs[i]` nanoseconds, and its workers ran
/// `helped[i]` of `expected[i]` parts; `backoffs[i]` receives how many loops
/// the judge then runs on one thread.
MLIR_SCAN_RUNTIME_EXPORT void
mlirScanTestSplitJudge(int64_t count, const int64_t *workedNs,
                       const int64_t *waitedNs, const int32_t *helped,
                       const int32_t *expected, int32_t *backoffs) {
  SplitJudge judge;
  for (int64_t i = 0; i < count; ++i)
    backoffs[i] = judge.record(std::chrono::nanoseconds(workedNs[i]),
                               std::chrono::nanoseconds(waitedNs[i]),
                               helped[i], expected[i]);
}

/// The number of threads parallel loops use (MLIR_SCAN_NUM_THREADS).
MLIR_SCAN_RUNTIME_EXPORT int64_t mlirScanNumThreads() { return threadCount(); }

} // extern "C"
