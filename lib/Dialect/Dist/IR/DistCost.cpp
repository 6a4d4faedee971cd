//===- DistCost.cpp - What the collectives send -------------------------===//
//
// CostOpInterface::getCollectives of the dist ops: the collective each one
// runs over its group and the buffer its byte formula takes ([C1]/[C2],
// docs/cost-model.md). The cost model (ModuleFacts) asks the ops; it names
// none of them. Ops that move nothing (copy_to_group, whose backward is an
// all_reduce; axis_index; sharding_constraint; shard_sequence) take the
// interface's default.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Dist/IR/Dist.h"

using namespace mlir;
using namespace mlir::dist;
using mlir::triax::Collective;

void AllReduceOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(
      Collective::on(Collective::Kind::AllReduce, getInput().getType()));
}

// An all-gather's formula takes the block each member contributes: the
// input; a reduce-scatter's the block each member keeps: the result.
void AllGatherOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(
      Collective::on(Collective::Kind::AllGather, getInput().getType()));
}

void AllGatherFlatOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(
      Collective::on(Collective::Kind::AllGather, getInput().getType()));
}

// An all-to-all's formula takes the whole input: (g - 1) / g of it leaves
// the member.
void AllToAllOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(
      Collective::on(Collective::Kind::AllToAll, getInput().getType()));
}

void ReduceScatterOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(
      Collective::on(Collective::Kind::ReduceScatter, getResult().getType()));
}

void ReduceScatterFlatOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(
      Collective::on(Collective::Kind::ReduceScatter, getResult().getType()));
}

/// The parameter's chunks: each member contributes its ZeRO chunk.
void AllGatherParamOp::getCollectives(SmallVectorImpl<Collective> &out) {
  Collective c{Collective::Kind::AllGather};
  c.params.push_back(getParamAttr());
  c.zeroChunk = true;
  out.push_back(c);
}

/// One packed all_reduce of the bucket, at the accumulation boundary only:
/// once per step whatever the micro-batches.
void AllReduceGradsOp::getCollectives(SmallVectorImpl<Collective> &out) {
  Collective c{Collective::Kind::AllReduce};
  for (Attribute param : getParams())
    c.params.push_back(cast<SymbolRefAttr>(param));
  c.oncePerStep = true;
  out.push_back(c);
}

void SendOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(Collective::on(Collective::Kind::Send, getInput().getType()));
}

void RecvOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(Collective::on(Collective::Kind::Recv, getResult().getType()));
}
