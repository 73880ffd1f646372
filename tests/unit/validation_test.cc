// Published per-GPU memory figures (Korthikanti et al. 2022, Table 5 and
// section 4) for the 22B and 175B runs are reproduced within 10%, as the
// validation scenarios state them. Time rows are reported by `shardsim
// validate`, not asserted here.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "shardsim/app/accuracy.h"
#include "shardsim/app/validation.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {
namespace {

TEST(Validation, KorthikantiMemoryWithinTenPercent) {
  int checked = 0;
  for (const char* model : {"22b", "175b"}) {
    for (const char* mode : {"full", "sp-selective", "no-recompute"}) {
      const std::string file =
          std::string(SHARDSIM_SOURCE_DIR "/examples/validation/korthikanti-") + model + "-" + mode + ".json";
      const Scenario s = load_scenario(file);
      StepReport r;
      r.memory = training_memory(s);
      for (const ValidationRow& row : validate_scenario(s, r)) {
        if (row.performance) continue;
        EXPECT_LT(std::abs(row.error), 0.10) << file << " " << row.metric << " predicted " << row.predicted;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6);
}

// Training rows carry the GEMM format and recipe they are grouped by
// ("split / precision ..."); serving rows carry none.
TEST(Validation, RowsNameTheirPrecision) {
  const std::string dir = SHARDSIM_SOURCE_DIR "/examples/validation/modern/scenarios/";
  const std::pair<const char*, const char*> cases[] = {{"r0540-qwen3-8b-blackwellx4-nvfp4.json", "fp4 nvfp4"},
                                                       {"r0541-qwen3-8b-blackwellx4-mxfp8.json", "fp8 mxfp8"},
                                                       {"r0542-qwen3-8b-blackwellx4-bf16.json", "bf16"},
                                                       {"r0465-llama31-405b-gb200x128-fp8.json", "fp8 delayed"}};
  for (const auto& [file, precision] : cases) {
    const Scenario s = load_scenario(dir + file);
    for (const ValidationRow& row : validate_scenario(s, StepReport{})) EXPECT_EQ(row.precision, precision) << file;
  }
}

// The accuracy record: a report checked against its own record holds; a
// row or a group that got worse beyond the tolerance fails the check, one
// that got better passes it, and a row gone or new fails it until re-recorded.
ValidationReport report(std::vector<std::pair<std::string, double>> errors) {
  ValidationReport r;
  for (const auto& [name, e] : errors) {
    ValidationRow row;
    row.scenario = name;
    row.metric = "step_time_s";
    row.split = "held_out";
    row.framework = "megatron-core";
    row.error = e;
    row.performance = true;
    r.rows.push_back(row);
    r.performance["all"].add(e, e);
    r.performance["held_out / framework megatron-core"].add(e, e);
  }
  return r;
}

TEST(AccuracyRecord, ARunHoldsAgainstItsOwnRecord) {
  const ValidationReport r = report({{"a.json", 0.05}, {"b.json", -0.10}});
  const AccuracyCheck c = check_accuracy(r, accuracy_record_json(r), "record.json");
  EXPECT_TRUE(c.passed());
  EXPECT_TRUE(c.improvements.empty());
}

TEST(AccuracyRecord, AWorseRowOrMeanFailsABetterOnePasses) {
  const std::string rec = accuracy_record_json(report({{"a.json", 0.05}, {"b.json", -0.10}}));
  // Within the half-point row tolerance and the 0.2-point mean tolerance.
  EXPECT_TRUE(check_accuracy(report({{"a.json", 0.053}, {"b.json", -0.10}}), rec, "r").passed());
  // a.json loses a point: the row, the mean and the groups fail.
  const AccuracyCheck worse = check_accuracy(report({{"a.json", 0.06}, {"b.json", -0.10}}), rec, "r");
  EXPECT_FALSE(worse.passed());
  EXPECT_GE(worse.regressions.size(), 2u);
  // Sign does not matter, only |error|: -0.04 is better than +0.05.
  const AccuracyCheck better = check_accuracy(report({{"a.json", -0.04}, {"b.json", -0.10}}), rec, "r");
  EXPECT_TRUE(better.passed());
  EXPECT_FALSE(better.improvements.empty());
}

TEST(AccuracyRecord, RowsGoneOrNewFailUntilReRecorded) {
  const std::string rec = accuracy_record_json(report({{"a.json", 0.05}, {"b.json", -0.10}}));
  EXPECT_FALSE(check_accuracy(report({{"a.json", 0.05}}), rec, "r").passed());
  EXPECT_FALSE(check_accuracy(report({{"a.json", 0.05}, {"b.json", -0.10}, {"c.json", 0.0}}), rec, "r").passed());
}

TEST(AccuracyRecord, MoreRunsOutOfMemoryFail) {
  ValidationReport r = report({{"a.json", 0.05}});
  const std::string rec = accuracy_record_json(r);
  r.out_of_memory = 1;
  r.rows[0].fits = false;
  const AccuracyCheck c = check_accuracy(r, rec, "r");
  EXPECT_EQ(c.regressions.size(), 2u);  // the row no longer fits; one more run out of memory
}

// Memory is held by group and split like time: a held-out memory group that
// gets worse fails though the overall figure hides it, and one more run out
// of memory on either side of the split fails.
TEST(AccuracyRecord, WorseMemoryGroupsAndMoreRunsOutOfMemoryBySplitFail) {
  auto with_memory = [](double dev, double held, int oom_held) {
    ValidationReport r = report({{"a.json", 0.05}});
    r.memory.add(dev, dev);
    r.memory.add(held, held);
    r.memory_groups["development"].add(dev, dev);
    r.memory_groups["held_out"].add(held, held);
    r.out_of_memory_by_split["held_out"] = oom_held;
    r.out_of_memory = oom_held;
    return r;
  };
  const std::string rec = accuracy_record_json(with_memory(0.10, 0.20, 0));
  EXPECT_TRUE(check_accuracy(with_memory(0.10, 0.20, 0), rec, "r").passed());
  // The overall mean is unchanged (0.15), the held-out group's is worse.
  const AccuracyCheck worse = check_accuracy(with_memory(0.05, 0.25, 0), rec, "r");
  EXPECT_FALSE(worse.passed());
  EXPECT_TRUE(std::any_of(worse.regressions.begin(), worse.regressions.end(), [](const std::string& m) {
    return m.find("memory, held_out: mean |error| 20.00% -> 25.00%") != std::string::npos;
  }));
  EXPECT_TRUE(std::none_of(worse.regressions.begin(), worse.regressions.end(), [](const std::string& m) {
    return m.find("memory: mean") != std::string::npos || m.find("development") != std::string::npos;
  }));
  const AccuracyCheck oom = check_accuracy(with_memory(0.10, 0.20, 1), rec, "r");
  EXPECT_EQ(oom.regressions.size(), 2u);  // one more in all, one more held out
  const std::string text = validation_table(with_memory(0.10, 0.20, 1));
  EXPECT_NE(text.find("published runs judged out of memory: 1 (1 held_out)"), std::string::npos) << text;
  EXPECT_NE(text.find("  held_out "), std::string::npos) << text;
}

// Each recorded row carries its groups and its signed direction, so that
// docs/validation.md's tables are made from the record alone
// (scripts/validation_tables.py): a time metric's speed is published /
// predicted - 1 (2 s measured, 1 s predicted: +100%, too fast), a rate's is
// the error itself, a memory row's its error.
TEST(AccuracyRecord, RowsCarryTheirGroupsAndDirection) {
  ValidationReport r;
  auto add = [&](const char* metric, double published, double predicted, bool performance, bool serving) {
    ValidationRow row;
    row.scenario = std::string("modern/") + metric + ".json";
    row.metric = metric;
    row.split = "held_out";
    row.source = "dgxc";
    row.framework = serving ? "trtllm" : "megatron-core";
    row.chip = "h100-sxm";
    row.precision = serving ? "" : "fp8 delayed";
    row.published = published;
    row.predicted = predicted;
    row.error = (predicted - published) / published;
    row.performance = performance;
    row.serving = serving;
    r.rows.push_back(row);
  };
  add("step_time_s", 2.0, 1.0, true, false);
  add("tokens_per_s_per_device", 100.0, 90.0, true, false);
  add("peak_memory_GiB", 80.0, 88.0, false, false);
  add("output_tokens_per_s", 1000.0, 1200.0, true, true);
  const nlohmann::json rec = nlohmann::json::parse(accuracy_record_json(r));
  const auto& rows = rec.at("rows");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].at("kind"), "time");
  EXPECT_DOUBLE_EQ(rows[0].at("bias").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(rows[0].at("abs_error").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(rows[1].at("bias").get<double>(), -0.1);
  EXPECT_EQ(rows[2].at("kind"), "memory");
  EXPECT_DOUBLE_EQ(rows[2].at("bias").get<double>(), 0.1);
  EXPECT_EQ(rows[3].at("kind"), "serving");
  EXPECT_DOUBLE_EQ(rows[3].at("bias").get<double>(), 0.2);
  for (const char* key : {"source", "framework", "chip", "precision"}) EXPECT_TRUE(rows[0].contains(key)) << key;
  EXPECT_EQ(rows[0].at("precision"), "fp8 delayed");
  EXPECT_EQ(rows[3].at("framework"), "trtllm");
  // The record with these fields still checks against its own report.
  EXPECT_TRUE(check_accuracy(r, accuracy_record_json(r), "r").passed());
}

TEST(AccuracyRecord, MalformedRecordsNameTheFileAndPath) {
  const ValidationReport r = report({{"a.json", 0.05}});
  try {
    check_accuracy(r, R"({"tolerance": {"row_abs_error": 0.005}})", "record.json");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("record.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/tolerance/mean_abs_error"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_accuracy(r, "not json", "record.json"), InputError);
}

}  // namespace
}  // namespace shardsim
