// `shardsim evidence`: which rows of an accuracy record stand for a
// scenario, and their statistics, checked against figures worked out by
// hand from a small record.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "shardsim/app/evidence.h"
#include "shardsim/app/report.h"
#include "shardsim/core/error.h"
#include "shardsim/core/read_file.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {
// Named, not anonymous: the unit tests build in unity batches, where another
// file's anonymous helpers would share this one's scope.
namespace evidence_test {

/// A record row: what `shardsim validate --record` writes for each row.
nlohmann::json row(const std::string& scenario, const std::string& split, const std::string& kind,
                   const std::string& framework, const std::string& chip, const std::string& precision,
                   double abs_error, double bias, bool fits = true, bool calibrated = false,
                   const std::string& metric = "step_time_s") {
  return {{"scenario", scenario},   {"metric", metric},       {"split", split},
          {"kind", kind},           {"source", "s"},          {"framework", framework},
          {"chip", chip},           {"precision", precision}, {"calibrated", calibrated},
          {"abs_error", abs_error}, {"bias", bias},           {"fits", fits}};
}

/// Megatron-Core on H100 in fp8: two held-out rows and one development row
/// share all three keys; one more of each shares framework and chip; the
/// rest share less, or are of another kind.
std::string record() {
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back(row("a.json", "held_out", "time", "megatron-core", "h100-sxm", "fp8 delayed", 0.10, 0.10));
  rows.push_back(row("b.json", "held_out", "time", "megatron-core", "h100-sxm", "fp8 delayed", 0.04, -0.04, false));
  rows.push_back(row("c.json", "development", "time", "megatron-core", "h100-sxm", "fp8 delayed", 0.20, 0.25));
  rows.push_back(row("d.json", "held_out", "time", "megatron-core", "h100-sxm", "bf16", 0.06, 0.06));
  rows.push_back(row("e.json", "development", "time", "megatron-core", "h100-sxm", "bf16", 0.02, 0.02));
  rows.push_back(row("f.json", "held_out", "time", "megatron-core", "gb200", "fp8 delayed", 0.30, 0.40));
  rows.push_back(row("g.json", "held_out", "time", "torchtitan", "h100-sxm", "fp8 delayed", 0.50, 0.50));
  rows.push_back(row("g.json", "held_out", "memory", "torchtitan", "h100-sxm", "fp8 delayed", 0.08, -0.08, true, false,
                     "peak_memory_GiB"));
  // Another kind, or another profile: never counted for this scenario.
  rows.push_back(row("h.json", "held_out", "time", "megatron-core", "h100-sxm", "fp8 delayed", 0.90, 0.90, true, true));
  rows.push_back(
      row("i.json", "held_out", "serving", "trtllm", "h100-sxm", "", 0.70, -0.70, true, false, "ttft_mean_s"));
  return nlohmann::json{{"rows", rows}}.dump();
}

/// Llama 3 8B under Megatron-Core on 8 H100s, its GEMMs in fp8 (delayed
/// scaling) unless `fp8` is false.
Scenario scenario(bool fp8 = true) {
  const std::string precision = fp8 ? R"("matmul_dtype": "fp8", "fp8_recipe": "delayed")" : R"("matmul_dtype": "bf16")";
  return parse_scenario(R"({"model": "llama3-8b",
                            "cluster": {"chip": "h100-sxm", "devices": 8,
                                        "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
                            "plan": {"framework": "megatron-core", "dp": 8, "global_batch": 64, "seq_len": 4096,
                                     "microbatch_size": 1, )" +
                            precision + "}}",
                        "s.json");
}

const EvidenceGroup& group(const Evidence& e, const std::string& level, const std::string& split) {
  for (const auto& g : e.groups) {
    if (g.level == level && g.split == split) return g;
  }
  throw std::runtime_error("no group " + level + " / " + split);
}

TEST(Evidence, GroupsTheRowsThatShareTheScenariosKeys) {
  const Evidence e = find_evidence(scenario(), record(), "r.json");
  EXPECT_EQ(e.family, "training");
  EXPECT_EQ(e.framework, "megatron-core");
  EXPECT_EQ(e.precision, "fp8 delayed");
  // All three keys, held out: a (0.10, +0.10) and b (0.04, -0.04, out of memory).
  const EvidenceGroup& exact = group(e, "framework, chip and precision", "held_out");
  EXPECT_EQ(exact.label, "megatron-core on h100-sxm, fp8 delayed");
  EXPECT_EQ(exact.speed.n, 2);
  EXPECT_NEAR(exact.speed.mean(), 0.07, 1e-12);
  EXPECT_NEAR(exact.speed.max, 0.10, 1e-12);
  EXPECT_NEAR(exact.speed.bias(), 0.03, 1e-12);
  EXPECT_EQ(exact.speed.high, 1);
  EXPECT_EQ(exact.runs, 2);
  EXPECT_EQ(exact.out_of_memory, 1);
  EXPECT_EQ(group(e, "framework, chip and precision", "development").speed.n, 1);
  // Framework and chip add d and e; framework adds f; chip adds g (and its
  // memory row) but not f.
  EXPECT_EQ(group(e, "framework and chip", "held_out").speed.n, 3);
  EXPECT_EQ(group(e, "framework and chip", "development").speed.n, 2);
  EXPECT_EQ(group(e, "framework", "held_out").speed.n, 4);
  const EvidenceGroup& chip = group(e, "chip", "held_out");
  EXPECT_EQ(chip.speed.n, 4);
  EXPECT_NEAR(chip.speed.max, 0.50, 1e-12);
  EXPECT_EQ(chip.memory.n, 1);
  EXPECT_NEAR(chip.memory.bias(), -0.08, 1e-12);
  EXPECT_EQ(chip.runs, 4);  // a, b, d, g: g once for its time and its peak memory
  // Three speed rows over both sides: the most specific level stands.
  EXPECT_EQ(e.closest, "framework, chip and precision");
}

TEST(Evidence, FallsBackToALessSpecificLevelWhenTooFewRowsShareAll) {
  // bf16: d (held out) and e (development) share all three keys: 2 rows.
  const Evidence e = find_evidence(scenario(false), record(), "r.json");
  EXPECT_EQ(e.precision, "bf16");
  EXPECT_EQ(group(e, "framework, chip and precision", "held_out").speed.n, 1);
  EXPECT_EQ(e.closest, "framework and chip");
}

TEST(Evidence, ReportsNothingForKeysNoRowShares) {
  const Scenario s = parse_scenario(
      R"({"model": "llama3-8b", "cluster": {"chip": "tpu-v5e", "devices": 8, "fabric": {"kind": "torus", "dims": [8]}},
          "plan": {"framework": "maxtext", "dp": 8, "global_batch": 64, "seq_len": 4096, "microbatch_size": 1}})",
      "s.json");
  const Evidence e = find_evidence(s, record(), "r.json");
  EXPECT_TRUE(e.groups.empty());
  EXPECT_TRUE(e.closest.empty());
  EXPECT_NE(evidence_text(e).find("unvalidated"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(evidence_json(e))["closest"].is_null());
}

TEST(Evidence, AServingScenarioTakesTheEnginesRowsByMetricFamily) {
  auto j = nlohmann::json::parse(
      read_file_text(std::string(SHARDSIM_SOURCE_DIR) + "/examples/llama3-70b-h100x8-serve.json"));
  j["serving"]["engine"] = "trtllm";
  const Evidence e = find_evidence(parse_scenario(j.dump(), "serve.json"), record(), "r.json");
  EXPECT_EQ(e.family, "serving");
  EXPECT_EQ(e.framework, "trtllm");
  EXPECT_EQ(e.precision, "");
  // Only i.json is a serving row: its time to first token, at every level.
  const EvidenceGroup& ttft = group(e, "engine, chip and metric", "held_out");
  EXPECT_EQ(ttft.label, "trtllm on h100-sxm, time to first token");
  EXPECT_EQ(ttft.speed.n, 1);
  EXPECT_NEAR(ttft.speed.bias(), -0.70, 1e-12);
  EXPECT_EQ(group(e, "engine and chip", "held_out").speed.n, 1);
  EXPECT_EQ(group(e, "chip", "held_out").speed.n, 1);
  EXPECT_TRUE(e.closest.empty());  // one row: too little to stand for it
  EXPECT_NE(evidence_text(e).find("too little evidence"), std::string::npos);
}

TEST(Evidence, JsonCarriesEveryGroup) {
  const Evidence e = find_evidence(scenario(), record(), "r.json");
  const auto j = nlohmann::json::parse(evidence_json(e));
  ASSERT_EQ(j["groups"].size(), e.groups.size());
  EXPECT_EQ(j["closest"], "framework, chip and precision");
  EXPECT_EQ(j["groups"][0]["rows"], 2);
  EXPECT_DOUBLE_EQ(j["groups"][0]["mean_abs_error"].get<double>(), 0.07);
  EXPECT_EQ(j["groups"][0]["out_of_memory"], 1);
}

TEST(Evidence, AMalformedRecordNamesTheFileAndThePath) {
  const Scenario s = scenario();
  auto message = [&](const std::string& text) {
    try {
      find_evidence(s, text, "r.json");
    } catch (const InputError& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("[1]"), "r.json: error: expected an accuracy record (a JSON object)");
  EXPECT_EQ(message("{\"rows\": 3}"), "r.json: error: /rows: expected an array of rows");
  nlohmann::json bad = nlohmann::json::parse(record());
  bad["rows"][1]["abs_error"] = "10%";
  EXPECT_EQ(message(bad.dump()), "r.json: error: /rows/1/abs_error: expected a number");
  bad = nlohmann::json::parse(record());
  bad["rows"][0]["kind"] = "energy";
  EXPECT_EQ(message(bad.dump()),
            "r.json: error: /rows/0/kind: expected \"time\", \"memory\" or \"serving\", got \"energy\"");
}

TEST(Evidence, TheEmbeddedRecordHoldsTheValidationRows) {
  // The build embeds examples/validation/accuracy.json: a modern
  // Megatron-Core H100 scenario finds its own group there.
  const Evidence e = find_evidence(scenario(), embedded_accuracy_record(), "embedded");
  EXPECT_EQ(e.closest, "framework, chip and precision");
  int rows = 0;
  for (const auto& g : e.groups) {
    if (g.level == e.closest) rows += g.speed.n;
  }
  EXPECT_GT(rows, 50);
}

TEST(Evidence, TheHtmlReportSaysHowFarToTrustItsStep) {
  const std::string out = ::testing::TempDir() + "/shardsim_evidence_report.html";
  write_step_report(scenario(), out, "evidence");
  const std::string html = read_file_text(out);
  const size_t at = html.find("<h2>How far to trust this prediction</h2>");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(at, html.find("<h2>Where the step's time goes</h2>"));  // beside the headline, before the detail
  EXPECT_NE(html.find("<td><b>megatron-core on h100-sxm, fp8 delayed</b></td><td>held out</td>"), std::string::npos);
  std::remove(out.c_str());
}

}  // namespace evidence_test
}  // namespace shardsim
