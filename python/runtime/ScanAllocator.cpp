//===- ScanAllocator.cpp - the allocator of compiled scan programs --------===//
//
// Compiled programs allocate their output and scratch buffers through
// MLIR's generic allocation functions (`_mlir_memref_to_llvm_alloc` and
// `_mlir_memref_to_llvm_free`, from `finalize-memref-to-llvm
// {use-generic-functions}`), which are defined here; `mlir_scan.compile`
// also binds the programs' `malloc`, `calloc` and `free` to this allocator.
//
// Caching: glibc serves large blocks with fresh `mmap`s (or trims the heap
// after they are freed), so every call of a program with megabyte-sized
// buffers pays a page fault per 4 KiB page touched: a fifth of the time of an
// RNN step loop. This allocator keeps freed large blocks, with their pages,
// for the next call (what XLA's and PyTorch's caching allocators do), and
// backs blocks of a megabyte or more with transparent huge pages. The cache
// is bounded; beyond the bound blocks go back to the system.
//
// Failure: an allocation that cannot be served never returns null to a
// program. It fails the call (ScanRuntime.h): `MemoryError` in Python, and
// every block the call allocated and had not freed is freed. For that, each
// block made during a call is on the call frame's list until it is freed or
// the call returns (then it belongs to the caller: the program's results).
//
//===----------------------------------------------------------------------===//

#include "ScanRuntime.h"

#include "Scan/ErrorCodes.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include <sys/mman.h>

using namespace mlir_scan_runtime;

namespace mlir_scan_runtime {

/// Precedes every block (64 bytes, so blocks in huge mappings stay aligned
/// to a cache line): its usable size, for mapped blocks the mapping, and
/// while the call that allocated it runs, its place on that call's list.
struct BlockHeader {
  size_t size;
  void *mapping;
  size_t mappingLength;
  CallFrame *owner;
  BlockHeader *previous;
  BlockHeader *next;
  size_t padding[2];
};
static_assert(sizeof(BlockHeader) == 64,
              "blocks start a cache line after the header");

} // namespace mlir_scan_runtime

namespace {

using Header = BlockHeader;

/// Blocks smaller than this are plain malloc blocks: glibc's heap reuses them
/// without page faults.
constexpr size_t kCachedMinimum = 128 * 1024;
/// Blocks at least this large get their own 2 MiB-aligned mapping backed by
/// transparent huge pages: a matrix read every step (`W` of an RNN) in 4 KiB
/// pages lands on physical pages that crowd some L2 sets, which made the
/// same step 1.5x slower in one process than in the next.
constexpr size_t kHugeMinimum = size_t(1) << 20;
constexpr size_t kHugePage = size_t(2) << 20;
/// At most this many bytes of freed blocks are kept.
constexpr size_t kCacheLimit = size_t(512) << 20;
/// A cached block serves a request at most this much smaller (1/4), so that
/// a small request does not pin a huge block.
constexpr size_t kWasteDivisor = 4;

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

Header *newBlock(size_t size) {
  if (size > SIZE_MAX / 2) // a negative size computed by the program
    return nullptr;
  if (size < kHugeMinimum) {
    auto *header = static_cast<Header *>(std::malloc(sizeof(Header) + size));
    if (header)
      *header = Header{size, nullptr, 0, nullptr, nullptr, nullptr, {}};
    return header;
  }
  size_t used = roundUp(sizeof(Header) + size, kHugePage);
  size_t length = used + kHugePage; // slack to align the start
  void *mapping = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED)
    return nullptr;
  auto start = reinterpret_cast<uintptr_t>(mapping);
  auto *header = reinterpret_cast<Header *>(roundUp(start, kHugePage));
  (void)madvise(header, used, MADV_HUGEPAGE); // a hint; fine if refused
  *header = Header{size, mapping, length, nullptr, nullptr, nullptr, {}};
  return header;
}

void deleteBlock(Header *header) {
  if (header->mapping)
    munmap(header->mapping, header->mappingLength);
  else
    std::free(header);
}

class BlockCache {
public:
  void *allocate(size_t size) {
    if (size >= kCachedMinimum) {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = free.lower_bound(size);
      if (it != free.end() && it->first - size <= size / kWasteDivisor) {
        Header *header = it->second;
        cached -= it->first;
        free.erase(it);
        return header + 1;
      }
    }
    Header *header = newBlock(size);
    return header ? header + 1 : nullptr;
  }

  void release(void *pointer) {
    if (!pointer)
      return;
    Header *header = static_cast<Header *>(pointer) - 1;
    size_t size = header->size;
    if (size >= kCachedMinimum) {
      std::lock_guard<std::mutex> lock(mutex);
      if (cached + size <= kCacheLimit) {
        free.emplace(size, header);
        cached += size;
        return;
      }
    }
    deleteBlock(header);
  }

  /// Gives every cached block back to the system; returns the bytes freed.
  size_t releaseAll() {
    std::lock_guard<std::mutex> lock(mutex);
    size_t released = cached;
    for (auto &[size, header] : free)
      deleteBlock(header);
    free.clear();
    cached = 0;
    return released;
  }

private:
  std::mutex mutex;
  std::multimap<size_t, Header *> free;
  size_t cached = 0;
};

BlockCache &cache() {
  // Never destroyed: arrays may free their buffers during interpreter exit.
  static BlockCache *instance = new BlockCache();
  return *instance;
}

void track(Header *header, CallFrame *frame) {
  header->owner = frame;
  header->previous = nullptr;
  header->next = frame->blocks;
  if (frame->blocks)
    frame->blocks->previous = header;
  frame->blocks = header;
}

void untrack(Header *header) {
  CallFrame *frame = header->owner;
  if (!frame)
    return;
  if (header->previous)
    header->previous->next = header->next;
  else
    frame->blocks = header->next;
  if (header->next)
    header->next->previous = header->previous;
  header->owner = nullptr;
}

/// A block of `size` bytes for a program; a failure ends the call.
void *allocateOrFail(size_t size) {
  void *pointer = cache().allocate(size);
  if (!pointer) {
    CallError e{};
    e.kind = static_cast<int64_t>(ErrorKind::Memory);
    e.code = static_cast<int64_t>(mlir::scan::ScanErrorCode::OutOfMemory);
    e.have = static_cast<int64_t>(size);
    std::snprintf(e.message, sizeof(e.message),
                  "out of memory: cannot allocate %zu bytes", size);
    fail(e);
  }
  if (CallFrame *frame = currentFrame())
    track(static_cast<Header *>(pointer) - 1, frame);
  return pointer;
}

void release(void *pointer) {
  if (!pointer)
    return;
  untrack(static_cast<Header *>(pointer) - 1);
  cache().release(pointer);
}

} // namespace

void mlir_scan_runtime::releaseFrameBlocks(CallFrame &frame) {
  while (Header *header = frame.blocks) {
    untrack(header);
    cache().release(header + 1);
  }
}

void mlir_scan_runtime::detachFrameBlocks(CallFrame &frame) {
  for (Header *header = frame.blocks; header;) {
    Header *next = header->next;
    header->owner = nullptr;
    header->previous = header->next = nullptr;
    header = next;
  }
  frame.blocks = nullptr;
}

extern "C" {

/// `malloc` for compiled programs (and the buffers they return).
MLIR_SCAN_RUNTIME_EXPORT void *mlirScanAlloc(size_t size) {
  return allocateOrFail(size);
}

/// `calloc` for compiled programs: LLVM turns a `malloc` followed by a
/// zero fill into a `calloc` call, which must come from this allocator too.
MLIR_SCAN_RUNTIME_EXPORT void *mlirScanCalloc(size_t count, size_t size) {
  size_t bytes = SIZE_MAX;
  if (size == 0 || count <= SIZE_MAX / 2 / size)
    bytes = count * size;
  void *pointer = allocateOrFail(bytes);
  std::memset(pointer, 0, bytes); // cached blocks are not clean
  return pointer;
}

/// `free` for blocks from mlirScanAlloc (the buffers programs return are
/// freed here when the last NumPy array using them dies).
MLIR_SCAN_RUNTIME_EXPORT void mlirScanFree(void *pointer) { release(pointer); }

/// Frees the blocks the cache keeps for later calls (memory the process
/// holds but no program uses); returns their bytes.
MLIR_SCAN_RUNTIME_EXPORT size_t mlirScanReleaseCachedMemory() {
  return cache().releaseAll();
}

/// MLIR's generic allocation functions (finalize-memref-to-llvm
/// {use-generic-functions}), for the JIT and for mlir-runner alike.
MLIR_SCAN_RUNTIME_EXPORT void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocateOrFail(size);
}

MLIR_SCAN_RUNTIME_EXPORT void _mlir_memref_to_llvm_free(void *pointer) {
  release(pointer);
}

} // extern "C"
