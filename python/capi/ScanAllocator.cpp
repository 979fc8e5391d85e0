//===- ScanAllocator.cpp - the allocator of compiled scan programs --------===//
//
// Compiled programs allocate their output and scratch buffers with `malloc`
// (or `calloc`, which LLVM makes of a malloc and a zero fill) and free them
// with `free`. glibc serves large blocks with fresh `mmap`s (or
// trims the heap after they are freed), so every call of a program with
// megabyte-sized buffers pays a page fault per 4 KiB page touched: a fifth
// of the time of an RNN step loop. `mlir_scan.compile` binds the programs'
// `malloc` and `free` to the two functions here instead, which keep freed
// large blocks, with their pages, for the next call (what XLA's and
// PyTorch's caching allocators do), and back blocks of a megabyte or more
// with transparent huge pages. The cache is bounded; beyond the bound blocks
// go back to the system.
//
//===----------------------------------------------------------------------===//

#include "mlir-c/Support.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include <sys/mman.h>

namespace {

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

/// Precedes every block (64 bytes, so blocks in huge mappings stay aligned
/// to a cache line): its usable size and, for mapped blocks, the mapping.
struct Header {
  size_t size;
  void *mapping;
  size_t mappingLength;
  size_t padding[5];
};
static_assert(sizeof(Header) == 64, "blocks start a cache line after the header");

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

Header *newBlock(size_t size) {
  if (size > SIZE_MAX / 2) // a negative size computed by the program
    return nullptr;
  if (size < kHugeMinimum) {
    auto *header = static_cast<Header *>(std::malloc(sizeof(Header) + size));
    if (header)
      *header = Header{size, nullptr, 0, {}};
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
  *header = Header{size, mapping, length, {}};
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

/// `calloc` for compiled programs: LLVM turns a `malloc` followed by a
/// zero fill into a `calloc` call, which must come from this allocator too.
MLIR_CAPI_EXPORTED void *mlirScanCalloc(size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / 2 / size)
    return nullptr;
  void *pointer = cache().allocate(count * size);
  if (pointer)
    std::memset(pointer, 0, count * size); // cached blocks are not clean
  return pointer;
}

/// `free` for blocks from mlirScanAlloc (the buffers programs return are
/// freed here when the last NumPy array using them dies).
MLIR_CAPI_EXPORTED void mlirScanFree(void *pointer) { cache().release(pointer); }

} // extern "C"
