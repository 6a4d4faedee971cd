//===- InitAll.h - Register Triax's dialects and passes ----------*- C++
//-*-===//

#ifndef TRIAX_INITALL_H
#define TRIAX_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace triax {
/// Triax's dialects and the upstream dialects its IR and passes use.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Every Triax pass and pipeline.
void registerAllPasses();
} // namespace triax

#endif // TRIAX_INITALL_H
