//===- ScanOps.cpp - scan.scan and scan.yield -----------------------------===//
//
// Accessors, custom assembly and verifier of `scan.scan`.
//
//===----------------------------------------------------------------------===//

#include "Scan/ScanOps.h"
#include "Scan/ErrorCodes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::scan;

#define GET_OP_CLASSES
#include "Scan/ScanOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

static ArrayRef<int64_t> tapsAt(ArrayAttr lists, unsigned i) {
  return cast<DenseI64ArrayAttr>(lists[i]).asArrayRef();
}

static unsigned sumOfSizes(ArrayAttr lists) {
  unsigned n = 0;
  for (Attribute a : lists)
    n += cast<DenseI64ArrayAttr>(a).size();
  return n;
}

/// `[a, b, c]` for diagnostics.
static std::string formatTaps(ArrayRef<int64_t> taps) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(taps, os);
  os << "]";
  return s;
}

/// The window of rows a set of taps spans around the current step:
/// `lo = min(0, min taps)`, `hi = max(0, max taps)`.
static std::pair<int64_t, int64_t> tapWindow(ArrayRef<int64_t> a,
                                             ArrayRef<int64_t> b = {}) {
  int64_t lo = 0, hi = 0;
  for (int64_t t : llvm::concat<const int64_t>(a, b)) {
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  return {lo, hi};
}

Type ScanOp::getRowType(RankedTensorType type) {
  if (type.getRank() == 1)
    return type.getElementType();
  return RankedTensorType::get(type.getShape().drop_front(),
                               type.getElementType(), type.getEncoding());
}

//===----------------------------------------------------------------------===//
// Accessors
//===----------------------------------------------------------------------===//

ArrayRef<int64_t> ScanOp::getSequenceTapsAt(unsigned i) {
  return tapsAt(getSequenceTaps(), i);
}
ArrayRef<int64_t> ScanOp::getMitMotInTapsAt(unsigned i) {
  return tapsAt(getMitmotInTaps(), i);
}
ArrayRef<int64_t> ScanOp::getMitMotOutTapsAt(unsigned i) {
  return tapsAt(getMitmotOutTaps(), i);
}
ArrayRef<int64_t> ScanOp::getMitSotTapsAt(unsigned i) {
  return tapsAt(getMitsotTaps(), i);
}

// Block argument layout: all sequence taps, mitmot in taps, mitsot taps,
// sitsot, non-sequences.
Block::BlockArgListType ScanOp::getSequenceArgs(unsigned i) {
  unsigned first = 0;
  for (unsigned j = 0; j < i; ++j)
    first += getSequenceTapsAt(j).size();
  return getBodyBlock().getArguments().slice(first,
                                             getSequenceTapsAt(i).size());
}

Block::BlockArgListType ScanOp::getMitMotArgs(unsigned i) {
  unsigned first = sumOfSizes(getSequenceTaps());
  for (unsigned j = 0; j < i; ++j)
    first += getMitMotInTapsAt(j).size();
  return getBodyBlock().getArguments().slice(first,
                                             getMitMotInTapsAt(i).size());
}

Block::BlockArgListType ScanOp::getMitSotArgs(unsigned i) {
  unsigned first =
      sumOfSizes(getSequenceTaps()) + sumOfSizes(getMitmotInTaps());
  for (unsigned j = 0; j < i; ++j)
    first += getMitSotTapsAt(j).size();
  return getBodyBlock().getArguments().slice(first, getMitSotTapsAt(i).size());
}

BlockArgument ScanOp::getSitSotArg(unsigned i) {
  unsigned first = sumOfSizes(getSequenceTaps()) +
                   sumOfSizes(getMitmotInTaps()) + sumOfSizes(getMitsotTaps());
  return getBodyBlock().getArgument(first + i);
}

BlockArgument ScanOp::getNonSequenceArg(unsigned i) {
  unsigned first = sumOfSizes(getSequenceTaps()) +
                   sumOfSizes(getMitmotInTaps()) +
                   sumOfSizes(getMitsotTaps()) + getNumSitSot();
  return getBodyBlock().getArgument(first + i);
}

unsigned ScanOp::getExpectedNumBlockArgs() {
  return sumOfSizes(getSequenceTaps()) + sumOfSizes(getMitmotInTaps()) +
         sumOfSizes(getMitsotTaps()) + getNumSitSot() + getNumNonSequences();
}

// Yield layout: mitmot out taps, mitsot, sitsot, nitsot, until condition.
OperandRange ScanOp::getMitMotYields(unsigned i) {
  unsigned first = 0;
  for (unsigned j = 0; j < i; ++j)
    first += getMitMotOutTapsAt(j).size();
  return getYieldOp()->getOperands().slice(first, getMitMotOutTapsAt(i).size());
}

Value ScanOp::getMitSotYield(unsigned i) {
  return getYieldOp()->getOperand(sumOfSizes(getMitmotOutTaps()) + i);
}

Value ScanOp::getSitSotYield(unsigned i) {
  return getYieldOp()->getOperand(sumOfSizes(getMitmotOutTaps()) +
                                  getNumMitSot() + i);
}

Value ScanOp::getNitSotYield(unsigned i) {
  return getYieldOp()->getOperand(sumOfSizes(getMitmotOutTaps()) +
                                  getNumMitSot() + getNumSitSot() + i);
}

Value ScanOp::getUntilCondition() {
  if (!getUntil())
    return nullptr;
  return getYieldOp()->getOperands().back();
}

unsigned ScanOp::getExpectedNumYields() {
  return sumOfSizes(getMitmotOutTaps()) + getNumMitSot() + getNumSitSot() +
         getNumNitSot() + (getUntil() ? 1 : 0);
}

std::pair<ScanOp::OutputKind, unsigned>
ScanOp::getOutputKind(unsigned resultIdx) {
  unsigned i = resultIdx;
  if (i < getNumMitMot())
    return {OutputKind::MitMot, i};
  i -= getNumMitMot();
  if (i < getNumMitSot())
    return {OutputKind::MitSot, i};
  i -= getNumMitSot();
  if (i < getNumSitSot())
    return {OutputKind::SitSot, i};
  return {OutputKind::NitSot, i - getNumSitSot()};
}

Value ScanOp::getOutputInit(unsigned resultIdx) {
  auto [kind, i] = getOutputKind(resultIdx);
  switch (kind) {
  case OutputKind::MitMot:
    return getMitmot()[i];
  case OutputKind::MitSot:
    return getMitsotInits()[i];
  case OutputKind::SitSot:
    return getSitsotInits()[i];
  case OutputKind::NitSot:
    return nullptr;
  }
  llvm_unreachable("unknown output kind");
}

int64_t ScanOp::getKeepAt(unsigned resultIdx) {
  std::optional<ArrayRef<int64_t>> keep = getKeep();
  if (!keep || resultIdx >= keep->size())
    return 0;
  return (*keep)[resultIdx];
}

std::optional<int64_t> ScanOp::getStaticNumSteps() {
  APInt value;
  if (matchPattern(getNSteps(), m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Custom assembly
//
//   %r:2 = scan.scan steps(%n) [go_backwards] [until]
//       [sequences(%s[taps] : type, ...)]
//       [mitmot(%b[in taps] -> [out taps] : type, ...)]
//       [mitsot(%x0[taps] : type, ...)]
//       [sitsot(%y0 : type, ...)]
//       [nonsequences(%w : type, ...)]
//       [keep [k, ...]] [attributes {...}]
//       { ^bb0(...): ... scan.yield ... } -> (result types)
//
// Every group prints each item with its type (`%a : f32, %b : i32`). The
// parser also reads runs of items sharing one type list (`%a, %b : f32,
// i32`), the form sitsot and nonsequences were printed in before.
//===----------------------------------------------------------------------===//

static ParseResult parseTapList(OpAsmParser &parser,
                                SmallVectorImpl<int64_t> &taps) {
  return parser.parseCommaSeparatedList(
      OpAsmParser::Delimiter::Square,
      [&]() { return parser.parseInteger(taps.emplace_back()); });
}

namespace {
/// One parsed item of a group: the operand, its type and its tap lists.
struct ParsedItem {
  OpAsmParser::UnresolvedOperand operand;
  Type type;
  SmallVector<int64_t> taps, outTaps;
};
enum class TapSyntax { None, Optional, Required, InOut };
} // namespace

/// Parses the taps that follow an item's operand.
static ParseResult parseItemTaps(OpAsmParser &parser, TapSyntax syntax,
                                 ParsedItem &item) {
  switch (syntax) {
  case TapSyntax::None:
    return success();
  case TapSyntax::Optional:
    if (succeeded(parser.parseOptionalLSquare()))
      return failure(parser.parseCommaSeparatedList([&]() {
        return parser.parseInteger(item.taps.emplace_back());
      }) || parser.parseRSquare());
    item.taps.push_back(0);
    return success();
  case TapSyntax::Required:
    return parseTapList(parser, item.taps);
  case TapSyntax::InOut:
    return failure(parseTapList(parser, item.taps) || parser.parseArrow() ||
                   parseTapList(parser, item.outTaps));
  }
  llvm_unreachable("unknown tap syntax");
}

/// Parses `keyword(...)`, the items of one group. The printed form gives
/// each item its type: `sitsot(%a : f32, %b : tensor<4xf32>)`,
/// `sequences(%u[-1, 0] : tensor<?x8xf32>, %v : tensor<?xf64>)`. Runs of
/// items may also share one type list, `sitsot(%a, %b : f32, tensor<4xf32>)`
/// (the form the plain groups were once printed in), and the two forms mix.
static ParseResult parseGroup(OpAsmParser &parser, StringRef keyword,
                              TapSyntax syntax,
                              SmallVectorImpl<ParsedItem> &items) {
  if (failed(parser.parseOptionalKeyword(keyword)))
    return success();
  if (parser.parseLParen())
    return failure();
  if (succeeded(parser.parseOptionalRParen()))
    return success(); // an empty group, as `sequences()`: no items
  // The first item of the next run, read while looking for more types.
  std::optional<ParsedItem> carried;
  while (true) {
    // A run of items: operands (with their taps), then their types.
    size_t first = items.size();
    SMLoc runLoc = parser.getCurrentLocation();
    bool more = true;
    if (carried) {
      items.push_back(std::move(*carried));
      carried.reset();
      more = succeeded(parser.parseOptionalComma());
    }
    while (more) {
      ParsedItem &item = items.emplace_back();
      if (parser.parseOperand(item.operand) ||
          parseItemTaps(parser, syntax, item))
        return failure();
      more = succeeded(parser.parseOptionalComma());
    }
    if (parser.parseColon())
      return failure();
    SmallVector<Type> types;
    while (true) {
      if (parser.parseType(types.emplace_back()))
        return failure();
      if (succeeded(parser.parseOptionalRParen()))
        break;
      if (parser.parseComma())
        return failure();
      // After a comma: another type of this run, or the next run's operand.
      ParsedItem next;
      OptionalParseResult operand = parser.parseOptionalOperand(next.operand);
      if (operand.has_value()) {
        if (failed(*operand) || parseItemTaps(parser, syntax, next))
          return failure();
        carried = std::move(next);
        break;
      }
    }
    size_t count = items.size() - first;
    if (types.size() != count)
      return parser.emitError(runLoc)
             << "'" << keyword << "' lists " << count << " operands but "
             << types.size() << " types";
    for (size_t i = 0; i < count; ++i)
      items[first + i].type = types[i];
    if (!carried)
      return success();
  }
}

ParseResult ScanOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  OpAsmParser::UnresolvedOperand nSteps;
  if (parser.parseKeyword("steps") || parser.parseLParen() ||
      parser.parseOperand(nSteps) || parser.parseRParen() ||
      parser.resolveOperand(nSteps, b.getIndexType(), result.operands))
    return failure();

  if (succeeded(parser.parseOptionalKeyword("go_backwards")))
    result.addAttribute(getGoBackwardsAttrName(result.name), b.getUnitAttr());
  if (succeeded(parser.parseOptionalKeyword("until")))
    result.addAttribute(getUntilAttrName(result.name), b.getUnitAttr());

  SmallVector<ParsedItem> sequences, mitmot, mitsot, sitsot, nonSequences;
  SMLoc operandsLoc = parser.getCurrentLocation();
  if (parseGroup(parser, "sequences", TapSyntax::Optional, sequences) ||
      parseGroup(parser, "mitmot", TapSyntax::InOut, mitmot) ||
      parseGroup(parser, "mitsot", TapSyntax::Required, mitsot) ||
      parseGroup(parser, "sitsot", TapSyntax::None, sitsot) ||
      parseGroup(parser, "nonsequences", TapSyntax::None, nonSequences))
    return failure();

  for (ArrayRef<ParsedItem> group :
       {ArrayRef<ParsedItem>(sequences), ArrayRef<ParsedItem>(mitmot),
        ArrayRef<ParsedItem>(mitsot), ArrayRef<ParsedItem>(sitsot),
        ArrayRef<ParsedItem>(nonSequences)})
    for (const ParsedItem &item : group)
      if (parser.resolveOperand(item.operand, item.type, result.operands))
        return failure();

  auto tapLists = [&](ArrayRef<ParsedItem> items, bool out) {
    SmallVector<Attribute> lists;
    for (const ParsedItem &item : items)
      lists.push_back(b.getDenseI64ArrayAttr(out ? item.outTaps : item.taps));
    return b.getArrayAttr(lists);
  };
  result.addAttribute(getSequenceTapsAttrName(result.name),
                      tapLists(sequences, false));
  result.addAttribute(getMitmotInTapsAttrName(result.name),
                      tapLists(mitmot, false));
  result.addAttribute(getMitmotOutTapsAttrName(result.name),
                      tapLists(mitmot, true));
  result.addAttribute(getMitsotTapsAttrName(result.name),
                      tapLists(mitsot, false));
  result.addAttribute(
      getOperandSegmentSizesAttrName(result.name),
      b.getDenseI32ArrayAttr(
          {1, static_cast<int32_t>(sequences.size()),
           static_cast<int32_t>(mitmot.size()),
           static_cast<int32_t>(mitsot.size()),
           static_cast<int32_t>(sitsot.size()),
           static_cast<int32_t>(nonSequences.size())}));
  (void)operandsLoc;

  if (succeeded(parser.parseOptionalKeyword("keep"))) {
    SmallVector<int64_t> keep;
    if (parseTapList(parser, keep))
      return failure();
    result.addAttribute(getKeepAttrName(result.name),
                        b.getDenseI64ArrayAttr(keep));
  }

  // Inherent attributes written in `attributes {...}` must have the right
  // type: an ill-typed one would otherwise be dropped silently when the
  // attribute list is turned into the op's properties.
  SMLoc attrLoc = parser.getCurrentLocation();
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes) ||
      failed(verifyInherentAttrs(result.name, result.attributes,
                                 [&]() { return parser.emitError(attrLoc); })))
    return failure();

  Region *body = result.addRegion();
  if (parser.parseRegion(*body, /*arguments=*/{}))
    return failure();

  SmallVector<Type> resultTypes;
  if (parser.parseArrow() || parser.parseLParen())
    return failure();
  if (failed(parser.parseOptionalRParen())) {
    if (parser.parseTypeList(resultTypes) || parser.parseRParen())
      return failure();
  }
  result.addTypes(resultTypes);
  return success();
}

void ScanOp::print(OpAsmPrinter &p) {
  p << " steps(" << getNSteps() << ")";
  if (getGoBackwards())
    p << " go_backwards";
  if (getUntil())
    p << " until";

  auto printTaps = [&](ArrayRef<int64_t> taps) {
    p << "[";
    llvm::interleaveComma(taps, p);
    p << "]";
  };

  if (getNumSequences()) {
    p.printNewline();
    p << "    sequences(";
    llvm::interleaveComma(llvm::seq(0u, getNumSequences()), p, [&](unsigned i) {
      p << getSequences()[i];
      ArrayRef<int64_t> taps = getSequenceTapsAt(i);
      if (!(taps.size() == 1 && taps[0] == 0))
        printTaps(taps);
      p << " : " << getSequences()[i].getType();
    });
    p << ")";
  }
  if (getNumMitMot()) {
    p.printNewline();
    p << "    mitmot(";
    llvm::interleaveComma(llvm::seq(0u, getNumMitMot()), p, [&](unsigned i) {
      p << getMitmot()[i];
      printTaps(getMitMotInTapsAt(i));
      p << " -> ";
      printTaps(getMitMotOutTapsAt(i));
      p << " : " << getMitmot()[i].getType();
    });
    p << ")";
  }
  if (getNumMitSot()) {
    p.printNewline();
    p << "    mitsot(";
    llvm::interleaveComma(llvm::seq(0u, getNumMitSot()), p, [&](unsigned i) {
      p << getMitsotInits()[i];
      printTaps(getMitSotTapsAt(i));
      p << " : " << getMitsotInits()[i].getType();
    });
    p << ")";
  }
  auto printPlainGroup = [&](StringRef keyword, OperandRange values) {
    if (values.empty())
      return;
    p.printNewline();
    p << "    " << keyword << "(";
    llvm::interleaveComma(values, p,
                          [&](Value v) { p << v << " : " << v.getType(); });
    p << ")";
  };
  printPlainGroup("sitsot", getSitsotInits());
  printPlainGroup("nonsequences", getNonSequences());

  if (std::optional<ArrayRef<int64_t>> keep = getKeep()) {
    p << " keep ";
    printTaps(*keep);
  }

  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getOperandSegmentSizesAttrName(), getSequenceTapsAttrName(),
       getMitmotInTapsAttrName(), getMitmotOutTapsAttrName(),
       getMitsotTapsAttrName(), getKeepAttrName(), getGoBackwardsAttrName(),
       getUntilAttrName()});
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/true,
                /*printBlockTerminators=*/true);
  p << " -> (" << getResultTypes() << ")";
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

/// Checks that `taps` is a non-empty (unless `allowEmpty`) strictly
/// increasing list.
static LogicalResult verifyTapOrder(ScanOp op, StringRef what, unsigned i,
                                    StringRef attrName, ArrayRef<int64_t> taps,
                                    bool allowEmpty = false) {
  if (taps.empty() && !allowEmpty)
    return op.emitOpError() << what << " #" << i << ": " << attrName
                            << " must not be empty";
  for (unsigned j = 1; j < taps.size(); ++j)
    if (taps[j] <= taps[j - 1])
      return op.emitOpError()
             << what << " #" << i << ": " << attrName
             << " must be strictly increasing, got " << formatTaps(taps);
  return success();
}

/// Checks that a per-item taps attribute has one list per item of its group.
static LogicalResult verifyTapListCount(ScanOp op, StringRef attrName,
                                        ArrayAttr lists, StringRef group,
                                        unsigned numItems) {
  if (lists.size() != numItems)
    return op.emitOpError() << "'" << attrName << "' has " << lists.size()
                            << " tap lists but there are " << numItems << " "
                            << group;
  return success();
}

/// Rank-0 tensors are never used as a row or a state.
static LogicalResult verifyNotRank0(ScanOp op, StringRef what, unsigned i,
                                    Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    if (tensor.getRank() == 0)
      return op.emitOpError()
             << what << " #" << i << ": rank-0 tensor " << type
             << " is not allowed; use the scalar element type";
  if (isa<UnrankedTensorType>(type))
    return op.emitOpError() << what << " #" << i << ": unranked tensor "
                            << type << " is not allowed";
  return success();
}

/// Checks a value that stacks rows along its leading dimension.
static LogicalResult verifyStacked(ScanOp op, StringRef what, unsigned i,
                                   RankedTensorType type) {
  if (type.getRank() < 1)
    return op.emitOpError() << what << " #" << i
                            << ": must be a tensor of rank >= 1, got " << type;
  return success();
}

/// The type of one row of `type` (see ScanOp::getRowType), checked: an
/// encoding that is only valid for the full rank (e.g. a sparse one) cannot
/// be carried by the rows, and building such a type would assert.
static FailureOr<Type> verifyRowType(ScanOp op, StringRef what, unsigned i,
                                     RankedTensorType type) {
  if (type.getRank() == 1 || !type.getEncoding())
    return ScanOp::getRowType(type);
  auto row = RankedTensorType::getChecked(
      [&]() {
        return op.emitOpError() << what << " #" << i << ": the encoding of "
                                << type << " is not valid for its rows: ";
      },
      type.getShape().drop_front(), type.getElementType(), type.getEncoding());
  if (!row)
    return failure();
  return Type(row);
}

/// Checks that a buffer has enough rows for the tap window over `nSteps`
/// steps: `hi - lo + n_steps` (`hi - lo` when `n_steps` is not a constant).
/// Only a static leading size can be checked, but a window that no tensor can
/// hold (the count overflows int64_t) is an error for any buffer.
static LogicalResult verifyLength(ScanOp op, StringRef what, unsigned i,
                                  RankedTensorType type, int64_t lo, int64_t hi,
                                  std::optional<int64_t> nSteps,
                                  StringRef tapsText) {
  int64_t span = 0, need = 0;
  if (llvm::SubOverflow(hi, lo, span) ||
      llvm::AddOverflow(span, nSteps.value_or(0), need)) {
    InFlightDiagnostic diag = op.emitOpError()
                              << what << " #" << i << ": taps " << tapsText;
    if (nSteps)
      diag << " over " << *nSteps << " steps";
    diag << " need more rows than a tensor can have";
    return diag;
  }
  if (type.isDynamicDim(0))
    return success();
  int64_t rows = type.getDimSize(0);
  if (rows < need) {
    InFlightDiagnostic diag = op.emitOpError()
                              << what << " #" << i << ": has " << rows
                              << " rows but taps " << tapsText;
    if (nSteps)
      diag << " over " << *nSteps << " steps";
    diag << " need " << need;
    return diag;
  }
  return success();
}

/// Checks a stacked result `tensor<N x S>`: rank, row type and leading size.
static LogicalResult verifyStackedResult(ScanOp op, StringRef what, unsigned i,
                                         unsigned resultIdx, Type rowType) {
  Type type = op.getResult(resultIdx).getType();
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() < 1)
    return op.emitOpError() << what << " #" << i << ": result #" << resultIdx
                            << " must be a tensor of rank >= 1, got " << type;
  FailureOr<Type> resultRow = verifyRowType(op, what, i, tensor);
  if (failed(resultRow))
    return failure();
  if (rowType && *resultRow != rowType)
    return op.emitOpError() << what << " #" << i << ": result #" << resultIdx
                            << " has type " << type << " but its rows must be "
                            << rowType;
  int64_t keep = op.getKeepAt(resultIdx);
  int64_t rows = tensor.getDimSize(0);
  if (keep > 0) {
    if (rows != keep)
      return op.emitOpError()
             << what << " #" << i << ": result #" << resultIdx << " has keep "
             << keep << " so its type must have " << keep << " rows, got "
             << type;
    return success();
  }
  if (ShapedType::isDynamic(rows))
    return success();
  if (op.getUntil())
    return op.emitOpError()
           << what << " #" << i << ": result #" << resultIdx
           << " must have a dynamic leading size because the scan has "
              "'until', got "
           << type;
  std::optional<int64_t> nSteps = op.getStaticNumSteps();
  if (!nSteps)
    return op.emitOpError() << what << " #" << i << ": result #" << resultIdx
                            << " has static leading size " << rows
                            << " but n_steps is not a constant";
  if (rows != *nSteps)
    return op.emitOpError() << what << " #" << i << ": result #" << resultIdx
                            << " has " << rows << " rows but n_steps is "
                            << *nSteps;
  return success();
}

LogicalResult ScanOp::verify() {
  std::optional<int64_t> nSteps = getStaticNumSteps();
  if (nSteps && *nSteps < 0)
    return emitOpError() << "n_steps is " << *nSteps << ", must be >= 0";

  if (failed(verifyTapListCount(*this, "sequence_taps", getSequenceTaps(),
                                "sequences", getNumSequences())) ||
      failed(verifyTapListCount(*this, "mitmot_in_taps", getMitmotInTaps(),
                                "mitmot buffers", getNumMitMot())) ||
      failed(verifyTapListCount(*this, "mitmot_out_taps", getMitmotOutTaps(),
                                "mitmot buffers", getNumMitMot())) ||
      failed(verifyTapListCount(*this, "mitsot_taps", getMitsotTaps(),
                                "mitsot inits", getNumMitSot())))
    return failure();

  unsigned numWithInit = getNumMitMot() + getNumMitSot() + getNumSitSot();
  if (getNumResults() < numWithInit)
    return emitOpError() << "has " << getNumResults()
                         << " results but its mitmot, mitsot and sitsot "
                            "groups need at least "
                         << numWithInit;

  if (std::optional<ArrayRef<int64_t>> keep = getKeep()) {
    if (keep->size() != getNumResults())
      return emitOpError() << "'keep' has " << keep->size()
                           << " entries but the op has " << getNumResults()
                           << " results";
    for (auto [idx, k] : llvm::enumerate(*keep)) {
      if (k < 0)
        return emitOpError() << "'keep' entry #" << idx << " is " << k
                             << ", must be >= 0";
      if (k > 0 && idx < getNumMitMot())
        return emitOpError() << "mitmot #" << idx
                             << ": 'keep' must be 0 for a mitmot, got " << k;
    }
  }

  // Sequences.
  for (unsigned i = 0; i < getNumSequences(); ++i) {
    auto type = cast<RankedTensorType>(getSequences()[i].getType());
    ArrayRef<int64_t> taps = getSequenceTapsAt(i);
    if (failed(verifyStacked(*this, "sequence", i, type)) ||
        failed(verifyRowType(*this, "sequence", i, type)) ||
        failed(verifyTapOrder(*this, "sequence", i, "taps", taps)))
      return failure();
    auto [lo, hi] = tapWindow(taps);
    if (failed(verifyLength(*this, "sequence", i, type, lo, hi, nSteps,
                            formatTaps(taps))))
      return failure();
  }

  // Mitmot buffers.
  for (unsigned i = 0; i < getNumMitMot(); ++i) {
    auto type = cast<RankedTensorType>(getMitmot()[i].getType());
    ArrayRef<int64_t> in = getMitMotInTapsAt(i), out = getMitMotOutTapsAt(i);
    if (failed(verifyStacked(*this, "mitmot", i, type)) ||
        failed(verifyRowType(*this, "mitmot", i, type)) ||
        failed(verifyTapOrder(*this, "mitmot", i, "in taps", in,
                              /*allowEmpty=*/true)) ||
        failed(verifyTapOrder(*this, "mitmot", i, "out taps", out)))
      return failure();
    auto [lo, hi] = tapWindow(in, out);
    if (failed(verifyLength(*this, "mitmot", i, type, lo, hi, nSteps,
                            formatTaps(in) + " -> " + formatTaps(out))))
      return failure();
    if (getResult(i).getType() != type)
      return emitOpError() << "mitmot #" << i << ": result #" << i
                           << " has type " << getResult(i).getType()
                           << " but the buffer has type " << type;
  }

  // Mitsot inits.
  for (unsigned i = 0; i < getNumMitSot(); ++i) {
    auto type = cast<RankedTensorType>(getMitsotInits()[i].getType());
    ArrayRef<int64_t> taps = getMitSotTapsAt(i);
    if (failed(verifyStacked(*this, "mitsot", i, type)) ||
        failed(verifyTapOrder(*this, "mitsot", i, "taps", taps)))
      return failure();
    FailureOr<Type> row = verifyRowType(*this, "mitsot", i, type);
    if (failed(row))
      return failure();
    if (taps.back() >= 0)
      return emitOpError() << "mitsot #" << i
                           << ": taps must all be negative, got "
                           << formatTaps(taps);
    if (taps.front() == std::numeric_limits<int64_t>::min())
      return emitOpError() << "mitsot #" << i << ": taps " << formatTaps(taps)
                           << " need more init rows than a tensor can have";
    int64_t need = -taps.front();
    if (!type.isDynamicDim(0) && type.getDimSize(0) != need)
      return emitOpError() << "mitsot #" << i << ": init has "
                           << type.getDimSize(0) << " rows but taps "
                           << formatTaps(taps) << " need " << need;
    unsigned resultIdx = getNumMitMot() + i;
    if (failed(verifyStackedResult(*this, "mitsot", i, resultIdx, *row)))
      return failure();
  }

  // Sitsot inits.
  for (unsigned i = 0; i < getNumSitSot(); ++i) {
    Type type = getSitsotInits()[i].getType();
    if (failed(verifyNotRank0(*this, "sitsot", i, type)))
      return failure();
    unsigned resultIdx = getNumMitMot() + getNumMitSot() + i;
    if (failed(verifyStackedResult(*this, "sitsot", i, resultIdx, type)))
      return failure();
  }

  // Nitsot results: the row type is defined by the result itself.
  for (unsigned i = 0; i < getNumNitSot(); ++i)
    if (failed(verifyStackedResult(*this, "nitsot", i, numWithInit + i,
                                   /*rowType=*/nullptr)))
      return failure();

  return success();
}

/// Checks that the block arguments `args` of one item have type `expected`.
static LogicalResult verifyArgTypes(ScanOp op, StringRef what, unsigned i,
                                    Block::BlockArgListType args,
                                    Type expected) {
  for (BlockArgument arg : args)
    if (arg.getType() != expected)
      return op.emitOpError()
             << what << " #" << i << ": block argument #" << arg.getArgNumber()
             << " has type " << arg.getType() << " but must be " << expected;
  return success();
}

/// Checks that the yield operands `values` of one item have type `expected`.
static LogicalResult verifyYieldTypes(ScanOp op, StringRef what, unsigned i,
                                      ValueRange values, Type expected) {
  for (Value v : values)
    if (v.getType() != expected)
      return op.emitOpError() << what << " #" << i << ": yields a value of type "
                              << v.getType() << " but must yield " << expected;
  return success();
}

LogicalResult ScanOp::verifyRegions() {
  Block &block = getBodyBlock();
  if (!isa<YieldOp>(block.getTerminator()))
    return emitOpError() << "body must end with 'scan.yield'";

  unsigned expectedArgs = getExpectedNumBlockArgs();
  if (block.getNumArguments() != expectedArgs)
    return emitOpError() << "body has " << block.getNumArguments()
                         << " arguments but the operand groups need "
                         << expectedArgs
                         << " (one per sequence tap, mitmot in tap, mitsot "
                            "tap, sitsot and non-sequence)";

  unsigned expectedYields = getExpectedNumYields();
  unsigned numYields = getYieldOp()->getNumOperands();
  if (numYields != expectedYields)
    return emitOpError() << "'scan.yield' has " << numYields
                         << " operands but the outputs need " << expectedYields
                         << " (one per mitmot out tap, mitsot, sitsot and "
                            "nitsot"
                         << (getUntil() ? ", then the 'until' condition)"
                                        : ")");

  for (unsigned i = 0; i < getNumSequences(); ++i) {
    Type row = getRowType(cast<RankedTensorType>(getSequences()[i].getType()));
    if (failed(verifyArgTypes(*this, "sequence", i, getSequenceArgs(i), row)))
      return failure();
  }
  for (unsigned i = 0; i < getNumMitMot(); ++i) {
    Type row = getRowType(cast<RankedTensorType>(getMitmot()[i].getType()));
    if (failed(verifyArgTypes(*this, "mitmot", i, getMitMotArgs(i), row)) ||
        failed(verifyYieldTypes(*this, "mitmot", i, getMitMotYields(i), row)))
      return failure();
  }
  for (unsigned i = 0; i < getNumMitSot(); ++i) {
    Type row =
        getRowType(cast<RankedTensorType>(getMitsotInits()[i].getType()));
    if (failed(verifyArgTypes(*this, "mitsot", i, getMitSotArgs(i), row)) ||
        failed(verifyYieldTypes(*this, "mitsot", i, getMitSotYield(i), row)))
      return failure();
  }
  for (unsigned i = 0; i < getNumSitSot(); ++i) {
    Type state = getSitsotInits()[i].getType();
    BlockArgument arg = getSitSotArg(i);
    if (failed(verifyArgTypes(*this, "sitsot", i,
                              block.getArguments().slice(arg.getArgNumber(), 1),
                              state)) ||
        failed(verifyYieldTypes(*this, "sitsot", i, getSitSotYield(i), state)))
      return failure();
  }
  for (unsigned i = 0; i < getNumNitSot(); ++i) {
    unsigned resultIdx = getNumResults() - getNumNitSot() + i;
    Type row = getRowType(cast<RankedTensorType>(getResult(resultIdx).getType()));
    if (failed(verifyYieldTypes(*this, "nitsot", i, getNitSotYield(i), row)))
      return failure();
  }
  for (unsigned i = 0; i < getNumNonSequences(); ++i) {
    BlockArgument arg = getNonSequenceArg(i);
    if (failed(verifyArgTypes(*this, "non-sequence", i,
                              block.getArguments().slice(arg.getArgNumber(), 1),
                              getNonSequences()[i].getType())))
      return failure();
  }
  if (Value cond = getUntilCondition())
    if (!cond.getType().isInteger(1))
      return emitOpError() << "'until' condition (last 'scan.yield' operand) "
                              "must be i1, got "
                           << cond.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// scan.check
//===----------------------------------------------------------------------===//

LogicalResult CheckOp::verify() {
  // The codes __mlir_scan_fail reports (passes/include/Scan/ErrorCodes.h);
  // the others belong to the allocator and the assertion path.
  using Code = ScanErrorCode;
  switch (static_cast<Code>(getCode())) {
  case Code::NegativeSteps:
  case Code::SequenceTooShort:
  case Code::MitMotTooShort:
  case Code::MitSotInitRows:
  case Code::RowSizeMismatch:
  case Code::NitSotRowSize:
  case Code::BuilderValueError:
  case Code::BuilderIndexError:
    return success();
  default:
    return emitOpError() << "'code' " << getCode()
                         << " is not an error __mlir_scan_fail reports "
                            "(1-4, 8, 9, 100, 101)";
  }
}

LogicalResult CheckOp::canonicalize(CheckOp op, PatternRewriter &rewriter) {
  // A condition known to be false never fails.
  if (!matchPattern(op.getCondition(), m_Zero()))
    return failure();
  rewriter.eraseOp(op);
  return success();
}
