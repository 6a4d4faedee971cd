//===- bf16.h - bf16 <-> f32 conversions for the runtime ---------*- C++
//-*-===//
//
// bf16 is the top 16 bits of an IEEE-754 binary32 (1 sign, 8 exponent, 7
// mantissa bits); the runtime stores it as uint16_t, the layout of MLIR's
// bf16 memrefs. Widening is exact. Narrowing rounds to nearest, ties to
// even (as LLVM's fptrunc to bfloat and cuBLASLt's bf16 output do); values
// past the largest bf16 round to infinity, and a NaN stays a NaN (quiet,
// with its sign) instead of rounding into infinity.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_RT_BF16_H
#define TRIAX_RT_BF16_H

#include <cstdint>
#include <cstring>

namespace triax::rt {

inline float bf16ToF32(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t f32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it one, quiet.
    return uint16_t((bits >> 16) | 0x0040u);
  // Round to nearest even on the 16 bits dropped: add 0x7fff plus the lowest
  // kept bit; a carry out of the mantissa bumps the exponent (to infinity
  // past the largest finite bf16).
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

} // namespace triax::rt

#endif // TRIAX_RT_BF16_H
