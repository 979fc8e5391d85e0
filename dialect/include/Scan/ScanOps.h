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

#define GET_OP_CLASSES
#include "Scan/ScanOps.h.inc"

#endif // SCAN_SCANOPS_H
