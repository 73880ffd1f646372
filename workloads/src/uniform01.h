// A uniform draw on [0, 1) that is the same on every standard library: the
// serving generator's and scheduler's (std::*_distribution's mapping is not
// fixed by the standard, so it is not used).
#pragma once

#include <random>

namespace shardsim::detail {

/// The top 53 bits of mt19937_64, whose output the standard fixes.
inline double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace shardsim::detail
