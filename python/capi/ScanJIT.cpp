//===- ScanJIT.cpp - The JIT of compiled programs, on every core ----------===//
//
// mlir::ExecutionEngine optimizes and generates code for the whole module on
// one thread, and that was most of a program's compile time (W6, the RNN
// gradient: 0.35 s of LLVM against 0.15 s of MLIR passes). This JIT splits
// the LLVM module into parts of about equal cost, keeping each function with
// the internal functions only it calls (which LLVM inlines), optimizes and
// generates code for the parts on as many threads, and links the objects in
// one ORC JIT. A small module stays in one part, on the calling thread.
//
// The objects can also be saved to files and linked again in another
// process (the compile cache of mlir_scan/runtime.py: mlirScanJitLoad).
//
// Tiers. Code generation at -O3 was most of a first call (W6: 0.28 s of
// 0.5 s; the LSTM tutorial's step, 2.3 s), and LLVM at -O0 takes a sixth of
// that for code that runs about 3x slower. A large module is therefore
// compiled twice: at -O0 (the quick tier), so that calls can start soon,
// then at the requested level. The quick tier compiles the chunk functions
// that scan-parallelize-linalg marks hot, those of large static products,
// at the requested level too, on a second thread: at -O0 they were most of
// a first call.
//
// Both tiers are compiled on the program's background thread, the quick one
// first: the caller only translates the module to LLVM IR and goes on (to
// build and compile its next function). Calls go through entry slots
// (Scan/EntrySlot.h, mlirScanJitEntry): a slot holds kEntryPending until
// the quick code is linked (ScanRuntime.cpp's mlirScanInvokeSlot sleeps
// until __mlir_scan_entries_ready), then the quick code's address, then the
// optimized code's. A call running in the quick code when the optimized
// code arrives is restarted in it (ScanRuntime.h: the upgrade poll):
// compiled functions do not write their arguments, so a restart from the
// beginning gives the same results.
//
// Optimized tiers compile one at a time (each on every core): a program
// that compiles many functions in a row keeps a core for its next compile,
// and the optimized compile of a program destroyed before its turn never
// runs. An optimized compile also waits while the process compiles and
// until the first call after that returns, for up to half its expected time
// of the process idle or running the program's own calls, after up to four
// times that time of compiles and other programs' calls
// (UpgradeNotices::deferToForeground): what a user waits for first gets the
// cores.
//
// Calls go through the same packed wrappers as mlir::ExecutionEngine's:
// `_mlir_<g>(void **args)` for each external function `g`, args[i] pointing
// at argument i and the last slot at the result.
//
//===----------------------------------------------------------------------===//

#include "Scan/EntrySlot.h"
#include "Scan/Passes.h"
#include "Scan/RuntimeChecks.h"

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/SmallVectorMemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace llvm;

namespace {

/// A part has at least this many instructions (before optimization, when
/// one costs LLVM about 50 µs): below, a thread, the copy of the module and
/// a target machine of its own cost more than they save. On two cores, W6's
/// 4,700 instructions in two parts take 0.23 s instead of 0.39 s, W1's 550
/// 26 ms instead of 35 ms.
constexpr size_t kMinPartSize = 200;

/// A module with at least this many instructions is compiled in two tiers
/// (the header). LLVM's -O3 costs about 0.1 ms more per instruction than -O0
/// on loop code (W3, the polynomial: 497 instructions, 60 ms more; W1, 564,
/// 40-65 ms), and below about 250 the saving is within what a first call at
/// -O0 speed can lose again (W2's 80 and W4's 87 gain nothing).
constexpr size_t kMinTieredSize = 250;

/// A quick tier's hot chunk functions (splitHot) go through LLVM's -O1
/// pipeline and its default code generation (-O2), at most. They come
/// vectorized from MLIR (scan-vectorize-linalg-loops), and -O1 keeps their
/// speed: the hand-written W5-f64-H1024's first call on the quick code took
/// 0.061-0.075 s either way, and its quick tier was ready 21-26 ms after
/// `compile` returned instead of 32-39 ms (three processes each,
/// interleaved; the hot function alone: 22 against 27 ms in `opt` and `llc`).
/// The optimized tier compiles them again at the requested level.
constexpr int kHotOptLevel = 1;
constexpr int kHotCodeGenLevel = 2;

/// An optimized compile waits for the process's compiles and first call
/// (UpgradeNotices::deferToForeground) while they come within this much of
/// each other ...
constexpr auto kFirstCallGrace = std::chrono::milliseconds(20);
/// ... and for at most this fraction of its own expected time. (A first
/// call shorter than that runs alone; a longer one, which restarts in the
/// optimized code anyway, gets it that much later: the hand-written W5's
/// first calls, in medians of three against JAX's, went from 1.21 to 0.66
/// at H = 512, where the quick call takes about 60 ms, and from 1.27 to
/// 1.55 at H = 1024, where it outlasts the compile. A shorter bound, 25 ms,
/// lost the first and did not win the second back.)
constexpr int64_t kDeferDivisor = 2;
/// When the quick tier has hot functions (splitHot), its first call runs at
/// nearly the optimized code's speed, and the optimized compile would only
/// take a core from it: the compile then waits until that call returns, for
/// at most this multiple of its expected time. (The hand-written W5 at
/// H = 1024, f64: first calls of 0.10-0.16 s with the bound above, 0.07-0.11 s
/// with this one, six processes each, interleaved.) The bound keeps a call
/// that is long for other reasons from holding the optimized code back
/// without end.
constexpr int64_t kHotDeferFactor = 4;
/// While the process compiles or runs other programs' calls, an optimized
/// compile waits for up to this multiple of its expected time before its
/// bound starts to count (UpgradeNotices::deferToForeground).
constexpr int64_t kOthersDeferFactor = 4;
/// How often a held-back optimized compile looks at what the process is
/// doing. Every 100 us, its wake-ups took a core from the first call's
/// parallel loops often enough for the thread pool to fall back to one
/// thread (ScanParallel.cpp's lateness test): the hand-written W5's first
/// call at H = 1024 took 0.138 s against 0.083 s with 2 ms (medians of six
/// processes, interleaved). Starting the compile 2 ms late costs little
/// against the compile itself.
constexpr auto kForegroundPoll = std::chrono::milliseconds(2);

/// The process's one slot for compiling an optimized tier: optimized tiers
/// compile one at a time, in parts on every core (the header).
class OptimizerSlot {
public:
  /// Waits for the slot; false, without it, once `cancelled` is set (the
  /// program was destroyed, or the process exits: mlirScanJitCancel).
  bool acquire(const std::atomic<bool> &cancelled) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return !busy || cancelled; });
    if (cancelled)
      return false;
    busy = true;
    return true;
  }

  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      busy = false;
    }
    changed.notify_all();
  }

  /// Wakes the waiters to look at their `cancelled` flags.
  void wake() {
    std::lock_guard<std::mutex> lock(mutex);
    changed.notify_all();
  }

  /// The process's slot: never destroyed, as a background thread may still
  /// wait on it while the process exits.
  static OptimizerSlot &get() {
    static OptimizerSlot *slot = new OptimizerSlot();
    return *slot;
  }

private:
  std::mutex mutex;
  std::condition_variable changed;
  bool busy = false;
};

/// For tests (mlirScanJitTestQuickCompiles): holds the quick tiers of the
/// programs created meanwhile back before LLVM compiles them, or makes them
/// fail, so that calls waiting for their code and a quick tier LLVM could
/// not compile can be exercised.
class QuickCompileTestHook {
public:
  enum Mode : int { Run = 0, Hold = 1, Fail = 2 };

  /// The mode for a program created now.
  int current() {
    std::lock_guard<std::mutex> lock(mutex);
    return mode;
  }

  /// Waits for the hold to end; the mode it ended in.
  int awaitRelease() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return mode != Hold; });
    return mode;
  }

  void set(int newMode) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      mode = newMode;
    }
    changed.notify_all();
  }

  /// Never destroyed, as OptimizerSlot.
  static QuickCompileTestHook &get() {
    static QuickCompileTestHook *hook = new QuickCompileTestHook();
    return *hook;
  }

private:
  std::mutex mutex;
  std::condition_variable changed;
  int mode = Run;
};

/// Gives each function `g` defined with external linkage a wrapper
/// `_mlir_<g>(void **args)` that loads the arguments from `args[i]` and stores
/// the result through the last slot.
void addPackedWrappers(Module &module) {
  IRBuilder<> b(module.getContext());
  SmallVector<Function *> defined;
  for (Function &f : module)
    if (!f.isDeclaration() && !f.hasLocalLinkage())
      defined.push_back(&f);
  for (Function *f : defined) {
    auto *wrapper = Function::Create(
        FunctionType::get(b.getVoidTy(), b.getPtrTy(), /*isVarArg=*/false),
        GlobalValue::ExternalLinkage, "_mlir_" + f->getName(), module);
    b.SetInsertPoint(BasicBlock::Create(module.getContext(), "", wrapper));
    Argument *slots = wrapper->getArg(0);
    auto slot = [&](unsigned i) {
      return b.CreateLoad(b.getPtrTy(),
                          b.CreateConstGEP1_64(b.getPtrTy(), slots, i));
    };
    SmallVector<Value *> args;
    for (Argument &arg : f->args())
      args.push_back(b.CreateLoad(arg.getType(), slot(arg.getArgNo())));
    CallInst *call = b.CreateCall(f, args);
    if (!call->getType()->isVoidTy())
      b.CreateStore(call, slot(f->arg_size()));
    b.CreateRetVoid();
  }
}

/// The functions whose instructions use `value` (through constant
/// expressions too); false if something else uses it (a global's
/// initializer), which pins it to no part.
bool collectUsers(const Value *value, SmallPtrSetImpl<const Function *> &users) {
  for (const User *user : value->users()) {
    if (auto *inst = dyn_cast<Instruction>(user))
      users.insert(inst->getFunction());
    else if (isa<ConstantExpr>(user)) {
      if (!collectUsers(user, users))
        return false;
    } else {
      return false;
    }
  }
  return true;
}

/// The function that makes every use of `f`, each a direct call (the
/// packed wrapper of `f`, or the one caller of an internal function, which
/// LLVM inlines); null if there is none (an address taken: the parallel
/// entries of scan-lower-parallel-calls).
const Function *onlyCaller(const Function &f) {
  const Function *caller = nullptr;
  for (const Use &use : f.uses()) {
    auto *call = dyn_cast<CallBase>(use.getUser());
    if (!call || !call->isCallee(&use) ||
        (caller && caller != call->getFunction()))
      return nullptr;
    caller = call->getFunction();
  }
  return caller;
}

/// The run-time library's failure entry points end the call (a longjmp to
/// its frame, python/runtime/ScanRuntime.h): telling LLVM so lets it drop
/// the join after every failed check and move the failure paths out of
/// line. A step with a hundred run-time checks compiled a fifth faster into
/// code 40% smaller.
void markFailuresNoReturn(Module &module) {
  for (StringRef name : {mlir::scan::kScanFailFunc, mlir::scan::kScanFailAllocFunc,
                         mlir::scan::kScanFailMessageFunc})
    if (Function *f = module.getFunction(name)) {
      f->addFnAttr(Attribute::NoReturn);
      f->addFnAttr(Attribute::Cold);
      f->addFnAttr(Attribute::NoUnwind);
    }
}

/// Fuses every `fadd`/`fsub` allowed to contract with an `fmul` allowed to
/// contract, used only there, into `llvm.fma`, then takes away the
/// `contract` and `reassoc` flags (but on reductions, which keep `reassoc`).
/// Code generation at -O2/-O3 fused such pairs itself and at -O0 did not,
/// so the quick tier's results differed from the optimized tier's in the
/// last bits; with the choices made here, every level computes the same
/// operations and the same bits.
void makeContractionExplicit(Module &module) {
  auto contracts = [](Value *value) {
    auto *op = dyn_cast<FPMathOperator>(value);
    return op && op->hasAllowContract();
  };
  auto fusable = [&](Value *value, BasicBlock *block) -> BinaryOperator * {
    auto *mul = dyn_cast<BinaryOperator>(value);
    if (!mul || mul->getOpcode() != Instruction::FMul || !mul->hasOneUse() ||
        mul->getParent() != block || !contracts(mul))
      return nullptr;
    return mul;
  };
  SmallVector<Instruction *> dead;
  for (Function &f : module)
    for (BasicBlock &block : f)
      for (Instruction &inst : block) {
        auto *add = dyn_cast<BinaryOperator>(&inst);
        if (!add || !contracts(add) || (add->getOpcode() != Instruction::FAdd &&
                                        add->getOpcode() != Instruction::FSub))
          continue;
        bool sub = add->getOpcode() == Instruction::FSub;
        IRBuilder<> b(add);
        b.setFastMathFlags(add->getFastMathFlags());
        Value *fused = nullptr;
        BinaryOperator *mul = nullptr;
        if ((mul = fusable(add->getOperand(0), &block))) {
          // a*b + c, a*b - c
          Value *c = add->getOperand(1);
          fused = b.CreateIntrinsic(Intrinsic::fma, {add->getType()},
                                    {mul->getOperand(0), mul->getOperand(1),
                                     sub ? b.CreateFNeg(c) : c});
        } else if ((mul = fusable(add->getOperand(1), &block))) {
          // c + a*b, c - a*b
          Value *a = mul->getOperand(0);
          fused = b.CreateIntrinsic(Intrinsic::fma, {add->getType()},
                                    {sub ? b.CreateFNeg(a) : a,
                                     mul->getOperand(1), add->getOperand(0)});
        }
        if (!fused)
          continue;
        add->replaceAllUsesWith(fused);
        dead.push_back(add);
        dead.push_back(mul);
      }
  for (Instruction *inst : dead)
    inst->eraseFromParent();
  for (Function &f : module)
    for (BasicBlock &block : f)
      for (Instruction &inst : block) {
        if (!isa<FPMathOperator>(&inst))
          continue;
        inst.setHasAllowContract(false);
        auto *call = dyn_cast<IntrinsicInst>(&inst);
        if (!call || call->getIntrinsicID() != Intrinsic::vector_reduce_fadd)
          inst.setHasAllowReassoc(false);
      }
}

/// An estimate of the time LLVM takes to optimize and compile `f`: its
/// instructions, a vector instruction counting as kVectorCost (instruction
/// selection and scheduling of the jammed vector loops that
/// scan-vectorize-linalg-loops writes took 4-5 times longer per instruction
/// than the scalar control flow of a step, in profiles of the RNN gradient).
size_t compileCost(const Function &f) {
  constexpr size_t kVectorCost = 5;
  size_t cost = 0;
  for (const BasicBlock &block : f)
    for (const Instruction &inst : block)
      cost += inst.getType()->isVectorTy() ? kVectorCost : 1;
  return cost;
}

/// The defined functions of `module`, and which go together in one part: an
/// internal function used by one function only goes with it (LLVM inlines
/// it there), the packed wrapper with what it wraps.
struct Clusters {
  SmallVector<const Function *> defined;
  EquivalenceClasses<const Function *> together;

  explicit Clusters(const Module &module) {
    for (const Function &f : module) {
      if (f.isDeclaration())
        continue;
      defined.push_back(&f);
      together.insert(&f);
    }
    for (const Function *f : defined)
      if (const Function *caller = onlyCaller(*f))
        together.unionSets(f, caller);
  }

  const Function *leader(const Function *f) const {
    return together.getLeaderValue(f);
  }
};

using Part = SmallPtrSet<const Function *, 16>;

/// The non-empty ones of `parts`. If there are several, what one uses from
/// another gets external (hidden) linkage, so that they link: mutable
/// globals have one definition (in part 0); constants are copied
/// (extractPart).
std::vector<Part> linkableParts(Module &module, std::vector<Part> parts) {
  llvm::erase_if(parts, [](const Part &part) { return part.empty(); });
  if (parts.size() < 2)
    return parts;
  DenseMap<const Function *, unsigned> partOf;
  for (auto [i, part] : llvm::enumerate(parts))
    for (const Function *f : part)
      partOf[f] = i;
  for (Function &f : module) {
    if (f.isDeclaration() || !f.hasLocalLinkage())
      continue;
    SmallPtrSet<const Function *, 4> users;
    bool pinned = !collectUsers(&f, users);
    if (pinned || llvm::any_of(users, [&](const Function *user) {
          return partOf.lookup(user) != partOf.lookup(&f);
        })) {
      f.setLinkage(GlobalValue::ExternalLinkage);
      f.setVisibility(GlobalValue::HiddenVisibility);
    }
  }
  for (GlobalVariable &g : module.globals())
    if (!g.isDeclaration() && !g.isConstant() && g.hasLocalLinkage()) {
      g.setLinkage(GlobalValue::ExternalLinkage);
      g.setVisibility(GlobalValue::HiddenVisibility);
    }
  return parts;
}

/// Assigns the defined functions of `module` to at most `parts` parts of
/// about equal cost, whole clusters at a time.
std::vector<Part> partition(Module &module, unsigned parts) {
  Clusters clusters(module);
  // Clusters, costliest first, each to the part of the lowest cost so far.
  DenseMap<const Function *, size_t> clusterSize;
  for (const Function *f : clusters.defined)
    clusterSize[clusters.leader(f)] += compileCost(*f);
  SmallVector<std::pair<size_t, const Function *>> bySize;
  for (auto [leader, size] : clusterSize)
    bySize.push_back({size, leader});
  llvm::sort(bySize, [](auto a, auto b) {
    return a.first != b.first ? a.first > b.first
                              : a.second->getName() < b.second->getName();
  });
  std::vector<Part> result(parts);
  std::vector<size_t> load(parts, 0);
  for (auto [size, leader] : bySize) {
    size_t p = std::min_element(load.begin(), load.end()) - load.begin();
    load[p] += size;
    for (const Function *f : clusters.defined)
      if (clusters.leader(f) == leader)
        result[p].insert(f);
  }
  return linkableParts(module, std::move(result));
}

/// The quick tier's parts: the rest, then the hot chunk functions
/// (scan-parallelize-linalg's kHotChunkAttr) with their clusters (the entry
/// the thread pool calls them through); one part if there are none.
std::vector<Part> splitHot(Module &module) {
  Clusters clusters(module);
  SmallPtrSet<const Function *, 4> hotLeaders;
  for (const Function *f : clusters.defined)
    if (f->hasFnAttribute(mlir::scan::kHotChunkAttr))
      hotLeaders.insert(clusters.leader(f));
  std::vector<Part> result(2);
  for (const Function *f : clusters.defined)
    result[hotLeaders.contains(clusters.leader(f))].insert(f);
  return linkableParts(module, std::move(result));
}

/// A copy of `module` with the definitions of `part` (and of every constant
/// global), in a context of its own, so that threads can work on it.
Expected<std::unique_ptr<Module>>
extractPart(const Module &module, const SmallPtrSetImpl<const Function *> &part,
            bool firstPart, LLVMContext &context) {
  ValueToValueMapTy map;
  std::unique_ptr<Module> copy =
      CloneModule(module, map, [&](const GlobalValue *value) {
        if (auto *f = dyn_cast<Function>(value))
          return part.contains(f);
        if (auto *g = dyn_cast<GlobalVariable>(value))
          return (g->isConstant() && g->hasLocalLinkage()) || firstPart;
        return firstPart;
      });
  SmallVector<char, 0> bitcode;
  raw_svector_ostream stream(bitcode);
  WriteBitcodeToFile(*copy, stream);
  return parseBitcodeFile(MemoryBufferRef(StringRef(bitcode.data(), bitcode.size()),
                                          module.getName()),
                          context);
}

/// LLVM's default pipeline at `optLevel`, then code generation: the object.
Expected<std::unique_ptr<MemoryBuffer>>
compilePart(Module &module, orc::JITTargetMachineBuilder builder,
            unsigned optLevel) {
  auto machine = builder.createTargetMachine();
  if (!machine)
    return machine.takeError();
  module.setDataLayout((*machine)->createDataLayout());
  module.setTargetTriple((*machine)->getTargetTriple());
  if (optLevel > 0) {
    PipelineTuningOptions tuning;
    tuning.LoopUnrolling = true;
    tuning.LoopInterleaving = true;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    LoopAnalysisManager loops;
    FunctionAnalysisManager functions;
    CGSCCAnalysisManager sccs;
    ModuleAnalysisManager modules;
    PassBuilder passes(machine->get(), tuning);
    passes.registerModuleAnalyses(modules);
    passes.registerCGSCCAnalyses(sccs);
    passes.registerFunctionAnalyses(functions);
    passes.registerLoopAnalyses(loops);
    passes.crossRegisterProxies(loops, functions, sccs, modules);
    OptimizationLevel level = optLevel == 1   ? OptimizationLevel::O1
                              : optLevel == 2 ? OptimizationLevel::O2
                                              : OptimizationLevel::O3;
    passes.buildPerModuleDefaultPipeline(level).run(module, modules);
  }
  SmallVector<char, 0> object;
  raw_svector_ostream stream(object);
  legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, stream, nullptr,
                                      CodeGenFileType::ObjectFile))
    return createStringError("LLVM cannot emit an object file for this target");
  codegen.run(module);
  return std::make_unique<SmallVectorMemoryBuffer>(
      std::move(object), module.getModuleIdentifier(),
      /*RequiresNullTerminator=*/false);
}


/// One ORC JIT with the `objects` linked against the run-time library's
/// symbols and the process's (libc, libm).
Expected<std::unique_ptr<orc::LLJIT>>
linkObjects(orc::JITTargetMachineBuilder builder,
            std::vector<std::unique_ptr<MemoryBuffer>> objects, int numSymbols,
            const MlirStringRef *symbolNames, const uint64_t *symbolAddresses) {
  auto jit = orc::LLJITBuilder().setJITTargetMachineBuilder(builder).create();
  if (!jit)
    return jit.takeError();
  orc::JITDylib &main = (*jit)->getMainJITDylib();
  auto process = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  main.addGenerator(std::move(*process));
  orc::SymbolMap runtime;
  for (int i = 0; i < numSymbols; ++i)
    runtime[(*jit)->mangleAndIntern(unwrap(symbolNames[i]))] =
        orc::ExecutorSymbolDef(orc::ExecutorAddr(symbolAddresses[i]),
                               JITSymbolFlags::Exported | JITSymbolFlags::Callable);
  if (Error err = main.define(orc::absoluteSymbols(std::move(runtime))))
    return std::move(err);
  for (auto &object : objects)
    if (Error err = (*jit)->addObjectFile(std::move(object)))
      return std::move(err);
  return std::move(*jit);
}

/// Writes part i's object to `<prefix>.<i>.o`, then `<prefix>.parts` (the
/// number of parts), each through a temporary file renamed into place, so
/// that a reader never sees a partial file. Failures are ignored: the cache
/// is an optimization.
void saveObjects(StringRef prefix,
                 const std::vector<std::unique_ptr<MemoryBuffer>> &objects) {
  auto write = [](const std::string &path, StringRef data) {
    std::string temporary = path + ".tmp" + std::to_string(sys::Process::getProcessId());
    std::error_code ec;
    {
      raw_fd_ostream out(temporary, ec);
      if (ec)
        return false;
      out << data;
      out.close();
      if (out.has_error()) {
        out.clear_error();
        sys::fs::remove(temporary);
        return false;
      }
    }
    if (sys::fs::rename(temporary, path)) {
      sys::fs::remove(temporary);
      return false;
    }
    return true;
  };
  for (auto [i, object] : llvm::enumerate(objects))
    if (!write((prefix + "." + Twine(i) + ".o").str(), object->getBuffer()))
      return;
  write((prefix + ".parts").str(), std::to_string(objects.size()));
}

/// The host's target machine builder at `optLevel`.
Expected<orc::JITTargetMachineBuilder> hostMachine(int optLevel) {
  static bool initialized = [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmParser();
    InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  auto builder = orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(static_cast<CodeGenOptLevel>(optLevel));
  builder->setRelocationModel(Reloc::PIC_);
  builder->setCodeModel(CodeModel::Small);
  return builder;
}

/// How one part is compiled: the target machine (its code generation level)
/// and the level of LLVM's IR pipeline.
struct Level {
  const orc::JITTargetMachineBuilder &builder;
  int optLevel;
};

/// The objects of `parts` of `module` (the whole module if there are fewer
/// than two), part i at `levels[i]` (or `levels[0]`), part 0 on the calling
/// thread and each other on a thread of its own if `parallel`.
Expected<std::vector<std::unique_ptr<MemoryBuffer>>>
compileParts(std::unique_ptr<Module> module, ArrayRef<Part> parts,
             ArrayRef<Level> levels, bool parallel) {
  std::vector<std::unique_ptr<LLVMContext>> contexts;
  std::vector<std::unique_ptr<Module>> modules;
  if (parts.size() < 2) {
    modules.push_back(std::move(module));
  } else {
    for (auto [i, part] : llvm::enumerate(parts)) {
      contexts.push_back(std::make_unique<LLVMContext>());
      auto copy = extractPart(*module, part, i == 0, *contexts.back());
      if (!copy)
        return copy.takeError();
      modules.push_back(std::move(*copy));
    }
  }

  // Part i's object, or why it failed (an Error may not cross threads
  // unchecked).
  std::vector<std::unique_ptr<MemoryBuffer>> objects(modules.size());
  std::vector<std::string> failures(modules.size());
  auto work = [&](size_t i) {
    const Level &level = levels[i < levels.size() ? i : 0];
    auto object = compilePart(*modules[i], level.builder, level.optLevel);
    if (object)
      objects[i] = std::move(*object);
    else
      failures[i] = toString(object.takeError());
  };
  std::vector<std::thread> workers;
  for (size_t i = 1; i < modules.size(); ++i) {
    if (parallel)
      workers.emplace_back(work, i);
    else
      work(i);
  }
  work(0);
  for (std::thread &worker : workers)
    worker.join();
  for (const std::string &failure : failures)
    if (!failure.empty())
      return createStringError(failure);

  return std::move(objects);
}

/// The objects of `module` at `optLevel`: one part on the calling thread for
/// a small module, else parts of about equal cost, each on a thread of its
/// own (at most `threads`).
Expected<std::vector<std::unique_ptr<MemoryBuffer>>>
compileObjects(std::unique_ptr<Module> module,
               const orc::JITTargetMachineBuilder &builder, int optLevel,
               int threads) {
  size_t size = module->getInstructionCount();
  unsigned parts = std::max<size_t>(1, std::min<size_t>(threads, size / kMinPartSize));
  std::vector<Part> assignment;
  if (parts > 1)
    assignment = partition(*module, parts);
  return compileParts(std::move(module), assignment, {Level{builder, optLevel}},
                      /*parallel=*/true);
}

/// How far `loop` is, at the top of its header: (iv - lb, ub - lb) when the
/// header ends in `br (icmp slt|ult %iv, %ub)`, `%iv` a phi of the header
/// that enters the loop as `lb` and `%ub` defined outside the loop (an
/// `scf.for` lowered); (0, 0) otherwise (unknown).
std::pair<Value *, Value *> loopProgress(Loop *loop, IRBuilder<> &b) {
  Value *unknown = b.getInt64(0);
  BasicBlock *header = loop->getHeader();
  auto *branch = dyn_cast<BranchInst>(header->getTerminator());
  if (!branch || !branch->isConditional() ||
      !loop->contains(branch->getSuccessor(0)))
    return {unknown, unknown};
  auto *compare = dyn_cast<ICmpInst>(branch->getCondition());
  if (!compare || (compare->getPredicate() != ICmpInst::ICMP_SLT &&
                   compare->getPredicate() != ICmpInst::ICMP_ULT))
    return {unknown, unknown};
  auto *iv = dyn_cast<PHINode>(compare->getOperand(0));
  Value *ub = compare->getOperand(1);
  if (!iv || iv->getParent() != header || !iv->getType()->isIntegerTy(64) ||
      !loop->isLoopInvariant(ub))
    return {unknown, unknown};
  Value *lb = nullptr;
  for (unsigned i = 0; i < iv->getNumIncomingValues(); ++i) {
    if (loop->contains(iv->getIncomingBlock(i)))
      continue;
    if (lb && lb != iv->getIncomingValue(i))
      return {unknown, unknown};
    lb = iv->getIncomingValue(i);
  }
  if (!lb)
    return {unknown, unknown};
  return {b.CreateSub(iv, lb), b.CreateSub(ub, lb)};
}

/// Calls `__mlir_scan_poll_upgrade(loop, done, total)` at the top of every
/// outermost loop of
/// the functions of `module` (the quick tier) that run only on the calling
/// thread: a call running there when the optimized code arrives restarts in
/// it. Not in what may run as a part of a parallel loop (a function whose
/// address is taken, as scan-lower-parallel-calls passes its chunks to the
/// thread pool, and what it calls): the calling thread runs a part too, and
/// ending the call there would leave the pool's other parts running.
void addUpgradePolls(Module &module) {
  SmallPtrSet<Function *, 16> parallel;
  SmallVector<Function *> work;
  for (Function &f : module)
    if (f.hasAddressTaken() && parallel.insert(&f).second)
      work.push_back(&f);
  while (!work.empty()) {
    Function *f = work.pop_back_val();
    for (Instruction &inst : instructions(*f))
      if (auto *call = dyn_cast<CallBase>(&inst))
        if (Function *callee = call->getCalledFunction())
          if (parallel.insert(callee).second)
            work.push_back(callee);
  }
  Type *i64 = Type::getInt64Ty(module.getContext());
  FunctionCallee poll = module.getOrInsertFunction(
      mlir::scan::kScanPollUpgradeFunc,
      FunctionType::get(Type::getVoidTy(module.getContext()), {i64, i64, i64},
                        false));
  // A loop's progress is the call's only in the body of a public function:
  // a function that only the exported wrappers call (`_mlir_ciface_f` calls
  // the internal `f`), or an exported one. A callee's loops run once per
  // iteration of its caller's, and report none.
  auto isCallBody = [](Function &f) {
    if (!f.hasLocalLinkage())
      return true;
    return !f.use_empty() && llvm::all_of(f.users(), [&](User *user) {
      auto *call = dyn_cast<CallBase>(user);
      return call && call->getCalledFunction() == &f &&
             !call->getFunction()->hasLocalLinkage();
    });
  };
  int64_t id = 0;
  for (Function &f : module) {
    if (f.isDeclaration() || parallel.contains(&f))
      continue;
    bool reportsProgress = isCallBody(f);
    DominatorTree dominators(f);
    LoopInfo loops(dominators);
    for (Loop *loop : loops) { // the outermost loops
      BasicBlock *header = loop->getHeader();
      IRBuilder<> b(header, header->getFirstInsertionPt());
      auto [done, total] = reportsProgress
                               ? loopProgress(loop, b)
                               : std::make_pair<Value *, Value *>(
                                     b.getInt64(0), b.getInt64(0));
      b.CreateCall(poll, {ConstantInt::get(i64, id++), done, total});
    }
  }
}

/// A JIT of the compiled `objects` (compileObjects, compileParts), the
/// objects saved under `savePrefix` if not empty, and how many parts there
/// are.
Expected<std::pair<std::unique_ptr<orc::LLJIT>, int>>
link(Expected<std::vector<std::unique_ptr<MemoryBuffer>>> objects,
     const orc::JITTargetMachineBuilder &builder, StringRef savePrefix,
     int numSymbols, const MlirStringRef *symbolNames,
     const uint64_t *symbolAddresses) {
  if (!objects)
    return objects.takeError();
  int parts = objects->size();
  if (!savePrefix.empty())
    saveObjects(savePrefix, *objects);
  auto jit = linkObjects(builder, std::move(*objects), numSymbols, symbolNames,
                         symbolAddresses);
  if (!jit)
    return jit.takeError();
  return std::make_pair(std::move(*jit), parts);
}

} // namespace

/// A compiled program: the code that calls go to, and, while its optimized
/// tier is being compiled, the thread that compiles it.
struct MlirScanJit {
  /// An entry point as calls read it (mlirScanJitEntry): its address in the
  /// current tier.
  struct Entry {
    explicit Entry(std::string name) : name(std::move(name)) {}
    std::string name;
    mlir::scan::EntrySlot slot;
  };

  std::mutex mutex; // guards everything below but the atomics
  std::unique_ptr<orc::LLJIT> jit;   // the current tier
  std::unique_ptr<orc::LLJIT> quick; // the quick tier, once replaced: calls
                                     // may still run in it
  std::deque<Entry> entries;
  std::thread optimizer;
  std::mutex joinMutex; // one thread joins `optimizer`
  std::atomic<bool> optimizing{false};
  std::atomic<bool> cancelled{false}; // no optimized tier needed any more
  std::atomic<bool> quickCode{false}; // calls run the quick tier
  int64_t upgradeDueNs = 0; // EntrySlot::upgradeDueNs of the entries
  std::string optimizeError; // why the optimized tier failed, if it did
  int numParts = 0;          // of the current tier
  // While LLVM compiles the quick tier on the background thread, `jit` is
  // null and entries hold kEntryPending; `quickLinked` is notified when
  // that ends (`jit` set, or `quickError` says why not).
  bool quickPending = false;
  std::condition_variable quickLinked;
  std::string quickError;

  ~MlirScanJit() {
    if (optimizer.joinable()) {
      cancel();
      optimizer.join();
    }
  }

  /// Gives up the optimized tier if its compile still waits for the slot.
  void cancel() {
    cancelled = true;
    OptimizerSlot::get().wake();
  }

  /// The address of `name` in the current tier (the mutex held).
  Expected<uint64_t> lookup(StringRef name) {
    auto address = jit->lookup(name);
    if (!address)
      return address.takeError();
    return address->getValue();
  }

  /// Waits, the mutex held through `lock`, until the quick tier is linked
  /// or LLVM failed there; false if it failed (`quickError` says why).
  bool awaitQuick(std::unique_lock<std::mutex> &lock) {
    quickLinked.wait(lock, [&] { return !quickPending; });
    return jit != nullptr;
  }

  /// Makes the quick tier, or LLVM's failure there, what calls see: fills
  /// the entries made while it was compiled, with the address of each in
  /// the quick code or kEntryFailed.
  void installQuick(
      Expected<std::pair<std::unique_ptr<orc::LLJIT>, int>> quick) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (quick)
        std::tie(jit, numParts) = std::move(*quick);
      else
        quickError = toString(quick.takeError());
      for (Entry &entry : entries) {
        uint64_t address = mlir::scan::kEntryFailed;
        if (jit) {
          auto found = lookup(entry.name);
          if (found)
            address = *found;
          else // (the quick code defines every public function)
            consumeError(found.takeError());
        }
        entry.slot.address.store(address, std::memory_order_release);
      }
      quickPending = false;
    }
    quickLinked.notify_all();
  }

  /// Makes `optimized` (compiled in `parts`) the current tier and points
  /// every entry at it.
  void install(std::unique_ptr<orc::LLJIT> optimized, int parts) {
    std::lock_guard<std::mutex> lock(mutex);
    numParts = parts;
    quickCode = false;
    quick = std::move(jit);
    jit = std::move(optimized);
    for (Entry &entry : entries) {
      auto address = lookup(entry.name);
      if (address)
        entry.slot.address.store(*address, std::memory_order_release);
      else // (every tier defines the same symbols)
        consumeError(address.takeError());
    }
  }

  /// How many calls of this program are in progress.
  int callsRunning() {
    std::lock_guard<std::mutex> lock(mutex);
    int running = 0;
    for (const Entry &entry : entries)
      running += entry.slot.callsRunning.load(std::memory_order_relaxed);
    return running;
  }

  /// Tells the calls of this program when its optimized tier is due
  /// (steady clock, ns; 0 once it is installed or has failed).
  void setUpgradeDue(int64_t dueNs) {
    std::lock_guard<std::mutex> lock(mutex);
    upgradeDueNs = dueNs;
    for (Entry &entry : entries)
      entry.slot.upgradeDueNs.store(dueNs, std::memory_order_release);
  }
};

namespace {

/// Translates the LLVM-dialect module `op` to LLVM IR in `context`, with
/// the packed wrappers.
Expected<std::unique_ptr<Module>> translate(MlirOperation op,
                                            LLVMContext &context) {
  mlir::MLIRContext &mlirContext = *unwrap(op)->getContext();
  mlir::registerBuiltinDialectTranslation(mlirContext);
  mlir::registerLLVMDialectTranslation(mlirContext);
  std::unique_ptr<Module> module =
      mlir::translateModuleToLLVMIR(unwrap(op), context, "scan-program");
  if (!module)
    return createStringError("could not translate the module to LLVM IR");
  addPackedWrappers(*module);
  markFailuresNoReturn(*module);
  makeContractionExplicit(*module);
  return std::move(module);
}

/// How long the optimized tier of a module of `instructions` LLVM
/// instructions is expected to take on `threads` threads: about 0.1 ms per
/// instruction more than -O0 (docs/performance.md, "First calls"), in
/// parallel parts, and 30 ms whatever the size (reading the bitcode, the
/// target machine, linking: the benchmark's modules of 400-500
/// instructions took 42-72 ms on two threads where the per-instruction
/// cost alone gave 21-26 ms). An overestimate only makes quick calls wait
/// later; an underestimate made the W8 gradient's first call stop 10 ms
/// before its end to wait 80 ms for the optimized code.
int64_t expectedOptimizeNs(size_t instructions, int threads) {
  return 30'000'000 +
         static_cast<int64_t>(instructions) * 100'000 / std::max(1, threads);
}

/// The run-time library's `__mlir_scan_upgrade_begins()`,
/// `__mlir_scan_upgrade_ends()`, `__mlir_scan_foreground(...)`,
/// `__mlir_scan_compile_begins/ends()` and `__mlir_scan_entries_ready()`, found
/// among the symbols programs link to (absent in a runtime without them:
/// then nothing is told, and compiles are not held back).
struct UpgradeNotices {
  void (*beginsFn)() = nullptr;
  void (*endsFn)() = nullptr;
  void (*foregroundFn)(int32_t *, int32_t *, int64_t *) = nullptr;
  void (*compileBeginsFn)() = nullptr;
  void (*compileEndsFn)() = nullptr;
  void (*entriesReadyFn)() = nullptr;

  UpgradeNotices(const std::vector<std::string> &names,
                 const std::vector<uint64_t> &addresses) {
    for (size_t i = 0; i < names.size(); ++i) {
      auto *address = reinterpret_cast<void *>(addresses[i]);
      if (names[i] == "__mlir_scan_upgrade_begins")
        beginsFn = reinterpret_cast<void (*)()>(address);
      else if (names[i] == "__mlir_scan_upgrade_ends")
        endsFn = reinterpret_cast<void (*)()>(address);
      else if (names[i] == "__mlir_scan_foreground")
        foregroundFn =
            reinterpret_cast<void (*)(int32_t *, int32_t *, int64_t *)>(address);
      else if (names[i] == "__mlir_scan_compile_begins")
        compileBeginsFn = reinterpret_cast<void (*)()>(address);
      else if (names[i] == "__mlir_scan_compile_ends")
        compileEndsFn = reinterpret_cast<void (*)()>(address);
      else if (names[i] == "__mlir_scan_entries_ready")
        entriesReadyFn = reinterpret_cast<void (*)()>(address);
    }
    if (!beginsFn || !endsFn)
      beginsFn = nullptr, endsFn = nullptr;
    if (!compileBeginsFn || !compileEndsFn || !entriesReadyFn)
      compileBeginsFn = nullptr, compileEndsFn = nullptr,
      entriesReadyFn = nullptr;
  }

  /// Whether calls can wait for a quick tier compiled in the background
  /// (the run-time library wakes them: __mlir_scan_entries_ready).
  bool quickInBackground() const { return entriesReadyFn != nullptr; }

  /// The process compiles the quick tier of a program (as long as the
  /// Python side compiles one: the foreground that optimized compiles
  /// wait for), and has finished.
  void compileBegins() const {
    if (compileBeginsFn)
      compileBeginsFn();
  }
  void compileEnds() const {
    if (compileEndsFn)
      compileEndsFn();
  }

  /// Entry slots that held kEntryPending are filled: wakes their calls.
  void entriesReady() const {
    if (entriesReadyFn)
      entriesReadyFn();
  }

  /// Returns once the process has compiled what it was compiling, the
  /// first call after that has returned and no other call followed it
  /// within a poll interval (or no call came within kFirstCallGrace), after
  /// at most `limit` of time in which the process was idle or ran this
  /// program's calls (`ownCalls`), counted after at most `othersLimit`, or
  /// once `cancelled` is set.
  ///
  /// A program's first call comes right after its compile, or after the
  /// compiles of the functions it is used with (the LSTM tutorial compiles
  /// two, then calls them), and with the optimized compile beside them on
  /// the cores both ran up to twice as long (the W8 gradient's first call:
  /// 25-44 ms against 17-20 ms alone). Held back, the optimized compile
  /// starts that much later, and what the user waits for ends sooner. The
  /// bound keeps a long quick call (which restarts in the optimized code
  /// when that arrives) from delaying the optimized code by more than a
  /// fraction of its compile. Calls made back to back count as the first
  /// call: the LSTM tutorial's training step calls `f_grad_shared`, then
  /// `f_update`, and the first's optimized compile, started between them,
  /// took the cores from the second (W9-f64's first step: 0.083-0.400 s,
  /// median 0.287, against 0.072-0.328 s, median 0.096, once the compile
  /// waited for both; seven processes each, interleaved).
  void deferToForeground(std::chrono::nanoseconds limit,
                         std::chrono::nanoseconds othersLimit,
                         llvm::function_ref<int()> ownCalls,
                         const std::atomic<bool> &cancelled) const {
    if (!foregroundFn)
      return;
    const auto begun = std::chrono::steady_clock::now();
    auto start = begun;
    auto lastBusy = start;
    int64_t endedBeforeCall = -1;
    // `ended` when a poll after the first call saw the process idle: idle
    // again at the next poll, with no call ended in between, means the
    // calls made back to back are over.
    int64_t idleAt = -1;
    for (;;) {
      int32_t calls = 0, compiles = 0;
      int64_t ended = 0;
      foregroundFn(&calls, &compiles, &ended);
      auto now = std::chrono::steady_clock::now();
      // The bound counts only while the process is idle or runs this
      // program's calls (which its optimized code would speed up): not
      // while it compiles (the first call waits for the quick tiers of the
      // functions compiled after this one, in the background), nor while
      // it runs other programs' calls, which the compile would only slow
      // down (W9's `f_update`, whose bound came during `f_grad_shared`'s
      // first call, made that call up to four times longer). Not beyond
      // `othersLimit`: a process that never stops compiling or calling
      // other programs gets the optimized code after `othersLimit` plus the
      // bound.
      if (now - begun < othersLimit &&
          (compiles > 0 || (calls > 0 && calls > ownCalls())))
        start = now;
      if (cancelled.load() || now - start >= limit)
        return;
      if (calls > 0 && endedBeforeCall < 0)
        endedBeforeCall = ended;
      if (endedBeforeCall >= 0 && ended > endedBeforeCall) {
        if (calls == 0 && compiles == 0) {
          if (idleAt == ended)
            return;
          idleAt = ended;
        } else {
          idleAt = -1;
        }
      }
      if (calls > 0 || compiles > 0)
        lastBusy = now;
      else if (now - lastBusy >= kFirstCallGrace)
        return;
      std::this_thread::sleep_for(kForegroundPoll);
    }
  }

  void begins() const {
    if (beginsFn)
      beginsFn();
  }
  void ends() const {
    if (endsFn)
      endsFn();
  }
};

/// Compiles the module `op` into `program`: at `optLevel` on the calling
/// thread(s), or, for a large module with `tiered`, at -O0 here and at
/// `optLevel` on a background thread (the header).
Error buildJit(MlirScanJit &program, MlirOperation op, int optLevel,
               int threads, bool tiered, int numSymbols,
               const MlirStringRef *symbolNames,
               const uint64_t *symbolAddresses, const char *savePrefix) {
  auto builder = hostMachine(optLevel);
  if (!builder)
    return builder.takeError();
  auto context = std::make_unique<LLVMContext>();
  auto module = translate(op, *context);
  if (!module)
    return module.takeError();

  size_t instructions = (*module)->getInstructionCount();
  tiered = tiered && optLevel > 0 && instructions >= kMinTieredSize;
  if (!tiered) {
    auto compiled =
        link(compileObjects(std::move(*module), *builder, optLevel, threads),
             *builder, savePrefix ? savePrefix : "", numSymbols, symbolNames,
             symbolAddresses);
    if (!compiled)
      return compiled.takeError();
    std::tie(program.jit, program.numParts) = std::move(*compiled);
    return Error::success();
  }

  std::vector<std::string> names;
  std::vector<uint64_t> addresses(symbolAddresses, symbolAddresses + numSymbols);
  for (int i = 0; i < numSymbols; ++i)
    names.push_back(unwrap(symbolNames[i]).str());
  // The run-time library's account of compiles and optimized tiers in
  // progress (quick calls that outlast the expected compile wait for it:
  // ScanRuntime.cpp), and of entries that calls wait for.
  UpgradeNotices notices(names, addresses);
  auto quickBuilder = hostMachine(0);
  if (!quickBuilder)
    return quickBuilder.takeError();
  orc::JITTargetMachineBuilder hotBuilder = *builder;
  hotBuilder.setCodeGenOptLevel(
      static_cast<CodeGenOptLevel>(std::min(optLevel, kHotCodeGenLevel)));
  int64_t expectedNs = expectedOptimizeNs(instructions, threads);
  program.optimizing = true;
  program.quickCode = true;
  program.quickPending = true;
  int testMode = QuickCompileTestHook::get().current();
  notices.compileBegins();
  // Everything LLVM does runs on the background thread, the quick tier
  // first: the MLIR module is no longer needed, so the caller can go on
  // (build and compile its next function: the LSTM tutorial compiles six,
  // the W9 step's two took 0.55 and 0.08 s, of which LLVM's quick tier
  // 0.14 and 0.03 s). Its calls wait for the quick tier (kEntryPending).
  program.optimizer = std::thread([&program, context = std::move(context),
                                   module = std::move(*module), notices,
                                   testMode, expectedNs,
                                   quickBuilder = *quickBuilder, hotBuilder,
                                   builder = *builder, optLevel, threads,
                                   names = std::move(names),
                                   addresses = std::move(addresses),
                                   prefix =
                                       std::string(savePrefix ? savePrefix
                                                              : "")]() mutable {
    std::vector<MlirStringRef> refs;
    for (const std::string &name : names)
      refs.push_back(MlirStringRef{name.data(), name.size()});
    // The optimized tier's input: a copy of the module, as bitcode (read
    // into a context of its own when its turn comes).
    SmallVector<char, 0> bitcode;
    {
      raw_svector_ostream stream(bitcode);
      WriteBitcodeToFile(*module, stream);
    }
    addUpgradePolls(*module);
    // The quick tier: the module at -O0, but for its hot chunk functions
    // (splitHot), at kHotOptLevel on a thread of their own. At -O0 the loops
    // of a large static product were most of a first call (W5's `h W` at
    // 1024 x 1024 ran 4x slower than at -O3), and its chunk function costs
    // LLVM some 25 ms at -O1, beside the -O0 compile of the rest (15 ms for
    // W5). Every level computes the same bits (makeContractionExplicit):
    // the quick tier's results stay the optimized tier's.
    std::vector<Part> quickParts = splitHot(*module);
    bool hot = quickParts.size() > 1;
    auto compileQuick =
        [&]() -> Expected<std::pair<std::unique_ptr<orc::LLJIT>, int>> {
      int mode = testMode;
      if (mode == QuickCompileTestHook::Hold)
        mode = QuickCompileTestHook::get().awaitRelease();
      if (mode == QuickCompileTestHook::Fail)
        return createStringError("the quick code failed for a test "
                                 "(mlirScanJitTestQuickCompiles)");
      return link(
          compileParts(std::move(module), quickParts,
                       {Level{quickBuilder, 0},
                        Level{hotBuilder, std::min(optLevel, kHotOptLevel)}},
                       /*parallel=*/threads > 1),
          quickBuilder, "", refs.size(), refs.data(), addresses.data());
    };
    auto quick = compileQuick();
    module.reset(); // before its context
    bool linked = static_cast<bool>(quick);
    program.installQuick(std::move(quick));
    notices.entriesReady();
    notices.compileEnds();
    if (!linked) {
      program.optimizing = false;
      return;
    }

    int64_t deferNs =
        hot ? expectedNs * kHotDeferFactor : expectedNs / kDeferDivisor;
    auto optimize = [&]() -> Error {
      OptimizerSlot &slot = OptimizerSlot::get();
      if (!slot.acquire(program.cancelled))
        return Error::success();
      auto release = llvm::make_scope_exit([&] { slot.release(); });
      notices.deferToForeground(
          std::chrono::nanoseconds(deferNs),
          std::chrono::nanoseconds(expectedNs * kOthersDeferFactor),
          [&] { return program.callsRunning(); }, program.cancelled);
      if (program.cancelled)
        return Error::success();
      program.setUpgradeDue(
          std::chrono::duration_cast<std::chrono::nanoseconds>(
              std::chrono::steady_clock::now().time_since_epoch())
              .count() +
          expectedNs);
      notices.begins();
      auto ended = llvm::make_scope_exit([&] {
        program.setUpgradeDue(0);
        notices.ends();
      });
      LLVMContext optimizedContext;
      auto optimizedModule = parseBitcodeFile(
          MemoryBufferRef(StringRef(bitcode.data(), bitcode.size()),
                          "scan-program"),
          optimizedContext);
      if (!optimizedModule)
        return optimizedModule.takeError();
      auto compiled =
          link(compileObjects(std::move(*optimizedModule), builder, optLevel,
                              threads),
               builder, prefix, refs.size(), refs.data(), addresses.data());
      if (!compiled)
        return compiled.takeError();
      program.install(std::move(compiled->first), compiled->second);
      return Error::success();
    };
    if (Error err = optimize()) {
      // The quick tier stays: slower code, the same results.
      std::lock_guard<std::mutex> lock(program.mutex);
      program.optimizeError = toString(std::move(err));
    }
    program.optimizing = false;
  });
  if (!notices.quickInBackground()) {
    // A run-time library that cannot wake calls waiting for their code:
    // the quick tier is waited for here.
    std::unique_lock<std::mutex> lock(program.mutex);
    if (!program.awaitQuick(lock))
      return createStringError(program.quickError);
  }
  return Error::success();
}

} // namespace

extern "C" {

namespace {
/// Copies `text` into the caller's buffer `out` of `size` bytes,
/// NUL-terminated and truncated to fit.
void copyOut(const std::string &text, char *out, size_t size) {
  if (!size)
    return;
  size_t n = std::min(text.size(), size - 1);
  text.copy(out, n);
  out[n] = 0;
}
} // namespace

/// Compiles the LLVM-dialect module `op` at `optLevel`, in up to `threads`
/// parts at once; `symbolNames`/`symbolAddresses` are the run-time library's
/// symbols the program calls. With `tiered`, a large module is compiled at -O0 first and at `optLevel`
/// on a background thread (the header; mlirScanJitWait waits for it).
/// With `savePrefix`, the objects (of `optLevel`) are also written to
/// `<savePrefix>.<i>.o` and their number to `<savePrefix>.parts`
/// (mlirScanJitLoad reads them). Returns null and writes the reason
/// (NUL-terminated, truncated) into `error` on failure.
MLIR_CAPI_EXPORTED MlirScanJit *
mlirScanJitCreate(MlirOperation op, int optLevel, int threads, int tiered,
                  int numSymbols, const MlirStringRef *symbolNames,
                  const uint64_t *symbolAddresses, const char *savePrefix,
                  char *error, size_t errorSize) {
  auto program = std::make_unique<MlirScanJit>();
  if (Error err = buildJit(*program, op, optLevel, std::max(threads, 1),
                           tiered != 0, numSymbols, symbolNames,
                           symbolAddresses, savePrefix)) {
    copyOut(toString(std::move(err)), error, errorSize);
    return nullptr;
  }
  return program.release();
}

/// A JIT of the `numParts` objects `<prefix>.<i>.o` that mlirScanJitCreate
/// saved, linked as mlirScanJitCreate links them; null (and the reason in
/// `error`) if one cannot be read or linked.
MLIR_CAPI_EXPORTED MlirScanJit *
mlirScanJitLoad(const char *prefix, int numParts, int optLevel, int numSymbols,
                const MlirStringRef *symbolNames,
                const uint64_t *symbolAddresses, char *error,
                size_t errorSize) {
  auto load = [&]() -> Expected<std::unique_ptr<orc::LLJIT>> {
    auto builder = hostMachine(optLevel);
    if (!builder)
      return builder.takeError();
    std::vector<std::unique_ptr<MemoryBuffer>> objects;
    for (int i = 0; i < numParts; ++i) {
      std::string path = (Twine(prefix) + "." + Twine(i) + ".o").str();
      auto object = MemoryBuffer::getFile(path);
      if (!object)
        return createStringError(object.getError(), "cannot read " + path);
      objects.push_back(std::move(*object));
    }
    return linkObjects(*builder, std::move(objects), numSymbols, symbolNames,
                       symbolAddresses);
  };
  auto jit = load();
  if (!jit) {
    copyOut(toString(jit.takeError()), error, errorSize);
    return nullptr;
  }
  auto *program = new MlirScanJit();
  program->jit = std::move(*jit);
  program->numParts = numParts;
  return program;
}

/// The target the JIT compiles for: triple, CPU and features (what a saved
/// object is only valid for).
MLIR_CAPI_EXPORTED void mlirScanJitHostTarget(char *out, size_t size) {
  std::string text = sys::getProcessTriple() + " " + sys::getHostCPUName().str();
  std::vector<std::string> features;
  for (auto &entry : sys::getHostCPUFeatures())
    if (entry.getValue())
      features.push_back(entry.getKey().str());
  llvm::sort(features);
  for (const std::string &feature : features)
    text += " +" + feature;
  copyOut(text, out, size);
}

/// The address of `name` in the current tier, or 0 with the reason in
/// `error` (waits for the quick tier if it is being compiled).
MLIR_CAPI_EXPORTED uint64_t mlirScanJitLookup(MlirScanJit *jit,
                                              MlirStringRef name, char *error,
                                              size_t errorSize) {
  std::unique_lock<std::mutex> lock(jit->mutex);
  if (!jit->awaitQuick(lock)) {
    copyOut(jit->quickError, error, errorSize);
    return 0;
  }
  auto address = jit->lookup(unwrap(name));
  if (!address) {
    copyOut(toString(address.takeError()), error, errorSize);
    return 0;
  }
  return *address;
}

/// The entry slot of `name` (EntrySlot: its first 64-bit word holds its
/// address in the current tier), for `mlirScanInvokeSlot` (valid while
/// `jit` lives); null
/// with the reason in `error` if there is no such symbol. While the quick
/// tier is being compiled, the slot holds kEntryPending (and is filled when
/// it is linked), and kEntryFailed if LLVM failed there.
MLIR_CAPI_EXPORTED const mlir::scan::EntrySlot *
mlirScanJitEntry(MlirScanJit *jit, MlirStringRef name, char *error,
                 size_t errorSize) {
  std::lock_guard<std::mutex> lock(jit->mutex);
  for (MlirScanJit::Entry &entry : jit->entries)
    if (entry.name == unwrap(name))
      return &entry.slot;
  uint64_t address = mlir::scan::kEntryPending;
  if (!jit->quickPending && !jit->jit) {
    address = mlir::scan::kEntryFailed; // calls raise LLVM's error
  } else if (!jit->quickPending) {
    auto found = jit->lookup(unwrap(name));
    if (!found) {
      copyOut(toString(found.takeError()), error, errorSize);
      return nullptr;
    }
    address = *found;
  }
  MlirScanJit::Entry &entry = jit->entries.emplace_back(unwrap(name).str());
  entry.slot.address.store(address, std::memory_order_release);
  entry.slot.upgradeDueNs.store(jit->upgradeDueNs, std::memory_order_release);
  return &entry.slot;
}

/// How many parts LLVM compiled the current tier in (waits for the quick
/// tier if it is being compiled; 0 if LLVM failed there).
MLIR_CAPI_EXPORTED int mlirScanJitNumParts(MlirScanJit *jit) {
  std::unique_lock<std::mutex> lock(jit->mutex);
  jit->awaitQuick(lock);
  return jit->numParts;
}

/// Why LLVM could not compile the quick tier (waits for it if it is being
/// compiled); empty if it did.
MLIR_CAPI_EXPORTED void mlirScanJitQuickError(MlirScanJit *jit, char *error,
                                              size_t errorSize) {
  std::unique_lock<std::mutex> lock(jit->mutex);
  jit->awaitQuick(lock);
  copyOut(jit->quickError, error, errorSize);
}

/// For tests: the quick tiers of programs created from now on are held back
/// before LLVM compiles them (1, until called again with another mode, which
/// then applies to them), fail (2), or are compiled (0).
MLIR_CAPI_EXPORTED void mlirScanJitTestQuickCompiles(int mode) {
  QuickCompileTestHook::get().set(mode);
}

/// 1 while calls run the quick tier (the optimized tier is being compiled,
/// or LLVM failed there), else 0.
MLIR_CAPI_EXPORTED int mlirScanJitQuick(MlirScanJit *jit) {
  return jit->quickCode ? 1 : 0;
}

/// 1 while the optimized tier is being compiled, else 0.
MLIR_CAPI_EXPORTED int mlirScanJitOptimizing(MlirScanJit *jit) {
  return jit->optimizing ? 1 : 0;
}

/// Waits until the optimized tier is compiled (at once if there is none to
/// wait for); copies why it failed into `error` (empty if it did not).
MLIR_CAPI_EXPORTED void mlirScanJitWait(MlirScanJit *jit, char *error,
                                        size_t errorSize) {
  {
    std::lock_guard<std::mutex> lock(jit->joinMutex);
    if (jit->optimizer.joinable())
      jit->optimizer.join();
  }
  std::lock_guard<std::mutex> lock(jit->mutex);
  copyOut(jit->optimizeError, error, errorSize);
}

/// Gives up the optimized tier if its compile has not started (it waits for
/// the process's slot): calls keep running the quick code. A compile that
/// has started finishes; mlirScanJitWait waits for it.
MLIR_CAPI_EXPORTED void mlirScanJitCancel(MlirScanJit *jit) { jit->cancel(); }

MLIR_CAPI_EXPORTED void mlirScanJitDestroy(MlirScanJit *jit) { delete jit; }

} // extern "C"
