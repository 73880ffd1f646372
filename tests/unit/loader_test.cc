// Every kind of bad input throws InputError naming the JSON path.
#include <gtest/gtest.h>

#include "shardsim/core/error.h"
#include "shardsim/workloads/presets.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

const char* kGood = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
  "plan": {"dp": 8, "tp": 8, "global_batch": 64, "seq_len": 2048}})";

std::string error_of(const std::string& json, const std::vector<Override>& sets = {}) {
  try {
    testing::scenario(json, sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Loader, GoodScenarioLoads) {
  const Scenario s = testing::scenario(kGood);
  EXPECT_EQ(s.model.layers, 32);
  EXPECT_EQ(s.cluster.devices, 64);
  EXPECT_EQ(s.plan.microbatches(), 8);
  EXPECT_EQ(s.cluster.chip.name, "h100-sxm");
}

struct BadCase {
  const char* what;
  std::vector<Override> sets;
  const char* expect;  // substring of the message
};

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, NamesThePath) {
  const BadCase& c = GetParam();
  const std::string msg = error_of(kGood, c.sets);
  EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
  EXPECT_EQ(msg.rfind("test.json", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, BadInput,
    ::testing::Values(
        BadCase{"unknown field", {{"plan.tpp", "2"}}, "/plan/tpp: unknown field"},
        BadCase{"wrong type", {{"plan.tp", "\"eight\""}}, "/plan/tp: expected a positive integer"},
        BadCase{"zero size", {{"plan.global_batch", "0"}}, "/plan/global_batch: expected a positive integer, got 0"},
        BadCase{"negative size", {{"plan.seq_len", "-5"}}, "/plan/seq_len: expected a positive integer"},
        BadCase{"float for int", {{"plan.dp", "8.5"}}, "/plan/dp: expected a positive integer"},
        BadCase{
            "tp not dividing heads", {{"plan.tp", "3"}, {"plan.dp", "1"}}, "/plan/tp: tp (3) must divide heads (32)"},
        BadCase{"device count", {{"plan.dp", "4"}}, "/plan: dp·tp·pp·cp = 32 but the cluster has 64 devices"},
        BadCase{"unknown model preset", {{"model", "\"llama9\""}}, "/model: unknown model preset \"llama9\""},
        BadCase{"unknown chip preset", {{"cluster.chip", "\"z100\""}}, "/cluster/chip: unknown chip preset"},
        BadCase{"missing field", {{"model.layers", "null"}}, "/model/layers: missing required field"},
        BadCase{"word for a count", {{"model.layers", "\"many\""}}, "/model/layers: expected a positive integer"},
        BadCase{"bad enum", {{"model.mlp", "\"tanh\""}}, "/model/mlp: expected one of"},
        BadCase{"torus dims",
                {{"cluster.fabric", R"({"kind": "torus", "dims": [4, 4]})"}},
                "/cluster/fabric/dims: product of dims (16) differs from devices (64)"},
        BadCase{"fabric kind", {{"cluster.fabric.kind", "\"mesh\""}}, "/cluster/fabric/kind: expected one of"},
        BadCase{"batch multiple",
                {{"plan.global_batch", "12"}},
                "/plan/global_batch: global_batch (12) must be a multiple"},
        BadCase{"oversubscription", {{"cluster.fabric.oversubscription", "0.5"}}, "/cluster/fabric/oversubscription"},
        BadCase{"huge devices", {{"cluster.devices", "1000000000"}}, "/cluster/devices: at most"},
        BadCase{"huge layers", {{"model.layers", "10000000"}}, "/model/layers: at most"},
        BadCase{"overflowing batch",
                {{"plan.global_batch", "9223372036854775807"}, {"plan.seq_len", "9223372036854775807"}},
                "/plan/global_batch"},
        BadCase{"kv heads", {{"model.kv_heads", "5"}}, "/model/kv_heads: kv_heads (5) must divide heads (32)"},
        BadCase{"master remainder of bf16",
                {{"plan.master_copy", "\"remainder\""}, {"plan.master_weights_dtype", "\"bf16\""}},
                "/plan/master_copy: \"remainder\" keeps the low half of fp32 master weights"},
        BadCase{"no master copy of fp32", {{"plan.master_copy", "\"none\""}}, "/plan/master_copy: \"none\" makes"},
        BadCase{"master copy name", {{"plan.master_copy", "\"half\""}}, "/plan/master_copy: expected one of"},
        BadCase{
            "mesh order", {{"plan.mesh_order", R"(["tp", "tp", "pp", "dp"])"}}, "/plan/mesh_order/1: axis named twice"},
        BadCase{"set into a number",
                {{"plan.tp.x", "1"}},
                "/plan/tp: --set plan.tp.x: cannot set a field inside a number"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string n = info.param.what;
      for (char& ch : n) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return n;
    });

// Found by the fuzzer: a --set value that is not valid UTF-8 becomes a raw
// string; nothing that prints it may throw.
TEST(Loader, InvalidUtf8InASetValueIsNoCrash) {
  const Scenario s = testing::scenario(kGood, {{"model.name", "bad\xff\xfe name"}});
  EXPECT_EQ(s.model.name.size(), 10u);
  const std::string msg = error_of(kGood, {{"plan.tp", "\"\xff\""}});
  EXPECT_NE(msg.find("/plan/tp: expected a positive integer"), std::string::npos) << msg;
}

TEST(Loader, ConfigHashNamesWhatWasSimulated) {
  const std::string a = testing::scenario(kGood).config_hash;
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(testing::scenario(kGood).config_hash, a);
  EXPECT_NE(testing::scenario(kGood, {{"plan.seq_len", "4096"}}).config_hash, a);
}

TEST(Loader, MalformedJsonGivesLineAndColumn) {
  try {
    parse_scenario("{\n  \"model\": \"llama3-8b\",\n  \"plan\": {\n}", "bad.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.json:4:2: error: malformed JSON", 0), 0u) << e.what();
  }
}

TEST(Loader, EveryPresetParses) {
  for (const auto& p : all_presets()) {
    if (p.kind == "model") {
      EXPECT_NO_THROW(
          testing::scenario(std::string(R"({"model": ")") + std::string(p.name) +
                            R"(", "cluster": "dgx-h100-64", "plan": {"dp": 64, "global_batch": 64, "seq_len": 2048}})"))
          << p.name;
    } else if (p.kind == "cluster" || p.kind == "chip") {
      const std::string name(p.name);
      const std::string cluster =
          p.kind == "cluster" ? "\"" + name + "\""
                              : R"({"chip": ")" + name +
                                    R"(", "devices": 8, "fabric": {"kind": "torus", "dims": [8], "link_GBps": 45}})";
      const int64_t devices = p.kind == "cluster" ? load_cluster(name).devices : 8;
      const std::string n = std::to_string(devices);
      EXPECT_NO_THROW(testing::scenario(R"({"model": "llama3-8b", "cluster": )" + cluster + R"(, "plan": {"dp": )" + n +
                                        R"(, "global_batch": )" + n + R"(, "seq_len": 2048}})"))
          << name;
    }
  }
}

}  // namespace
}  // namespace shardsim

namespace shardsim {
namespace {

// A cluster file is a bare cluster object: its errors name its own paths,
// and --set reaches into its chip preset as cluster.chip.* does in a
// scenario, the same cluster either way.
TEST(Loader, ClusterFileNamesItsOwnPathsAndTakesSetsIntoItsChip) {
  const char* kCluster = R"({"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8, "nic_GBps_per_gpu": 50}})";
  const ClusterSpec base = parse_cluster_text(kCluster, "c.json");
  const ClusterSpec set = parse_cluster_text(kCluster, "c.json", {{"chip.hbm_GBps", "4000"}});
  EXPECT_NE(base.chip.hbm_bandwidth.value(), set.chip.hbm_bandwidth.value());
  EXPECT_DOUBLE_EQ(set.chip.hbm_bandwidth.value(), 4000e9);
  const Scenario in_scenario = testing::scenario(
      std::string(R"({"model": "llama3-8b", "plan": {"dp": 2, "tp": 8, "global_batch": 2, "seq_len": 2048},
                      "cluster": )") +
          kCluster + "}",
      {{"cluster.chip.hbm_GBps", "4000"}});
  EXPECT_DOUBLE_EQ(in_scenario.cluster.chip.hbm_bandwidth.value(), set.chip.hbm_bandwidth.value());
  try {
    parse_cluster_text(kCluster, "c.json", {{"devices", "-8"}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_pointer(), "/devices") << e.what();
  }
  try {
    parse_cluster_text(kCluster, "c.json", {{"fabric.lanes", "4"}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_pointer(), "/fabric/lanes") << e.what();
  }
}

}  // namespace
}  // namespace shardsim
