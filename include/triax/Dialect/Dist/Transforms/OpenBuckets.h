//===- OpenBuckets.h - Buckets of the data-parallel collectives -*- C++ -*-===//
//
// dist-data-parallel and dist-zero send their gradients and parameters in
// buckets, each one message. Both fill them the same way: keyed, so that a
// member joins its key's bucket whatever was added in between.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_OPENBUCKETS_H
#define TRIAX_DIALECT_DIST_TRANSFORMS_OPENBUCKETS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::dist {

/// The open buckets, one per key: the block of ops the members are in,
/// their group's axes and their element type (one message has one group
/// and one type). A member joins its key's bucket whatever was added in
/// between (a MoE layer's experts and the rest of the layer fill two
/// buckets side by side); the pass closes a bucket when it holds its cap,
/// the others at the end, in the order they were opened.
template <typename Member> struct OpenBuckets {
  struct Bucket {
    Block *block;
    ArrayAttr axes;
    Type element;
    SmallVector<Member> members;
    double bytes = 0;
    /// The last op the previous bucket of this key placed (dist-zero's
    /// stage 2: its last accumulation): the next one goes after it.
    Operation *previous = nullptr;
  };
  SmallVector<Bucket> open;

  /// The open bucket of a key (a reference valid until the next call).
  Bucket &of(Block *block, ArrayAttr axes, Type element) {
    for (Bucket &b : open)
      if (b.block == block && b.axes == axes && b.element == element)
        return b;
    open.push_back(Bucket{block, axes, element, {}, 0, nullptr});
    return open.back();
  }
};

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_OPENBUCKETS_H
