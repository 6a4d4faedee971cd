/*===- triax_abi.h - what the compiler and the runtime share -----*- C -*-===*\
|*                                                                          *|
|* The enums both sides of the runtime ABI use, declared once: the runtime  *|
|* includes this header through triax_rt.h, and the compiler includes it    *|
|* where it emits values the runtime reads (the model descriptor). Plain    *|
|* C, no functions.                                                         *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef TRIAX_ABI_H
#define TRIAX_ABI_H

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

#endif /* TRIAX_ABI_H */
