//===- ScanLowerAsserts.cpp - cf.assert -> the run-time library's failure -===//
//
// Upstream, a failed `cf.assert` prints and aborts the process. Compiled scan
// programs report it instead, through the run-time library, which ends the
// call with the message (a Python ValueError).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RuntimeChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANLOWERASSERTS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// generate-runtime-verification{verbose-level=0} writes
///   "ERROR: Runtime op verification failed\n^ <what>\nLocation: loc(<where>)"
/// which becomes "<where>: <what>"; other messages are kept.
std::string failureMessage(StringRef message) {
  StringRef rest = message;
  if (!rest.consume_front("ERROR: Runtime op verification failed\n"))
    return message.str();
  StringRef what, where;
  std::tie(what, rest) = rest.split("\nLocation: ");
  what.consume_front("^ ");
  where = rest.trim();
  if (where.consume_front("loc(") && where.consume_back(")")) {
    // `"file":line:col` -> file:line:col
    std::string place = where.str();
    llvm::erase(place, '"');
    return place + ": " + what.str();
  }
  return what.str();
}

void declareFailMessage(ModuleOp module) {
  if (SymbolTable::lookupSymbolIn(module, kScanFailMessageFunc))
    return;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto fail = func::FuncOp::create(b, module.getLoc(), kScanFailMessageFunc,
                                   b.getFunctionType({ptr}, {}));
  fail.setPrivate();
}

struct ScanLowerAssertsPass
    : scan::impl::ScanLowerAssertsBase<ScanLowerAssertsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Host code only: the device code of a gpu.module (a symbol table of its
    // own) cannot call the run-time library, and its asserts lower with it.
    SmallVector<cf::AssertOp> asserts;
    module.walk([&](cf::AssertOp op) {
      if (op->getParentWithTrait<OpTrait::SymbolTable>() == module)
        asserts.push_back(op);
    });
    if (asserts.empty())
      return;
    declareFailMessage(module);
    // Built once: a lookup in the module itself scans all of its ops.
    SymbolTable symbols(module);
    // One string global per distinct message.
    llvm::StringMap<std::string> globals;
    unsigned counter = 0;
    for (cf::AssertOp op : asserts) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      std::string text = failureMessage(op.getMsg());
      Value failed = arith::XOrIOp::create(
          b, loc, op.getArg(), arith::ConstantIntOp::create(b, loc, 1, 1));
      auto ifFailed = scf::IfOp::create(b, loc, failed, false);
      b.setInsertionPointToStart(ifFailed.thenBlock());
      auto [it, inserted] = globals.try_emplace(text);
      if (inserted) {
        std::string name;
        do {
          name = "__mlir_scan_assert_message_" + std::to_string(counter++);
        } while (symbols.lookup(name));
        it->second = name;
      }
      // createGlobalString reuses nothing: declare each global once and
      // take its address at every use.
      Value message;
      if (inserted) {
        message = LLVM::createGlobalString(loc, b, it->second,
                                           text + std::string(1, '\0'),
                                           LLVM::Linkage::Internal);
      } else {
        auto ptr = LLVM::LLVMPointerType::get(b.getContext());
        message = LLVM::AddressOfOp::create(b, loc, ptr, it->second);
      }
      func::CallOp::create(b, loc, kScanFailMessageFunc, TypeRange{},
                           ValueRange{message});
      op.erase();
    }
    numLowered += asserts.size();
  }
};

} // namespace
