//===- ScanAllocator.cpp - the allocator of compiled scan programs --------===//
//
// Compiled programs allocate their output and scratch buffers with `malloc`
// and free them with `free`. glibc serves large blocks with fresh `mmap`s (or
// trims the heap after they are freed), so every call of a program with
// megabyte-sized buffers pays a page fault per 4 KiB page touched: a fifth
// of the time of an RNN step loop. `mlir_scan.compile` binds the programs'
// `malloc` and `free` to the two functions here instead, which keep freed
// large blocks, with their pages, for the next call (what XLA's and
// PyTorch's caching allocators do). The cache is bounded; beyond the bound
// blocks go back to the system.
//
//===----------------------------------------------------------------------===//

#include "mlir-c/Support.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

namespace {

/// Blocks smaller than this are plain malloc blocks: glibc's heap reuses them
/// without page faults.
constexpr size_t kCachedMinimum = 128 * 1024;
/// At most this many bytes of freed blocks are kept.
constexpr size_t kCacheLimit = size_t(512) << 20;
/// A cached block serves a request at most this much smaller (1/4), so that
/// a small request does not pin a huge block.
constexpr size_t kWasteDivisor = 4;

/// Precedes every block: its usable size. 16 bytes keep malloc's alignment.
struct alignas(16) Header {
  size_t size;
};

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
    auto *header = static_cast<Header *>(std::malloc(sizeof(Header) + size));
    if (!header)
      return nullptr;
    header->size = size;
    return header + 1;
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
    std::free(header);
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

} // namespace

extern "C" {

/// `malloc` for compiled programs (and the buffers they return).
MLIR_CAPI_EXPORTED void *mlirScanAlloc(size_t size) {
  return cache().allocate(size);
}

/// `free` for blocks from mlirScanAlloc (the buffers programs return are
/// freed here when the last NumPy array using them dies).
MLIR_CAPI_EXPORTED void mlirScanFree(void *pointer) { cache().release(pointer); }

} // extern "C"
