//===- ScanDialect.cpp - The Scan dialect ---------------------------------===//

#include "Scan/ScanDialect.h"
#include "Scan/ScanOps.h"

using namespace mlir;
using namespace mlir::scan;

#include "Scan/ScanOpsDialect.cpp.inc"

void ScanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Scan/ScanOps.cpp.inc"
      >();
}
