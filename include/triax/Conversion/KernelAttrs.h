//===- KernelAttrs.h - Attributes for the kernel report ---------*- C++ -*-===//
//
// Names of discardable attributes the kernel lowering puts on its IR for a
// later reader (the kernel report). Header-only, so the cost model needs no
// link to the lowering's library.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_CONVERSION_KERNELATTRS_H
#define TRIAX_CONVERSION_KERNELATTRS_H

#include "llvm/ADT/StringRef.h"

namespace triax {

/// An i64 attribute on an scf.for whose bounds are data (the embedding
/// gradient's loop over a slice's listed tokens): the trip count the kernel
/// report assumes for it, the lowering's expectation on average.
inline constexpr llvm::StringLiteral kExpectedTripsAttr =
    "triax_expected_trips";

} // namespace triax

#endif // TRIAX_CONVERSION_KERNELATTRS_H
