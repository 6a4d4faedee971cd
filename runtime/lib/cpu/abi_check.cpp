//===- abi_check.cpp - the C prototypes against triax_entries.def -------===//
//
// The entry points compiled code calls are declared once, in
// runtime/include/triax_entries.def, and the compiler declares them from
// there. Their C prototypes (triax_rt.h, triax_rt_cuda.h) are written by
// hand, with their documentation. This file holds the two together: for
// every entry, the prototype's type must be the one the entry's signature
// gives under MLIR's C interface, or the runtime does not build. No code.
//
//===----------------------------------------------------------------------===//

#include "triax_rt.h"
#include "triax_rt_cuda.h"

#include <type_traits>

namespace {

template <typename... T> struct List {};

/// The C type of a TRX_ENTRY under `llvm.emit_c_interface`: memref
/// arguments by descriptor pointer, a memref result through a descriptor
/// pointer passed first, a scalar result returned.
template <typename Results, typename Args> struct CInterface;
template <typename... A> struct CInterface<List<>, List<A...>> {
  using type = void (*)(A...);
};
template <typename R, typename... A> struct CInterface<List<R>, List<A...>> {
  using type =
      std::conditional_t<std::is_pointer_v<R>, void (*)(R, A...), R (*)(A...)>;
};

/// The C type of a TRX_C_ENTRY: the arguments and the result as they are.
template <typename Results, typename Args> struct CFunction;
template <typename... A> struct CFunction<List<>, List<A...>> {
  using type = void (*)(A...);
};
template <typename R, typename... A> struct CFunction<List<R>, List<A...>> {
  static_assert(!std::is_pointer_v<R>, "a TRX_C_ENTRY takes no memref");
  using type = R (*)(A...);
};

} // namespace

#define TRX_I32 int32_t
#define TRX_I64 int64_t
#define TRX_F32 float
#define TRX_MEMREF(e, r) trx_memref_##e##_##r##d *
#define TRX_STRIDED(e, r) trx_memref_##e##_##r##d *
#define TRX_RESULTS(...) List<__VA_ARGS__>
#define TRX_ARGS(...) List<__VA_ARGS__>
#define TRX_ENTRY(Id, name, cls, results, args)                                \
  static_assert(std::is_same_v<decltype(&_mlir_ciface_##name),                 \
                               CInterface<results, args>::type>,               \
                "_mlir_ciface_" #name                                          \
                ": its prototype differs from triax_entries.def");
#define TRX_C_ENTRY(Id, name, cls, results, args)                              \
  static_assert(                                                               \
      std::is_same_v<decltype(&name), CFunction<results, args>::type>,         \
      #name ": its prototype differs from triax_entries.def");
#include "triax_entries.def"
