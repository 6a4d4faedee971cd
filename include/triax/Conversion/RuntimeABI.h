//===- RuntimeABI.h - The runtime entry points compiled code calls -*- C++
//-*-===//
//
// The compiler's view of the runtime's ABI: the entry points compiled code
// calls, made from their one declaration (runtime/include/triax_entries.def),
// the shared enums (triax_abi.h), and the entries the compiled object
// exports to the training driver.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_CONVERSION_RUNTIMEABI_H
#define TRIAX_CONVERSION_RUNTIMEABI_H

#include "triax_abi.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace triax::rt {

/// The names of the runtime's entry points, `k<Id>` for each entry of
/// runtime/include/triax_entries.def (kSgemm = "trx_sgemm", ...). Their
/// signatures, classes and meaning are declared there, once.
#define TRX_ENTRY(Id, name, cls, results, args)                                \
  constexpr llvm::StringLiteral k##Id = #name;
#define TRX_C_ENTRY TRX_ENTRY
#include "triax_entries.def"
#undef TRX_ENTRY
#undef TRX_C_ENTRY

/// A type of the runtime ABI (triax_entries.def's TRX_I32 ... TRX_STRIDED).
struct EntryType {
  enum Kind : uint8_t { I32, I64, F32, MemRef, Strided } kind;
  enum Elem : uint8_t { None, f32, bf16, i64 } elem = None;
  int8_t rank = 0;
};

/// What a call of the entry does on a device (triax_entries.def's
/// classes).
enum class EntryClass : uint8_t {
  Gemm,
  Collective,
  PointToPoint,
  HostSync,
  View,
  Mark,
  Attention
};

/// One entry of triax_entries.def.
struct Entry {
  llvm::StringLiteral name;
  /// Called through `_mlir_ciface_<name>` (TRX_ENTRY), or a plain C
  /// function (TRX_C_ENTRY).
  bool cInterface;
  EntryClass cls;
  llvm::ArrayRef<EntryType> results, args;
};

namespace detail {
// Each entry's type lists as arrays (a leading placeholder keeps an empty
// list a legal array; entries() drops it).
#define TRX_I32                                                                \
  EntryType { EntryType::I32 }
#define TRX_I64                                                                \
  EntryType { EntryType::I64 }
#define TRX_F32                                                                \
  EntryType { EntryType::F32 }
#define TRX_MEMREF(e, r)                                                       \
  EntryType { EntryType::MemRef, EntryType::e, r }
#define TRX_STRIDED(e, r)                                                      \
  EntryType { EntryType::Strided, EntryType::e, r }
#define TRX_RESULTS(...) __VA_ARGS__
#define TRX_ARGS(...) __VA_ARGS__
#define TRX_ENTRY(Id, name, cls, results, args)                                \
  inline constexpr EntryType Id##Results[] = {EntryType{}, results};           \
  inline constexpr EntryType Id##Args[] = {EntryType{}, args};
#define TRX_C_ENTRY TRX_ENTRY
#include "triax_entries.def"
#undef TRX_ENTRY
#undef TRX_C_ENTRY
} // namespace detail

/// Every entry, in triax_entries.def's order.
inline llvm::ArrayRef<Entry> entries() {
#define TRX_GEMM EntryClass::Gemm
#define TRX_COLLECTIVE EntryClass::Collective
#define TRX_P2P EntryClass::PointToPoint
#define TRX_HOST_SYNC EntryClass::HostSync
#define TRX_VIEW EntryClass::View
#define TRX_MARK EntryClass::Mark
#define TRX_ATTENTION EntryClass::Attention
#define TRX_ENTRY_ROW(Id, cif, cls)                                            \
  Entry{k##Id, cif, cls, llvm::ArrayRef(detail::Id##Results).drop_front(),     \
        llvm::ArrayRef(detail::Id##Args).drop_front()},
#define TRX_ENTRY(Id, name, cls, results, args) TRX_ENTRY_ROW(Id, true, cls)
#define TRX_C_ENTRY(Id, name, cls, results, args) TRX_ENTRY_ROW(Id, false, cls)
  static const Entry table[] = {
#include "triax_entries.def"
  };
#undef TRX_ENTRY
#undef TRX_C_ENTRY
#undef TRX_ENTRY_ROW
#undef TRX_GEMM
#undef TRX_COLLECTIVE
#undef TRX_P2P
#undef TRX_HOST_SYNC
#undef TRX_VIEW
#undef TRX_MARK
#undef TRX_ATTENTION
#undef TRX_I32
#undef TRX_I64
#undef TRX_F32
#undef TRX_MEMREF
#undef TRX_STRIDED
#undef TRX_RESULTS
#undef TRX_ARGS
  return table;
}

/// The entry called `name`, or null for a function that is not one.
inline const Entry *lookupEntry(llvm::StringRef name) {
  for (const Entry &e : entries())
    if (e.name == name)
      return &e;
  return nullptr;
}

/// The class of a call of `name`, if it is a runtime entry.
inline std::optional<EntryClass> entryClass(llvm::StringRef name) {
  if (const Entry *e = lookupEntry(name))
    return e->cls;
  return std::nullopt;
}

// The kinds of state buffers per parameter (the index is the position of
// the `triax.param` in its model) are triax_abi.h's trx_state_kind.

/// The entry points the lowering produces from `@forward`,
/// `@forward_backward` (or dist-pipeline's `@pipeline_step`) and
/// `@optimizer_step`, with `llvm.emit_c_interface`. The training step keeps
/// its scalars in device memory (the host neither reads device memory nor
/// waits inside a step), so its two entries hand them over in a 0-d f32
/// buffer the caller owns, `memref<f32>` (C: `{float *allocated, *aligned;
/// int64_t offset;}`):
/// - triax_forward(memref tokens, memref targets) -> f32: the mean loss
///   (evaluation; the host reads it);
/// - triax_forward_backward(memref tokens, memref targets,
///   memref<f32> loss_acc): adds the call's mean loss to loss_acc[0] and
///   accumulates the gradients;
/// - triax_optimizer_step(f32 lr, i64 step, f32 grad_scale,
///   memref<f32> grad_norm): writes the global norm of the scaled
///   gradients (before clipping) to grad_norm[0], then clips and updates.
constexpr llvm::StringLiteral kForwardEntry = "triax_forward";
constexpr llvm::StringLiteral kForwardBackwardEntry = "triax_forward_backward";
constexpr llvm::StringLiteral kOptimizerStepEntry = "triax_optimizer_step";

} // namespace triax::rt

#endif // TRIAX_CONVERSION_RUNTIMEABI_H
