// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/topology/topology.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::testing {

/// Eight GPUs a node, NVLink 450 GB/s, one 50 GB/s NIC per GPU, rail
/// leaves of four nodes.
inline FatTreeSpec fat_tree_450_50() {
  FatTreeSpec f;
  f.nvlink_bandwidth = gbyte_per_s(450);
  f.nic_bandwidth = gbyte_per_s(50);
  f.nics_per_leaf = 4;
  return f;
}

/// A chip of 1e12 FLOP/s and 1e12 B/s: an op of 1e9 FLOPs takes 1 ms.
inline ChipSpec simple_chip() {
  ChipSpec c;
  c.bf16_peak = FlopsPerSec(1e12);
  c.hbm_bandwidth = BytesPerSec(1e12);
  return c;
}

/// A matmul of `ms` milliseconds on simple_chip().
inline Op compute_ms(double ms) {
  Op o;
  o.compute = ComputeKind::kMatmul;
  o.flops = Flops(ms * 1e9);  // at 1e12 FLOP/s
  return o;
}

/// A scenario from inline JSON text.
inline Scenario scenario(const std::string& json, const std::vector<Override>& sets = {}) {
  return parse_scenario(json, "test.json", sets);
}

/// The bytes of the memory report's component `name` (a test failure, and
/// -1, when the report has none).
inline int64_t component(const MemoryReport& r, std::string_view name) {
  for (const auto& c : r.components) {
    if (c.name == name) return c.bytes;
  }
  ADD_FAILURE() << "no memory component " << name;
  return -1;
}

}  // namespace shardsim::testing
