// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "shardsim/core/error.h"
#include "shardsim/core/program.h"
#include "shardsim/topology/topology.h"
#include "shardsim/workloads/lower.h"
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

/// The message of the InputError loading `json` raises ("no error" if none).
inline std::string input_error_of(const std::string& json) {
  try {
    scenario(json);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

/// A serving iteration's time in a linear toy model (seconds): 10 ms, 10 us
/// a prompt token and 100 us a token decoded or verified, so the serving
/// tests do not depend on the simulator.
inline double serving_toy_iteration_s(const IterationShape& sh) {
  return 0.01 + 1e-5 * static_cast<double>(sh.prefill_tokens) +
         1e-4 * static_cast<double>(sh.decode_sequences * sh.decode_tokens);
}
/// A disaggregated KV handoff that takes no time.
inline double no_kv_transfer(int64_t /*prompt_tokens*/) {
  return 0.0;
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

/// A valid scenario from random_scenarios and its device count.
struct RandomScenario {
  std::string json;
  int devices = 0;
};

/// `count` small valid training scenarios drawn with `seed`: fat trees
/// rail-optimised or not, with 1 to 8 nodes a leaf, full bisection or 2:1,
/// two or three tiers; 2-D and 3-D tori with and without wraparound; dense
/// and MoE models; random tp, cp (ring, all-gather, all-to-all), pp (1F1B,
/// interleaved, GPipe), dp, ep, ZeRO, hybrid FSDP, mesh orders,
/// microbatches, recomputation and tensor-parallel overlap. Invalid
/// combinations are drawn again.
inline std::vector<RandomScenario> random_scenarios(uint64_t seed, size_t count) {
  const char* dense = R"({"name": "dense", "layers": 8, "hidden": 4096, "ffn_hidden": 14336, "heads": 32,
    "kv_heads": 8, "vocab": 32000})";
  const char* moe_model = R"({"name": "moe", "layers": 4, "hidden": 2048, "ffn_hidden": 8192, "heads": 16,
    "kv_heads": 8, "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 4096}})";
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<const char*> xs) {
    return std::string(*(xs.begin() + static_cast<std::ptrdiff_t>(rng() % xs.size())));
  };
  auto pick_int = [&](std::initializer_list<int> xs) {
    return *(xs.begin() + static_cast<std::ptrdiff_t>(rng() % xs.size()));
  };
  std::vector<RandomScenario> out;
  for (int attempt = 0; attempt < 100000 && out.size() < count; ++attempt) {
    const bool torus = rng() % 4 == 0;
    const int devices = torus ? 32 : pick_int({32, 64});
    std::string cluster;
    if (torus) {
      cluster = R"({"chip": "tpu-v5e", "devices": 32, "fabric": {"kind": "torus", )" +
                pick({R"("dims": [8, 4], "wraparound": [true, true])", R"("dims": [8, 4], "wraparound": [true, false])",
                      R"("dims": [8, 4], "wraparound": [false, true])",
                      R"("dims": [4, 2, 4], "wraparound": [true, false, true])"}) +
                "}}";
    } else {
      cluster = R"({"chip": "h100-sxm", "devices": )" + std::to_string(devices) +
                R"(, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": )" + pick({"4", "8"}) +
                R"(, "rail_optimized": )" + pick({"true", "false"}) + R"(, "nics_per_leaf": )" +
                pick({"1", "2", "4", "8"}) + R"(, "oversubscription": )" + pick({"1", "2"}) +
                pick({"", R"(, "tiers": 3, "leaves_per_pod": 4)", R"(, "tiers": 3, "leaves_per_pod": 8)"}) + "}}";
    }
    const bool moe = rng() % 3 == 0;
    const int tp = pick_int({1, 2, 4}), cp = pick_int({1, 1, 2}), pp = pick_int({1, 1, 2});
    const int dp = devices / (tp * cp * pp);
    const int ep = moe ? pick_int({1, 2, 4}) : 1;
    const int mb = pick_int({1, 2});
    const int batch = dp * mb * pick_int({2, 4});
    // Hybrid FSDP: ZeRO-3 sharded over pairs of data-parallel ranks.
    const bool hybrid = dp >= 4 && rng() % 4 == 0;
    const std::string zero = hybrid ? "3" : pick({"0", "1", "2", "3"});
    std::string plan =
        R"({"tp": )" + std::to_string(tp) + R"(, "cp": )" + std::to_string(cp) + R"(, "pp": )" + std::to_string(pp) +
        R"(, "dp": )" + std::to_string(dp) + R"(, "ep": )" + std::to_string(ep) + R"(, "zero": )" + zero +
        R"(, "microbatch_size": )" + std::to_string(mb) + R"(, "global_batch": )" + std::to_string(batch) +
        R"(, "seq_len": 2048, "recompute": ")" + pick({"none", "selective", "full"}) + R"(", "sequence_parallel": )" +
        (tp > 1 ? pick({"true", "false"}) : "false") + R"(, "tp_comm_overlap": )" +
        (tp > 1 ? pick({"true", "false"}) : "false") + R"(, "mesh_order": )" +
        pick({R"(["tp", "cp", "pp", "dp"])", R"(["tp", "cp", "dp", "pp"])", R"(["cp", "tp", "pp", "dp"])"});
    if (pp > 1) plan += pick({"", R"(, "schedule": "interleaved", "virtual_stages": 2)", R"(, "schedule": "gpipe")"});
    if (cp > 1) plan += R"(, "cp_comm": ")" + pick({"p2p", "all_gather", "a2a"}) + R"(")";
    if (moe && ep > 1) plan += R"(, "moe_dispatcher": ")" + pick({"alltoall", "allgather"}) + R"(")";
    if (hybrid) plan += R"(, "fsdp_shard_size": 2)";
    plan += "}";
    const std::string json = R"({"model": )" + std::string(moe ? moe_model : dense) + R"(, "cluster": )" + cluster +
                             R"(, "plan": )" + plan + "}";
    try {
      (void)scenario(json);
    } catch (const InputError&) {
      continue;  // an invalid combination
    }
    out.push_back({json, devices});
  }
  return out;
}

}  // namespace shardsim::testing
