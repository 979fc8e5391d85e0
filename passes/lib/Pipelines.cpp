//===- Pipelines.cpp - Scan pass registration and pipelines ---------------===//
//
// Pipelines are spelled as pass-pipeline text: the same string a user can
// paste into `scan-opt --pass-pipeline=...` to reproduce one stage.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace mlir;

namespace {

/// Tensor-level scf loops -> in-place buffers (SPEC §3, measured recipe),
/// before deallocation.
constexpr llvm::StringLiteral kBufferizeInPlace =
    // The builder's checks, which the scan rewrites understand, become
    // branches and calls once the rewrites are done.
    "scan-lower-checks,"
    "func.func(convert-elementwise-to-linalg),"
    "canonicalize,cse,"
    // After CSE, which would merge the destinations this makes private.
    "func.func(scan-fresh-elementwise-inits),"
    "eliminate-empty-tensors,"
    "empty-tensor-to-alloc-tensor,"
    // After the last canonicalization that could fold a dim's index.
    "func.func(scan-guard-dim-indices),"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    // Before canonicalize: the casts to the identity layout it inserts at
    // calls and returns are the views to copy.
    "scan-contiguous-call-boundaries,"
    // One canonicalize leaves `memref.copy %a, %a` self-copies behind.
    "canonicalize,cse,canonicalize,"
    "scan-own-public-results";

constexpr llvm::StringLiteral kDeallocate =
    // A temporary a step needs (the matvec of a gradient step whose result
    // is added to a row updated in place) is allocated once, before the
    // loop, when its size does not change from step to step.
    "func.func(buffer-loop-hoisting),"
    "buffer-deallocation-pipeline,"
    // A buffer of dynamic ownership (an `until` output's grown buffer) is
    // returned through `bufferization.clone` on its never-taken unowned path.
    "convert-bufferization-to-memref";

/// CPU only: the GPU lowering orders device deallocations itself.
constexpr llvm::StringLiteral kFreeEarly = "func.func(scan-free-buffers-early)";

/// Buffers -> LLVM dialect; `{blas}` is replaced by the BLAS calls of large
/// products, `{vectorize}` by the vector inner loops pass, `{parallel}` by
/// the splitting of large ops across cores, `{vector-math}` by the libmvec
/// calls of vector math ops, or each by nothing.
constexpr llvm::StringLiteral kToLLVM =
    "scan-check-lowerable,"
    "scan-check-allocations,"
    // Before the loop order is chosen: the products BLAS takes keep their
    // named or generic form (and stay generated loops for small sizes).
    "{blas}"
    "func.func(scan-order-linalg-loops),"
    // After the loop order is chosen (the split dimension is the outermost
    // parallel one), before the ops become loops.
    "{parallel}"
    "func.func({vectorize}convert-linalg-to-loops),"
    "expand-strided-metadata,lower-affine,"
    "scan-lower-asserts,"
    // The conversions below run without rollback bookkeeping, which was most
    // of their time on large modules (the LSTM step: scf-to-cf 335 -> 70 ms,
    // to-llvm 302 -> 218 ms). The benchmark programs lower to the same
    // modules but for the order of two constants (W5) and one memref
    // descriptor rebuilt (W6).
    "convert-scf-to-cf{allow-pattern-rollback=0},"
    // libm's tanh is a call per element; the expansions vectorize.
    // convert-math-to-llvm's log1p/expm1 cancel for small arguments.
    // Vector pow/exp/log through libmvec (`{vector-math}`), not as a libm
    // call per element; before the log1p/expm1 expansions, whose accuracy
    // needs libm's log and exp.
    "func.func(scan-expand-tanh),"
    "{vector-math}"
    "func.func(scan-expand-log1p-expm1),"
    "convert-math-to-llvm,"
    // What LLVM has no intrinsic for (asinh, erf, cbrt, ...): libm calls.
    "convert-math-to-libm,"
    "scan-lower-i1-access,"
    // LLVM 22.1 lowers loads and stores with `nuw` address arithmetic,
    // poison for a reversed view (the gradient's backward reads).
    "scan-lower-signed-stride-access,"
    // Allocations go through the run-time library (python/runtime/), which
    // never hands a program a null block.
    "finalize-memref-to-llvm{use-generic-functions},"
    "convert-to-llvm{allow-pattern-rollback=0},"
    "reconcile-unrealized-casts,"
    "scan-lower-parallel-calls,"
    // Folds the descriptors' insertvalue/extractvalue chains (for the quick
    // tier's -O0 code and LLVM's time). Not the CFG: LLVM simplifies it, and
    // block merging was half of this pass's time, for the same output on
    // the benchmark programs compared (W1, W5, W6, W8, W9). Bottom-up: the
    // same output on those programs, in about three quarters of the time
    // (the LSTM step's gradient: 82-92 -> 68-82 ms).
    "canonicalize{region-simplify=disabled top-down=false}";

void buildPipeline(OpPassManager &pm, llvm::ArrayRef<llvm::StringRef> parts) {
  std::string text;
  for (llvm::StringRef part : parts) {
    if (!text.empty())
      text += ",";
    text += part.str();
  }
  if (failed(parsePassPipeline(text, pm, llvm::errs())))
    llvm::report_fatal_error("mlir-scan: invalid built-in pipeline");
}

struct BufferizeOptions : PassPipelineOptions<BufferizeOptions> {
  Option<bool> freeEarly{
      *this, "free-early",
      llvm::cl::desc("Free each buffer after its last use "
                     "(scan-free-buffers-early); off frees at the end of "
                     "the block, as MLIR's deallocation pipeline does"),
      llvm::cl::init(true)};
};

/// The options of the lowering to the LLVM dialect, shared by the pipeline
/// that does only that and the whole CPU pipeline.
template <typename Derived>
struct LoweringOptionsBase : PassPipelineOptions<Derived> {
  using Base = PassPipelineOptions<Derived>;
  typename Base::template Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Write vector inner loops for linalg ops "
                     "(scan-vectorize-linalg-loops); off leaves "
                     "vectorization to LLVM"),
      llvm::cl::init(true)};
  typename Base::template Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the iterations of large linalg ops on every core "
                     "(scan-parallelize-linalg)"),
      llvm::cl::init(true)};
  typename Base::template Option<bool> splitReductions{
      *this, "split-reductions",
      llvm::cl::desc("Split a large h^T W along its reduction (whole rows of "
                     "W per core) rather than along its columns "
                     "(scan-parallelize-linalg's split-reductions)"),
      llvm::cl::init(true)};
  typename Base::template Option<bool> blas{
      *this, "blas",
      llvm::cl::desc("Run large f32/f64 matrix products through the run-time "
                     "library's BLAS (scan-call-blas)"),
      llvm::cl::init(true)};
  typename Base::template Option<std::string> vectorMath{
      *this, "vector-math",
      llvm::cl::desc("Compute vector math ops with glibc's libmvec "
                     "(scan-call-vector-math): avx2, or none (the process "
                     "running the code must have loaded libmvec)"),
      llvm::cl::init("none")};
  typename Base::template ListOption<std::string> vectorMathFunctions{
      *this, "vector-math-functions",
      llvm::cl::desc("The libmvec functions scan-call-vector-math may call "
                     "(empty: all it knows)")};
};

struct LoweringOptions : LoweringOptionsBase<LoweringOptions> {};

struct WholeLoweringOptions : LoweringOptionsBase<WholeLoweringOptions> {
  Option<bool> checks{
      *this, "checks",
      llvm::cl::desc("Verify the program's ops at run time "
                     "(scan-runtime-verification): a mismatched dynamic size "
                     "or an out-of-bounds index fails the call"),
      llvm::cl::init(true)};
};

template <typename Derived>
std::string toLLVM(const LoweringOptionsBase<Derived> &options) {
  std::string text = kToLLVM.str();
  auto fill = [&](llvm::StringRef key, llvm::StringRef value) {
    size_t at = text.find(key.str());
    text.replace(at, key.size(), value.str());
  };
  fill("{blas}", options.blas ? "scan-call-blas," : "");
  fill("{vectorize}", options.vectorize ? "scan-vectorize-linalg-loops," : "");
  fill("{parallel}", !options.parallel ? ""
                     : options.splitReductions
                         ? "scan-parallelize-linalg,"
                         : "scan-parallelize-linalg{split-reductions=0},");
  std::string vectorMath;
  if (options.vectorMath != "none") {
    vectorMath = "scan-call-vector-math{isa=" + options.vectorMath;
    if (!options.vectorMathFunctions.empty())
      vectorMath +=
          " functions=" + llvm::join(options.vectorMathFunctions, ",");
    vectorMath += "},";
  }
  fill("{vector-math}", vectorMath);
  return text;
}

/// Device memory is managed per public function (scan-gpu-device-memory
/// copies arguments in and results out at its boundary), so a call between
/// the module's functions would copy buffers between host and device: the
/// callees are inlined first (private ones then disappear). Calls that stay
/// (external functions, recursion) get host copies of their buffers.
constexpr llvm::StringLiteral kInlineForGpu = "inline";

/// Tensor-level scf loops -> device-ready buffers: as for the CPU, with the
/// allocations that loops make in every step (a nested scan's buffers)
/// hoisted out of them where their sizes allow, so that the loops can run
/// in one kernel and never allocate device memory per step. Always followed
/// by kDeallocate, whose buffer-loop-hoisting takes out what
/// scan-gpu-loop-allocations made hoistable.
constexpr llvm::StringLiteral kBufferizeForGpu =
    "func.func(buffer-loop-hoisting,scan-gpu-loop-allocations)";

/// Bufferized functions -> device memory and kernels (gpu.launch).
constexpr llvm::StringLiteral kFormKernels =
    "scan-check-lowerable,"
    "scan-gpu-device-memory,"
    "func.func(convert-linalg-to-parallel-loops,scf-parallel-loop-fusion),"
    "scan-gpu-form-kernels{mode={mode} block-size={block-size} "
    "kernel-limit={kernel-limit}},"
    "scan-gpu-map-kernels";

/// Kernels -> one stream of GPU operations, kernels outlined.
constexpr llvm::StringLiteral kLaunchKernels =
    "scan-gpu-async,"
    "gpu-kernel-outlining,"
    "scan-gpu-kernel-bounds";

/// Outlined kernels -> NVVM -> PTX (gpu.binary), host -> LLVM dialect.
constexpr llvm::StringLiteral kToNVVM =
    // Also here: scan-gpu-to-nvvm may be given IR that did not come through
    // scan-gpu-kernels.
    "scan-check-lowerable,"
    // The host's asserts (scan-save-mem's bounds checks) fail through the
    // run-time library, as its other checks do, not by aborting.
    "scan-lower-asserts,"
    "convert-scf-to-cf,"
    "expand-strided-metadata,lower-affine,"
    // The PTX version the chip needs (the default PTX 6.0 makes LLVM abort
    // on sm_90 and newer): see ptxVersionFor.
    "nvvm-attach-target{chip={chip} features=+ptx{ptx} O=3},"
    "scan-lower-i1-access,"
    "scan-lower-signed-stride-access,"
    "gpu.module(convert-gpu-to-nvvm,canonicalize,cse,"
    "reconcile-unrealized-casts),"
    "func.func(scan-expand-tanh,scan-expand-log1p-expm1),"
    "convert-math-to-llvm,"
    "gpu-to-llvm,"
    "convert-to-llvm,"
    "reconcile-unrealized-casts,"
    "gpu-module-to-binary{format={format}},"
    "canonicalize";

struct GpuOptions : PassPipelineOptions<GpuOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("GPU architecture (sm_80, sm_90)"),
                           llvm::cl::init("sm_80")};
  Option<std::string> mode{
      *this, "mode",
      llvm::cl::desc("auto, host (time loop on the host, a kernel per "
                     "parallel op per step) or kernel (a time loop in one "
                     "kernel): see scan-gpu-form-kernels"),
      llvm::cl::init("auto")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Device code in the gpu.binary: isa (PTX text), bin "
                     "(cubin, needs ptxas) or fatbin"),
      llvm::cl::init("isa")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per block of grid kernels"),
                            llvm::cl::init(128)};
  Option<int64_t> kernelLimit{
      *this, "kernel-limit",
      llvm::cl::desc("mode=auto: widest parallel loop of a time loop run as "
                     "one kernel"),
      llvm::cl::init(1024)};
};

/// `text` with each `{name}` replaced.
std::string substitute(llvm::StringRef text,
                       llvm::ArrayRef<std::pair<llvm::StringRef, std::string>>
                           values) {
  std::string result = text.str();
  for (auto [name, value] : values) {
    std::string key = "{" + name.str() + "}";
    for (size_t at = result.find(key); at != std::string::npos;
         at = result.find(key, at + value.size()))
      result.replace(at, key.size(), value);
  }
  return result;
}

/// The GPU architectures both LLVM 22's NVPTX back end and CUDA 13's ptxas
/// know, with the PTX ISA version each needs (LLVM aborts, "PTX version 8.0
/// does not support target", when the version is too old for the chip; a
/// name LLVM does not know gives PTX that ptxas rejects).
constexpr std::pair<llvm::StringLiteral, llvm::StringLiteral> kChips[] = {
    {"sm_75", "80"},   {"sm_80", "80"},   {"sm_86", "80"},
    {"sm_87", "80"},   {"sm_89", "80"},   {"sm_90", "80"},
    {"sm_90a", "80"},  {"sm_100", "86"},  {"sm_100a", "86"},
    {"sm_100f", "88"}, {"sm_103", "88"},  {"sm_103a", "88"},
    {"sm_103f", "88"}, {"sm_110", "90"},  {"sm_110a", "90"},
    {"sm_110f", "90"}, {"sm_120", "87"},  {"sm_120a", "87"},
    {"sm_120f", "88"}, {"sm_121", "88"},  {"sm_121a", "88"},
    {"sm_121f", "88"},
};

/// The PTX version (`80` for PTX 8.0) that `chip` needs, or "" if it is not
/// a supported architecture.
llvm::StringRef ptxVersionFor(llvm::StringRef chip) {
  for (auto [name, ptx] : kChips)
    if (name == chip)
      return ptx;
  return "";
}

/// Options are pasted into pipeline text: refuse what would change its
/// meaning. Returns the error, or an empty string.
std::string checkGpuOptions(const GpuOptions &options) {
  if (ptxVersionFor(options.chip).empty()) {
    std::string known;
    for (auto [name, ptx] : kChips)
      known += (known.empty() ? "" : ", ") + name.str();
    return "scan-to-nvvm: chip must be one of the NVIDIA architectures " +
           known + ", not '" + options.chip + "'";
  }
  if (options.mode != "auto" && options.mode != "host" &&
      options.mode != "kernel")
    return "scan-to-nvvm: mode must be auto, host or kernel, not '" +
           options.mode + "'";
  if (options.format != "isa" && options.format != "bin" &&
      options.format != "fatbin")
    return "scan-to-nvvm: format must be isa, bin or fatbin, not '" +
           options.format + "'";
  if (options.blockSize < 1 || options.blockSize > 1024)
    return "scan-to-nvvm: block-size must be in [1, 1024]";
  if (options.kernelLimit < 0)
    return "scan-to-nvvm: kernel-limit must not be negative";
  return "";
}

/// Registers a pipeline built from GpuOptions whose options are checked
/// (a bad value is a reported error, never an abort).
void registerGpuPipeline(
    llvm::StringRef name, llvm::StringRef description,
    std::function<std::vector<std::string>(const GpuOptions &)> parts) {
  registerPassPipeline(
      name, description,
      [parts](OpPassManager &pm, llvm::StringRef text,
              llvm::function_ref<LogicalResult(const llvm::Twine &)> error)
          -> LogicalResult {
        GpuOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (std::string message = checkGpuOptions(options); !message.empty())
          return error(message);
        std::vector<std::string> pieces = parts(options);
        buildPipeline(pm, llvm::SmallVector<llvm::StringRef>(pieces.begin(),
                                                             pieces.end()));
        return success();
      },
      [](llvm::function_ref<void(const detail::PassOptions &)> handler) {
        handler(GpuOptions());
      });
}

/// `text` with the options' values in place of their `{name}`s.
std::string withOptions(llvm::StringRef text, const GpuOptions &options) {
  return substitute(text,
                    {{"chip", options.chip},
                     {"ptx", ptxVersionFor(options.chip).str()},
                     {"mode", options.mode},
                     {"format", options.format},
                     {"block-size", std::to_string(options.blockSize)},
                     {"kernel-limit", std::to_string(options.kernelLimit)}});
}

} // namespace

void mlir::scan::registerScanPassesAndPipelines() {
  registerScanPasses();

  PassPipelineRegistration<>(
      "scan-bufferize",
      "Lower scans to scf and bufferize in place (convert-scan-to-scf, "
      "one-shot-bufferize, buffer deallocation)",
      [](OpPassManager &pm) {
        buildPipeline(pm, {"convert-scan-to-scf", kBufferizeInPlace,
                           kDeallocate, kFreeEarly});
      });
  // The two halves of the lowering after convert-scan-to-scf, by name, so
  // that `mlir_scan.compile` can stop between them (Program.ir stages).
  PassPipelineRegistration<BufferizeOptions>(
      "scan-bufferize-loops",
      "Bufferize the tensor scf loops convert-scan-to-scf leaves, in place "
      "(the second half of scan-bufferize; option free-early)",
      [](OpPassManager &pm, const BufferizeOptions &options) {
        SmallVector<StringRef> parts{kBufferizeInPlace, kDeallocate};
        if (options.freeEarly)
          parts.push_back(kFreeEarly);
        buildPipeline(pm, parts);
      });
  PassPipelineRegistration<LoweringOptions>(
      "scan-buffers-to-llvm",
      "Lower the bufferized loops to the LLVM dialect: loop order, vector "
      "inner loops, then the upstream conversions",
      [](OpPassManager &pm, const LoweringOptions &options) {
        buildPipeline(pm, {toLLVM(options)});
      });
  PassPipelineRegistration<WholeLoweringOptions>(
      "scan-to-llvm",
      "The whole CPU pipeline: scan-optimize, run-time verification, scans "
      "to scf, in-place bufferization, LLVM dialect (run the result with the "
      "JIT or mlir-runner, with libMLIRScanRuntime.so)",
      [](OpPassManager &pm, const WholeLoweringOptions &options) {
        SmallVector<StringRef> parts{"scan-optimize"};
        if (options.checks)
          parts.push_back("scan-runtime-verification");
        std::string lower = toLLVM(options);
        parts.append({"convert-scan-to-scf", kBufferizeInPlace, kDeallocate,
                      kFreeEarly, lower});
        buildPipeline(pm, parts);
      });
  // The GPU lowering in two stages, so that `mlir_scan.compile(...,
  // target="cuda")` can show the kernels before NVVM.
  PassPipelineRegistration<>(
      "scan-gpu-bufferize-loops",
      "Bufferize the tensor scf loops for the GPU: the module's calls "
      "inlined, then as scan-bufferize-loops with per-step allocations kept "
      "out of loops (scan-gpu-loop-allocations, buffer-loop-hoisting)",
      [](OpPassManager &pm) {
        buildPipeline(pm, {kInlineForGpu, kBufferizeInPlace, kBufferizeForGpu,
                           kDeallocate});
      });
  registerGpuPipeline(
      "scan-gpu-kernels",
      "Put the buffers of bufferized functions in device memory and their "
      "work in kernels (gpu.launch, host or single-kernel mode; options "
      "mode, block-size, kernel-limit)",
      [](const GpuOptions &options) -> std::vector<std::string> {
        return {withOptions(kFormKernels, options)};
      });
  registerGpuPipeline(
      "scan-buffers-to-gpu",
      "scan-gpu-kernels, then one asynchronous stream for the host's GPU "
      "operations and the kernels outlined into gpu.module ops",
      [](const GpuOptions &options) -> std::vector<std::string> {
        return {withOptions(kFormKernels, options), kLaunchKernels.str()};
      });
  registerGpuPipeline(
      "scan-gpu-to-nvvm",
      "Lower outlined kernels to NVVM and PTX (a gpu.binary) and the host "
      "code to the LLVM dialect calling the GPU runtime (options chip, "
      "format)",
      [](const GpuOptions &options) -> std::vector<std::string> {
        return {withOptions(kToNVVM, options)};
      });
  registerGpuPipeline(
      "scan-to-nvvm",
      "The whole GPU pipeline: scan-optimize, scans to scf, bufferization, "
      "device memory, kernels (host or single-kernel mode), NVVM and PTX "
      "(options chip, mode, format, block-size, kernel-limit)",
      [](const GpuOptions &options) -> std::vector<std::string> {
        return {"scan-optimize",
                // One loop of steps: the kernel-forming passes expect it
                // (blocks of steps are a CPU memory matter for now).
                "convert-scan-to-scf{private-nonsequences=0 block-steps=0}",
                "canonicalize",
                "cse",
                kInlineForGpu.str(),
                kBufferizeInPlace.str(),
                kBufferizeForGpu.str(),
                kDeallocate.str(),
                withOptions(kFormKernels, options),
                kLaunchKernels.str(),
                withOptions(kToNVVM, options)};
      });
}
