//===- shard.cpp - Where the pieces of a parameter live ---------*- C++ -*-===//
//
// Tensor-parallel blocks and ZeRO chunks (trx_param_desc's split_* and
// zero_* fields): the sizes of each rank's buffers, and the conversions
// between a rank's pieces and the whole tensor that initialization and
// checkpoints use (checkpoints hold whole tensors, so a checkpoint written
// by one mesh resumes on any other). The rank's buffers are trx_alloc blocks
// (device memory on the CUDA target): they are read with trx_copy_to_host
// and written with trx_copy_to_device; the whole tensors and everything in
// between are host memory. The whole tensors are f32; a bf16 parameter's
// bf16 parameter buffer is written (rounded) from its f32 master copy's.
//
//===----------------------------------------------------------------------===//

#include "bf16.h"
#include "internal.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

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
  if (p.dtype != TRX_F32 && p.dtype != TRX_BF16)
    return bad("unknown dtype " + std::to_string(p.dtype) +
               " (parameters are f32 (0) or bf16 (1))");
  l.dtype = p.dtype;
  l.rank = p.rank;
  for (int32_t d = 0; d < p.rank; ++d)
    l.global[d] = l.local[d] = p.shape[d];
  // Not split: one block, the state's rows x columns.
  l.dims[1] = l.blockDims[1] = l.rank == 2 ? p.shape[0] : 1;
  l.dims[2] = l.blockDims[2] = p.shape[p.rank - 1];
  if (p.split_rank != 0) {
    // The declared shape, right-aligned in dims, must hold the same
    // elements as the state's rows x columns, its last dimension the
    // columns.
    if (p.split_rank < 1 || p.split_rank > 3)
      return bad("split rank " + std::to_string(p.split_rank) +
                 " is not 1 to 3");
    l.splitRank = p.split_rank;
    const int32_t lead = 3 - p.split_rank;
    std::fill(l.dims, l.dims + 3, 1);
    std::fill(l.blockDims, l.blockDims + 3, 1);
    int64_t numel = 1;
    for (int32_t d = 0; d < p.split_rank; ++d) {
      if (p.split_shape[d] <= 0)
        return bad("split shape dimension " + std::to_string(d) +
                   " is not positive");
      l.dims[lead + d] = l.blockDims[lead + d] = p.split_shape[d];
      numel *= p.split_shape[d];
    }
    if (numel != l.global[0] * (l.rank == 2 ? l.global[1] : 1) ||
        (l.rank == 2 && l.dims[2] != l.global[1]) ||
        (l.rank == 1 && p.split_rank != 1))
      return bad("split shape does not view the parameter's " +
                 std::string(l.rank == 2 ? "rows x columns" : "elements"));
    for (int32_t d = 0; d < p.split_rank; ++d) {
      if (!p.split_axes[d])
        continue;
      ParamLayout::Split split{lead + d, axesOfMask(p.split_axes[d]), 1, 0};
      if (!groupOf(split.axes, split.parts, split.pos, msg))
        return bad(msg);
      if (p.split_shape[d] % split.parts != 0)
        return bad("dimension " + std::to_string(d) + " of size " +
                   std::to_string(p.split_shape[d]) + " does not split into " +
                   std::to_string(split.parts));
      l.blockDims[split.dim] /= split.parts;
      l.splits.push_back(std::move(split));
    }
    // The block's state: rows x columns of its own dimensions.
    if (l.rank == 2) {
      l.local[0] = l.blockDims[0] * l.blockDims[1];
      l.local[1] = l.blockDims[2];
    } else {
      l.local[0] = l.blockDims[2];
    }
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
  case TRX_STATE_MASTER:
    return zeroStage >= 1;
  case TRX_STATE_GRAD:
    return zeroStage >= 2;
  default:
    return zeroStage >= 3;
  }
}

int64_t ParamLayout::allocCount(int kind) const {
  if (!present || !hasBuffer(kind))
    return 0;
  if (sharded(kind))
    return chunk;
  // A replicated parameter under ZeRO 1/2 is gathered in place from chunks.
  if (kind == TRX_STATE_PARAM && zeroStage != 0)
    return chunk * zeroParts;
  return numel;
}

/// Calls copyRow(w, b, n) for each row of the block of dims `block` at
/// `offset` in a row-major tensor of dims `whole`: its n elements start at
/// element w of the tensor and at element b of the row-major block.
template <typename CopyRow>
static void forEachBlockRow(const int64_t whole[3], const int64_t block[3],
                            const int64_t offset[3], CopyRow copyRow) {
  for (int64_t i = 0; i < block[0]; ++i)
    for (int64_t j = 0; j < block[1]; ++j)
      copyRow(((offset[0] + i) * whole[1] + offset[1] + j) * whole[2] +
                  offset[2],
              (i * block[1] + j) * block[2], block[2]);
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
  // 2. Whole along one split dimension after the other: the members of a
  // split's group differ only on its axes, so they hold the same blocks of
  // the other dimensions; gathered in group order, block b goes to b.
  std::vector<float> current(local, local + l.numel), blocks, next;
  int64_t dims[3] = {l.blockDims[0], l.blockDims[1], l.blockDims[2]};
  for (const ParamLayout::Split &split : l.splits) {
    if (split.parts == 1)
      continue;
    const int64_t count = int64_t(current.size());
    blocks.resize(size_t(count * split.parts));
    trx_all_gather(current.data(), count, blocks.data(), split.axes.data(),
                   int32_t(split.axes.size()));
    int64_t grown[3] = {dims[0], dims[1], dims[2]};
    grown[split.dim] *= split.parts;
    next.resize(blocks.size());
    for (int64_t b = 0; b < split.parts; ++b) {
      int64_t offset[3] = {0, 0, 0};
      offset[split.dim] = b * dims[split.dim];
      const float *from = &blocks[size_t(b * count)];
      forEachBlockRow(grown, dims, offset,
                      [&](int64_t w, int64_t k, int64_t n) {
                        std::copy(from + k, from + k + n, &next[size_t(w)]);
                      });
    }
    current.swap(next);
    std::copy(grown, grown + 3, dims);
  }
  std::copy(current.begin(), current.end(), whole);
}

template <typename T>
void scatterWhole(const ParamLayout &l, int kind, const float *whole, T *buf) {
  if (!l.present)
    return;
  std::vector<float> block(size_t(l.numel));
  int64_t offset[3] = {0, 0, 0};
  for (const ParamLayout::Split &split : l.splits)
    offset[split.dim] = split.pos * l.blockDims[split.dim];
  forEachBlockRow(l.dims, l.blockDims, offset,
                  [&](int64_t w, int64_t k, int64_t n) {
                    std::copy(whole + w, whole + w + n, &block[size_t(k)]);
                  });
  // The buffer's contents on the host (padding zeroed), then one copy.
  std::vector<T> piece(size_t(l.allocCount(kind)), T(0));
  int64_t begin = 0, end = l.numel;
  if (l.sharded(kind)) {
    begin = std::min(l.numel, l.zeroPos * l.chunk);
    end = std::min(l.numel, begin + l.chunk);
  }
  std::transform(block.begin() + begin, block.begin() + end, piece.begin(),
                 [](float x) {
                   if constexpr (std::is_same_v<T, uint16_t>)
                     return f32ToBf16(x);
                   else
                     return x;
                 });
  trx_copy_to_device(buf, piece.data(), piece.size() * sizeof(T));
}

template void scatterWhole<float>(const ParamLayout &, int, const float *,
                                  float *);
template void scatterWhole<uint16_t>(const ParamLayout &, int, const float *,
                                     uint16_t *);

} // namespace triax::rt
