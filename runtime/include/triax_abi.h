/*===- triax_abi.h - what the compiler and the runtime share ----*- C -*-===*\
|*                                                                          *|
|* The enums both sides of the runtime ABI use, declared once: the runtime  *|
|* includes this header through triax_rt.h, and the compiler includes it    *|
|* where it emits values the runtime reads (the model descriptor, the       *|
|* arguments of runtime calls). Plain C: enums and one-line formulas.       *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef TRIAX_ABI_H
#define TRIAX_ABI_H

#include <stdint.h>

/* The role of a device-mesh axis: what is split over it. The names (dp,
 * pp, ...), the order of the axes in a mesh (the rank layout) and which
 * roles are implemented are the axis-role table,
 * lib/Dialect/Dist/IR/MeshShape.cpp. An axis whose name is not in the
 * table (a mesh written by hand for a pass test) has no role:
 * TRX_AXIS_NONE. */
typedef enum {
  TRX_AXIS_NONE = -1,
  TRX_AXIS_DATA = 0,     /* the batch; ZeRO shards the training state */
  TRX_AXIS_PIPELINE = 1, /* the layers, as pipeline stages */
  TRX_AXIS_EXPERT = 2,   /* the experts of mixture-of-experts layers */
  TRX_AXIS_CONTEXT = 3,  /* the sequence of every activation */
  TRX_AXIS_TENSOR = 4,   /* linears, heads and vocabulary (Megatron) */
  TRX_AXIS_NUM_ROLES = 5
} trx_axis_role;

/* The state buffers of each parameter: trx_state_1d/2d/chunk's `kind`, and
 * the compiled code's views of them. */
/* The pass of a pipeline stage function call (trx_trace_begin's kind):
 * @stage<s>_forward, _backward, _weight. */
enum trx_pass_kind {
  TRX_PASS_FORWARD = 0,
  TRX_PASS_BACKWARD = 1,
  TRX_PASS_WEIGHT = 2
};

/* The mixture-of-experts counters of a step (trx_moe_counters): the
 * expert choices dropped by capacity, and all choices. */
enum trx_moe_counter {
  TRX_MOE_DROPPED = 0,
  TRX_MOE_CHOICES = 1,
  TRX_MOE_NCOUNTERS = 2
};

enum trx_state_kind {
  TRX_STATE_PARAM = 0,      /* the parameter, in its dtype (f32 or bf16) */
  TRX_STATE_EXP_AVG = 1,    /* AdamW first moment */
  TRX_STATE_EXP_AVG_SQ = 2, /* AdamW second moment */
  TRX_STATE_GRAD = 3,       /* gradient buffer: forward_backward adds to it,
                               optimizer_step reads it; the driver zeroes it
                               before the first micro-batch of a step; in
                               the parameter's dtype */
  TRX_STATE_MASTER = 4,     /* a bf16 parameter's f32 master copy, which
                               AdamW updates (sharded as the moments); f32
                               parameters have none */
  TRX_STATE_NKINDS = 5
};

/* How a parameter is initialized (trx_param_desc.init); the model
 * descriptor maps triax.param's #triax.init kinds to these. */
enum trx_param_init {
  TRX_INIT_NORMAL = 0, /* N(0, init_std^2), see trx_init_normal */
  TRX_INIT_ZEROS = 1,
  TRX_INIT_ONES = 2
};

/* The reductions of the collectives; the lowering maps the dist dialect's
 * ReductionKind to these (abiReduction, CollectiveKernels.cpp). avg is
 * the sum divided by the group size (integer division, truncating, for
 * i32). max and min propagate NaN. */
enum trx_reduce_op {
  TRX_REDUCE_SUM = 0,
  TRX_REDUCE_AVG = 1,
  TRX_REDUCE_MAX = 2,
  TRX_REDUCE_MIN = 3
};

/* The ring shifts of context parallelism (trx_shift_start_f32 /
 * trx_shift_wait) in flight at once: the compiled code numbers its shifts
 * 0..TRX_SHIFT_SLOTS-1. */
#define TRX_SHIFT_SLOTS 8

/* ZeRO: the elements of one rank's chunk of a buffer of `numel` elements
 * sharded over `group` ranks, ceil(numel / group) (the buffer is padded with
 * zeros to group * chunk); numel itself when group <= 1. Rounded up without
 * an intermediate that can overflow (numel + group - 1 can, for any
 * numel >= 0 and group up to INT64_MAX). */
static inline int64_t trx_zero_chunk(int64_t numel, int64_t group) {
  return group <= 1 ? numel : numel / group + (numel % group != 0);
}

#endif /* TRIAX_ABI_H */
