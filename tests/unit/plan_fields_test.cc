// The plan described once (workloads/src/plan_fields.cc): whatever plan the
// loader accepts, or a caller holds in memory, is written back
// (plan_json, scenario_json) as a scenario that loads as exactly that plan,
// and the SimGrid worker, which is handed that scenario, simulates the plan
// the caller holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardsim/app/serve.h"
#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/framework.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

/// Every scenario file of the examples and the golden tests: JSON objects
/// with a model and a plan.
std::vector<std::string> scenario_files() {
  std::vector<std::string> out;
  for (const char* dir : {"/examples", "/tests/golden/scenarios"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(SHARDSIM_SOURCE_DIR) + dir)) {
      if (e.path().extension() != ".json") continue;
      std::ifstream in(e.path());
      const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_object() && j.contains("model") && j.contains("plan")) out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_round_trip(const Scenario& s) {
  const Scenario back = parse_scenario(scenario_json(s), s.file);
  EXPECT_TRUE(back.plan == s.plan) << s.file << ": " << plan_json(s.plan) << "\nloads as " << plan_json(back.plan);
  EXPECT_EQ(back.cluster.devices, s.cluster.devices) << s.file;
  // The plan object alone, as an override of the file's own plan.
  const Scenario over = parse_scenario(s.json, s.file, {{"plan", plan_json(s.plan)}});
  EXPECT_TRUE(over.plan == s.plan) << s.file;
}

// Every scenario shipped (training at every framework's defaults, prefill,
// decode, serving): its plan written out loads as exactly itself.
TEST(PlanFields, EveryShippedScenarioRoundTrips) {
  const std::vector<std::string> files = scenario_files();
  ASSERT_GT(files.size(), 700u);
  int inference = 0;
  for (const std::string& f : files) {
    const Scenario s = load_scenario(f);
    inference += s.plan.inference() ? 1 : 0;
    expect_round_trip(s);
  }
  EXPECT_GT(inference, 100);
}

/// A training plan with every field off Plan's default (cross-field checks
/// still pass), on a mixture-of-experts model so the expert fields count;
/// but hybrid FSDP does not combine with experts: `hybrid` sets
/// fsdp_shard_size, leaves ep at 1 and runs on a dense model (and runs
/// unfused attention, which ring attention cannot: cp 1).
Plan off_default_plan(bool hybrid) {
  Plan p;
  p.framework = Framework::kMegatronCore;
  p.dp = 4;
  p.tp = 2;
  p.pp = 2;
  p.cp = 2;
  p.ep = 2;
  p.zero = 3;
  p.microbatch_size = 2;
  p.global_batch = 64;
  p.seq_len = 4096;
  p.sequence_parallel = true;
  p.recompute = Recompute::kCustom;
  p.recompute_keep = {"qkv_proj"};
  p.recompute_offload = {"out_proj"};
  p.recompute_layers = 1;
  p.recompute_every = 0;
  p.fused_qkv = false;
  p.fused_gate_up = false;
  p.compile = false;
  p.overlap_grad_reduce = false;
  p.overlap_param_gather = true;
  p.fp8_param_gather = true;
  p.fsdp_reshard_after_forward = false;
  p.fsdp_sync_each_microbatch = false;
  p.tp_comm_overlap = true;
  p.tp_comm_overlap_sms = 8;
  p.cp_comm = Plan::CpComm::kAllGather;
  p.loss_kernel = Plan::LossKernel::kTe;
  p.vocab_tiling = 4;
  p.schedule = PipelineSchedule::kInterleaved;
  p.virtual_stages = 2;
  p.layers_per_stage = {1, 1, 1, 1};
  p.attention_kernel = AttentionKernel::kFlash3;
  p.fsdp_prefetch = false;
  p.p2p_blocking = true;
  p.p2p_scatter_gather = true;
  p.tp_grad_overlap = false;
  p.grad_accumulation_fusion = false;
  if (hybrid) {
    p.ep = 1;
    p.fsdp_shard_size = 2;
    p.cp = 1;
    p.dp = 8;
    p.fused_attention = false;
  }
  if (!hybrid) {
    p.moe_dispatcher = Plan::MoeDispatcher::kAllGather;
    p.expert_tp = 2;
    p.moe_grouped_gemm = false;
    p.moe_bias_passes = true;
    p.moe_dedup = true;
    p.moe_routing = Plan::MoeRouting::kContiguous;
    p.expert_layout = Plan::ExpertLayout::kFolded;  // ep 2 = cp: one data-parallel position
  }
  p.fsdp_bucket_params = 2'000'000;
  // A master copy other than full belongs to a stack whose shards are not
  // the master weights (Apex's distributed optimizer).
  p.fsdp_params_are_master = !hybrid;
  if (hybrid) p.master_copy = Plan::MasterCopy::kNone;
  p.fsdp_copy_out = true;
  p.fsdp_keep_root = true;
  p.pp_keep_outputs = true;
  p.fp8_weight_cache = true;
  p.low_precision_saved_inputs = true;
  p.fp8_casts_fused = true;
  p.embedding_matmul = true;
  p.splash_block_q = 1024;
  p.splash_block_kv = 256;
  p.splash_block_q_dkv = 2048;
  p.splash_block_kv_dkv = 128;
  p.splash_block_q_dq = 64;
  p.splash_block_kv_dq = 32;
  p.splash_fused_backward = true;
  p.master_weights_dtype = DType::kBf16;
  p.optimizer_state_dtype = DType::kBf16;
  p.grad_bucket_bytes = 1 << 20;
  p.grad_reduce_dtype = DType::kBf16;
  p.matmul_dtype = DType::kFp8;
  p.fp8_recipe = Plan::Fp8Recipe::kBlockwise;
  p.bf16_tail_layers = 1;
  p.fp8_backward_fast_accum = true;
  p.memory_kernel_efficiency = 0.8;
  p.memory_reserved_bytes = 123456789;
  p.allocator_overhead = 0.07;
  p.mesh_order = {MeshAxis::kCp, MeshAxis::kTp, MeshAxis::kDp, MeshAxis::kPp};
  return p;
}

const char* const kMoeScenario = R"({"model": {"name": "moe", "layers": 4, "hidden": 1024, "ffn_hidden": 4096,
  "heads": 16, "kv_heads": 8, "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 1024}},
  "cluster": {"chip": "h100-sxm", "devices": 32, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
  "plan": {"dp": 32, "global_batch": 64, "seq_len": 4096}})";
const char* const kDenseScenario = R"({"model": {"name": "dense", "layers": 4, "hidden": 1024, "ffn_hidden": 4096,
  "heads": 16, "kv_heads": 8, "vocab": 32000},
  "cluster": {"chip": "h100-sxm", "devices": 32, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
  "plan": {"dp": 32, "global_batch": 64, "seq_len": 4096}})";

// A plan a caller set in memory, every field off its default: written out,
// it loads as exactly itself. (A field the table forgot would load at its
// default and break the equality, which compares every member.)
TEST(PlanFields, EveryFieldOffItsDefaultRoundTrips) {
  for (bool hybrid : {false, true}) {
    // Hybrid FSDP of a mixture of experts is refused: the hybrid plan runs
    // on the same model without experts.
    Scenario s = testing::scenario(hybrid ? kDenseScenario : kMoeScenario);
    s.plan = off_default_plan(hybrid);
    const auto issue = check_plan(s.plan, s.model, s.cluster);
    ASSERT_FALSE(issue.has_value()) << issue->message;
    expect_round_trip(s);
  }
  // The test plans really are off the default in every field the table
  // writes, but one of recompute_layers / recompute_every (never both set).
  const nlohmann::json a = nlohmann::json::parse(plan_json(off_default_plan(false)));
  const nlohmann::json b = nlohmann::json::parse(plan_json(off_default_plan(true)));
  const nlohmann::json defaults = nlohmann::json::parse(plan_json(Plan{}));
  for (const auto& [key, value] : defaults.items()) {
    if (key == "phase" || key == "recompute_every") continue;
    EXPECT_TRUE(a.at(key) != value || b.at(key) != value) << key;
  }
  for (const char* key : {"recompute_keep", "recompute_offload", "layers_per_stage", "fsdp_shard_size",
                          "fsdp_bucket_params", "fp8_recipe", "bf16_tail_layers"}) {
    EXPECT_FALSE(defaults.contains(key)) << key;  // left out at their defaults
    EXPECT_TRUE(a.contains(key) || b.contains(key)) << key;
  }
}

// The same plan held in memory and set through --set overrides gives one
// step time on SimGrid: the worker simulates the plan the caller holds, not
// the file's.
TEST(PlanFields, SimgridWorkerSimulatesThePlanHeldInMemory) {
  const std::string json = R"({"model": {"name": "small", "layers": 4, "hidden": 2048, "ffn_hidden": 8192,
    "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"dp": 16, "global_batch": 32, "seq_len": 2048}, "simulator": {"backend": "simgrid"}})";
  Scenario held = testing::scenario(json);
  held.plan.tp = 8;
  held.plan.dp = 2;
  held.plan.sequence_parallel = true;
  held.plan.recompute = Recompute::kSelective;
  const Scenario set = testing::scenario(
      json, {{"plan.tp", "8"}, {"plan.dp", "2"}, {"plan.sequence_parallel", "true"}, {"plan.recompute", "selective"}});
  ASSERT_TRUE(held.plan == set.plan);
  SimulateOptions opt;
  opt.timing = false;
  StepRun from_memory;
  try {
    from_memory = simulate_step(held, opt);
  } catch (const UsageError& e) {
    GTEST_SKIP() << e.what();  // a build without SimGrid
  }
  const StepRun from_file = simulate_step(set, opt);
  const StepRun original = simulate_step(testing::scenario(json), opt);
  EXPECT_EQ(from_memory.report.sim.backend, "simgrid CM02");
  EXPECT_EQ(from_memory.report.step_time_s, from_file.report.step_time_s);
  EXPECT_NE(from_memory.report.step_time_s, original.report.step_time_s);
}

// shardsim serve times its iterations on the native engine: a scenario that
// asks for SimGrid is told so, not silently served natively.
TEST(PlanFields, ServingOnSimgridIsRefusedByName) {
  const std::string json = R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 1,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 1}}, "plan": {"phase": "decode"},
    "serving": {"requests": 4}, "simulator": {"backend": "simgrid"}})";
  try {
    run_serving(testing::scenario(json));
    FAIL() << "served";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/simulator/backend"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardsim
