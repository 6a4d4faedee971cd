//===- PipelineSchedule.h - The order of a pipeline's passes ----*- C++ -*-===//
//
// The order in which each pipeline rank runs the forward and backward
// passes of its micro-batches, for every schedule dist-pipeline builds: the
// one definition the pass emits as IR and the cost model simulates.
//
// A rank holds `chunks` model chunks (virtual stages): chunk c of rank r is
// virtual stage c * ranks + r of ranks * chunks, so with chunks > 1 a rank
// holds non-adjacent groups of layers (Megatron-LM's interleaved schedule).
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_DIST_TRANSFORMS_PIPELINESCHEDULE_H
#define TRIAX_DIALECT_DIST_TRANSFORMS_PIPELINESCHEDULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dist {

enum class PipelineSchedule {
  /// All forwards, then all backwards.
  GPipe,
  /// PipeDream-Flush: warm-up forwards, then one forward one backward.
  OneFOneB,
  /// Megatron-LM's interleaved 1F1B over `chunks` virtual stages per rank.
  Interleaved,
  /// ZB-H1 (Qi et al. 2024): 1F1B with each backward split into B (the
  /// input gradient) and W (the weight gradients), stage s deferring its
  /// W passes by s to fill the cool-down bubble.
  ZeroBubbleH1,
};

/// "gpipe", "1f1b", "interleaved", "zb-h1".
llvm::StringRef scheduleName(PipelineSchedule schedule);
/// The schedule named `name`, if any.
std::optional<PipelineSchedule> parseSchedule(llvm::StringRef name);

/// The passes of a micro-batch through a stage: forward, backward (with the
/// weight gradients, or only the input gradient when the schedule splits
/// them off), weight gradients.
enum class Pass { Forward, Backward, Weight };

/// One pass of one micro-batch through one chunk of a rank.
struct PipelineStep {
  Pass pass;
  int64_t chunk;
  int64_t microBatch;
  bool forward() const { return pass == Pass::Forward; }
  bool operator==(const PipelineStep &o) const {
    return pass == o.pass && chunk == o.chunk && microBatch == o.microBatch;
  }
};

/// Whether `schedule` splits the weight gradients off the backward.
inline bool splitsWeightPass(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::ZeroBubbleH1;
}

/// "F3", "B3", "W3", or "F3.1" (micro-batch 3 on chunk 1) with several
/// chunks.
std::string stepName(const PipelineStep &step, int64_t chunks);

/// Why `schedule` cannot run `chunks` model chunks per rank, or "".
std::string chunksError(PipelineSchedule schedule, int64_t chunks);

/// Why (`ranks`, `chunks`, `m`) cannot run `schedule`, or "" when it can
/// (chunksError first).
std::string scheduleError(PipelineSchedule schedule, int64_t ranks,
                          int64_t chunks, int64_t m);

/// Rank `rank`'s passes in order (scheduleError must be ""). GPipe and
/// 1F1B have one chunk; interleaved runs Megatron-LM's order: the m x
/// chunks forwards go through the chunks in groups of `ranks`
/// micro-batches, rank r warms up with 2 (ranks - r - 1) + (chunks - 1)
/// ranks of them, then alternates one forward, one backward (the
/// backwards go through the chunks in reverse), then cools down. ZB-H1 is
/// 1F1B's order with W(j - r) after each B(j) (none while j < r) and the r
/// deferred W passes at the end: every rank holds at most `ranks`
/// micro-batches' activations, 1F1B's peak (on its rank 0).
std::vector<PipelineStep> pipelineOrder(PipelineSchedule schedule,
                                        int64_t ranks, int64_t chunks,
                                        int64_t m, int64_t rank);

/// One event of a rank's program: a pass, or the send of what a pass
/// produced (its activation, or its input gradient), or the recv of what a
/// pass needs.
struct PipelineEvent {
  enum Kind { Compute, Send, Recv } kind;
  /// The pass computed, producing the message sent, or needing the one
  /// received.
  PipelineStep step;
  /// The peer rank of a send or recv.
  int64_t peer = -1;
};

/// Every rank's program for `schedule`: its pipelineOrder with its sends
/// and recvs placed so that no blocking (rendezvous) execution deadlocks.
/// The placement simulates the order with unit pass times (forward 1,
/// backward 2, or 1 + 1 split into B and W): each message gets the time
/// its pass ends; all messages are
/// ordered by (time, sender, sender's position), and every rank runs its
/// own sends and recvs in that one global order, each send right after its
/// pass, each recv before the pass that needs it. Then the earliest
/// message not yet exchanged always has both ends at it: everything before
/// it in either program is an earlier message or a pass, which never
/// blocks. GPipe and 1F1B keep dist-pipeline's simpler placement around
/// each pass of their pipelineOrder; this serves the other schedules (and
/// is checked by dist-verify-schedule all the same).
std::vector<std::vector<PipelineEvent>>
pipelinePrograms(PipelineSchedule schedule, int64_t ranks, int64_t chunks,
                 int64_t m);

/// The peak number of (micro-batch, chunk) activations a rank holds at once
/// under its `order` (a forward saves them, its backward frees them, or its
/// W pass when the schedule splits it off): [P2] of the cost model. With
/// `chunkBlocks` (the blocks of each of the rank's chunks, by chunk) each
/// counts its chunk's blocks: the peak of the blocks whose activations the
/// rank holds, which unequal chunks make differ from the count's.
int64_t peakInFlight(llvm::ArrayRef<PipelineStep> order,
                     llvm::ArrayRef<int64_t> chunkBlocks = {});

/// The most messages `program` (a rank's, from pipelinePrograms) has
/// received and not yet used at the start of a backward pass where the
/// rank's activations peak (the most micro-batches in flight, as
/// peakInFlight counts them), that pass's own not counted: buffers the rank
/// holds beside its activations ([P4] of the cost model). pipelinePrograms
/// receives each message when it is sent, so a rank whose order runs a
/// pass later than its input arrives holds the input until then
/// (interleaved: two on most ranks, about pp / 3 on the last, its first
/// chunk's gradients).
int64_t peakHeldReceives(llvm::ArrayRef<PipelineEvent> program);

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_PIPELINESCHEDULE_H
