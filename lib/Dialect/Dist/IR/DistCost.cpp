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

#include "mlir/IR/TypeUtilities.h"

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

// The group-major copies the kernel conversion makes around the runtime's
// flat collectives (CollectiveKernels.cpp) live while the op runs, beside
// its operand and result: an all_gather's gathered blocks (the result's
// size) before they are unpacked; a reduce_scatter's packed input; an
// all_to_all's packed input and its received slices (the input's size
// each).
static int64_t bytesOf(RankedTensorType type) {
  return type.getNumElements() *
         int64_t(llvm::divideCeil(type.getElementTypeBitWidth(), 8));
}

bool mlir::dist::isGroupMajor(RankedTensorType type, int64_t dim, int64_t n) {
  if (n == 1)
    return true;
  for (int64_t d = 0; d < dim; ++d)
    if (type.getDimSize(d) != 1)
      return false;
  return true;
}

int64_t AllGatherOp::getScratchBytes() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  int64_t n = out.getDimSize(getDim()) / in.getDimSize(getDim());
  return isGroupMajor(in, getDim(), n) ? 0 : bytesOf(out);
}

int64_t ReduceScatterOp::getScratchBytes() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  int64_t n = in.getDimSize(getDim()) / out.getDimSize(getDim());
  return isGroupMajor(in, getDim(), n) ? 0 : bytesOf(in);
}

// A bucket of several tensors packs this member's chunks (k elements) and
// receives the members' packs (g k) before copying the results out of
// them (ZeroKernels.cpp); one tensor is gathered straight into its result.
int64_t AllGatherBucketOp::getScratchBytes() {
  if (getInputs().size() < 2)
    return 0;
  int64_t part = 0;
  for (Value chunk : getInputs())
    part += bytesOf(cast<RankedTensorType>(chunk.getType()));
  MeshOp mesh = lookupMesh(*this, getMeshAttr());
  return mesh ? part * (1 + mesh.getGroupSize(getAxes())) : 0;
}

int64_t AllToAllOp::getScratchBytes() {
  RankedTensorType in = getInput().getType();
  MeshOp mesh = lookupMesh(*this, getMeshAttr());
  if (!mesh)
    return 0;
  int64_t split = getSplitDim(), concat = getConcatDim();
  int64_t n = mesh.getGroupSize(getAxes());
  SmallVector<int64_t> chunk(in.getShape());
  chunk[split] /= n;
  int64_t bytes = isGroupMajor(in, split, n) ? 0 : bytesOf(in);
  if (!isGroupMajor(in.clone(chunk), concat, n))
    bytes += bytesOf(in);
  return bytes;
}

void ReduceScatterFlatOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(
      Collective::on(Collective::Kind::ReduceScatter, getResult().getType()));
}

/// The bucket's chunks: each member contributes its ZeRO chunk of every
/// parameter, in one message.
void AllGatherParamsOp::getCollectives(SmallVectorImpl<Collective> &out) {
  Collective c{Collective::Kind::AllGather};
  for (Attribute param : getParams())
    c.params.push_back(cast<SymbolRefAttr>(param));
  c.zeroChunk = true;
  out.push_back(c);
}

/// The 1-D concatenation of `chunks` (a bucket's message part).
static RankedTensorType concatenation(ValueRange chunks) {
  int64_t elements = 0;
  for (Value chunk : chunks)
    elements += cast<RankedTensorType>(chunk.getType()).getNumElements();
  return RankedTensorType::get({elements},
                               getElementTypeOrSelf(chunks.front().getType()));
}

/// One reduce-scatter whose chunk is the concatenation of the results.
void ReduceScatterBucketOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(Collective::on(Collective::Kind::ReduceScatter,
                               concatenation(getResults())));
}

/// One all-gather whose block is the concatenation of the inputs (this
/// member's chunks).
void AllGatherBucketOp::getCollectives(SmallVectorImpl<Collective> &out) {
  out.push_back(
      Collective::on(Collective::Kind::AllGather, concatenation(getInputs())));
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
