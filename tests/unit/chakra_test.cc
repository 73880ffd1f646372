// Chakra execution traces (interop/chakra.h, app/chakra.h): a step exported
// rank by rank and read back simulates as the scenario itself (time and
// memory); hand-written traces (protobuf text, packed here) time as their
// closed forms say; every check of the reader names the file, the node and
// what it expected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "shardsim/app/chakra.h"
#include "shardsim/app/collective.h"
#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/interop/chakra.h"
#include "shardsim/sim/compute_model.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

namespace fs = std::filesystem;

/// A fresh, empty directory under the test's temporary directory.
fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / ("shardsim_chakra_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

/// Two H100s on one NVLink node, running the trace of `dir`.
constexpr const char* kTwoGpus =
    R"({"cluster": {"chip": "h100-sxm", "devices": 2, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 2,
        "nic_GBps_per_gpu": 50}}, "workload": {"kind": "chakra", "dir": "."}})";

/// Packs each rank's text into DIR/trace.<rank>.et, writes the groups and
/// the scenario, and simulates it.
StepRun run_text(const std::string& name, const std::vector<std::string>& ranks, const std::string& groups,
                 bool retime = false) {
  const fs::path d = fresh_dir(name);
  for (size_t r = 0; r < ranks.size(); ++r) {
    write(d / chakra::rank_file_name("trace", static_cast<int64_t>(r)),
          chakra::text_to_et(ranks[r], "rank " + std::to_string(r)));
  }
  if (!groups.empty()) write(d / "comm_groups.json", groups);
  write(d / "scenario.json", kTwoGpus);
  std::vector<Override> sets;
  if (retime) sets.push_back({"workload.retime", "true"});
  return simulate_step(load_scenario((d / "scenario.json").string(), sets));
}

std::string meta() {
  return "# GlobalMetadata\nversion: \"0.0.4\"\n";
}
std::string comp(int id, int us, const std::string& deps = "", const std::string& extra = "") {
  return "# Node\nid: " + std::to_string(id) + "\nname: \"c" + std::to_string(id) +
         "\"\ntype: COMP_NODE\nduration_micros: " + std::to_string(us) + "\n" + deps + extra;
}
std::string all_reduce(int id, int64_t bytes, const std::string& deps, const std::string& pg = "1") {
  return "# Node\nid: " + std::to_string(id) + "\nname: \"ar\"\ntype: COMM_COLL_NODE\n" + deps +
         "attr { name: \"comm_type\" int64_val: 0 }\nattr { name: \"comm_size\" int64_val: " + std::to_string(bytes) +
         " }\nattr { name: \"pg_name\" string_val: \"" + pg + "\" }\n";
}
std::string p2p(int id, bool send, int peer, int64_t bytes, const std::string& deps, int tag = 7) {
  return "# Node\nid: " + std::to_string(id) +
         "\nname: \"p2p\"\ntype: " + (send ? "COMM_SEND_NODE" : "COMM_RECV_NODE") + "\n" + deps + "attr { name: \"" +
         (send ? "comm_dst" : "comm_src") + "\" int32_val: " + std::to_string(peer) +
         " }\nattr { name: \"comm_tag\" int32_val: " + std::to_string(tag) +
         " }\nattr { name: \"comm_size\" int64_val: " + std::to_string(bytes) + " }\n";
}
std::string dep(int id) {
  return "data_deps: " + std::to_string(id) + "\n";
}

// ---- hand-written traces against closed forms ----

TEST(Chakra, CollectiveStartsAtItsLastMemberAndTakesItsLoneTime) {
  // Rank 0: 100 us, all-reduce, 50 us; rank 1: 200 us, all-reduce, 10 us.
  // The all-reduce starts when rank 1 arrives (200 us) and takes its lone
  // time on the two GPUs; rank 0's tail ends last: 250 us + all-reduce.
  const int64_t bytes = 64 << 20;
  const StepRun run = run_text("collective",
                               {meta() + comp(1, 100) + all_reduce(2, bytes, dep(1)) + comp(3, 50, dep(2)),
                                meta() + comp(1, 200) + all_reduce(2, bytes, dep(1)) + comp(3, 10, dep(2))},
                               R"({"1": [0, 1]})");
  const ClusterSpec cluster =
      load_scenario((fs::path(::testing::TempDir()) / "shardsim_chakra_collective/scenario.json").string()).cluster;
  CollectiveRequest req;
  req.op = "all-reduce";
  req.sizes_bytes = {bytes};
  const double lone = time_collective(cluster, nullptr, req).points.at(0).time_s;
  EXPECT_GT(lone, 0);
  EXPECT_NEAR(run.report.step_time_s, 250e-6 + lone, 1e-12);
  EXPECT_FALSE(run.report.memory.known);
}

TEST(Chakra, TransferPairsByTagAndGrowsWithItsBytes) {
  // Rank 0: 100 us then sends; rank 1 receives then 30 us. The transfer
  // takes at least its bytes over the node's NVLink (450 GB/s on h100-sxm)
  // and more bytes take longer.
  auto step = [](int64_t bytes) {
    return run_text("transfer" + std::to_string(bytes),
                    {meta() + comp(1, 100) + p2p(2, true, 1, bytes, dep(1)),
                     meta() + p2p(1, false, 0, bytes, "") + comp(2, 30, dep(1))},
                    "")
        .report.step_time_s;
  };
  const double small = step(1 << 20), large = step(256 << 20);
  EXPECT_GT(small, 130e-6 + (1 << 20) / 450e9);
  EXPECT_GT(large, 130e-6 + (256.0 * (1 << 20)) / 450e9);
  EXPECT_GT(large, small);
}

TEST(Chakra, ComputeNodesRunInStreamOrderAndDependenciesAcrossStreams) {
  // Two compute nodes with no dependency on one stream run one after the
  // other (a stream is a queue): 40 + 60 us on rank 0; rank 1 empty.
  const StepRun run = run_text("stream", {meta() + comp(1, 40) + comp(2, 60), meta()}, "");
  EXPECT_NEAR(run.report.step_time_s, 100e-6, 1e-12);
}

TEST(Chakra, RetimeTakesTheComputeModelsTimeForNodesWithFlops) {
  // A node recorded at 1 us with 2e12 FLOPs: as recorded, 1 us; retimed,
  // the compute model's matmul time on the cluster's chip.
  const std::string node = comp(1, 1, "", "attr { name: \"num_ops\" int64_val: 2000000000000 }\n");
  EXPECT_NEAR(run_text("recorded", {meta() + node, meta()}, "").report.step_time_s, 1e-6, 1e-12);
  const StepRun retimed = run_text("retimed", {meta() + node, meta()}, "", true);
  Op o;
  o.compute = ComputeKind::kMatmul;
  o.flops = Flops(2e12);
  const Scenario s = load_scenario((fs::path(::testing::TempDir()) / "shardsim_chakra_retimed/scenario.json").string());
  EXPECT_NEAR(retimed.report.step_time_s, compute_time(o, s.cluster.chip).seconds(), 1e-12);
  EXPECT_GT(retimed.report.step_time_s, 2e12 / s.cluster.chip.bf16_peak.value());
}

TEST(Chakra, MemoryOfAForeignTraceIsThePeakOfItsLiveTensors) {
  // PyTorch ET tensors [tensor_id, storage_id, offset, numel, itemsize,
  // device]: storage 10 (a view reaching element 1536 of 2-byte elements:
  // 3072 bytes) lives over nodes 1-2, storage 11 (4096 x 4 = 16384 bytes)
  // over nodes 2-3, a host tensor is not device memory. Peak at node 2:
  // 3072 + 16384 bytes.
  auto io = [](const char* field, const char* values) {
    return std::string(field) + " { values: \"" + values + "\" }\n";
  };
  const std::string r0 =
      meta() + comp(1, 10, "", io("outputs", "[[1, 10, 0, 1024, 2, 'cuda:0']]")) +
      comp(2, 10, dep(1),
           io("inputs", "[[1, 10, 0, 1024, 2, 'cuda:0'], [2, 10, 512, 1024, 2, 'cuda:0'], 3, False, None, 'x']") +
               io("outputs", "[[4, 11, 0, 4096, 4, 'cuda:0'], [5, 12, 0, 1000000, 4, 'cpu']]")) +
      comp(3, 10, dep(2), io("inputs", "[[4, 11, 0, 4096, 4, 'cuda:0']]"));
  const StepRun run = run_text("tensors", {r0, meta()}, "");
  EXPECT_TRUE(run.report.memory.known);
  EXPECT_EQ(run.report.memory.peak_bytes_per_device, 3072 + 16384);
  EXPECT_EQ(testing::component(run.report.memory, "traced_tensors"), 3072 + 16384);
  EXPECT_NE(run.report.memory.peak_at.find("rank 0"), std::string::npos) << run.report.memory.peak_at;
  EXPECT_NE(run.report.memory.peak_at.find("c2"), std::string::npos) << run.report.memory.peak_at;
  EXPECT_TRUE(run.report.memory.fits);
  // Values that are not a list literal name no tensors (and break nothing).
  const StepRun odd =
      run_text("odd_values", {meta() + comp(1, 10, "", io("inputs", "[[1, 2, 0, 5, 2, 'cuda:0'")), meta()}, "");
  EXPECT_FALSE(odd.report.memory.known);
}

// ---- export and read back ----

/// Exports `s`, reads the directory back through its scenario.json and
/// checks the step time, FLOPs and memory against simulating `s` itself.
void expect_round_trip(const Scenario& s, const std::string& name) {
  SimulateOptions opt;
  opt.critical_path = CriticalPathMode::kOff;
  const StepRun direct = simulate_step(s, opt);
  const fs::path d = fs::path(::testing::TempDir()) / ("shardsim_chakra_rt_" + name);
  fs::remove_all(d);
  const ChakraExportSummary sum = export_chakra(s, d.string());
  EXPECT_EQ(sum.ranks, s.cluster.devices);
  const StepRun back = simulate_step(load_scenario((d / "scenario.json").string()), opt);
  EXPECT_NEAR(back.report.step_time_s, direct.report.step_time_s, 1e-9 * direct.report.step_time_s);
  EXPECT_NEAR(back.report.model_flops_per_step, direct.report.model_flops_per_step,
              1e-9 * direct.report.model_flops_per_step);
  EXPECT_NEAR(back.report.mfu, direct.report.mfu, 1e-9);
  EXPECT_EQ(back.report.tokens_per_step, direct.report.tokens_per_step);
  EXPECT_EQ(back.report.memory.peak_bytes_per_device, direct.report.memory.peak_bytes_per_device);
  EXPECT_EQ(back.report.memory.fits, direct.report.memory.fits);
  EXPECT_EQ(back.report.model, direct.report.model);
  fs::remove_all(d);
}

TEST(Chakra, ExportedStepsSimulateAsTheScenarioOnRandomPlans) {
  int n = 0;
  for (const testing::RandomScenario& rs : testing::random_scenarios(1801, 6)) {
    SCOPED_TRACE(rs.json);
    expect_round_trip(testing::scenario(rs.json), "random" + std::to_string(n++));
  }
}

// Block-scaled low precision on Blackwell: NVFP4 GEMMs with a bf16 tail and
// MXFP8 ones keep their format through the trace (shardsim.dtype).
TEST(Chakra, ExportedLowPrecisionStepsSimulateAsTheScenario) {
  for (const char* dtype : {R"("matmul_dtype": "fp4", "bf16_tail_layers": 1)",
                            R"("matmul_dtype": "fp8", "fp8_recipe": "mxfp8")"}) {
    const std::string json = std::string(R"({"model": {"name": "small", "layers": 2, "hidden": 1024,
        "ffn_hidden": 4096, "heads": 8, "kv_heads": 8, "vocab": 32000},
        "cluster": {"chip": "gb200", "devices": 4, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 4}},
        "plan": {"framework": "megatron-core", "dp": 2, "tp": 2, "sequence_parallel": true, "global_batch": 4,
                 "seq_len": 2048, )") + dtype + "}}";
    SCOPED_TRACE(json);
    expect_round_trip(testing::scenario(json), "lowp");
  }
}

TEST(Chakra, ExportedDecodeStepSimulatesAsTheScenario) {
  expect_round_trip(load_scenario(std::string(SHARDSIM_SOURCE_DIR) + "/examples/llama3-70b-h100x8-decode.json"),
                    "decode");
}

TEST(Chakra, ExportRefusesADirectoryInTheWayAndLeavesNothing) {
  const fs::path d = fresh_dir("in_the_way");
  write(d / "keep.txt", "x");
  const Scenario s = testing::scenario(testing::random_scenarios(5, 1).front().json);
  EXPECT_THROW(export_chakra(s, d.string()), UsageError);
  EXPECT_TRUE(fs::exists(d / "keep.txt"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d.parent_path())) {
    if (e.path().filename().string().rfind("shardsim_chakra_in_the_way.partial", 0) == 0) ++entries;
  }
  EXPECT_EQ(entries, 0u);
}

TEST(Chakra, TextRoundTripsThroughTheBinaryFile) {
  const std::string text = meta() + comp(1, 5) + all_reduce(2, 1024, dep(1));
  const std::string et = chakra::text_to_et(text, "t");
  EXPECT_EQ(chakra::et_to_text(chakra::text_to_et(chakra::et_to_text(et, "t"), "t"), "t"), chakra::et_to_text(et, "t"));
}

// ---- what the reader refuses ----

/// The InputError that reading these ranks throws: "file: /path: message".
std::string read_error(const std::string& name, const std::vector<std::string>& ranks, const std::string& groups) {
  const fs::path d = fresh_dir("bad_" + name);
  for (size_t r = 0; r < ranks.size(); ++r) {
    write(d / chakra::rank_file_name("trace", static_cast<int64_t>(r)), ranks[r]);
  }
  if (!groups.empty()) write(d / "comm_groups.json", groups);
  chakra::ReadOptions opt;
  opt.devices = 2;
  try {
    chakra::read_trace(d.string(), opt);
  } catch (const InputError& e) {
    return fs::path(e.file()).filename().string() + ": " + e.json_pointer() + ": " + e.what();
  }
  return "no error";
}
std::string et(const std::string& text) {
  return chakra::text_to_et(text, "fixture");
}

TEST(Chakra, ReaderNamesFileNodeAndExpectation) {
  struct Case {
    const char* name;
    std::vector<std::string> ranks;
    std::string groups;
    const char* file;   // the file named
    const char* where;  // a substring of the JSON path
  };
  const std::string ok = et(meta() + comp(1, 5));
  const std::vector<Case> cases = {
      {"cycle", {et(meta() + comp(1, 5, dep(2)) + comp(2, 5, dep(1))), ok}, "", "trace.0.et", "/node/"},
      {"dangling", {et(meta() + comp(1, 5, dep(9))), ok}, "", "trace.0.et", "/node/1"},
      {"duplicate_id", {et(meta() + comp(1, 5) + comp(1, 6)), ok}, "", "trace.0.et", "/node/1"},
      {"unknown_group",
       {et(meta() + all_reduce(1, 64, "", "9")), et(meta() + all_reduce(1, 64, "", "9"))},
       R"({"1": [0, 1]})",
       "trace.0.et",
       "/node/1"},
      {"collective_size_differs",
       {et(meta() + all_reduce(1, 64, "")), et(meta() + all_reduce(1, 128, ""))},
       R"({"1": [0, 1]})",
       "trace.",
       "/node/1"},
      {"collective_missing_on_a_member",
       {et(meta() + all_reduce(1, 64, "")), ok},
       R"({"1": [0, 1]})",
       "trace.",
       "/node/1"},
      {"unpaired_send", {et(meta() + p2p(1, true, 1, 64, "")), ok}, "", "trace.", "/node/1"},
      {"peer_out_of_range", {et(meta() + p2p(1, true, 5, 64, "")), ok}, "", "trace.0.et", "/node/1"},
      {"truncated", {et(meta() + comp(1, 5)).substr(0, 12), ok}, "", "trace.0.et", "/message"},
      {"not_protobuf", {std::string("\x05garbage-bytes-here"), ok}, "", "trace.0.et", "/message"},
      {"unknown_version", {et("# GlobalMetadata\nversion: \"0.0.1\"\n" + comp(1, 5)), ok}, "", "trace.0.et", ""},
      {"missing_comm_size",
       {et(meta() + "# Node\nid: 1\nname: \"x\"\ntype: COMM_COLL_NODE\nattr { name: \"comm_type\" int64_val: 0 }\n"),
        ok},
       "",
       "trace.0.et",
       "/node/1"},
      {"wrong_attribute_type",
       {et(meta() + comp(1, 5, "", "attr { name: \"num_ops\" string_val: \"many\" }\n")), ok},
       "",
       "trace.0.et",
       "/node/1"},
      {"mem_load_node",
       {et(meta() + "# Node\nid: 1\nname: \"x\"\ntype: MEM_LOAD_NODE\n"), ok},
       "",
       "trace.0.et",
       "/node/1"},
      {"storage_node", {et(meta() + "# Node\nid: 1\nname: \"x\"\ntype: STORAGE_NODE\n"), ok}, "", "trace.0.et",
       "/node/1/type"},
      {"bad_groups_json", {ok, ok}, "{\"1\": [0, ", "comm_groups.json", ""},
      {"more_ranks_than_devices", {ok, ok, ok}, "", "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string e = read_error(c.name, c.ranks, c.groups);
    EXPECT_NE(e, "no error");
    EXPECT_NE(e.find(c.file), std::string::npos) << e;
    EXPECT_NE(e.find(c.where), std::string::npos) << e;
  }
}

TEST(Chakra, ADeadlockNamesTheNodeThatNeverRuns) {
  // Each rank receives before it sends: neither transfer can start.
  const fs::path d = fresh_dir("deadlock");
  write(d / "trace.0.et", et(meta() + p2p(1, false, 1, 64, "") + p2p(2, true, 1, 64, dep(1))));
  write(d / "trace.1.et", et(meta() + p2p(1, false, 0, 64, "") + p2p(2, true, 0, 64, dep(1))));
  write(d / "scenario.json", kTwoGpus);
  try {
    simulate_step(load_scenario((d / "scenario.json").string()));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.file().find("trace."), std::string::npos) << e.file();
    EXPECT_EQ(e.json_pointer().rfind("/node/", 0), 0u) << e.json_pointer();
  }
}

}  // namespace
}  // namespace shardsim
