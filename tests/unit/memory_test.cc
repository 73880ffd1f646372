// Memory of a training step from its lowered program, against closed forms:
// what the head and the loss hold per logit for each stack's loss kernel,
// vocabulary tiling, the resident bytes per parameter of FSDP over master
// shards and of Apex's master remainders, Transformer Engine's fp8 weight
// cache and the memory report's peak location.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "program_queries.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/model.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::component;

MemoryReport walked(const Scenario& s) {
  return training_memory(s, lower_training_step(s));
}

// Llama 3 8B, one 8192-token sequence per device, every layer recomputed:
// the 128K vocabulary's logits (1.05e9 per device) dwarf everything else, so
// the step's peak is the loss's backward.
constexpr const char* kBigVocab = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
    "plan": {"dp": 64, "zero": 3, "global_batch": 64, "seq_len": 8192, "recompute": "full"}})";

struct LossCase {
  const char* kernel;
  int64_t kept;          ///< bytes per logit kept from the loss's forward to its backward
  int64_t backward_top;  ///< bytes per logit beyond those while its backward runs (allocator included)
};

class HeadMemory : public ::testing::TestWithParam<LossCase> {};

// At the loss's backward the head holds L·kept (plus the final norm's input
// and output, 2·T·h bf16) and the op holds L·backward_top on top.
TEST_P(HeadMemory, PeakIsTheLossBackwardAtItsBytesPerLogit) {
  const LossCase c = GetParam();
  const Scenario s = testing::scenario(kBigVocab, {{"plan.loss_kernel", std::string("\"") + c.kernel + "\""}});
  const int64_t T = 8192, h = 4096, L = T * padded_vocab(s.model, 1);
  const MemoryReport r = walked(s);
  EXPECT_NE(r.peak_at.find("cross-entropy (bwd"), std::string::npos) << r.peak_at;
  EXPECT_EQ(component(r, "logits"), L * c.kept + 2 * T * h * 2);
  EXPECT_EQ(component(r, "working_set"), L * c.backward_top);
}

INSTANTIATE_TEST_SUITE_P(Kernels, HeadMemory,
                         ::testing::Values(LossCase{"megatron", 4, 2},   // fp32 softmax; bf16 gradient cast
                                           LossCase{"torch", 4, 8 + 2},  // two fp32 gradients; allocator's 2
                                           LossCase{"torch_bf16", 2 + 2, 4},
                                           LossCase{"xla", 2, 2},  // bf16 logits; fp32 recomputed in fusions
                                           LossCase{"torch_compiled", 2, 2}),  // Inductor: the same
                         [](const auto& info) { return std::string(info.param.kernel); });

// torchtitan's loss under torch.compile is one fused pass each way over the
// bf16 logits (eager: an fp32 copy and log-softmax written and read), while
// the final norm outside the compiled blocks stays eager in both.
TEST(HeadMemory, CompiledTorchLossIsFusedButTheFinalNormStaysEager) {
  const std::vector<Override> compiled = {{"plan.framework", "\"torchtitan\""}, {"plan.compile", "true"}};
  std::vector<Override> eager_loss = compiled, fused_loss = compiled;
  eager_loss.push_back({"plan.loss_kernel", "\"torch\""});
  fused_loss.push_back({"plan.loss_kernel", "\"torch_compiled\""});
  const Program e = testing::stage0(testing::scenario(kBigVocab, eager_loss));
  const Program f = testing::stage0(testing::scenario(kBigVocab, fused_loss));
  const int64_t T = 8192, L = T * padded_vocab(testing::scenario(kBigVocab).model, 1);
  auto bytes = [](const Program& p, std::string_view name, Pass pass) {
    const std::vector<OpId> ids = testing::named(p, name, -1, 0, pass);
    EXPECT_EQ(ids.size(), 1u) << name;
    return p.op(ids.front()).bytes_read.value() + p.op(ids.front()).bytes_written.value();
  };
  EXPECT_EQ(bytes(e, "cross-entropy", Pass::kForward), L * 14 + L * 8);
  EXPECT_EQ(bytes(f, "cross-entropy", Pass::kForward), L * 2 + T * 4);
  EXPECT_EQ(bytes(f, "final norm", Pass::kForward), bytes(e, "final norm", Pass::kForward));
}

// Transformer Engine's kernel keeps only the bf16 logits, which hold the
// gradient: the peak moves off the loss.
TEST(HeadMemory, TeKernelKeepsTheBf16LogitsOnly) {
  const Scenario te = testing::scenario(kBigVocab, {{"plan.loss_kernel", "\"te\""}});
  const Scenario megatron = testing::scenario(kBigVocab, {{"plan.loss_kernel", "\"megatron\""}});
  const int64_t L = int64_t{8192} * padded_vocab(te.model, 1);
  const MemoryReport r = walked(te);
  EXPECT_LE(r.peak_bytes_per_device, walked(megatron).peak_bytes_per_device - 2 * L);
}

// Vocabulary tiling: no logits are kept, one chunk is live at a time, and the
// backward recomputes the head GEMM once more.
TEST(HeadMemory, VocabTilingKeepsOneChunkAndRecomputesTheHead) {
  const Scenario whole = testing::scenario(kBigVocab, {{"plan.loss_kernel", "\"xla\""}});
  const Scenario tiled = testing::scenario(kBigVocab, {{"plan.loss_kernel", "\"xla\""}, {"plan.vocab_tiling", "16"}});
  const int64_t T = 8192, h = 4096, L = T * padded_vocab(whole.model, 1);
  EXPECT_EQ(component(training_memory(tiled), "logits"), 2 * T * h * 2);  // the final norm's tensors only
  // Whole, the loss's backward holds 4 bytes per logit (bf16 logits and
  // gradient); tiled, a sixteenth of that: at least 2 bytes per logit less.
  EXPECT_LT(walked(tiled).peak_bytes_per_device, walked(whole).peak_bytes_per_device - 2 * L);
  auto head_flops = [](const Scenario& s) {
    const ProgramSet ps = lower_training_step(s);
    const Program& p = ps.stages[0];
    double f = 0;
    for (const Op& o : p.ops()) {
      if (p.name(o).starts_with("unembedding")) f += o.flops.value();
    }
    return f;
  };
  // Forward, dgrad, wgrad: 3·2·T·V·h; tiled: one more forward.
  EXPECT_NEAR(head_flops(tiled) / head_flops(whole), 4.0 / 3.0, 1e-9);
}

// FSDP over master-dtype shards (PyTorch FSDP2, MaxText): 4 (fp32 shard) + 4
// (fp32 gradient) + 8 (Adam) = 16 bytes per parameter over the shards, no
// bf16 copy; DeepSpeed-style ZeRO-3 keeps a bf16 shard too (18).
TEST(ResidentMemory, FsdpMasterShardsHoldSixteenBytesPerParameter) {
  const Scenario s = testing::scenario(kBigVocab);
  const int64_t n = count_params(s.model).total();
  auto resident = [&](const char* master) {
    const MemoryReport r = training_memory(testing::scenario(kBigVocab, {{"plan.fsdp_params_are_master", master}}));
    return component(r, "weights") + component(r, "gradients") + component(r, "optimizer_state");
  };
  EXPECT_NEAR(static_cast<double>(resident("true")), 16.0 * static_cast<double>(n) / 64, 1e-3 * n / 64);
  EXPECT_NEAR(static_cast<double>(resident("false")), 18.0 * static_cast<double>(n) / 64, 1e-3 * n / 64);
  // NeMo AutoModel: bf16 parameters, bf16 Adam moments, gradients cast back
  // to bf16: 8 bytes per parameter.
  const MemoryReport bf16 = training_memory(testing::scenario(kBigVocab, {{"plan.fsdp_params_are_master", "true"},
                                                                          {"plan.master_weights_dtype", "\"bf16\""},
                                                                          {"plan.optimizer_state_dtype", "\"bf16\""}}));
  EXPECT_NEAR(static_cast<double>(component(bf16, "weights") + component(bf16, "gradients") +
                                  component(bf16, "optimizer_state")),
              8.0 * static_cast<double>(n) / 64, 1e-3 * n / 64);
}

// Apex DistributedFusedAdam (NeMo 1.x): an fp32 optimizer over bf16
// parameters keeps 16-bit remainders of the master weights (2 + 4 + 4 = 10
// bytes per parameter over the shards, not 12); an optimizer in the model's
// bf16 keeps no master copy (2 + 2 = 4 with bf16 moments, not 6). The Adam
// kernel reads the bf16 parameter as the rest of the master weight.
TEST(ResidentMemory, ApexMasterRemaindersAndNoMasterCopy) {
  const char* base = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"framework": "megatron-core", "dp": 64, "global_batch": 64, "seq_len": 4096, "zero": 1}})";
  const int64_t n = count_params(testing::scenario(base).model).total();
  auto optimizer = [&](const std::vector<Override>& sets) {
    return static_cast<double>(component(training_memory(testing::scenario(base, sets)), "optimizer_state"));
  };
  const double shard = static_cast<double>(n) / 64;
  EXPECT_NEAR(optimizer({}), 12.0 * shard, 64.0 * 12);
  EXPECT_NEAR(optimizer({{"plan.master_copy", "\"remainder\""}}), 10.0 * shard, 64.0 * 10);
  EXPECT_NEAR(optimizer({{"plan.master_copy", "\"none\""},
                         {"plan.master_weights_dtype", "\"bf16\""},
                         {"plan.optimizer_state_dtype", "\"bf16\""}}),
              4.0 * shard, 64.0 * 4);
  // The step's Adam moves the same bytes with a remainder as with a full
  // fp32 master: 2 + 2 read in place of 4.
  auto adam_bytes = [&](const std::vector<Override>& sets) -> double {
    const Program prog = std::move(lower_training_step(testing::scenario(base, sets)).stages[0]);
    for (const Op& o : prog.ops()) {
      if (prog.name(o) == "adam") return static_cast<double>(o.bytes_read.value() + o.bytes_written.value());
    }
    return -1.0;
  };
  EXPECT_GT(adam_bytes({}), 0);
  EXPECT_DOUBLE_EQ(adam_bytes({{"plan.master_copy", "\"remainder\""}}), adam_bytes({}) - 2.0 * std::ceil(shard));
}

// Transformer Engine's cached fp8 weights: 2 bytes per layer parameter, only
// for fp8 GEMMs over bf16 weights.
TEST(ResidentMemory, Fp8WeightCacheIsTwoBytesPerLayerParameter) {
  const char* base = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"framework": "megatron-core", "dp": 8, "tp": 8, "global_batch": 8, "seq_len": 8192,
               "matmul_dtype": "fp8"}})";
  const Scenario s = testing::scenario(base);
  const int64_t layer = device_params(s.model, 8, 1, 8192).dense_layer;
  EXPECT_EQ(component(training_memory(s), "fp8_weight_cache"), 2 * 32 * layer);
  EXPECT_EQ(
      component(training_memory(testing::scenario(base, {{"plan.fp8_param_gather", "true"}})), "fp8_weight_cache"), 0);
  EXPECT_EQ(
      component(training_memory(testing::scenario(base, {{"plan.matmul_dtype", "\"bf16\""}})), "fp8_weight_cache"), 0);
}

// FSDP2's gradient side: each unit's reduce-scatter input (its gradients in
// fp32, the reduce dtype) is taken at its copy-in and released at the next
// unit's copy-in, the last with the last reduce-scatter: one unit's input at
// a time between copy-ins, every byte released. The copy-in reads the
// unit's unsharded bf16 gradients, its working set.
TEST(FsdpMemory, ReduceScatterInputsLiveUntilTheNextUnitsCopyIn) {
  const Scenario s = testing::scenario(R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"framework": "torchtitan", "dp": 8, "zero": 3, "global_batch": 8, "seq_len": 2048}})",
                                       {{"model.layers", "3"}, {"cluster.devices", "8"}});
  const Program p = testing::stage0(s);
  const std::vector<OpId> copy_ins = testing::named(p, "fsdp grad copy-in");
  ASSERT_FALSE(copy_ins.empty());
  int64_t live = 0, most = 0, taken = 0, largest = 0;
  size_t allocations = 0;
  for (const MemoryEvent& e : p.memory_events()) {
    if (e.kind != MemKind::kGradBuffers) continue;
    live += e.alloc;
    most = std::max(most, live);
    if (e.alloc > 0) {
      ++allocations;
      taken += e.alloc;
      largest = std::max(largest, e.alloc);
      EXPECT_EQ(p.op(e.op).bytes_written.value(), e.alloc);      // the fp32 input the copy-in writes
      EXPECT_EQ(p.op(e.op).mem_transient.value() * 2, e.alloc);  // the bf16 gradients it reads
    }
    live -= e.free;
  }
  EXPECT_EQ(allocations, copy_ins.size());
  EXPECT_EQ(live, 0);
  EXPECT_GT(taken, 0);
  EXPECT_LE(most, 2 * largest);  // the unit's input beside the one before it, at most
}

TEST(LossKernel, BadNamesAreRejected) {
  EXPECT_THROW(testing::scenario(kBigVocab, {{"plan.loss_kernel", "\"fused\""}}), std::exception);
  EXPECT_THROW(testing::scenario(kBigVocab, {{"plan.vocab_tiling", "0"}}), std::exception);
}

}  // namespace
}  // namespace shardsim
