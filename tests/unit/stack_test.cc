// Software-stack mechanisms of the lowering, against closed forms and
// properties: Megatron-Core's overlapped gradient reduction and parameter
// gathers, Transformer Engine's userbuffers (tp_comm_overlap), the MoE
// dispatchers, expert tensor parallelism, per-expert
// GEMMs and DeepEP's dedup, FSDP without per-microbatch sync, offloaded
// activations and PyTorch eager's elementwise traffic.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "program_queries.h"
#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/model.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::ancestors;
using testing::comm_bytes;
using testing::last_backward_compute;
using testing::named;
using testing::stage0;
using testing::step_time;

// Llama 3 8B cut to four layers, data parallel over 64 H100s, ZeRO-1, two
// microbatches; each unit's gradients (over 160 MB) fill a bucket of
// their own, so there is one bucket per unit (embedding, layers, head).
constexpr const char* kZero1 = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
    "plan": {"dp": 64, "zero": 1, "global_batch": 128, "seq_len": 2048}})";
const std::vector<Override> kFourLayers{{"model.layers", "4"}};

std::vector<Override> with(std::vector<Override> base, const std::vector<Override>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// 1. overlap_grad_reduce: the reduce-scatters run during the last
// microbatch's backward, one per bucket, and the step is never slower.
TEST(StackMechanisms, OverlapGradReduceIssuesBucketsDuringTheLastBackward) {
  const Scenario on = testing::scenario(kZero1, kFourLayers);
  const Scenario off = testing::scenario(kZero1, with(kFourLayers, {{"plan.overlap_grad_reduce", "false"}}));
  const int64_t units = 4 + 2;                                    // embedding, four layers, head
  const int64_t grad_bytes = count_params(on.model).total() * 4;  // fp32 gradients, tp 1
  const Program p = stage0(on), q = stage0(off);
  const std::vector<OpId> rs_on = named(p, "grad reduce-scatter"), rs_off = named(q, "grad reduce-scatter");
  ASSERT_EQ(static_cast<int64_t>(rs_on.size()), units);
  ASSERT_EQ(static_cast<int64_t>(rs_off.size()), units);
  // Conservation: every gradient byte is reduced once, either way.
  EXPECT_EQ(comm_bytes(p, rs_on), grad_bytes);
  EXPECT_EQ(comm_bytes(q, rs_off), grad_bytes);
  const OpId last_on = last_backward_compute(p), last_off = last_backward_compute(q);
  int before_end = 0;
  for (OpId i : rs_on) {
    const Op& o = p.op(i);
    EXPECT_EQ(o.kind, OpKind::kCollective);
    EXPECT_EQ(o.collective, CollectiveKind::kReduceScatter);
    EXPECT_EQ(o.microbatch, 1);  // the last microbatch only
    EXPECT_EQ(p.stream_names()[o.stream], "dp reduce");
    before_end += i < last_on;
  }
  // All but the embedding's bucket are issued while the backward still runs.
  EXPECT_EQ(before_end, units - 1);
  // The head's bucket goes out before any layer's backward of the last microbatch.
  const std::vector<OpId> l0 = named(p, "mlp down dgrad", 3, 1, Pass::kBackward);
  ASSERT_EQ(l0.size(), 1u);
  EXPECT_LT(rs_on.front(), l0.front());
  // Without the overlap every bucket follows the whole backward.
  for (OpId i : rs_off) {
    EXPECT_GT(i, last_off);
    const auto deps = q.deps(i);
    EXPECT_NE(std::find(deps.begin(), deps.end(), last_off), deps.end());
  }
  const double t_on = step_time(on), t_off = step_time(off);
  EXPECT_LE(t_on, t_off);
  EXPECT_LT(t_on, t_off * 0.999) << "the reduction should hide behind the backward";
}

// 2. overlap_param_gather: the parameter all-gathers start the step, in
// forward order, and a layer's first forward waits for its own bucket (and
// the earlier ones, through the layers before it), not for all of them.
TEST(StackMechanisms, OverlapParamGatherWaitsForItsOwnBucketOnly) {
  const std::vector<Override> one_unit_buckets = with(kFourLayers, {{"plan.grad_bucket_bytes", "1"}});
  const Scenario on = testing::scenario(kZero1, with(one_unit_buckets, {{"plan.overlap_param_gather", "true"}}));
  const Scenario off = testing::scenario(kZero1, one_unit_buckets);
  const int64_t units = 4 + 2;
  const int64_t param_bytes = count_params(on.model).total() * 2;  // bf16 weights
  const Program p = stage0(on), q = stage0(off);
  const std::vector<OpId> ag = named(p, "param all-gather");
  ASSERT_EQ(static_cast<int64_t>(ag.size()), units);
  EXPECT_EQ(comm_bytes(p, ag), param_bytes);
  const std::vector<OpId> embed = named(p, "embedding", -1, 0, Pass::kForward);
  ASSERT_EQ(embed.size(), 1u);
  for (OpId i : ag) {
    EXPECT_LT(i, embed.front());  // at the step's start
    EXPECT_EQ(p.op(i).pass, Pass::kForward);
    EXPECT_EQ(p.op(i).collective, CollectiveKind::kAllGather);
    EXPECT_EQ(p.stream_names()[p.op(i).stream], "dp gather");
  }
  const std::set<OpId> all(ag.begin(), ag.end());
  for (int32_t L = 0; L < 4; ++L) {
    const std::vector<OpId> first = named(p, "attn norm", L, 0, Pass::kForward);
    ASSERT_EQ(first.size(), 1u);
    const std::set<OpId> anc = ancestors(p, first.front());
    std::vector<OpId> waited;
    std::set_intersection(anc.begin(), anc.end(), all.begin(), all.end(), std::back_inserter(waited));
    // The embedding's bucket and those of layers 0..L, the first L + 2.
    EXPECT_EQ(waited, std::vector<OpId>(ag.begin(), ag.begin() + L + 2)) << "layer " << L;
    // Its own bucket directly.
    const auto deps = p.deps(first.front());
    EXPECT_NE(std::find(deps.begin(), deps.end(), ag[static_cast<size_t>(L) + 1]), deps.end()) << "layer " << L;
  }
  // Later microbatches wait for no gather.
  const std::vector<OpId> later = named(p, "attn norm", 3, 1, Pass::kForward);
  ASSERT_EQ(later.size(), 1u);
  const std::set<OpId> anc = ancestors(p, later.front());
  EXPECT_EQ(std::count_if(anc.begin(), anc.end(), [&](OpId i) { return all.count(i) > 0; }), units);
  // Without the overlap they follow the optimizer, bucket by bucket.
  const std::vector<OpId> ag_off = named(q, "param all-gather");
  const std::vector<OpId> adam = named(q, "adam");
  ASSERT_EQ(static_cast<int64_t>(ag_off.size()), units);
  ASSERT_EQ(adam.size(), 1u);
  EXPECT_EQ(comm_bytes(q, ag_off), param_bytes);
  for (OpId i : ag_off) {
    EXPECT_EQ(q.op(i).pass, Pass::kOptimizer);
    const auto deps = q.deps(i);
    EXPECT_NE(std::find(deps.begin(), deps.end(), adam.front()), deps.end());
  }
  // fp8 parameters halve the gathered bytes.
  const Program f = stage0(testing::scenario(
      kZero1, with(one_unit_buckets, {{"plan.overlap_param_gather", "true"}, {"plan.fp8_param_gather", "true"}})));
  EXPECT_EQ(comm_bytes(f, named(f, "param all-gather")), param_bytes / 2);
  EXPECT_LE(step_time(on), step_time(off));
}

// 3. tp_comm_overlap (Transformer Engine userbuffers): ring exchanges on
// copy engines, a reduce-scatter in four pipelined chunks.
constexpr const char* kTp8 = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
    "plan": {"dp": 8, "tp": 8, "sequence_parallel": true, "global_batch": 8, "seq_len": 8192}})";

TEST(StackMechanisms, TpCommOverlapRingExchangesAndPipelinedReduceScatter) {
  const std::vector<Override> two = {{"model.layers", "2"}};
  const Scenario on = testing::scenario(kTp8, with(two, {{"plan.tp_comm_overlap", "true"}}));
  const Scenario off = testing::scenario(kTp8, two);
  const int64_t t = 8, T = 8192, h = 4096;
  const int64_t gathered = T * h * 2;  // one all-gathered norm output (bf16)
  const Program p = stage0(on);
  const std::vector<OpId> sends = named(p, "tp ring send"), recvs = named(p, "tp ring recv");
  // Per layer and microbatch: two gathers forward (qkv, mlp up), two
  // backward (mlp down dgrad, attn out dgrad), each t - 1 ring steps.
  EXPECT_EQ(static_cast<int64_t>(sends.size()), 2 * 4 * (t - 1));
  EXPECT_EQ(recvs.size(), sends.size());
  for (OpId i : sends) {
    const Op& o = p.op(i);
    EXPECT_EQ(o.kind, OpKind::kSend);
    EXPECT_EQ(p.stream_names()[o.stream], "tp send");
    EXPECT_FALSE(o.holds_sms);
    EXPECT_EQ(o.peer_axis, MeshAxis::kTp);
    EXPECT_EQ(o.peer, 1);
  }
  for (OpId i : recvs) {
    const Op& o = p.op(i);
    EXPECT_EQ(o.kind, OpKind::kRecv);
    EXPECT_EQ(p.stream_names()[o.stream], "tp recv");
    EXPECT_FALSE(o.holds_sms);
    EXPECT_EQ(o.peer, -1);
  }
  // One forward gather moves (t - 1)/t of the gathered tensor.
  const std::vector<OpId> fwd = named(p, "tp ring send", 0, 0, Pass::kForward);
  ASSERT_EQ(static_cast<int64_t>(fwd.size()), 2 * (t - 1));
  EXPECT_EQ(comm_bytes(p, std::vector<OpId>(fwd.begin(), fwd.begin() + (t - 1))), (t - 1) * gathered / t);
  EXPECT_EQ(comm_bytes(p, fwd), 2 * (t - 1) * gathered / t);
  // No all-gather or reduce-scatter of the norm outputs is left forward.
  EXPECT_TRUE(named(p, "attn all-gather", 0, 0, Pass::kForward).empty());
  EXPECT_TRUE(named(p, "mlp all-gather", 0, 0, Pass::kForward).empty());
  EXPECT_TRUE(named(p, "attn all-reduce", 0, 0, Pass::kForward).empty());
  // The qkv GEMM runs in t chunks of T/t rows, the same FLOPs in all.
  const Program q = stage0(off);
  const std::vector<OpId> qkv = named(p, "qkv", 0, 0, Pass::kForward), qkv_off = named(q, "qkv", 0, 0, Pass::kForward);
  ASSERT_EQ(static_cast<int64_t>(qkv.size()), t);
  ASSERT_EQ(qkv_off.size(), 1u);
  double flops = 0;
  for (OpId i : qkv) {
    EXPECT_EQ(p.op(i).m, T / t);
    flops += p.op(i).flops.value();
  }
  EXPECT_DOUBLE_EQ(flops, q.op(qkv_off.front()).flops.value());
  // The reduce-scatter after the row-parallel GEMM: four chunks of a
  // quarter each, chunk i after GEMM chunk i, on SMs.
  for (const auto& [gemm, rs] : {std::pair{"attn out", "attn reduce-scatter"}, {"mlp down", "mlp reduce-scatter"}}) {
    const std::vector<OpId> mm = named(p, gemm, 1, 0, Pass::kForward), sc = named(p, rs, 1, 0, Pass::kForward);
    ASSERT_EQ(mm.size(), 4u) << gemm;
    ASSERT_EQ(sc.size(), 4u) << rs;
    EXPECT_EQ(comm_bytes(p, sc), gathered);  // the whole reduce-scatter's buffer, in four
    for (size_t i = 0; i < 4; ++i) {
      const Op& o = p.op(sc[i]);
      EXPECT_EQ(o.collective, CollectiveKind::kReduceScatter);
      EXPECT_EQ(o.axes, axis_bit(MeshAxis::kTp));
      EXPECT_EQ(o.comm_bytes.value(), gathered / 4);
      EXPECT_TRUE(o.holds_sms);
      EXPECT_EQ(p.op(mm[i]).m, T / 4);
      const auto deps = p.deps(sc[i]);
      EXPECT_NE(std::find(deps.begin(), deps.end(), mm[i]), deps.end());
      if (i + 1 < 4) {
        EXPECT_LT(sc[i], mm[i + 1]);  // issued before the next chunk
      }
    }
  }
  EXPECT_LE(step_time(on), step_time(off));
}

// Every projection that reads a gathered norm output shares its ring, fused
// or not: separate q, k, v and gate, up GEMMs (torchtitan under async TP) and
// a GeLU MLP's single up projection gather their input as Megatron-Core's
// fused qkv does (the gathers were dropped for them before); under MLA the
// attention norm's gather stays a collective.
TEST(StackMechanisms, TpCommOverlapGathersUnderEveryProjection) {
  const int64_t t = 8, T = 8192, h = 4096;
  struct Case {
    const char* name;
    std::vector<Override> sets;
    int64_t rings;  // gathers forward, per layer and microbatch
    bool attn_collective;
  };
  const std::vector<Override> base = {{"model.layers", "2"}, {"plan.tp_comm_overlap", "true"}};
  for (const Case& c : {Case{"fused", {}, 2, false}, Case{"torchtitan", {{"plan.framework", "torchtitan"}}, 2, false},
                        Case{"gelu", {{"model.mlp", "gelu"}}, 2, false}}) {
    const Program p = stage0(testing::scenario(kTp8, with(base, c.sets)));
    const std::vector<OpId> fwd = named(p, "tp ring send", 0, 0, Pass::kForward);
    EXPECT_EQ(static_cast<int64_t>(fwd.size()), c.rings * (t - 1)) << c.name;
    EXPECT_EQ(comm_bytes(p, fwd), c.rings * (t - 1) * (T * h * 2) / t) << c.name;
    EXPECT_EQ(named(p, "attn all-gather", 0, 0, Pass::kForward).empty(), !c.attn_collective) << c.name;
    EXPECT_TRUE(named(p, "mlp all-gather", 0, 0, Pass::kForward).empty()) << c.name;
  }
  // torchtitan: each projection in t chunks, each chunk after its shard.
  const Program titan = stage0(testing::scenario(kTp8, with(base, {{"plan.framework", "torchtitan"}})));
  for (const char* gemm : {"q proj", "k proj", "v proj", "mlp gate", "mlp up"}) {
    EXPECT_EQ(static_cast<int64_t>(named(titan, gemm, 0, 0, Pass::kForward).size()), t) << gemm;
  }
}

// tp_comm_overlap_sms is documented (plan.h) as the SMs a pipelined
// reduce-scatter holds beside its GEMM: fewer SMs held, less compute slowed.
TEST(StackMechanisms, TpCommOverlapSmsChangesTheStep) {
  const std::vector<Override> base = {{"model.layers", "2"}, {"plan.tp_comm_overlap", "true"}};
  const double few = step_time(testing::scenario(kTp8, with(base, {{"plan.tp_comm_overlap_sms", "1"}})));
  const double many = step_time(testing::scenario(kTp8, with(base, {{"plan.tp_comm_overlap_sms", "128"}})));
  EXPECT_LT(few, many);
}

// 6. Mixture of experts: dispatchers, expert tensor parallelism, per-expert
// GEMMs and DeepEP's per-rank dedup.
constexpr const char* kMixtral = R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-64",
    "plan": {"dp": 8, "tp": 8, "ep": 8, "sequence_parallel": true, "global_batch": 8, "seq_len": 4096}})";
const std::vector<Override> kMoeLayers{{"model.layers", "2"}};

int count_collectives(const Program& p, CollectiveKind kind, uint8_t axes, int32_t layer) {
  int n = 0;
  for (const Op& o : p.ops()) {
    n += o.kind == OpKind::kCollective && o.collective == kind && o.axes == axes && o.layer == layer;
  }
  return n;
}

TEST(StackMechanisms, MoeDispatchersAndExpertTensorParallelism) {
  const int64_t h = 4096, T = 4096, tp = 8, ep = 8, Ts = T / tp, slots = Ts * 2;  // top-2, capacity 1
  const uint8_t ep_axis = axis_bit(MeshAxis::kEp), tp_axis = axis_bit(MeshAxis::kTp);
  // All-to-all dispatcher: dispatch and combine, forward and backward.
  const Program a2a = stage0(testing::scenario(kMixtral, kMoeLayers));
  EXPECT_EQ(count_collectives(a2a, CollectiveKind::kAllToAll, ep_axis, 1), 4);
  for (const char* n : {"moe dispatch", "moe combine"}) {
    const std::vector<OpId> ids = named(a2a, n, 1, 0, Pass::kForward);
    ASSERT_EQ(ids.size(), 1u) << n;
    EXPECT_EQ(a2a.op(ids.front()).comm_bytes.value(), slots * h * 2) << n;
  }
  // All-gather dispatcher: every token gathered over ep, reduce-scattered back.
  const Program ag = stage0(testing::scenario(kMixtral, with(kMoeLayers, {{"plan.moe_dispatcher", "allgather"}})));
  EXPECT_EQ(count_collectives(ag, CollectiveKind::kAllToAll, ep_axis, 1), 0);
  EXPECT_EQ(count_collectives(ag, CollectiveKind::kAllGather, ep_axis, 1), 2);
  EXPECT_EQ(count_collectives(ag, CollectiveKind::kReduceScatter, ep_axis, 1), 2);
  for (const char* n : {"moe dispatch all-gather", "moe combine reduce-scatter"}) {
    const std::vector<OpId> ids = named(ag, n, 1, 0, Pass::kForward);
    ASSERT_EQ(ids.size(), 1u) << n;
    EXPECT_EQ(ag.op(ids.front()).comm_bytes.value(), Ts * h * 2 * ep) << n;
  }
  // expert_tp = tp: the dispatched tokens gathered over tp before the
  // experts and reduce-scattered after, forward and backward; each rank
  // runs 1/tp of every local expert's width.
  const Program etp = stage0(testing::scenario(kMixtral, with(kMoeLayers, {{"plan.expert_tp", "8"}})));
  const int base_ag = count_collectives(a2a, CollectiveKind::kAllGather, tp_axis, 1);
  const int base_rs = count_collectives(a2a, CollectiveKind::kReduceScatter, tp_axis, 1);
  EXPECT_EQ(count_collectives(etp, CollectiveKind::kAllGather, tp_axis, 1), base_ag + 2);
  EXPECT_EQ(count_collectives(etp, CollectiveKind::kReduceScatter, tp_axis, 1), base_rs + 2);
  for (const char* n : {"moe expert all-gather", "moe expert reduce-scatter"}) {
    const std::vector<OpId> f = named(etp, n, 1, 0, Pass::kForward), b = named(etp, n, 1, 0, Pass::kBackward);
    ASSERT_EQ(f.size(), 1u) << n;
    ASSERT_EQ(b.size(), 1u) << n;
    EXPECT_EQ(etp.op(f.front()).comm_bytes.value(), slots * h * 2 * tp) << n;
  }
  const std::vector<OpId> up = named(etp, "experts up", 1, 0, Pass::kForward);
  const std::vector<OpId> up1 = named(a2a, "experts up", 1, 0, Pass::kForward);
  ASSERT_EQ(up.size(), 1u);
  ASSERT_EQ(up1.size(), 1u);
  EXPECT_EQ(etp.op(up.front()).n, 2 * 14336 / tp);
  EXPECT_EQ(etp.op(up.front()).m, tp * a2a.op(up1.front()).m);  // every tp rank's tokens
  EXPECT_DOUBLE_EQ(etp.op(up.front()).flops.value(), a2a.op(up1.front()).flops.value());
}

// expert_tp 1 under tp 8: every tp rank of an ep position holds whole
// experts, so each expert has dp·cp/ep · tp = 8 replicas (Megatron-Core's
// expert data-parallel size, world / (etp · ep · pp)). Their gradients
// reduce over tp too and ZeRO shards their states over all 8: the
// optimizer state per device equals expert_tp 8's, where each rank holds
// an eighth of an unreplicated expert.
TEST(StackMechanisms, ExpertsWholeOnEveryTpRankAreReplicatedOverTp) {
  const std::vector<Override> zero1 = with(kMoeLayers, {{"plan.zero", "1"}});
  const Scenario whole = testing::scenario(kMixtral, zero1);
  const Scenario split = testing::scenario(kMixtral, with(zero1, {{"plan.expert_tp", "8"}}));
  const uint8_t replicas = axis_bit(MeshAxis::kDp) | axis_bit(MeshAxis::kCp) | axis_bit(MeshAxis::kTp);
  const Program whole_program = stage0(whole), split_program = stage0(split);
  int reduced = 0;
  for (const Op& o : whole_program.ops()) {
    reduced += o.kind == OpKind::kCollective && o.collective == CollectiveKind::kReduceScatter && o.axes == replicas;
  }
  EXPECT_GT(reduced, 0);
  for (const Op& o : split_program.ops()) {
    EXPECT_FALSE(o.kind == OpKind::kCollective && o.axes == replicas);  // one replica: nothing to reduce
  }
  auto optimizer = [](const Scenario& s) {
    return static_cast<double>(testing::component(training_memory(s), "optimizer_state"));
  };
  EXPECT_NEAR(optimizer(whole), optimizer(split), 1e-6 * optimizer(split));
}

TEST(StackMechanisms, MoeWithoutGroupedGemmRunsOneGemmPerLocalExpert) {
  // ep 2: four experts per rank.
  const std::vector<Override> ep2 = with(kMoeLayers, {{"plan.ep", "2"}});
  const Program grouped = stage0(testing::scenario(kMixtral, ep2));
  const Program each = stage0(testing::scenario(kMixtral, with(ep2, {{"plan.moe_grouped_gemm", "false"}})));
  for (const char* n : {"experts up", "experts down"}) {
    for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
      const std::vector<OpId> g = named(grouped, n, 0, 0, pass), e = named(each, n, 0, 0, pass);
      if (pass == Pass::kBackward) continue;  // backward GEMMs carry dgrad / wgrad names
      ASSERT_EQ(g.size(), 1u) << n;
      ASSERT_EQ(e.size(), 4u) << n;
      EXPECT_EQ(grouped.op(g.front()).batch, 4);
      double flops = 0;
      for (OpId i : e) {
        EXPECT_EQ(each.op(i).batch, 1);
        EXPECT_EQ(each.op(i).m, grouped.op(g.front()).m);
        flops += each.op(i).flops.value();
      }
      EXPECT_DOUBLE_EQ(flops, grouped.op(g.front()).flops.value()) << n;
    }
  }
  for (const char* n : {"experts up dgrad", "experts up wgrad", "experts down dgrad", "experts down wgrad"}) {
    EXPECT_EQ(named(grouped, n, 0, 0, Pass::kBackward).size(), 1u) << n;
    EXPECT_EQ(named(each, n, 0, 0, Pass::kBackward).size(), 4u) << n;
  }
}

TEST(StackMechanisms, MoeDedupSendsEachTokenOncePerDestinationRank) {
  // Expected distinct ranks per token over top_k = 2 routed copies:
  // balanced ep·(1 - (1 - 1/ep)^k); contiguous experts 1 + (k - 1)/(E/ep).
  struct Case {
    const char* ep;
    const char* routing;
    double ratio;
  };
  for (const Case& c : {Case{"8", "balanced", 8 * (1 - 49.0 / 64) / 2}, Case{"2", "balanced", 2 * (1 - 0.25) / 2},
                        Case{"2", "contiguous", (1 + 1.0 / 4) / 2}, Case{"8", "contiguous", 1.0}}) {
    const std::vector<Override> sets = with(kMoeLayers, {{"plan.ep", c.ep}, {"plan.moe_routing", c.routing}});
    const Program plain = stage0(testing::scenario(kMixtral, sets));
    const Program dedup = stage0(testing::scenario(kMixtral, with(sets, {{"plan.moe_dedup", "true"}})));
    const std::vector<OpId> x = named(plain, "moe dispatch", 1, 0, Pass::kForward);
    const std::vector<OpId> y = named(dedup, "moe dispatch", 1, 0, Pass::kForward);
    ASSERT_EQ(x.size(), 1u);
    ASSERT_EQ(y.size(), 1u);
    const double r = static_cast<double>(dedup.op(y.front()).comm_bytes.value()) /
                     static_cast<double>(plain.op(x.front()).comm_bytes.value());
    EXPECT_DOUBLE_EQ(r, c.ratio) << "ep " << c.ep << " " << c.routing;
    EXPECT_LE(r, 1.0);
    // Bytes move only as copies: the combine mirrors the dispatch.
    const std::vector<OpId> z = named(dedup, "moe combine", 1, 0, Pass::kForward);
    ASSERT_EQ(z.size(), 1u);
    EXPECT_EQ(dedup.op(z.front()).comm_bytes, dedup.op(y.front()).comm_bytes);
  }
}

// Llama 3 8B cut to two layers, FSDP over 64 H100s, four microbatches.
constexpr const char* kFsdp = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
    "plan": {"dp": 64, "zero": 3, "global_batch": 256, "seq_len": 2048}})";
const std::vector<Override> kTwoLayers{{"model.layers", "2"}};

// 6b. tp_comm_overlap on a TPU (XLA's collective matmul): the all-gather
// rings under the matmul chunks as on GPUs, and the collectives hold none of
// the chip's compute units (comm_compute_units 0), so no compute is slowed
// beside them, while on an H100 the same plan's compute is.
TEST(StackMechanisms, TpOverlapOnATpuHoldsNoComputeUnits) {
  const char* tpu = R"({"model": "llama3-8b", "cluster": "tpu-v5e-256",
      "plan": {"dp": 64, "tp": 4, "zero": 3, "sequence_parallel": true, "global_batch": 64, "seq_len": 4096,
               "tp_comm_overlap": true}})";
  const std::vector<Override> two{{"model.layers", "2"}};
  const Scenario s = testing::scenario(tpu, two);
  const Program p = stage0(s);
  EXPECT_FALSE(named(p, "tp ring send").empty());
  EXPECT_EQ(run_training_step(s, {}).report.compute_beside_comm_s, 0.0);
  const Scenario gpu = testing::scenario(kTp8, with(two, {{"plan.tp_comm_overlap", "true"}}));
  EXPECT_GT(run_training_step(gpu, {}).report.compute_beside_comm_s, 0.0);
}

// 7. FSDP with and without gradient sync every microbatch.
TEST(StackMechanisms, FsdpWithoutPerMicrobatchSyncGathersAndReducesOncePerStep) {
  const char* json = kFsdp;
  const std::vector<Override>& two = kTwoLayers;
  const Scenario each = testing::scenario(json, two);
  const Scenario once = testing::scenario(json, with(two, {{"plan.fsdp_sync_each_microbatch", "false"}}));
  const int64_t mbs = 4, layers = 2, units = layers + 2;
  const int64_t params = count_params(each.model).total();
  const Program p = stage0(once), q = stage0(each);
  auto ops_of = [](const Program& prog, const char* name) {
    std::vector<OpId> out;
    for (OpId i : named(prog, name)) out.push_back(i);
    return out;
  };
  // Once per step: every unit gathered by the first microbatch's forward,
  // reduce-scattered after the last microbatch's backward.
  const std::vector<OpId> ag = ops_of(p, "fsdp all-gather"), rs = ops_of(p, "fsdp reduce-scatter");
  EXPECT_EQ(static_cast<int64_t>(ag.size()), units);
  EXPECT_EQ(static_cast<int64_t>(rs.size()), units);
  for (OpId i : ag) {
    EXPECT_EQ(p.op(i).microbatch, 0);
    EXPECT_EQ(p.op(i).pass, Pass::kForward);
  }
  for (OpId i : rs) EXPECT_EQ(p.op(i).microbatch, mbs - 1);
  EXPECT_EQ(comm_bytes(p, ag), params * 2);
  EXPECT_EQ(comm_bytes(p, rs), params * 4);
  // Every microbatch: gathered for each forward and (resharded) again for
  // each backward but the embedding's; reduce-scattered every backward.
  const std::vector<OpId> ag2 = ops_of(q, "fsdp all-gather"), rs2 = ops_of(q, "fsdp reduce-scatter");
  EXPECT_EQ(static_cast<int64_t>(ag2.size()), mbs * (units + units - 1));
  EXPECT_EQ(static_cast<int64_t>(rs2.size()), mbs * units);
  EXPECT_EQ(comm_bytes(q, rs2), mbs * params * 4);
  for (int32_t mb = 0; mb < mbs; ++mb) {
    int n = 0;
    for (OpId i : rs2) n += q.op(i).microbatch == mb;
    EXPECT_EQ(n, units) << "microbatch " << mb;
  }
  // Later microbatches' layers wait for the first one's gather.
  const std::vector<OpId> last = named(p, "attn norm", 1, mbs - 1, Pass::kForward);
  ASSERT_EQ(last.size(), 1u);
  const std::set<OpId> anc = ancestors(p, last.front());
  EXPECT_TRUE(std::all_of(ag.begin(), ag.end() - 1, [&](OpId i) { return anc.count(i) > 0 || p.op(i).layer < 0; }));
}

// 7a. Without per-microbatch sync the unsharded gradients accumulate in the
// reduce dtype (PyTorch FSDP2 upcasts each bf16 .grad into an fp32
// accumulator when reduce_dtype is fp32, pytorch/pytorch#125191): the
// gradient memory grows by 4 bytes per parameter with fp32 reduction and 2
// with bf16, and every microbatch adds each unit's bf16 gradients into it
// (reads 2 + acc bytes, writes acc bytes per parameter).
TEST(StackMechanisms, FsdpWithoutPerMicrobatchSyncAccumulatesInTheReduceDtype) {
  const int64_t mbs = 4;
  const int64_t params = count_params(testing::scenario(kFsdp, kTwoLayers).model).total();
  for (const auto& [dtype, acc] : {std::pair{"fp32", int64_t{4}}, std::pair{"bf16", int64_t{2}}}) {
    const std::vector<Override> sets = with(kTwoLayers, {{"plan.grad_reduce_dtype", dtype}});
    const Scenario each = testing::scenario(kFsdp, sets);
    const Scenario once = testing::scenario(kFsdp, with(sets, {{"plan.fsdp_sync_each_microbatch", "false"}}));
    auto grads = [](const Scenario& s) { return testing::component(training_memory(s), "gradients"); };
    EXPECT_EQ(grads(once) - grads(each), params * acc) << dtype;
    const Program p = stage0(once);
    const std::vector<OpId> adds = named(p, "fsdp grad accumulate");
    int64_t read = 0, written = 0;
    for (OpId i : adds) {
      read += p.op(i).bytes_read.value();
      written += p.op(i).bytes_written.value();
    }
    EXPECT_EQ(read, mbs * params * (2 + acc)) << dtype;
    EXPECT_EQ(written, mbs * params * acc) << dtype;
    EXPECT_TRUE(named(stage0(each), "fsdp grad accumulate").empty()) << dtype;
  }
}

// 7a'. pp_keep_outputs (PyTorch's pipelining, torchtitan's default): each
// chunk keeps the output it sends on from its forward to its backward, one
// layer input per microbatch in flight more than when it is freed once sent
// (Megatron). The first stage of 1F1B holds pp microbatches at its peak.
TEST(StackMechanisms, PpKeepOutputsHoldsEachSentOutputUntilItsBackward) {
  const std::vector<Override> pp2 =
      with(kTwoLayers, {{"plan.dp", "32"}, {"plan.pp", "2"}, {"plan.framework", "torchtitan"}});
  const int64_t bytes = 2048 * 4096 * 2;  // one sequence of 2048 tokens, hidden 4096, bf16
  const Program kept = stage0(testing::scenario(kFsdp, pp2));
  const Program freed = stage0(testing::scenario(kFsdp, with(pp2, {{"plan.pp_keep_outputs", "false"}})));
  ASSERT_FALSE(named(kept, "pp send activation").empty());
  EXPECT_EQ(walk_program_memory(kept).max_activations - walk_program_memory(freed).max_activations, 2 * bytes);
  EXPECT_EQ(kept.memory_events().size(), freed.memory_events().size() + 2 * named(kept, "pp send activation").size());
  EXPECT_TRUE(testing::scenario(kFsdp, pp2).plan.pp_keep_outputs);
  EXPECT_FALSE(testing::scenario(kFsdp, with(pp2, {{"plan.framework", "megatron-core"}})).plan.pp_keep_outputs);
}

// 7b. fsdp_copy_out (PyTorch FSDP2): after every all-gather one pass on
// the compute stream reads the gathered buffer and writes the parameters
// (the all-gather's bytes, each way); before every reduce-scatter one pass
// reads the bf16 gradients and writes the reduce-scatter input (its bytes).
TEST(StackMechanisms, FsdpCopyOutMovesEveryGatheredAndReducedByte) {
  const char* json = kFsdp;
  const std::vector<Override>& two = kTwoLayers;
  const Scenario off = testing::scenario(json, two);
  const Scenario on = testing::scenario(json, with(two, {{"plan.fsdp_copy_out", "true"}}));
  EXPECT_FALSE(off.plan.fsdp_copy_out);
  const Program p = stage0(on), q = stage0(off);
  const int64_t mbs = 4, params = count_params(on.model).total();
  const std::vector<OpId> ag = named(p, "fsdp all-gather"), rs = named(p, "fsdp reduce-scatter");
  const std::vector<OpId> out = named(p, "fsdp copy-out"), in = named(p, "fsdp grad copy-in");
  EXPECT_TRUE(named(q, "fsdp copy-out").empty());
  EXPECT_TRUE(named(q, "fsdp grad copy-in").empty());
  ASSERT_EQ(out.size(), ag.size());
  ASSERT_EQ(in.size(), rs.size());
  int64_t read = 0, written = 0;
  for (OpId i : out) {
    const Op& o = p.op(i);
    EXPECT_EQ(o.stream, TrainStreams::kCompute);
    // Each copy waits for its own unit's gather.
    std::vector<OpId> gathers;
    for (OpId d : p.deps(i)) {
      if (p.name(p.op(d)) == "fsdp all-gather") gathers.push_back(d);
    }
    ASSERT_EQ(gathers.size(), 1u);
    EXPECT_EQ(p.op(gathers[0]).comm_bytes.value(), o.bytes_read.value());
    EXPECT_EQ(p.op(gathers[0]).layer, o.layer);
    read += o.bytes_read.value();
    written += o.bytes_written.value();
  }
  EXPECT_EQ(read, comm_bytes(p, ag));
  EXPECT_EQ(written, comm_bytes(p, ag));
  read = written = 0;
  for (OpId i : in) {
    EXPECT_EQ(p.op(i).stream, TrainStreams::kCompute);
    read += p.op(i).bytes_read.value();
    written += p.op(i).bytes_written.value();
  }
  EXPECT_EQ(read, mbs * params * 2);      // bf16 gradients
  EXPECT_EQ(written, comm_bytes(p, rs));  // fp32 reduce-scatter input
  EXPECT_EQ(written, mbs * params * 4);
  // A layer's forward starts after its copy-out; the copies only add work.
  const std::vector<OpId> norm = named(p, "attn norm", 1, 0, Pass::kForward);
  const std::vector<OpId> copy = named(p, "fsdp copy-out", 1, 0, Pass::kForward);
  ASSERT_EQ(norm.size(), 1u);
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(ancestors(p, norm.front()).count(copy.front()), 1u);
  EXPECT_GT(step_time(on), step_time(off));
  // torchtitan's stack turns it on; Megatron-Core's does not.
  EXPECT_TRUE(testing::scenario(json, with(two, {{"plan.framework", "torchtitan"}})).plan.fsdp_copy_out);
  EXPECT_FALSE(testing::scenario(json, with(two, {{"plan.framework", "megatron-core"}})).plan.fsdp_copy_out);
}

// 7c. fsdp_keep_root (FSDP2 under torchtitan): the root (embedding and head)
// is gathered when the step starts and, with the last layer, not gathered
// again for the backward; the root's gradients are reduce-scattered after
// the embedding's backward. Only the first layer is gathered twice.
TEST(StackMechanisms, FsdpKeepRootGathersTheRootOnceAndReducesItLast) {
  const Scenario off = testing::scenario(kFsdp, kTwoLayers);
  const Scenario on = testing::scenario(kFsdp, with(kTwoLayers, {{"plan.fsdp_keep_root", "true"}}));
  EXPECT_FALSE(off.plan.fsdp_keep_root);
  const Program p = stage0(on), q = stage0(off);
  const int64_t mbs = 4, units = 4;
  auto count = [](const Program& prog, const char* name, Pass pass) {
    int64_t n = 0;
    for (OpId i : named(prog, name)) n += prog.op(i).pass == pass;
    return n;
  };
  EXPECT_EQ(count(p, "fsdp all-gather", Pass::kForward), mbs * units);
  EXPECT_EQ(count(q, "fsdp all-gather", Pass::kForward), mbs * units);
  EXPECT_EQ(count(p, "fsdp all-gather", Pass::kBackward), mbs * 1);  // layer 0
  EXPECT_EQ(count(q, "fsdp all-gather", Pass::kBackward), mbs * (units - 1));
  // Every unit is still reduce-scattered every microbatch.
  EXPECT_EQ(static_cast<int64_t>(named(p, "fsdp reduce-scatter").size()), mbs * units);
  // The head's gather is issued before layer 0 runs: layer 0's first op
  // waits for it through the gather stream.
  const std::vector<OpId> norm = named(p, "attn norm", 0, 0, Pass::kForward);
  ASSERT_EQ(norm.size(), 1u);
  auto gathers_before = [](const Program& prog, OpId op) {
    int64_t n = 0;
    for (OpId a : ancestors(prog, op)) n += prog.name(prog.op(a)) == "fsdp all-gather";
    return n;
  };
  EXPECT_EQ(gathers_before(p, norm.front()), 3);  // embedding, head, layer 0
  EXPECT_EQ(gathers_before(q, named(q, "attn norm", 0, 0, Pass::kForward).front()), 2);
  // The last reduce-scatter of a microbatch (the head's) follows the
  // embedding's backward.
  std::vector<OpId> rs0;
  for (OpId i : named(p, "fsdp reduce-scatter")) {
    if (p.op(i).microbatch == 0) rs0.push_back(i);
  }
  ASSERT_EQ(static_cast<int64_t>(rs0.size()), units);
  const std::vector<OpId> emb = named(p, "embedding grad", -1, 0, Pass::kBackward);
  ASSERT_EQ(emb.size(), 1u);
  EXPECT_EQ(ancestors(p, rs0.back()).count(emb.front()), 1u);
  EXPECT_EQ(p.op(rs0.back()).layer, -1);
  // The kept parameters raise the peak; torchtitan's stack turns it on.
  EXPECT_GT(run_training_step(on, {}).report.memory.peak_bytes_per_device,
            run_training_step(off, {}).report.memory.peak_bytes_per_device);
  EXPECT_TRUE(testing::scenario(kFsdp, with(kTwoLayers, {{"plan.framework", "torchtitan"}})).plan.fsdp_keep_root);
  // Without FSDP there is no root to keep: ZeRO-1's program, gradient
  // buckets included, is the same op for op.
  const Program z = stage0(testing::scenario(kZero1, kFourLayers));
  const Program zk = stage0(testing::scenario(kZero1, with(kFourLayers, {{"plan.fsdp_keep_root", "true"}})));
  ASSERT_EQ(z.size(), zk.size());
  for (OpId i = 0; i < z.size(); ++i) {
    ASSERT_EQ(z.name(z.op(i)), zk.name(zk.op(i))) << "op " << i;
    ASSERT_EQ(z.op(i).comm_bytes.value(), zk.op(i).comm_bytes.value()) << "op " << i;
  }
}

// 8. recompute "custom" with offloaded tensors: kept, but not in HBM.
TEST(StackMechanisms, OffloadedTensorsAreNotCountedInDeviceActivations) {
  const char* json = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"dp": 64, "global_batch": 64, "seq_len": 4096, "recompute": "custom",
               "recompute_keep": ["qkv_proj", "out_proj", "mlpwi", "mlpwo", "context"]}})";
  const std::vector<Override> two = {{"model.layers", "2"}};
  const int64_t T = 4096, h = 4096, a = 32, d = 128;
  const int64_t context = T * a * d * 2 + T * a * 4;  // attention output and its fp32 log-sum-exp
  const int64_t input = T * h * 2;                    // the layer's input (its checkpoint)
  const Scenario kept = testing::scenario(json, two);
  const Scenario off_ctx =
      testing::scenario(json, with(two, {{"plan.recompute_keep", R"(["qkv_proj", "out_proj", "mlpwi", "mlpwo"])"},
                                         {"plan.recompute_offload", R"(["context"])"}}));
  const Scenario off_in =
      testing::scenario(json, with(two, {{"plan.recompute_offload", R"(["decoder_layer_input"])"}}));
  const int64_t base = layer_activation_bytes(kept.model, kept.plan);
  EXPECT_EQ(base - layer_activation_bytes(off_ctx.model, off_ctx.plan), context);
  EXPECT_EQ(base - layer_activation_bytes(off_in.model, off_in.plan), input);
  // The program walk: two layers of one microbatch in flight, but the one
  // whose backward starts first (layer 1) holds its copy back again (and
  // each layer holds its own until its copy out ends: host_offload_test.cc).
  auto walked = [](const Scenario& s) { return walk_program_memory(stage0(s)).max_activations; };
  const int64_t w = walked(kept);
  EXPECT_EQ(w - walked(off_ctx), context);
  EXPECT_EQ(w - walked(off_in), input);
  // Offloading recomputes nothing more: the same ops run, and one copy to
  // the host and one back per layer (host_offload_test.cc times them).
  EXPECT_EQ(stage0(kept).size() + 2 * 2, stage0(off_ctx).size());
}

// 9. compile false (PyTorch eager): one kernel per operator of the norm.
TEST(StackMechanisms, EagerNormsReadAndWriteEveryIntermediate) {
  const char* json = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"dp": 64, "global_batch": 64, "seq_len": 2048}})";
  const std::vector<Override> two = {{"model.layers", "2"}};
  const int64_t e = 2048 * 4096;  // Ts·h
  auto norm_bytes = [](const Program& p, const char* name, int32_t layer, Pass pass) {
    const std::vector<OpId> ids = named(p, name, layer, 0, pass);
    EXPECT_EQ(ids.size(), 1u) << name;
    if (ids.empty()) return std::pair<int64_t, int64_t>{-1, -1};
    return std::pair{p.op(ids.front()).bytes_read.value(), p.op(ids.front()).bytes_written.value()};
  };
  using B = std::pair<int64_t, int64_t>;
  const Program eager = stage0(testing::scenario(json, with(two, {{"plan.compile", "false"}})));
  const Program fused = stage0(testing::scenario(json, two));
  EXPECT_EQ(norm_bytes(eager, "attn norm", 1, Pass::kForward), B(20 * e, 16 * e));
  EXPECT_EQ(norm_bytes(eager, "attn norm", 1, Pass::kBackward), B(44 * e, 28 * e));
  EXPECT_EQ(norm_bytes(eager, "final norm", -1, Pass::kForward), B(20 * e, 16 * e));
  EXPECT_EQ(norm_bytes(fused, "attn norm", 1, Pass::kForward), B(2 * e, 2 * e));
  EXPECT_EQ(norm_bytes(fused, "attn norm", 1, Pass::kBackward), B(4 * e, 2 * e));
  EXPECT_EQ(norm_bytes(fused, "final norm", -1, Pass::kForward), B(2 * e, 2 * e));
  // torchtitan defaults to eager; with compile on, its blocks fuse but the
  // final norm and the loss stay outside torch.compile.
  const Scenario tt = testing::scenario(json, with(two, {{"plan.framework", "torchtitan"}}));
  EXPECT_FALSE(tt.plan.compile);
  EXPECT_EQ(norm_bytes(stage0(tt), "mlp norm", 0, Pass::kForward), B(20 * e, 16 * e));
  const Program ttc =
      stage0(testing::scenario(json, with(two, {{"plan.framework", "torchtitan"}, {"plan.compile", "true"}})));
  EXPECT_EQ(norm_bytes(ttc, "mlp norm", 0, Pass::kForward), B(2 * e, 2 * e));
  EXPECT_EQ(norm_bytes(ttc, "final norm", -1, Pass::kForward), B(20 * e, 16 * e));
  // Eager is memory-bound work the step pays for.
  EXPECT_GT(step_time(testing::scenario(json, with(two, {{"plan.compile", "false"}}))),
            step_time(testing::scenario(json, two)));
}

}  // namespace
}  // namespace shardsim
