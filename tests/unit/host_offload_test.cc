// Offloaded activations cross the chip's host link (plan.recompute_offload;
// docs/model.md, section 1, "Offloaded tensors"): each layer's go to the host
// when its forward ends and come back before its backward, one copy per
// layer, microbatch and direction, each taking its bytes over the link's
// one-way rate. The copies run beside compute on the DMA engines.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "program_queries.h"
#include "shardsim/sim/compute_model.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::ancestors;
using testing::named;
using testing::stage0;
using testing::step_time;

// Llama 3 8B on one H100 node's worth of data parallelism, two layers,
// keeping every projection and offloading each layer's input.
const char* kPlan = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
    "plan": {"dp": 64, "global_batch": 64, "seq_len": 4096, "recompute": "custom",
             "recompute_keep": ["qkv_proj", "out_proj", "mlpwi", "mlpwo"],
             "recompute_offload": ["decoder_layer_input"]}})";
const std::vector<Override> kTwoLayers = {{"model.layers", "2"}};
constexpr int64_t kInputBytes = int64_t{4096} * 4096 * 2;  // one sequence of 4096 tokens, bf16

Scenario offloading() {
  return testing::scenario(kPlan, kTwoLayers);
}

TEST(HostOffload, EachLayersTensorsGoToTheHostAndBackOnce) {
  const Program p = stage0(offloading());
  for (int32_t L : {0, 1}) {
    const std::vector<OpId> out = named(p, "offload to host", L, 0, Pass::kForward);
    const std::vector<OpId> back = named(p, "reload from host", L, 0, Pass::kBackward);
    ASSERT_EQ(out.size(), 1U);
    ASSERT_EQ(back.size(), 1U);
    EXPECT_EQ(p.op(out[0]).compute, ComputeKind::kHostCopy);
    EXPECT_EQ(p.op(out[0]).bytes_read.value(), kInputBytes);
    EXPECT_EQ(p.op(back[0]).bytes_written.value(), kInputBytes);
    EXPECT_EQ(p.stream_names()[p.op(out[0]).stream], "host d2h");
    EXPECT_EQ(p.stream_names()[p.op(back[0]).stream], "host h2d");
    // The reload follows its own offload; every compute op of the layer's
    // backward follows the reload.
    EXPECT_EQ(ancestors(p, back[0]).count(out[0]), 1U);
    for (OpId i = 0; i < p.size(); ++i) {
      const Op& o = p.op(i);
      if (o.layer != L || o.stream != TrainStreams::kCompute) continue;
      if (o.pass != Pass::kBackward && o.pass != Pass::kRecompute) continue;
      EXPECT_EQ(ancestors(p, i).count(back[0]), 1U) << p.name(o) << " of layer " << L;
    }
  }
  // Layer 0's reload waits until layer 1's backward may start: it is
  // prefetched a layer ahead, not issued at the step's start.
  const OpId reload0 = named(p, "reload from host", 0, 0, Pass::kBackward).front();
  const OpId out1 = named(p, "offload to host", 1, 0, Pass::kForward).front();
  EXPECT_EQ(ancestors(p, reload0).count(out1), 1U);
}

// The tensors are in HBM from the forward that makes them until their copy
// out ends, and again from their copy back until the layer's backward ends.
TEST(HostOffload, TheTensorsLeaveHbmWithTheirCopyAndReturnWithIt) {
  const Program p = stage0(offloading());
  auto activation_events = [&](OpId op) {
    std::pair<int64_t, int64_t> alloc_free{0, 0};
    for (const MemoryEvent& e : p.memory_events()) {
      if (e.op != op || e.kind != MemKind::kActivation) continue;
      alloc_free.first += e.alloc;
      alloc_free.second += e.free;
    }
    return alloc_free;
  };
  for (int32_t L : {0, 1}) {
    const OpId out = named(p, "offload to host", L, 0, Pass::kForward).front();
    const OpId back = named(p, "reload from host", L, 0, Pass::kBackward).front();
    EXPECT_EQ(activation_events(out), std::make_pair(int64_t{0}, kInputBytes));
    EXPECT_EQ(activation_events(back), std::make_pair(kInputBytes, int64_t{0}));
  }
}

TEST(HostOffload, ACopyTakesItsBytesOverTheLinkBesideCompute) {
  const Scenario s = offloading();
  const Program p = stage0(s);
  const Op& out = p.op(named(p, "offload to host", 0, 0, Pass::kForward).front());
  const double link = s.cluster.chip.host_link.value();
  ASSERT_DOUBLE_EQ(link, 63e9);  // h100-sxm: PCIe Gen5 x16, one way
  const double expected = s.cluster.chip.launch_overhead.seconds() + static_cast<double>(kInputBytes) / link;
  EXPECT_NEAR(compute_time(out, s.cluster.chip).seconds(), expected, 1e-12);
  // It holds no SMs: beside an NCCL kernel it takes the same time.
  EXPECT_EQ(compute_time(out, chip_beside_communication(s.cluster.chip)).ps(), compute_time(out, s.cluster.chip).ps());
}

TEST(HostOffload, AFastLinkHidesTheCopiesAndASlowOneBoundsTheStep) {
  Scenario kept = testing::scenario(kPlan, {{"model.layers", "2"},
                                            {"plan.recompute_offload", "[]"},
                                            {"plan.recompute_keep", R"(["qkv_proj", "out_proj", "mlpwi", "mlpwo"])"}});
  const double without = step_time(kept);
  // 33.5 MB a layer at 63 GB/s (0.5 ms) hides behind each layer's compute.
  Scenario s = offloading();
  EXPECT_NEAR(step_time(s), without, 1e-6);
  // Slower links never make the step faster; at 0.1 GB/s the copies are the
  // step: every offload, then every reload (one stream each way, a reload
  // after its own offload), then what follows the last reload.
  double previous = 0;
  for (double gbps : {63.0, 8.0, 1.0, 0.1}) {
    s.cluster.chip.host_link = BytesPerSec(gbps * 1e9);
    const double t = step_time(s);
    EXPECT_GE(t, previous - 1e-9) << gbps << " GB/s";
    previous = t;
  }
  const double copies = 2 * 2 * static_cast<double>(kInputBytes) / 0.1e9;
  EXPECT_GE(previous, copies);
  EXPECT_LE(previous, copies + without);
}

}  // namespace
}  // namespace shardsim
