//===- ScanOps.h - scan.scan and scan.yield ---------------------*- C++ -*-===//

#ifndef SCAN_SCANOPS_H
#define SCAN_SCANOPS_H

#include "Scan/ScanDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace scan {
/// The resource `scan.check` writes: the error record of the running call.
/// No memory op touches it, so checks are ordered only with one another
/// (and with ops of unknown effects, such as calls).
struct ScanCheckResource
    : public SideEffects::Resource::Base<ScanCheckResource> {
  llvm::StringRef getName() final { return "<scan check>"; }
};
} // namespace scan
} // namespace mlir

#define GET_OP_CLASSES
#include "Scan/ScanOps.h.inc"

#endif // SCAN_SCANOPS_H
