//===- shard.cpp - Where the pieces of a parameter live ---------*- C++ -*-===//
//
// Tensor-parallel blocks and ZeRO chunks (trx_param_desc's split_* and
// zero_* fields): the sizes of each rank's buffers, and the conversions
// between a rank's pieces and the whole tensor that initialization and
// checkpoints use (checkpoints hold whole tensors, so a checkpoint written
// by one mesh resumes on any other). The rank's buffers are trx_alloc blocks
// (device memory on the CUDA target): they are read with trx_copy_to_host
// and written with trx_copy_to_device; the whole tensors and everything in
// between are host memory.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>
#include <cstring>

namespace triax::rt {

std::vector<int32_t> axesOfMask(uint64_t mask) {
  std::vector<int32_t> axes;
  for (int32_t i = 0; i < 64; ++i)
    if (mask & (uint64_t(1) << i))
      axes.push_back(i);
  return axes;
}

/// Size of and position in the group of `axes` (1 and 0 without MPI).
static bool groupOf(const std::vector<int32_t> &axes, int64_t &size,
                    int64_t &pos, std::string &msg) {
  size = 1;
  pos = 0;
  if (axes.empty() || !trx_dist_initialized()) {
    for (int32_t a : axes)
      if (trx_dist_axis_size(a) > 1) {
        msg = "the mesh is not initialized";
        return false;
      }
    return true;
  }
  const trx_dist_group *g = trx_dist_comm(axes.data(), int32_t(axes.size()));
  if (!g) {
    msg = trx_last_error();
    return false;
  }
  size = trx_dist_group_size(g);
  pos = trx_dist_group_position(g);
  return true;
}

bool computeParamLayout(const trx_param_desc &p, ParamLayout &l,
                        std::string &msg) {
  auto bad = [&](const std::string &what) {
    msg = "parameter '" + std::string(p.name) + "': " + what;
    return false;
  };
  l = ParamLayout{};
  l.rank = p.rank;
  for (int32_t d = 0; d < p.rank; ++d)
    l.global[d] = l.local[d] = p.shape[d];
  if (p.split_axes) {
    if (p.split_dim < 0 || p.split_dim >= p.rank)
      return bad("split dimension " + std::to_string(p.split_dim) +
                 " is out of range");
    l.splitDim = p.split_dim;
    l.splitAxes = axesOfMask(p.split_axes);
    if (!groupOf(l.splitAxes, l.splitParts, l.splitPos, msg))
      return bad(msg);
    if (p.shape[p.split_dim] % l.splitParts != 0)
      return bad("dimension " + std::to_string(p.split_dim) + " of size " +
                 std::to_string(p.shape[p.split_dim]) +
                 " does not split into " + std::to_string(l.splitParts));
    l.local[p.split_dim] /= l.splitParts;
  }
  l.numel = l.rank == 2 ? l.local[0] * l.local[1] : l.local[0];
  l.chunk = l.numel;
  if (p.zero_stage != 0) {
    if (p.zero_stage < 1 || p.zero_stage > 3 || !p.zero_axes)
      return bad("invalid ZeRO stage " + std::to_string(p.zero_stage));
    l.zeroStage = p.zero_stage;
    l.zeroAxes = axesOfMask(p.zero_axes);
    if (!groupOf(l.zeroAxes, l.zeroParts, l.zeroPos, msg))
      return bad(msg);
    l.chunk = trx_zero_chunk(l.numel, l.zeroParts);
  }
  if (p.stages != 0) {
    if (!p.stage_axes)
      return bad("pipeline stages without a stage axis");
    l.stageAxes = axesOfMask(p.stage_axes);
    int64_t stages = 0, stage = 0;
    if (!groupOf(l.stageAxes, stages, stage, msg))
      return bad(msg);
    if (stages < 64 && (uint64_t(p.stages) >> stages) != 0)
      return bad("lives on stage " +
                 std::to_string(31 - __builtin_clz(p.stages)) + " of " +
                 std::to_string(stages));
    l.present = (p.stages >> stage) & 1u;
    l.stageRoot = __builtin_ctz(p.stages);
  }
  return true;
}

bool ParamLayout::sharded(int kind) const {
  switch (kind) {
  case TRX_STATE_EXP_AVG:
  case TRX_STATE_EXP_AVG_SQ:
    return zeroStage >= 1;
  case TRX_STATE_GRAD:
    return zeroStage >= 2;
  default:
    return zeroStage >= 3;
  }
}

int64_t ParamLayout::allocCount(int kind) const {
  if (!present)
    return 0;
  if (sharded(kind))
    return chunk;
  // A replicated parameter under ZeRO 1/2 is gathered in place from chunks.
  if (kind == TRX_STATE_PARAM && zeroStage != 0)
    return chunk * zeroParts;
  return numel;
}

/// The whole tensor from this rank's stage (which holds the parameter).
static void gatherOnStage(const ParamLayout &l, int kind, const float *buf,
                          float *whole);

void gatherWhole(const ParamLayout &l, int kind, const float *buf,
                 float *whole) {
  if (l.present)
    gatherOnStage(l, kind, buf, whole);
  // 3. From the lowest stage that holds it to every stage.
  if (!l.stageAxes.empty())
    trx_broadcast(whole, l.global[0] * (l.rank == 2 ? l.global[1] : 1),
                  int32_t(l.stageRoot), l.stageAxes.data(),
                  int32_t(l.stageAxes.size()));
}

static void gatherOnStage(const ParamLayout &l, int kind, const float *buf,
                          float *whole) {
  // 0. This rank's piece on the host.
  std::vector<float> piece(size_t(l.sharded(kind) ? l.chunk : l.numel));
  trx_copy_to_host(piece.data(), buf, piece.size() * sizeof(float));
  // 1. This rank's tensor-parallel block, whole.
  std::vector<float> block;
  const float *local = piece.data();
  if (l.sharded(kind)) {
    block.resize(size_t(l.chunk * l.zeroParts));
    trx_all_gather(piece.data(), l.chunk, block.data(), l.zeroAxes.data(),
                   int32_t(l.zeroAxes.size()));
    local = block.data();
  }
  if (l.splitDim < 0) {
    std::copy(local, local + l.numel, whole);
    return;
  }
  // 2. The blocks of the split group, in group order, then placed.
  std::vector<float> blocks(size_t(l.numel * l.splitParts));
  trx_all_gather(local, l.numel, blocks.data(), l.splitAxes.data(),
                 int32_t(l.splitAxes.size()));
  if (l.splitDim == 0) {
    std::copy(blocks.begin(), blocks.end(), whole);
    return;
  }
  // Columns of a 2-D parameter: block b is rows x (cols / parts).
  const int64_t rows = l.local[0], cols = l.local[1];
  for (int64_t b = 0; b < l.splitParts; ++b)
    for (int64_t r = 0; r < rows; ++r)
      std::copy(&blocks[size_t(b * l.numel + r * cols)],
                &blocks[size_t(b * l.numel + (r + 1) * cols)],
                whole + r * l.global[1] + b * cols);
}

void scatterWhole(const ParamLayout &l, int kind, const float *whole,
                  float *buf) {
  if (!l.present)
    return;
  std::vector<float> block(size_t(l.numel));
  if (l.splitDim < 0) {
    std::copy(whole, whole + l.numel, block.begin());
  } else if (l.splitDim == 0) {
    std::copy(whole + l.splitPos * l.numel, whole + (l.splitPos + 1) * l.numel,
              block.begin());
  } else {
    const int64_t rows = l.local[0], cols = l.local[1];
    for (int64_t r = 0; r < rows; ++r)
      std::copy(whole + r * l.global[1] + l.splitPos * cols,
                whole + r * l.global[1] + (l.splitPos + 1) * cols,
                block.begin() + r * cols);
  }
  // The buffer's contents on the host (padding zeroed), then one copy.
  std::vector<float> piece(size_t(l.allocCount(kind)), 0.0f);
  if (l.sharded(kind)) {
    int64_t begin = std::min(l.numel, l.zeroPos * l.chunk);
    int64_t end = std::min(l.numel, begin + l.chunk);
    std::copy(block.begin() + begin, block.begin() + end, piece.begin());
  } else {
    std::copy(block.begin(), block.end(), piece.begin());
  }
  trx_copy_to_device(buf, piece.data(), piece.size() * sizeof(float));
}

} // namespace triax::rt
