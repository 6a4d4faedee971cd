//===- TriaxSharding.cpp - How the layer ops split ------------------------===//
//
// ShardingRuleOpInterface of the Triax ops: what each does with a member's
// slice of the sequence (dist-context-parallel, sequence parallelism) or of
// the features (the ops between dist-tensor-parallel's column and row
// linears). The elementwise ops take the interface's default (local along
// both); an op not listed here is refused along both.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/IR/Triax.h"

using namespace mlir;
using namespace mlir::triax;

namespace {
/// Per-token ops: local along the sequence (their parameters are read
/// whole by every token); `features` says why they are not local along
/// the features.
SplitRule perToken(SplitDim dim, StringRef features) {
  if (dim == SplitDim::Feature)
    return SplitRule::refused(features);
  return SplitRule::local();
}
} // namespace

SplitRule EmbeddingOp::getSplitRule(SplitDim dim) {
  return perToken(dim,
                  "an embedding's table is split along the vocabulary (its "
                  "rows, dist-tensor-parallel's vocab-parallel lookup), not "
                  "along its features");
}

SplitRule LinearOp::getSplitRule(SplitDim dim) {
  return perToken(dim,
                  "a linear reads every input feature: dist-tensor-parallel "
                  "splits it as the column or row half of a pair");
}

SplitRule LayerNormOp::getSplitRule(SplitDim dim) {
  return perToken(dim,
                  "layer_norm's statistics are over the whole last dimension");
}

SplitRule RMSNormOp::getSplitRule(SplitDim dim) {
  return perToken(dim, "rms_norm's statistic is over the whole last dimension");
}

SplitRule BiasAddOp::getSplitRule(SplitDim dim) {
  return perToken(dim, "bias_add adds the whole bias vector");
}

// Along the sequence every query attends to the keys and values of all the
// earlier tokens: they are gathered whole, or passed around the ring block
// by block (ring attention). Along the features a member computes whole
// heads (its queries' columns and the key/value heads they read).
SplitRule AttentionOp::getSplitRule(SplitDim dim) {
  if (dim == SplitDim::Sequence)
    return SplitRule::gather({getKeyMutable().getOperandNumber(),
                              getValueMutable().getOperandNumber()},
                             /*ring=*/true);
  return SplitRule::heads();
}

LogicalResult AttentionOp::verifySplit(SplitDim dim, int64_t n, StringRef pass,
                                       StringRef axis) {
  if (dim != SplitDim::Feature)
    return success();
  if (getHeads() % n != 0)
    return emitOpError(pass) << ": heads " << getHeads()
                             << " is not divisible by " << axis << "=" << n;
  if (getNumKVHeads() % n != 0)
    return emitOpError(pass) << ": kv_heads " << getNumKVHeads()
                             << " is not divisible by " << axis << "=" << n;
  return success();
}

void AttentionOp::applySplit(SplitDim dim, int64_t n, FlatSymbolRefAttr mesh,
                             ArrayAttr axes) {
  if (dim == SplitDim::Sequence) {
    // The keys and values are the group's; the causal mask needs where
    // this member's queries sit in the whole sequence.
    setMeshAttr(mesh);
    setAxesAttr(axes);
    return;
  }
  setHeads(getHeads() / n);
  if (getKvHeads())
    setKvHeads(*getKvHeads() / n);
}

void AttentionOp::applyRingSplit(int64_t n, FlatSymbolRefAttr mesh,
                                 ArrayAttr axes) {
  applySplit(SplitDim::Sequence, n, mesh, axes);
  setRing(true);
}

// Per token (its positions come along as an operand), per head.
SplitRule RopeOp::getSplitRule(SplitDim dim) {
  if (dim == SplitDim::Sequence)
    return SplitRule::local();
  return SplitRule::heads();
}

LogicalResult RopeOp::verifySplit(SplitDim dim, int64_t n, StringRef pass,
                                  StringRef axis) {
  if (dim == SplitDim::Feature && getHeads() % n != 0)
    return emitOpError(pass) << ": heads " << getHeads()
                             << " is not divisible by " << axis << "=" << n;
  return success();
}

void RopeOp::applySplit(SplitDim dim, int64_t n, FlatSymbolRefAttr, ArrayAttr) {
  if (dim == SplitDim::Feature)
    setHeads(getHeads() / n);
}

SplitRule CrossEntropyOp::getSplitRule(SplitDim dim) {
  if (dim == SplitDim::Sequence)
    return SplitRule::partialMean();
  return SplitRule::refused(
      "the loss's vocabulary is split with the LM head's (vocab-parallel, "
      "dist-tensor-parallel), not as an op between a column and a row "
      "linear");
}
