// Transfers alone on the fabric (sim/transfer.h): closed forms of the fluid
// model (a lone flow runs at its route's narrowest link; flows through one
// link share it) and the disaggregated server's KV handoff that uses them.
#include "shardsim/sim/transfer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "shardsim/app/serve.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

/// The narrowest link's bandwidth (bytes/s) and the summed latency of a route.
std::pair<double, double> route_of(const Topology& t, DeviceId a, DeviceId b) {
  std::vector<LinkId> route;
  t.route(a, b, route);
  double narrowest = 1e300, latency = 0;
  for (LinkId l : route) {
    narrowest = std::min(narrowest, t.link(l).bandwidth.value());
    latency += t.link(l).latency.seconds();
  }
  return {narrowest, latency};
}

TEST(Transfers, ALoneFlowRunsAtItsNarrowestLinkPlusItsRouteLatency) {
  const auto t = make_fat_tree(testing::fat_tree_450_50(), 16);  // two nodes of 8
  const double bytes = 1e9;
  for (const auto& [a, b] : {std::pair<DeviceId, DeviceId>{0, 1}, {0, 8}, {3, 11}}) {
    const auto [bw, lat] = route_of(*t, a, b);
    const double got = transfers_alone_time(*t, {{a, b, bytes}}).seconds();
    EXPECT_NEAR(got, bytes / bw + lat, 1e-9 * got) << a << " -> " << b;
  }
  // Across nodes the NIC binds: slower than inside the node.
  EXPECT_GT(transfers_alone_time(*t, {{0, 8, bytes}}), transfers_alone_time(*t, {{0, 1, bytes}}));
}

TEST(Transfers, FlowsThroughOneLinkShareIt) {
  const auto t = make_fat_tree(testing::fat_tree_450_50(), 16);
  const double bytes = 1e9;
  const double one = transfers_alone_time(*t, {{0, 8, bytes}}).seconds();
  // Device 0's NIC carries both: twice the carrying time, one latency.
  const double two = transfers_alone_time(*t, {{0, 8, bytes}, {0, 9, bytes}}).seconds();
  const double lat = route_of(*t, 0, 8).second;
  EXPECT_NEAR(two - lat, 2 * (one - lat), 1e-6 * two);
  // Different NICs on a rail-optimized fabric: no sharing.
  const double apart = transfers_alone_time(*t, {{0, 8, bytes}, {1, 9, bytes}}).seconds();
  EXPECT_NEAR(apart, one, 1e-6 * one);
}

TEST(Transfers, NothingToMoveTakesNoTime) {
  const auto t = make_fat_tree(testing::fat_tree_450_50(), 16);
  EXPECT_EQ(transfers_alone_time(*t, {}).ps(), 0);
  EXPECT_EQ(transfers_alone_time(*t, {{2, 2, 1e9}}).ps(), 0);
}

// The disaggregated server hands each request's KV cache over the fabric:
// with the prefill replica in one node and the decode replica in the next,
// every request moves once, and a slower NIC makes requests take longer.
TEST(Transfers, DisaggregatedServingMovesEveryRequestsCacheOnce) {
  const char* json = R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"phase": "decode", "tp": 8, "dp": 2},
    "serving": {"requests": 40, "rate_per_s": 4, "seed": 3, "prefill_replicas": 1,
                "prompt_tokens": {"dist": "uniform", "min": 512, "max": 2048},
                "output_tokens": {"dist": "uniform", "min": 16, "max": 64},
                "max_batch": 64, "max_batched_tokens": 8192, "block_tokens": 16}})";
  const ServeSummary fast = run_serving(testing::scenario(json));
  EXPECT_EQ(fast.result.kv_transfers, 40);
  const ServeSummary slow = run_serving(testing::scenario(json, {{"cluster.fabric.nic_GBps_per_gpu", "1"}}));
  EXPECT_EQ(slow.result.kv_transfers, 40);
  EXPECT_GT(slow.e2e_s.p50, fast.e2e_s.p50);
}

}  // namespace
}  // namespace shardsim
