//===- ScanCAPI.cpp - C entry points the Python package loads -------------===//
//
// A tiny C API over the dialect and passes. Python calls it through ctypes
// with the MlirDialectRegistry it takes from `_CAPIPtr` capsules, so this
// library links libMLIRPythonCAPI.so (the MLIR copy of the Python bindings)
// and no nanobind at all.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanDialect.h"

#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"

#include <cstdint>
#include <cstring>

extern "C" {

/// Inserts the Scan dialect into `registry`.
MLIR_CAPI_EXPORTED void mlirScanRegisterDialect(MlirDialectRegistry registry) {
  unwrap(registry)->insert<mlir::scan::ScanDialect>();
}

/// Registers the scan passes and pipelines in the global pass registry, so
/// that `PassManager.parse` finds them by name. Idempotent.
MLIR_CAPI_EXPORTED void mlirScanRegisterPasses() {
  static bool registered = [] {
    mlir::scan::registerScanPassesAndPipelines();
    return true;
  }();
  (void)registered;
}

/// Rewrites the `arith.xori` / `arith.cmpi` ops on dynamically shaped tensors
/// whose upstream folders abort into linalg.generic ops (the guard the scan
/// passes run first); for pipelines that fold before any scan pass runs.
MLIR_CAPI_EXPORTED void mlirScanGenericizeFoldHazards(MlirModule module) {
  mlir::scan::genericizeFoldHazards(unwrap(module));
}

/// The run-time helper that `memref.copy` of non-contiguous memrefs lowers to
/// (`memrefCopy`, normally from libmlir_c_runner_utils.so, which links
/// libMLIR.so and must not be loaded next to the Python bindings). The
/// Python runtime registers it with every ExecutionEngine.
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

MLIR_CAPI_EXPORTED void mlirScanMemrefCopy(int64_t elemSize,
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
