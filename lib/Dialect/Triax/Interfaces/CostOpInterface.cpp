//===- CostOpInterface.cpp ------------------------------------------------===//

#include "triax/Dialect/Triax/Interfaces/CostOpInterface.h"

#include "mlir/IR/BuiltinTypes.h"

mlir::triax::Collective mlir::triax::Collective::on(Kind kind, Type type) {
  Collective c{kind};
  auto shaped = dyn_cast<ShapedType>(type);
  Type element = shaped ? shaped.getElementType() : type;
  c.elements = !shaped                   ? 1
               : shaped.hasStaticShape() ? shaped.getNumElements()
                                         : 0;
  c.elemBytes = element.isIntOrFloat()
                    ? int64_t(element.getIntOrFloatBitWidth() + 7) / 8
                    : 8;
  return c;
}

#include "triax/Dialect/Triax/Interfaces/CostOpInterface.cpp.inc"

mlir::triax::ResultStorage mlir::triax::getResultStorage(Operation *op,
                                                         unsigned index) {
  if (auto cost = dyn_cast<CostOpInterface>(op))
    return cost.getResultStorage(index);
  return {};
}
