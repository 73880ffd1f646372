// The plan search: its bounds never exceed a simulated step (so pruning never
// drops the optimum), it finds what brute force finds, and its answer does
// not depend on the number of threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "shardsim/app/search.h"
#include "shardsim/app/step.h"
#include "shardsim/workloads/plan_space.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

// Small enough to simulate every plan: 8 GPUs in one node, 4 layers.
const char* kSmallOneNode = R"({"model": {"name": "tiny", "layers": 4, "hidden": 1024, "ffn_hidden": 4096, "heads": 16,
  "kv_heads": 4, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 8,
  "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
  "plan": {"dp": 8, "zero": 1, "global_batch": 16, "seq_len": 2048}})";

// Two nodes of 8: tp inside a node, dp across the NICs.
const char* kTwoNodes = R"({"model": {"name": "small", "layers": 4, "hidden": 2048, "ffn_hidden": 8192, "heads": 16,
  "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 16,
  "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
  "plan": {"dp": 16, "zero": 0, "global_batch": 16, "seq_len": 2048}})";

double simulated_step_s(const Scenario& base, const PlanCandidate& c) {
  Scenario s = base;
  s.plan = c.plan;
  s.cluster.devices = c.devices;
  return run_training_step(s, {}).report.step_time_s;
}

/// Every candidate's bound is at most its simulated step, and the search
/// (budget not binding) returns the brute-force best; with `expect_pruning`,
/// after simulating fewer plans than there are.
void expect_search_matches_brute_force(const Scenario& base, bool expect_pruning = true) {
  PlanSpaceCounts counts;
  const std::vector<PlanCandidate> cands = enumerate_plans(base, {base.cluster.devices}, counts);
  ASSERT_GT(cands.size(), 20u);
  double best = 1e300;
  for (const PlanCandidate& c : cands) {
    const double t = simulated_step_s(base, c);
    // The analytical bound holds for every plan.
    EXPECT_LE(c.lower_bound_s, t * (1 + 1e-9)) << describe_plan(c.plan);
    best = std::min(best, t);
  }
  SearchOptions opt;
  opt.max_simulations = 100000;  // the budget never binds: the search must prove its best
  const SearchResult r = search_plans(base, {base.cluster.devices}, opt);
  EXPECT_EQ(r.left_by_budget, 0);
  ASSERT_FALSE(r.rows.empty());
  EXPECT_DOUBLE_EQ(r.rows.front().report.step_time_s, best);
  // Pruning did its job: far fewer simulations than plans.
  if (expect_pruning) {
    EXPECT_LT(static_cast<size_t>(r.rows.size()), cands.size());
  }
}

TEST(Search, FindsTheBruteForceBestOnOneNode) {
  expect_search_matches_brute_force(testing::scenario(kSmallOneNode));
}

TEST(Search, FindsTheBruteForceBestOnTwoNodes) {
  expect_search_matches_brute_force(testing::scenario(kTwoNodes));
}

// A calibration profile replaces the roofline (sim/compute_model.cc): the
// bounds must come from the same rates, or a profile faster than the chip's
// peak x efficiency would put the bound above the step and prune the optimum.
TEST(Search, BoundsHoldUnderACalibrationProfileFasterThanTheChip) {
  std::ifstream in(SHARDSIM_SOURCE_DIR "/tests/golden/commands/cpu2.profile.json");
  nlohmann::json profile = nlohmann::json::parse(in);
  // Every compute rate x 1e6: matmuls at about 1e17 FLOP/s, a hundred times
  // an H100's peak, so compute is nearly free.
  for (auto& m : profile["compute"]["matmul"]) m["flops_per_s"] = m["flops_per_s"].get<double>() * 1e6;
  for (const char* k : {"attention/flops_per_s", "memory/GBps", "loss/values_per_s"}) {
    auto& v = profile["compute"][nlohmann::json::json_pointer(std::string("/") + k)];
    v = v.get<double>() * 1e6;
  }
  // Collectives on the fabric model (the CPU's measured ones would make every
  // step communication).
  profile["collectives"] = nlohmann::json::array();
  const std::string path = ::testing::TempDir() + "shardsim_fast.profile.json";
  std::ofstream(path) << profile.dump();
  const Scenario base = testing::scenario(kSmallOneNode, {{"cluster.calibration", nlohmann::json(path).dump()}});
  ASSERT_NE(base.cluster.calibration, nullptr);
  // The roofline's bound (the chip's rates) would not hold here: it exceeds
  // the calibrated step of some plan, so this test can fail.
  Scenario roofline = base;
  roofline.cluster.calibration = nullptr;
  PlanSpaceCounts counts;
  bool roofline_exceeds = false;
  for (const PlanCandidate& c : enumerate_plans(roofline, {8}, counts)) {
    roofline_exceeds = roofline_exceeds || c.lower_bound_s > simulated_step_s(base, c);
  }
  EXPECT_TRUE(roofline_exceeds);
  expect_search_matches_brute_force(base, /*expect_pruning=*/false);
}

TEST(Search, AnswerDoesNotDependOnThreads) {
  const Scenario base = testing::scenario(kTwoNodes);
  SearchOptions one;
  one.max_simulations = 10;
  one.jobs = 1;
  SearchOptions two = one;
  two.jobs = 2;
  const SearchResult a = search_plans(base, {16}, one);
  const SearchResult b = search_plans(base, {16}, two);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(describe_plan(a.rows[i].plan), describe_plan(b.rows[i].plan));
    EXPECT_EQ(a.rows[i].report.step_time_s, b.rows[i].report.step_time_s);
  }
  EXPECT_EQ(a.pruned_by_bound, b.pruned_by_bound);
  EXPECT_EQ(a.left_by_budget, b.left_by_budget);
}

TEST(Search, NeverWorseThanTheScenarioPlan) {
  const Scenario base = testing::scenario(kTwoNodes);
  SearchOptions opt;
  opt.max_simulations = 3;
  const SearchResult r = search_plans(base, {16}, opt);
  const double own = run_training_step(base, {}).report.step_time_s;
  ASSERT_FALSE(r.rows.empty());
  EXPECT_LE(r.rows.front().report.step_time_s, own);
  EXPECT_TRUE(std::any_of(r.rows.begin(), r.rows.end(), [](const SearchRow& x) { return x.from_scenario; }));
}

TEST(Search, EveryCandidateIsValidAndFits) {
  const Scenario base = testing::scenario(kTwoNodes);
  PlanSpaceCounts counts;
  const auto cands = enumerate_plans(base, {16}, counts);
  EXPECT_EQ(counts.enumerated, counts.invalid + counts.over_memory + static_cast<int64_t>(cands.size()));
  for (const PlanCandidate& c : cands) {
    EXPECT_FALSE(check_plan(c.plan, base.model, base.cluster).has_value());
    EXPECT_EQ(c.plan.devices(), 16);
  }
}

// The best plan is emitted as the scenario file with the enumerator's fields
// overridden: every candidate must load back as exactly itself, also from a
// scenario whose own plan set fields the enumerator resets (hybrid FSDP,
// bucket sizes, a custom recomputation).
TEST(Search, EveryCandidateRoundTripsThroughItsOverrides) {
  const std::string json = R"({"model": {"name": "small", "layers": 4, "hidden": 2048, "ffn_hidden": 8192,
    "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"dp": 16, "zero": 3, "fsdp_shard_size": 8, "fsdp_bucket_params": 1000000, "recompute": "custom",
             "recompute_keep": ["qkv_proj"], "global_batch": 16, "seq_len": 2048}})";
  const Scenario base = parse_scenario(json, "base.json");
  PlanSpaceCounts counts;
  const std::vector<PlanCandidate> cands = enumerate_plans(base, {base.cluster.devices}, counts);
  ASSERT_GT(cands.size(), 20u);
  for (const PlanCandidate& c : cands) {
    const Plan got = parse_scenario(json, "emitted.json", searched_plan_overrides(c.plan)).plan;
    EXPECT_TRUE(got == c.plan) << describe_plan(c.plan) << "\n" << plan_json(c.plan) << "\nloads as " << plan_json(got);
  }
}

}  // namespace
}  // namespace shardsim
