// What-if speed-ups (simulator.speedup) and `whatif`: each lever's effect on
// a step whose time is known by hand, the critical path's share as the gain
// of a lever where nothing contends, the ranking, and the error paths.
#include "shardsim/app/whatif.h"

#include <gtest/gtest.h>

#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/engine.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::compute_ms;
using testing::simple_chip;

// Stage 0 computes 4 ms and sends 1 MB (1 ms over the 1 GB/s link) to stage
// 1, which then computes 2 ms: a 7 ms step, all of it on the path.
ProgramSet pipeline_of_two() {
  ProgramSet ps;
  {
    ProgramBuilder b;
    b.add_stream("compute");
    b.add_stream("pp send next");
    const OpId a = b.add(compute_ms(4));
    Op send;
    send.kind = OpKind::kSend;
    send.stream = 1;
    send.peer = +1;
    send.comm_bytes = Bytes(1'000'000);
    b.add(send, {a});
    ps.stages.push_back(std::move(b).finish());
  }
  {
    ProgramBuilder b;
    b.add_stream("compute");
    b.add_stream("pp recv");
    Op recv;
    recv.kind = OpKind::kRecv;
    recv.stream = 1;
    recv.peer = -1;
    const OpId r = b.add(recv);
    b.add(compute_ms(2), {r});
    ps.stages.push_back(std::move(b).finish());
  }
  return ps;
}

SimTime step_of(const ProgramSet& ps, const EngineOptions& opt, double link_speedup = 1) {
  TorusSpec t;
  t.dims = {2};
  t.wraparound = {false};
  t.link_bandwidth = gbyte_per_s(1);
  const auto topo = make_torus(t);
  topo->speed_up_links({link_speedup, 1, 1, 1});
  const Mesh mesh({1, 1, 2, 1}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  return simulate(ps, mesh, *topo, simple_chip(), opt).step_time;
}

TEST(Speedup, EachLeverShortensItsOwnPartOfAStepByHand) {
  const ProgramSet ps = pipeline_of_two();
  EngineOptions opt;
  EXPECT_EQ(step_of(ps, opt), microseconds(7000));
  EngineOptions matmul = opt;
  matmul.compute_speedup[static_cast<size_t>(ComputeKind::kMatmul)] = 2;  // 2 + 1 + 1
  EXPECT_EQ(step_of(ps, matmul), microseconds(4000));
  EngineOptions attention = opt;  // no attention op: nothing changes
  attention.compute_speedup[static_cast<size_t>(ComputeKind::kAttention)] = 2;
  EXPECT_EQ(step_of(ps, attention), microseconds(7000));
  EngineOptions stream = opt;  // 4 + 0.25 + 2
  stream.stream_speedup = {{"pp send next", 4}};
  EXPECT_EQ(step_of(ps, stream), microseconds(6250));
  EngineOptions other = opt;  // the receiver's stream does not time the transfer
  other.stream_speedup = {{"pp recv", 4}};
  EXPECT_EQ(step_of(ps, other), microseconds(7000));
  EXPECT_EQ(step_of(ps, opt, 2), microseconds(6500));  // the link at 2 GB/s
}

const char* const kOneGpu = R"({"model": {"name": "small", "layers": 4, "hidden": 2048, "ffn_hidden": 8192,
    "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 1,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 1}},
    "plan": {"global_batch": 4, "seq_len": 2048}})";

// One GPU: one chain of compute ops, no communication beside it, so the
// whole step is the critical path and a lever of share f made k times
// faster saves f·(1 - 1/k) of the step.
TEST(WhatIf, WithoutContentionTheGainIsThePathShareOfTheLever) {
  WhatIfOptions opt;
  opt.factor = 4;
  const WhatIfResult r = what_if(testing::scenario(kOneGpu), opt);
  ASSERT_TRUE(r.base_path.present);
  ASSERT_FALSE(r.levers.empty());
  for (const WhatIfLever& l : r.levers) {
    SCOPED_TRACE(l.lever);
    if (l.lever.rfind("net", 0) == 0) {
      EXPECT_EQ(l.gain_s, 0);  // one GPU moves nothing
      continue;
    }
    ASSERT_TRUE(l.path_share.has_value());
    // Each op's time rounds to the picosecond: at most 1 ps per op on the path.
    EXPECT_NEAR(l.gain_s, *l.path_share * (1 - 1.0 / 4) * r.base_step_time_s,
                static_cast<double>(r.base_path.ops) * 1e-12);
  }
  EXPECT_EQ(r.levers.front().lever, "matmul");
  for (size_t i = 1; i < r.levers.size(); ++i) EXPECT_GE(r.levers[i - 1].gain_s, r.levers[i].gain_s);
}

const char* const kSixteen = R"({"model": {"name": "small", "layers": 4, "hidden": 2048, "ffn_hidden": 8192,
    "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"dp": 4, "tp": 2, "pp": 2, "zero": 1, "global_batch": 16, "seq_len": 2048}})";

TEST(WhatIf, LeversCoverComputeStreamsAndLinks) {
  const std::vector<std::string> levers = levers_of(testing::scenario(kSixteen));
  for (const char* l : {"matmul", "attention", "optimizer", "stream:tp comm", "stream:pp send next", "net:nvlink",
                        "net:nic", "net:switch"}) {
    EXPECT_NE(std::find(levers.begin(), levers.end(), l), levers.end()) << l;
  }
  EXPECT_EQ(std::find(levers.begin(), levers.end(), "net:ici"), levers.end());  // no torus here
}

// Offloaded tensors' copies over a slow host link make most of the step:
// the "host copy" lever's path share is their time on the path, and a
// stream lever does not claim them (it speeds communication only).
TEST(WhatIf, TheHostCopyLeverOwnsTheCopiesOnThePath) {
  const char* json = R"({"model": {"name": "small", "layers": 4, "hidden": 2048, "ffn_hidden": 8192,
      "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 8,
      "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
      "plan": {"dp": 8, "global_batch": 8, "seq_len": 2048, "recompute": "custom",
               "recompute_keep": ["qkv_proj"], "recompute_offload": ["decoder_layer_input"]}})";
  const Scenario s = testing::scenario(json, {{"cluster.chip.host_link_GBps", "0.1"}});
  const std::vector<std::string> levers = levers_of(s);
  ASSERT_NE(std::find(levers.begin(), levers.end(), "host copy"), levers.end());
  WhatIfOptions opt;
  opt.factor = 2;
  const WhatIfResult r = what_if(s, opt);
  double host_share = 0;
  for (const WhatIfLever& l : r.levers) {
    if (l.lever == "host copy") host_share = l.path_share.value_or(0);
    if (l.lever.rfind("stream:", 0) == 0) {
      EXPECT_LT(l.path_share.value_or(0), 0.1) << l.lever;
    }
  }
  // 4 layers x 2 copies of 8.4 MB at 0.1 GB/s: 0.67 s of the step.
  EXPECT_GT(host_share, 0.9);
  EXPECT_EQ(r.levers.front().lever, "host copy");
}

TEST(WhatIf, TogetherCombinesTheLeversAndFactorsOfOneMultiply) {
  const Scenario s = testing::scenario(kSixteen);
  WhatIfOptions opt;
  opt.speedups = {{"compute", 2}, {"net", 2}};
  const WhatIfResult r = what_if(s, opt);
  ASSERT_EQ(r.levers.size(), 2u);
  ASSERT_TRUE(r.together.has_value());
  for (const WhatIfLever& l : r.levers) EXPECT_LT(r.together->step_time_s, l.step_time_s) << l.lever;
  // Everything twice as fast but the fixed latencies: at least a third off.
  EXPECT_LT(r.together->step_time_s, r.base_step_time_s * 2 / 3);
  // A scenario that already has a speed-up: the lever's factor multiplies it.
  const Scenario twice = testing::scenario(kSixteen, {{"simulator.speedup.matmul", "2"}});
  WhatIfOptions again;
  again.speedups = {{"matmul", 2}};
  const double four = what_if(twice, again).levers.front().step_time_s;
  SimulateOptions so;
  so.critical_path = CriticalPathMode::kOff;
  EXPECT_EQ(four,
            simulate_step(testing::scenario(kSixteen, {{"simulator.speedup.matmul", "4"}}), so).report.step_time_s);
}

TEST(WhatIf, OutputDoesNotDependOnThreads) {
  const Scenario s = testing::scenario(kSixteen);
  WhatIfOptions one;
  one.threads = 1;
  WhatIfOptions two;
  two.threads = 2;
  EXPECT_EQ(whatif_json(what_if(s, one)), whatif_json(what_if(s, two)));
}

TEST(WhatIf, SpeedupsOfOneChangeNothing) {
  SimulateOptions so;
  so.timing = false;
  so.critical_path = CriticalPathMode::kOff;
  const double base = simulate_step(testing::scenario(kSixteen), so).report.step_time_s;
  const Scenario ones = testing::scenario(
      kSixteen, {{"simulator.speedup", R"({"compute": 1, "net": 1, "stream:dp reduce": 1, "matmul": 1})"}});
  EXPECT_EQ(simulate_step(ones, so).report.step_time_s, base);
}

void expect_input_error(const std::vector<Override>& sets, const std::string& where) {
  try {
    SimulateOptions so;
    so.critical_path = CriticalPathMode::kOff;
    simulate_step(testing::scenario(kSixteen, sets), so);
    ADD_FAILURE() << "accepted " << sets.front().value;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
  }
}

TEST(WhatIf, BadLeversAreInputErrorsNamingThem) {
  expect_input_error({{"simulator.speedup.gpu", "2"}}, "/simulator/speedup/gpu: expected a lever");
  expect_input_error({{"simulator.speedup.matmul", "0"}}, "/simulator/speedup/matmul: expected a positive number");
  expect_input_error({{"simulator.speedup.matmul", "\"fast\""}}, "/simulator/speedup/matmul");
  expect_input_error({{"simulator.speedup.net:ib", "2"}}, "/simulator/speedup/net:ib");
  expect_input_error({{"simulator.speedup.stream:dp", "2"}}, "/simulator/speedup/stream:dp: expected a communication");
  expect_input_error({{"simulator.speedup", "[2]"}}, "/simulator/speedup: expected an object");
}

// The SimGrid worker is handed the scenario with its speed-ups and applies
// them as the native engine does (CM02 is the native network model here).
TEST(WhatIf, SimgridWorkerAppliesTheSpeedups) {
  const std::vector<Override> sets = {{"simulator.speedup.matmul", "2"}, {"simulator.speedup.net:nic", "3"}};
  SimulateOptions so;
  so.timing = false;
  so.critical_path = CriticalPathMode::kOff;
  StepRun sg;
  try {
    std::vector<Override> with = sets;
    with.push_back({"simulator.backend", "simgrid"});
    sg = simulate_step(testing::scenario(kSixteen, with), so);
  } catch (const UsageError& e) {
    GTEST_SKIP() << e.what();  // a build without SimGrid
  }
  const double native = simulate_step(testing::scenario(kSixteen, sets), so).report.step_time_s;
  EXPECT_NEAR(sg.report.step_time_s, native, 1e-6 * native);
  EXPECT_LT(native, simulate_step(testing::scenario(kSixteen), so).report.step_time_s);
}

}  // namespace
}  // namespace shardsim
