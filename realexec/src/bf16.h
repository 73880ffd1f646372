// bf16 <-> fp32 on the host (private to realexec): round to nearest even, as
// the GPU's __float2bfloat16 does.
#pragma once

#include <cstdint>
#include <cstring>

namespace shardsim::realexec::detail {

inline uint16_t to_bf16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}
inline float from_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace shardsim::realexec::detail
