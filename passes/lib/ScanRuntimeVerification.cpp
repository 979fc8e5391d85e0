//===- ScanRuntimeVerification.cpp - run-time checks of a program's ops ---===//
//
// MLIR leaves undefined what a program's ops do with run-time sizes that do
// not match (an elementwise op on tensors of different lengths) or indices
// out of bounds. `mlir_scan.compile` is a user-facing API: such a program
// must fail with an error that names the op, never read or write out of
// bounds. The upstream mechanism is RuntimeVerifiableOpInterface; this pass
// applies it to the program's own ops, before the scans are lowered, with
// located messages and one correction (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/RuntimeVerifiableOpInterface.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANRUNTIMEVERIFICATION
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// "file:line:col" of the first file location in `loc`, or "".
std::string placeOf(Location loc) {
  std::string place;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      place = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
               ":" + Twine(file.getColumn()))
                  .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return place;
}

/// "<file:line:col>: <what>": what the run-time library reports.
std::string locatedMessage(Operation *op, StringRef what) {
  std::string place = placeOf(op->getLoc());
  if (place.empty())
    return (op->getName().getStringRef() + ": " + what).str();
  return place + ": " + what.str();
}

/// `lo <= v < hi`.
Value inRange(OpBuilder &b, Location loc, Value v, Value lo, Value hi) {
  return b.createOrFold<arith::AndIOp>(
      loc, b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, v, lo),
      b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, v, hi));
}

/// The bounds of a slice of `source`/`dest` (tensor.extract_slice /
/// tensor.insert_slice): per dimension, a size >= 0, and unless the size is
/// 0, first and last position in bounds. Upstream 22.1 checks the offset even
/// of an empty slice, which rejects valid programs (`x[5:5]` of 5 rows).
void verifySlice(OpBuilder &b, Operation *op, Value full,
                 ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
                 ArrayRef<OpFoldResult> strides) {
  Location loc = op->getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  for (unsigned d = 0; d < offsets.size(); ++d) {
    Value offset = getValueOrCreateConstantIndexOp(b, loc, offsets[d]);
    Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[d]);
    Value stride = getValueOrCreateConstantIndexOp(b, loc, strides[d]);
    Value dim = b.createOrFold<tensor::DimOp>(loc, full, d);
    Value last = b.createOrFold<arith::AddIOp>(
        loc, offset,
        b.createOrFold<arith::MulIOp>(
            loc, b.createOrFold<arith::SubIOp>(loc, size, one), stride));
    Value empty =
        b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, size, zero);
    Value inside = b.createOrFold<arith::AndIOp>(
        loc, inRange(b, loc, offset, zero, dim), inRange(b, loc, last, zero, dim));
    Value ok = b.createOrFold<arith::AndIOp>(
        loc,
        b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, size, zero),
        b.createOrFold<arith::OrIOp>(loc, empty, inside));
    if (auto constant = getConstantIntValue(ok); constant && *constant)
      continue;
    cf::AssertOp::create(
        b, loc, ok,
        locatedMessage(op, ("slice out of bounds along dimension " + Twine(d) +
                            " (offset, size, stride against the size of the "
                            "dimension)")
                               .str()));
  }
}

struct ScanRuntimeVerificationPass
    : scan::impl::ScanRuntimeVerificationBase<ScanRuntimeVerificationPass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    // Elementwise ops on tensors become linalg, whose operand sizes are then
    // checked against each other (without folding: see genericizeFoldHazards).
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseToLinalgConversionPatterns(patterns);
    walkAndApplyPatterns(root, FrozenRewritePatternSet(std::move(patterns)));

    SmallVector<Operation *> ops;
    root->walk([&](Operation *op) {
      if (isa<RuntimeVerifiableOpInterface, tensor::InsertSliceOp>(op))
        ops.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
        verifySlice(b, op, slice.getSource(), slice.getMixedOffsets(),
                    slice.getMixedSizes(), slice.getMixedStrides());
      } else if (auto slice = dyn_cast<tensor::InsertSliceOp>(op)) {
        verifySlice(b, op, slice.getDest(), slice.getMixedOffsets(),
                    slice.getMixedSizes(), slice.getMixedStrides());
      } else {
        cast<RuntimeVerifiableOpInterface>(op).generateRuntimeVerification(
            b, op->getLoc(), locatedMessage);
      }
      ++numVerified;
    }
    // Upstream models assert conditions that are often statically true.
    root->walk([](cf::AssertOp op) {
      if (matchPattern(op.getArg(), m_One()))
        op.erase();
    });
  }
};

} // namespace
