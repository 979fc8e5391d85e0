//===- ScanCallBlas.cpp - large matrix products through BLAS --------------===//
//
// The generated loops of a contraction are fast for the small products of a
// scan step but reach about half of a tuned BLAS on large ones (the
// gradient of `dot(state_below, W)`: 1584 x 128 x 512), which packs panels
// of its operands for the cache levels and the registers. This pass gives
// each f32/f64 matrix product a call of the run-time library's BLAS entry
// point (python/runtime/ScanBlas.cpp), taken when the product is large
// enough, and keeps the op itself for the calls the library declines (no
// BLAS loaded, a layout BLAS cannot take, a thin product).
//
//===----------------------------------------------------------------------===//

#include "Scan/LinalgWork.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANCALLBLAS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using scan::emitWork;
using scan::staticWork;

namespace {

/// A contraction `C += A B` as BLAS's `gemm` sees it: the loop dimensions
/// that are m (several: the leading dimensions of `dot(tensor3, matrix)`,
/// collapsed into one), n and k.
struct Product {
  SmallVector<unsigned> m, n;
  unsigned k;
};

/// Whether `op`'s body is `out + in0 * in1` (either operand order) on its
/// block arguments: the only body BLAS computes.
bool isMulAddBody(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  if (body->getOperations().size() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = body->getArgument(2);
  Value product = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  if ((add.getLhs() == acc) == (add.getRhs() == acc))
    return false;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value a = body->getArgument(0), b = body->getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// The operand positions `map` reads the loop dimensions `dims` at, if
/// they are consecutive and in the order of `dims`.
std::optional<ReassociationIndices> groupPositions(AffineMap map,
                                                   ArrayRef<unsigned> dims) {
  ReassociationIndices positions;
  for (unsigned dim : dims) {
    std::optional<unsigned> at =
        map.getResultPosition(getAffineDimExpr(dim, map.getContext()));
    if (!at || (!positions.empty() && int64_t(*at) != positions.back() + 1))
      return std::nullopt;
    positions.push_back(*at);
  }
  return positions;
}

/// `op` as a BLAS product, if it is one: two f32 or f64 inputs and one
/// output of one element type, on buffers, with one k dimension, m and n
/// dimensions and no batch dimension. Matrix-vector products (no m or no n)
/// stay loops: the generated ones stream the matrix as fast as BLAS's
/// `gemv` (W5's `h W`, 256 to 1024 wide: 5-10% faster in f64).
std::optional<Product> asProduct(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  Type element = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  if (!element.isF32() && !element.isF64())
    return std::nullopt;
  for (Value input : op.getDpsInputs())
    if (getElementTypeOrSelf(input.getType()) != element)
      return std::nullopt;
  if (!linalg::isaContractionOpInterface(op) || !isMulAddBody(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || !dims->batch.empty() || dims->k.size() != 1 ||
      dims->n.size() != 1 || dims->m.empty())
    return std::nullopt;
  // Every operand indexes each of its dimensions once, by one loop
  // dimension (no broadcast dimension a BLAS operand cannot have).
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return std::nullopt;
  Product p;
  p.n.assign(dims->n.begin(), dims->n.end());
  p.k = dims->k.front();
  // Several m dimensions: in the order the output has them, consecutive in
  // A and in C, both of them contiguous buffers (identity layouts), so that
  // they collapse into one.
  if (dims->m.size() > 1) {
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    SmallVector<unsigned> m(dims->m.begin(), dims->m.end());
    llvm::sort(m, [&](unsigned a, unsigned b) {
      return *outMap.getResultPosition(getAffineDimExpr(a, op.getContext())) <
             *outMap.getResultPosition(getAffineDimExpr(b, op.getContext()));
    });
    for (OpOperand *operand : {op.getDpsInputOperand(0), op.getDpsInitOperand(0)}) {
      auto type = cast<MemRefType>(operand->get().getType());
      if (!type.getLayout().isIdentity() ||
          !groupPositions(op.getMatchingIndexingMap(operand), m))
        return std::nullopt;
    }
    p.m = m;
  } else {
    p.m.assign(dims->m.begin(), dims->m.end());
  }
  return p;
}

/// `value` as a matrix whose dimensions are the loop dimension groups
/// `roles` (m, k; k, n; or m, n), in that order: the
/// positions of a group of several dimensions collapsed into one (its
/// operand is contiguous: asProduct), then a transposed view where the op
/// reads the operand transposed, cast to a fully dynamic strided layout
/// (the memref type the run-time entry points take).
Value logicalView(OpBuilder &b, Location loc, Value value, AffineMap map,
                  ArrayRef<ArrayRef<unsigned>> roles) {
  // Each role's positions, and the reassociation that collapses them.
  SmallVector<std::pair<ReassociationIndices, unsigned>> byPosition;
  for (auto [index, role] : llvm::enumerate(roles))
    byPosition.push_back({*groupPositions(map, role), unsigned(index)});
  llvm::sort(byPosition, [](const auto &x, const auto &y) {
    return x.first.front() < y.first.front();
  });
  bool collapse = llvm::any_of(byPosition, [](const auto &group) {
    return group.first.size() > 1;
  });
  if (collapse) {
    SmallVector<ReassociationIndices> groups;
    for (const auto &group : byPosition)
      groups.push_back(group.first);
    value = memref::CollapseShapeOp::create(b, loc, value, groups);
  }
  // After collapsing, role `index` is at the rank of its group.
  SmallVector<unsigned> positions(roles.size());
  for (auto [rank, group] : llvm::enumerate(byPosition))
    positions[group.second] = rank;
  auto type = cast<MemRefType>(value.getType());
  if (!llvm::is_sorted(positions)) {
    AffineMap permutation =
        AffineMap::getPermutationMap(positions, b.getContext());
    value = memref::TransposeOp::create(b, loc, value,
                                        AffineMapAttr::get(permutation));
    type = cast<MemRefType>(value.getType());
  }
  int64_t rank = type.getRank();
  auto layout = StridedLayoutAttr::get(
      b.getContext(), ShapedType::kDynamic,
      SmallVector<int64_t>(rank, ShapedType::kDynamic));
  auto dynamic = MemRefType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic),
                                 type.getElementType(), layout,
                                 type.getMemorySpace());
  if (dynamic == type)
    return value;
  return memref::CastOp::create(b, loc, dynamic, value);
}

/// The declaration of the run-time entry point `name` for `operands` and
/// `results` (created once per module).
func::FuncOp entryPoint(ModuleOp module, SymbolTable &symbols, StringRef name,
                        ValueRange operands, TypeRange results) {
  if (auto existing = symbols.lookup<func::FuncOp>(name))
    return existing;
  OpBuilder b(module.getBodyRegion());
  auto type = b.getFunctionType(TypeRange(operands), results);
  auto decl = func::FuncOp::create(b, module.getLoc(), name, type);
  decl.setPrivate();
  symbols.insert(decl);
  return decl;
}

/// The call of the run-time entry point `<prefix><f32|f64>` for `p` on views
/// of `op`'s operands, at `b`'s insertion point, then `extra` arguments.
/// `accumulate` (i32) is 0 when the output is to be overwritten (BLAS's
/// beta = 0) instead of added to.
func::CallOp emitCall(OpBuilder &b, Location loc, linalg::LinalgOp op,
                      const Product &p, StringRef prefix, Value accumulate,
                      ValueRange extra, TypeRange results, ModuleOp module,
                      SymbolTable &symbols) {
  OpOperand *in0 = op.getDpsInputOperand(0), *in1 = op.getDpsInputOperand(1);
  OpOperand *out = op.getDpsInitOperand(0);
  auto view = [&](OpOperand *operand, ArrayRef<ArrayRef<unsigned>> roles) {
    return logicalView(b, loc, operand->get(), op.getMatchingIndexingMap(operand),
                       roles);
  };
  ArrayRef<unsigned> m = p.m, n = p.n, k = p.k;
  // C (m x n) += A (m x k) B (k x n)
  SmallVector<Value> args{view(in0, {m, k}), view(in1, {k, n}),
                          view(out, {m, n})};
  std::string name = prefix.str();
  name += getElementTypeOrSelf(out->get().getType()).isF32() ? "f32" : "f64";
  args.push_back(accumulate);
  args.append(extra.begin(), extra.end());
  func::FuncOp callee = entryPoint(module, symbols, name, args, results);
  return func::CallOp::create(b, loc, callee, args);
}

/// The `linalg.fill` of 0 that writes `op`'s output right before it, if
/// any: BLAS then overwrites the output (beta = 0) instead of adding to the
/// zeros, and the fill runs only where the op's loops do.
linalg::FillOp zeroFillBefore(linalg::LinalgOp op) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || !fill.hasPureBufferSemantics() ||
      fill.getDpsInits()[0] != op.getDpsInits()[0])
    return nullptr;
  return matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ? fill : nullptr;
}

/// Guards `op` behind a call of the BLAS entry point for `p`, made only
/// for products large enough to repay BLAS's dispatch and packing (the
/// generated loops for the rest).
void callBlas(linalg::LinalgOp op, const Product &p, int64_t minWork,
              ModuleOp module, SymbolTable &symbols) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  linalg::FillOp fill = zeroFillBefore(op);
  if (fill)
    b.setInsertionPoint(fill);
  Value work = emitWork(b, loc, op);
  Value threshold = arith::ConstantIndexOp::create(b, loc, minWork);
  Value large = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, work,
                                      threshold);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value accumulate =
      fill ? zero : arith::ConstantIntOp::create(b, loc, 1, 32).getResult();
  auto ifLarge = scf::IfOp::create(
      b, loc, large,
      [&](OpBuilder &then, Location l) {
        Value done = emitCall(then, l, op, p, "mlir_scan_blas_gemm_",
                              accumulate, {}, {then.getI32Type()}, module,
                              symbols)
                         .getResult(0);
        scf::YieldOp::create(then, l, done);
      },
      [&](OpBuilder &otherwise, Location l) {
        scf::YieldOp::create(otherwise, l, zero);
      });
  Value declined = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         ifLarge.getResult(0), zero);
  auto fallback = scf::IfOp::create(b, loc, declined, /*withElseRegion=*/false);
  if (fill)
    fill->moveBefore(fallback.thenBlock()->getTerminator());
  op->moveBefore(fallback.thenBlock()->getTerminator());
}

/// Whether `op` runs in a loop of its function (a scan's steps).
bool insideLoop(Operation *op) {
  for (Operation *parent = op->getParentOp();
       parent && !isa<FunctionOpInterface>(parent);
       parent = parent->getParentOp())
    if (isa<LoopLikeOpInterface>(parent))
      return true;
  return false;
}

/// Replaces `op` (and the zero fill of its output right before it) by a
/// call of the run-time library's `mlir_scan_gemm_<t>`, which computes the
/// product through BLAS whatever its size and layout (on copies of the
/// operands BLAS cannot read in place), or without BLAS in loops of its own.
void callProduct(linalg::LinalgOp op, const Product &p, ModuleOp module,
                 SymbolTable &symbols) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  linalg::FillOp fill = zeroFillBefore(op);
  Value accumulate = arith::ConstantIntOp::create(b, loc, fill ? 0 : 1, 32);
  emitCall(b, loc, op, p, "mlir_scan_gemm_", accumulate, {}, {}, module,
           symbols);
  if (fill)
    fill->erase();
  op->erase();
}

struct ScanCallBlasPass : scan::impl::ScanCallBlasBase<ScanCallBlasPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, Product>> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<func::FuncOp>())
        return;
      std::optional<Product> p = asProduct(op);
      if (!p)
        return;
      if (std::optional<int64_t> work = staticWork(op); work && *work < minWork)
        return;
      candidates.push_back({op, *p});
    });
    SymbolTable symbols(module);
    for (auto &[op, p] : candidates) {
      // A product outside the program's loops runs once per call, where a
      // call of BLAS costs nothing next to the product; its generated loops
      // were most of the compile time of a program of products (the W8
      // gradient: 2,050 of its 2,620 lines of LLVM dialect, 75% of its
      // lowering).
      if (!keepLoops && !insideLoop(op)) {
        callProduct(op, p, module, symbols);
        ++numLibraryProducts;
      } else {
        callBlas(op, p, minWork, module, symbols);
      }
      ++numCalls;
    }
  }
};

} // namespace
