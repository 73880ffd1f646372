// Mixture-of-experts mechanisms as Megatron-Core and torchtitan run them
// (docs/model.md, sections 1 and 7): shared experts over tensor
// parallelism, the all-to-alls under per-op selective checkpointing, and
// the experts' optimizer states sharded over their replicas. The dispatchers
// and expert tensor parallelism are in stack_test.cc.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "program_queries.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/scenario.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::named;
using testing::stage0;

std::vector<Override> also(std::vector<Override> base, const std::vector<Override>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// Two MoE layers of 8 experts (top 2, FFN 2048) and one shared expert on 8
// H100s: h 1024, 2048 tokens a sequence.
constexpr const char* kTinyMoe = R"({"model": {"name": "tiny-moe", "layers": 2, "hidden": 1024,
      "ffn_hidden": 4096, "heads": 8, "kv_heads": 8, "vocab": 32000,
      "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 2048, "shared_experts": 1}},
    "cluster": {"chip": "h100-sxm", "devices": 8, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"dp": 8, "ep": 4, "global_batch": 8, "seq_len": 2048}})";

// Megatron-Core's SharedExpertMLP is an MLP on the tp group: column- then
// row-parallel, on the sequence gathered under sequence parallelism (which
// an MoE layer needs under tp > 1)
// (megatron/core/transformer/moe/shared_experts.py). Each tp rank holds 1/tp
// of it; its GEMMs run the whole sequence at 1/tp of the width (the same
// FLOPs as the whole MLP on a 1/tp shard of tokens); the gathers and the
// reduce-scatter carry the sequence's T·h bf16 values.
TEST(StackMechanisms, SharedExpertsAreSplitOverTensorParallelism) {
  const int64_t T = 2048, h = 1024, fs = 2048, tp = 2;
  const std::vector<Override> tp2 = {
      {"plan.tp", "2"}, {"plan.dp", "4"}, {"plan.global_batch", "4"}, {"plan.sequence_parallel", "true"}};
  const Scenario s = testing::scenario(kTinyMoe, tp2);
  const Program p = stage0(s);
  const std::vector<OpId> up = named(p, "shared experts up", 0, 0, Pass::kForward);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(p.op(up.front()).m, T);
  EXPECT_EQ(p.op(up.front()).n, 2 * fs / tp);
  EXPECT_EQ(p.op(up.front()).k, h);
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    const std::vector<OpId> ag = named(p, "shared experts all-gather", 0, 0, pass);
    const std::vector<OpId> rs = named(p, "shared experts reduce-scatter", 0, 0, pass);
    ASSERT_EQ(ag.size(), 1u);  // forward the input, backward the output gradient
    ASSERT_EQ(rs.size(), 1u);  // forward the output, backward the input gradient
    for (OpId i : {ag.front(), rs.front()}) {
      EXPECT_EQ(p.op(i).axes, axis_bit(MeshAxis::kTp));
      EXPECT_EQ(p.op(i).comm_bytes.value(), T * h * 2);
    }
  }
  // The up projection's weight gradient reads the re-gathered input.
  EXPECT_EQ(named(p, "shared experts input all-gather", 0, 0, Pass::kBackward).size(), 1u);
  // Each tp rank holds half the shared expert: its weights are half those
  // of tp 1 (3·h·fs parameters a layer).
  auto shared_weights = [&](const std::vector<Override>& sets) {
    const auto weights = [&](const char* n) {
      return testing::component(
          training_memory(testing::scenario(kTinyMoe, also(sets, {{"model.moe.shared_experts", n}}))), "weights");
    };
    return weights("1") - weights("0");
  };
  const int64_t one = shared_weights({});
  EXPECT_GT(one, 0);
  EXPECT_EQ(shared_weights(tp2) * tp, one);
}

// torchtitan's per-op selective checkpointing saves the outputs of its
// comm_ops, all_to_all_single among them, "to avoid re-communication"
// (torchtitan/distributed/activation_checkpoint.py): the dispatch and
// combine are not re-run in the backward, where full recomputation re-runs
// them.
TEST(StackMechanisms, PerOpCheckpointingKeepsTheMoeAllToAlls) {
  const Program sac =
      stage0(testing::scenario(kTinyMoe, {{"plan.framework", "torchtitan"}, {"plan.recompute", "op_sac"}}));
  const Program full = stage0(testing::scenario(kTinyMoe, {{"plan.recompute", "full"}}));
  for (const char* n : {"moe dispatch", "moe combine"}) {
    EXPECT_TRUE(named(sac, n, 0, 0, Pass::kRecompute).empty()) << n;
    EXPECT_FALSE(named(full, n, 0, 0, Pass::kRecompute).empty()) << n;
  }
}

// The experts' linear layer is one autograd node (Transformer Engine's
// GroupedLinear and Linear, PyTorch's grouped_mm): its backward makes the
// input and the weight gradients before the dispatcher's all-to-all, the
// next node, runs, so the backward's combine all-to-all follows the up
// projection's weight gradient. XLA schedules them apart: under MaxText the
// all-to-all waits for the input gradient only.
TEST(StackMechanisms, TheBackwardAllToAllWaitsForTheExpertsWeightGradient) {
  for (const char* fw : {"megatron-core", "torchtitan", "maxtext"}) {
    const Program p = stage0(testing::scenario(kTinyMoe, {{"plan.framework", fw}}));
    const std::vector<OpId> combine = named(p, "moe combine", 0, 0, Pass::kBackward);
    const std::vector<OpId> wgrad = named(p, "experts up wgrad", 0, 0, Pass::kBackward);
    const std::vector<OpId> dgrad = named(p, "experts up dgrad", 0, 0, Pass::kBackward);
    ASSERT_EQ(combine.size(), 1u) << fw;
    ASSERT_EQ(wgrad.size(), 1u) << fw;
    ASSERT_EQ(dgrad.size(), 1u) << fw;
    const std::set<OpId> before = testing::ancestors(p, combine.front());
    EXPECT_TRUE(before.count(dgrad.front())) << fw;
    EXPECT_EQ(before.count(wgrad.front()) == 1, std::string(fw) != "maxtext") << fw;
  }
}

// NeMo AutoModel adds gpt-oss's expert biases in passes of their own after
// each grouped GEMM (GroupedExperts._apply_bias): after the up projection a
// per-expert add and a concatenation over its bf16 output (2 reads and 2
// writes of 2 bytes a value); after the down projection b·p in fp32, the
// add in fp32, the concatenation in fp32 and the cast back (14 bytes read
// and 14 written a value). The backward sums the up bias's gradient (one
// read) and, for the down one, casts up and down and reduces twice. Only a
// model with biases, only with the plan's moe_bias_passes.
TEST(StackMechanisms, ExpertBiasPassesFollowTheGroupedGemms) {
  const std::vector<Override> on = {{"model.bias", "true"}, {"plan.moe_bias_passes", "true"}};
  const Program p = stage0(testing::scenario(kTinyMoe, on));
  // 2048 tokens a rank, top 2 over ep 4: 2048 rows for each of 2 local experts.
  const int64_t rows = 2 * 2048, up = rows * 2 * 2048, down = rows * 1024;
  auto one = [&](const char* name, Pass pass) {
    const std::vector<OpId> ids = named(p, name, 0, 0, pass);
    EXPECT_EQ(ids.size(), 1u) << name;
    return ids.empty() ? Op{} : p.op(ids.front());
  };
  EXPECT_EQ(one("experts up bias", Pass::kForward).bytes_read.value(), 4 * up);
  EXPECT_EQ(one("experts up bias", Pass::kForward).bytes_written.value(), 4 * up);
  EXPECT_EQ(one("experts down bias", Pass::kForward).bytes_read.value(), 14 * down);
  EXPECT_EQ(one("experts down bias", Pass::kForward).bytes_written.value(), 14 * down);
  EXPECT_EQ(one("experts up bias grad", Pass::kBackward).bytes_read.value(), 2 * up);
  EXPECT_EQ(one("experts down bias grad", Pass::kBackward).bytes_read.value(), 14 * down);
  EXPECT_EQ(one("experts down bias grad", Pass::kBackward).bytes_written.value(), 6 * down);
  for (const std::vector<Override>& off :
       {std::vector<Override>{{"model.bias", "true"}}, std::vector<Override>{{"plan.moe_bias_passes", "true"}}}) {
    EXPECT_TRUE(named(stage0(testing::scenario(kTinyMoe, off)), "experts up bias").empty());
  }
}

// With one data-parallel replica (dp·cp 1) and experts whole on each of 8
// tp ranks, ZeRO still shards the experts' states over their 8 replicas
// (Megatron-Core's expert data-parallel group): Adam updates the dense
// parameters and an eighth of the experts', the updated experts are
// gathered back over tp, and the memory report's optimizer state is what
// Adam updates (12 bytes a parameter: fp32 master and two moments).
TEST(StackMechanisms, ZeroShardsExpertStatesOverTheirReplicasWithOneDataParallelReplica) {
  const Scenario s = testing::scenario(kTinyMoe, {{"plan.tp", "8"},
                                                  {"plan.dp", "1"},
                                                  {"plan.ep", "1"},
                                                  {"plan.global_batch", "1"},
                                                  {"plan.sequence_parallel", "true"},
                                                  {"plan.zero", "1"},
                                                  {"plan.overlap_param_gather", "false"}});
  const Program p = stage0(s);
  const std::vector<OpId> adam = named(p, "adam");
  ASSERT_EQ(adam.size(), 1u);
  EXPECT_EQ(p.op(adam.front()).m * 12, testing::component(training_memory(s), "optimizer_state"));
  int gathers = 0;
  for (OpId i : named(p, "param all-gather")) gathers += p.op(i).axes != axis_bit(MeshAxis::kDp);
  EXPECT_GT(gathers, 0);
}

// Megatron-Core's parallel folding (core_v0.10.0 on): the expert layers' ranks
// come from their own RankGenerator (tp = expert_tp, ep, expert dp, pp; order
// "tp-cp-ep-dp-pp" with cp 1), so with expert_tp 1 an expert group of 8 takes
// 8 consecutive ranks: tp 2 x cp 2 x 2 data-parallel positions, one node here.
// The oracle is that generator's formula, rank = etp_i + etp·(ep_i + ep·(edp_i
// + edp·pp_i)), written out independently of the mesh.
TEST(StackMechanisms, FoldedExpertGroupsAreMegatronCoresExpertRankGroups) {
  const std::vector<Override> folded = {{"cluster.devices", "16"},
                                        {"plan.tp", "2"},
                                        {"plan.cp", "2"},
                                        {"plan.dp", "4"},
                                        {"plan.ep", "8"},
                                        {"plan.global_batch", "4"},
                                        {"plan.sequence_parallel", "true"},
                                        {"plan.expert_layout", "folded"}};
  const Scenario s = testing::scenario(kTinyMoe, folded);
  const Program p = stage0(s);
  const Mesh mesh = build_mesh(s.plan);
  const std::vector<OpId> dispatch = named(p, "moe dispatch", 0, 0, Pass::kForward);
  ASSERT_EQ(dispatch.size(), 1u);
  const uint8_t ep_axes = p.op(dispatch.front()).axes;
  const int64_t world = 16, etp = 1, ep = 8, pp = 1, edp = world / (etp * ep * pp);
  for (int64_t r = 0; r < world; ++r) {
    const int64_t etp_i = r % etp, ep_i = (r / etp) % ep, edp_i = (r / (etp * ep)) % edp;
    std::vector<uint32_t> want, got;
    for (int64_t e = 0; e < ep; ++e) want.push_back(static_cast<uint32_t>(etp_i + etp * (e + ep * edp_i)));
    mesh.group_members(r, ep_axes, got);
    EXPECT_EQ(got, want) << "rank " << r;
    // The experts' gradients reduce over the expert data-parallel group:
    // the ranks of the same expert shard in the other expert groups.
    std::vector<uint32_t> want_dp, got_dp;
    for (int64_t d = 0; d < edp; ++d) want_dp.push_back(static_cast<uint32_t>(etp_i + etp * (ep_i + ep * d)));
    mesh.group_members(r, axis_bit(MeshAxis::kDp), got_dp);
    EXPECT_EQ(got_dp, want_dp) << "rank " << r;
  }
  int expert_reductions = 0;
  for (OpId i : named(p, "grad reduce-scatter")) expert_reductions += p.op(i).axes == axis_bit(MeshAxis::kDp);
  for (OpId i : named(p, "grad all-reduce")) expert_reductions += p.op(i).axes == axis_bit(MeshAxis::kDp);
  EXPECT_GT(expert_reductions, 0);

  // The same plan nested: ep inside dp at stride tp·cp, as before folding.
  const Scenario n = testing::scenario(kTinyMoe, also(folded, {{"plan.expert_layout", "nested"}, {"plan.ep", "4"}}));
  const Program pn = stage0(n);
  const std::vector<OpId> nd = named(pn, "moe dispatch", 0, 0, Pass::kForward);
  ASSERT_EQ(nd.size(), 1u);
  std::vector<uint32_t> nested_group;
  build_mesh(n.plan).group_members(0, pn.op(nd.front()).axes, nested_group);
  EXPECT_EQ(nested_group, (std::vector<uint32_t>{0, 4, 8, 12}));
}

// Folding changes nothing where an expert group spans no tensor- or
// context-parallel ranks (expert_tp = tp, cp 1): the same program.
TEST(StackMechanisms, FoldingWithoutContextParallelismAndWithExpertTpIsNesting) {
  const std::vector<Override> base = {{"plan.tp", "2"},           {"plan.dp", "4"},
                                      {"plan.ep", "4"},           {"plan.expert_tp", "2"},
                                      {"plan.global_batch", "4"}, {"plan.sequence_parallel", "true"}};
  const Program folded = stage0(testing::scenario(kTinyMoe, also(base, {{"plan.expert_layout", "folded"}})));
  const Program nested = stage0(testing::scenario(kTinyMoe, also(base, {{"plan.expert_layout", "nested"}})));
  ASSERT_EQ(folded.size(), nested.size());
  for (OpId i = 0; i < folded.size(); ++i) {
    EXPECT_EQ(folded.op(i).name, nested.op(i).name) << "op " << i;
    EXPECT_EQ(folded.op(i).axes, nested.op(i).axes) << "op " << i;
    EXPECT_EQ(folded.op(i).comm_bytes.value(), nested.op(i).comm_bytes.value()) << "op " << i;
  }
}

// An expert group smaller than the tensor- and context-parallel ranks it
// would fold over splits a tp or cp group, which mesh axes cannot name: the
// loader says so and points at the nested layout.
TEST(StackMechanisms, AFoldedExpertGroupMustCoverWholeTensorAndContextGroups) {
  const std::vector<Override> small = {{"cluster.devices", "16"},
                                       {"plan.tp", "2"},
                                       {"plan.cp", "2"},
                                       {"plan.dp", "4"},
                                       {"plan.ep", "2"},
                                       {"plan.global_batch", "4"},
                                       {"plan.sequence_parallel", "true"},
                                       {"plan.expert_layout", "folded"}};
  try {
    testing::scenario(kTinyMoe, small);
    FAIL() << "a folded expert group of 2 over tp 2 x cp 2 loaded";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/plan/expert_layout"), std::string::npos) << what;
    EXPECT_NE(what.find("multiple of tp·cp (4)"), std::string::npos) << what;
  }
  // Megatron-Core 0.9's layout of the same plan is ep 2 inside dp.
  EXPECT_NO_THROW(testing::scenario(kTinyMoe, also(small, {{"plan.expert_layout", "nested"}})));
}

// Every folded layout the loader accepts on 16 GPUs lowers, and its experts'
// states shard over Megatron-Core's expert data-parallel size, world /
// (expert_tp·ep·pp), also where the expert group is larger than dp·cp (ep 8
// over tp 2 x dp 4: one replica, its states whole; the count once divided
// before multiplying and came out 0).
TEST(StackMechanisms, EveryFoldedLayoutLowersWithMegatronsExpertReplicaCount) {
  int lowered = 0;
  for (const int64_t tp : {1, 2, 4}) {
    for (const int64_t cp : {1, 2}) {
      for (const int64_t ep : {2, 4, 8}) {
        for (const int64_t etp : {int64_t{1}, tp}) {
          const int64_t dp = 16 / (tp * cp);
          const std::vector<Override> sets = {{"cluster.devices", "16"},
                                              {"plan.tp", std::to_string(tp)},
                                              {"plan.cp", std::to_string(cp)},
                                              {"plan.dp", std::to_string(dp)},
                                              {"plan.ep", std::to_string(ep)},
                                              {"plan.expert_tp", std::to_string(etp)},
                                              {"plan.global_batch", std::to_string(dp)},
                                              {"plan.sequence_parallel", tp > 1 ? "true" : "false"},
                                              {"plan.zero", "1"},
                                              {"plan.expert_layout", "folded"}};
          Scenario s;
          try {
            s = testing::scenario(kTinyMoe, sets);
          } catch (const InputError&) {
            continue;  // a folded group that would split tp or cp, or ep past the experts
          }
          const Program p = stage0(s);
          ++lowered;
          const int64_t replicas = 16 / (etp * ep);
          const Mesh mesh = build_mesh(s.plan);
          // The experts' gradients reduce over their replicas (the dense
          // ones over every data-parallel rank, ep's included): a group of
          // that size, or none where each expert has one replica.
          int64_t expert_group = 1;
          for (OpId i : named(p, "grad reduce-scatter")) {
            if (!(p.op(i).axes & axis_bit(MeshAxis::kEp))) expert_group = mesh.group_size(p.op(i).axes);
          }
          EXPECT_EQ(expert_group, replicas) << "tp " << tp << " cp " << cp << " ep " << ep << " expert_tp " << etp;
        }
      }
    }
  }
  EXPECT_GE(lowered, 12);
}

}  // namespace
}  // namespace shardsim
