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
};

/// "gpipe", "1f1b", "interleaved".
llvm::StringRef scheduleName(PipelineSchedule schedule);
/// The schedule named `name`, if any.
std::optional<PipelineSchedule> parseSchedule(llvm::StringRef name);

/// One pass of one micro-batch through one chunk of a rank.
struct PipelineStep {
  bool forward;
  int64_t chunk;
  int64_t microBatch;
  bool operator==(const PipelineStep &o) const {
    return forward == o.forward && chunk == o.chunk &&
           microBatch == o.microBatch;
  }
};

/// "F3", or "F3.1" (micro-batch 3 on chunk 1) with several chunks.
std::string stepName(const PipelineStep &step, int64_t chunks);

/// Why (`ranks`, `chunks`, `m`) cannot run `schedule`, or "" when it can.
std::string scheduleError(PipelineSchedule schedule, int64_t ranks,
                          int64_t chunks, int64_t m);

/// Rank `rank`'s passes in order (scheduleError must be ""). GPipe and
/// 1F1B have one chunk; interleaved runs Megatron-LM's order: the m x
/// chunks forwards go through the chunks in groups of `ranks`
/// micro-batches, rank r warms up with 2 (ranks - r - 1) + (chunks - 1)
/// ranks of them, then alternates one forward, one backward (the
/// backwards go through the chunks in reverse), then cools down.
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
/// backward 2): each message gets the time its pass ends; all messages are
/// ordered by (time, sender, sender's position), and every rank runs its
/// own sends and recvs in that one global order, each send right after its
/// pass, each recv before the pass that needs it. Then the earliest
/// message not yet exchanged always has both ends at it: everything before
/// it in either program is an earlier message or a pass, which never
/// blocks. GPipe and 1F1B keep dist-pipeline's own placement; this serves
/// the other schedules (and is checked by dist-verify-schedule all the
/// same).
std::vector<std::vector<PipelineEvent>>
pipelinePrograms(PipelineSchedule schedule, int64_t ranks, int64_t chunks,
                 int64_t m);

/// The peak number of (micro-batch, chunk) activations rank `rank` holds
/// at once under `order` (a forward saves them, its backward frees them).
int64_t peakInFlight(llvm::ArrayRef<PipelineStep> order);

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_TRANSFORMS_PIPELINESCHEDULE_H
