// Loads a scenario (model + cluster + plan) from JSON, applying presets and
// --set overrides, and validates everything before any simulation.
#include <cstdio>
#include <filesystem>
#include <limits>

#include "json_reader.h"
#include "layer_graph.h"
#include "loader_parts.h"
#include "plan_fields.h"
#include "shardsim/core/error.h"
#include "shardsim/core/read_file.h"
#include "shardsim/workloads/framework.h"
#include "shardsim/workloads/presets.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {
namespace {

using detail::Json;
using detail::kMaxDevices;
using detail::kMaxDim;
using detail::kMaxLayers;
using detail::load_calibration;
using detail::ObjectReader;
using detail::parse_cluster;
using detail::parse_serving;
using detail::preset_json;
using detail::sibling_path;

/// Replaces a preset name at `node` by its JSON object so fields can be set.
void expand_if_preset(Json& node, const std::string& kind, const std::string& file, const std::string& ptr) {
  if (node.is_string()) node = preset_json(kind, node.get<std::string>(), file, ptr);
}

/// The kind of preset the field `key` of the object at `parent` may name:
/// a scenario's model, cluster and plan, and a cluster's chip (the cluster
/// at `cluster_ptr`: /cluster in a scenario, the root of a cluster file).
std::string kind_of_part(const std::string& parent, const std::string& key, const std::string& cluster_ptr) {
  if (parent.empty() && (key == "model" || key == "cluster" || key == "plan")) return key;
  if (parent == cluster_ptr && key == "chip") return "chip";
  return "";
}

void apply_override(Json& root, const Override& o, const std::string& file,
                    const std::string& cluster_ptr = "/cluster") {
  const std::string where = "--set " + o.path;
  if (o.path.empty() || o.path.front() == '.' || o.path.back() == '.') {
    throw InputError(file, "", where + ": expected a dotted path such as plan.tp");
  }
  Json value;
  try {
    value = Json::parse(o.value);
  } catch (const Json::exception&) {
    value = o.value;  // a bare word (or anything else that is not JSON) is a string
  }
  Json* node = &root;
  std::string ptr;
  size_t start = 0;
  while (true) {
    const size_t dot = o.path.find('.', start);
    const std::string key = o.path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw InputError(file, "", where + ": empty path component");
    if (!node->is_object())
      throw InputError(file, ptr, where + ": cannot set a field inside a " + std::string(node->type_name()));
    const std::string parent = ptr;
    ptr += "/" + key;
    if (dot == std::string::npos) {
      // null removes the field: it takes its default again.
      if (value.is_null()) {
        node->erase(key);
      } else {
        (*node)[key] = value;
      }
      return;
    }
    Json& child = (*node)[key];
    const std::string kind = kind_of_part(parent, key, cluster_ptr);
    if (!kind.empty()) expand_if_preset(child, kind, file, ptr);
    if (child.is_null()) child = Json::object();
    node = &child;
    start = dot + 1;
  }
}

ModelSpec parse_model(const Json& j, const std::string& file) {
  if (j.is_string()) {
    ModelSpec m = parse_model(preset_json("model", j.get<std::string>(), file, "/model"), file);
    return m;
  }
  ObjectReader r(j, file, "/model");
  ModelSpec m;
  m.name = r.string("name", "custom");
  m.layers = r.positive_int("layers");
  m.hidden = r.positive_int("hidden");
  m.ffn_hidden = r.positive_int("ffn_hidden");
  m.heads = r.positive_int("heads");
  m.kv_heads = r.positive_int("kv_heads", m.heads);
  m.vocab = r.positive_int("vocab");
  if (!r.has("head_dim") && m.hidden % m.heads != 0) {
    r.fail("head_dim", "missing, and hidden (" + std::to_string(m.hidden) + ") is not a multiple of heads (" +
                           std::to_string(m.heads) + ") to derive it");
  }
  m.head_dim = r.positive_int("head_dim", m.hidden / m.heads);
  {
    const std::string mlp = r.choice("mlp", {"gelu", "swiglu", "geglu", "relu2", "relu"}, "swiglu");
    m.mlp = mlp == "gelu"    ? MlpKind::kGelu
            : mlp == "geglu" ? MlpKind::kGeglu
            : mlp == "relu2" ? MlpKind::kRelu2
            : mlp == "relu"  ? MlpKind::kRelu
                             : MlpKind::kSwiglu;
  }
  m.norm =
      r.choice("norm", {"layernorm", "rmsnorm"}, "rmsnorm") == "layernorm" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  m.position = [&] {
    const std::string pos = r.choice("position", {"learned", "rope", "alibi"}, "rope");
    return pos == "learned" ? PositionKind::kLearned : pos == "alibi" ? PositionKind::kNone : PositionKind::kRope;
  }();
  m.tied_embeddings = r.boolean("tied_embeddings", false);
  m.dropout = r.boolean("dropout", false);
  m.bias = r.boolean("bias", m.mlp == MlpKind::kGelu);
  m.attention_window = r.int_in("attention_window", 0, kMaxDim, 0);
  m.global_every = r.int_in("global_every", 0, kMaxLayers, 0);
  m.qk_norm = r.boolean("qk_norm", false);
  m.post_norms = r.boolean("post_norms", false);
  m.source = r.string("source", "");
  if (r.has("mla")) {
    ObjectReader l(r.raw("mla"), file, "/model/mla");
    m.mla.q_lora_rank = l.int_in("q_lora_rank", 0, kMaxDim, 0);
    m.mla.kv_lora_rank = l.int_in("kv_lora_rank", 1, kMaxDim, 1);
    m.mla.qk_rope_head_dim = l.int_in("qk_rope_head_dim", 0, kMaxDim, 0);
    m.mla.v_head_dim = l.int_in("v_head_dim", 1, kMaxDim, 1);
    if (!l.has("kv_lora_rank")) l.fail("kv_lora_rank", "missing: the keys' and values' latent width");
    if (!l.has("v_head_dim")) l.fail("v_head_dim", "missing: the width of each value head");
    l.done();
    // Each head's key and value come up from the latent: as many as queries.
    if (r.has("kv_heads") && m.kv_heads != m.heads) {
      r.fail("kv_heads", "with mla every head has its own key and value: expected heads (" + std::to_string(m.heads) +
                             "), got " + std::to_string(m.kv_heads));
    }
    m.kv_heads = m.heads;
    if (!r.has("head_dim")) r.fail("head_dim", "missing: with mla, the width of each key head without its rotary part");
    if (m.bias) r.fail("bias", "with mla the projections carry no biases: expected false");
  }
  if (r.has("moe")) {
    ObjectReader e(r.raw("moe"), file, "/model/moe");
    m.moe.experts = e.int_in("experts", 1, 1 << 16, 1);
    m.moe.top_k = e.int_in("top_k", 1, m.moe.experts, 1);
    m.moe.shared_experts = e.int_in("shared_experts", 0, 1 << 10, 0);
    m.moe.expert_ffn_hidden = e.positive_int("expert_ffn_hidden");
    m.moe.capacity_factor = e.number_in("capacity_factor", 1.0, 64.0, 1.0);
    m.moe.first_dense_layers = e.int_in("first_dense_layers", 0, kMaxLayers, 0);
    e.done();
    if (m.moe.expert_ffn_hidden > kMaxDim)
      e.fail("expert_ffn_hidden", "at most " + std::to_string(kMaxDim) + " is supported");
  }
  r.done();
  if (m.is_moe() && m.moe.first_dense_layers >= m.layers) {
    r.fail("moe", "first_dense_layers (" + std::to_string(m.moe.first_dense_layers) +
                      ") leaves no mixture-of-experts layer among the " + std::to_string(m.layers));
  }
  if (m.layers > kMaxLayers) r.fail("layers", "at most " + std::to_string(kMaxLayers) + " layers are supported");
  for (const char* k : {"hidden", "ffn_hidden", "heads", "vocab", "head_dim"}) {
    const int64_t v = k == std::string("hidden")       ? m.hidden
                      : k == std::string("ffn_hidden") ? m.ffn_hidden
                      : k == std::string("heads")      ? m.heads
                      : k == std::string("vocab")      ? m.vocab
                                                       : m.head_dim;
    if (v > kMaxDim) r.fail(k, "at most " + std::to_string(kMaxDim) + " is supported, got " + std::to_string(v));
  }
  {
    // Bound the parameter count (in doubles, before any int64 product) so
    // that byte counts cannot overflow: 10^15 is a thousand times today's
    // largest models.
    const double h = static_cast<double>(m.hidden), L = static_cast<double>(m.layers);
    const double per_layer = 4.0 * h * static_cast<double>(m.heads * m.head_dim) +
                             3.0 * h * static_cast<double>(m.ffn_hidden) +
                             (m.is_moe() ? 3.0 * h * static_cast<double>(m.moe.expert_ffn_hidden) *
                                               static_cast<double>(m.moe.experts + m.moe.shared_experts)
                                         : 0.0);
    if (L * per_layer + 2.0 * h * static_cast<double>(m.vocab) > 1e15) {
      r.fail_here("the model would have more than 10^15 parameters; at most 10^15 are supported");
    }
  }
  if (m.heads % m.kv_heads != 0) {
    r.fail("kv_heads",
           "kv_heads (" + std::to_string(m.kv_heads) + ") must divide heads (" + std::to_string(m.heads) + ")");
  }
  return m;
}

/// An inference plan: the parallelism of the serving replicas and the shape
/// of the step (see Plan).
Plan parse_inference_plan(ObjectReader& r, Phase phase, const ModelSpec& m, const ClusterSpec& c, bool serving) {
  Plan p = detail::read_plan_fields(r, phase, serving);
  const char* len_key = phase == Phase::kPrefill ? "prompt_tokens" : "context_tokens";
  r.done();
  if (p.weight_dtype == DType::kFp8 && c.chip.fp8_peak.value() <= 0) {
    r.fail("weight_dtype", "chip " + c.chip.name + " has no fp8 matmul; use int8 (weight-only) or bf16");
  }
  if (p.microbatch_size > (int64_t{1} << 20)) r.fail("batch", "at most 2^20 sequences per replica are supported");
  if (p.seq_len > (int64_t{1} << 24)) r.fail(len_key, "at most 2^24 tokens per sequence are supported");
  if (phase == Phase::kPrefill && p.microbatch_size * p.seq_len > (int64_t{1} << 26)) {
    r.fail("prompt_tokens", "batch·prompt_tokens exceeds 2^26 tokens per step");
  }
  if (const auto issue = check_plan(p, m, c)) {
    if (issue->field.empty()) r.fail_here(issue->message);
    r.fail(issue->field, issue->message);
  }
  return p;
}

Plan parse_plan(const Json& j, const std::string& file, const ModelSpec& m, const ClusterSpec& c, bool serving) {
  if (j.is_string()) return parse_plan(preset_json("plan", j.get<std::string>(), file, "/plan"), file, m, c, serving);
  ObjectReader r(j, file, "/plan");
  const std::string phase = r.choice("phase", {"train", "prefill", "decode"}, "train");
  if (phase != "train") {
    return parse_inference_plan(r, phase == "prefill" ? Phase::kPrefill : Phase::kDecode, m, c, serving);
  }
  if (serving) r.fail("phase", "a scenario with a \"serving\" object needs an inference plan (\"phase\": \"decode\")");
  // Field by field (plan_fields.cc); the framework comes first: it sets
  // the defaults of the stack's knobs, which the plan may still override.
  Plan p = detail::read_plan_fields(r, Phase::kTrain, serving);
  r.done();
  // The framework's kernel on this chip family, unless the plan names one.
  if (const auto k = framework_attention_kernel(p.framework, c.chip.family); k && !j.contains("attention_kernel")) {
    p.attention_kernel = *k;
  }

  if (const auto issue = check_plan(p, m, c)) {
    if (issue->field.empty()) r.fail_here(issue->message);
    r.fail(issue->field, issue->message);
  }
  return p;
}

Published parse_published(const Json& j, const std::string& file) {
  ObjectReader r(j, file, "/published");
  Published pub;
  pub.source = r.string("source", "");
  pub.assumptions = r.string("assumptions", "");
  pub.fitted = r.boolean("fitted", false);
  pub.split = r.choice("split", {"held_out", "development", "in_sample"}, "in_sample");
  pub.row = r.string("row", "");
  pub.source_id = r.string("source_id", "");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "source" || it.key() == "assumptions" || it.key() == "fitted" || it.key() == "split" ||
        it.key() == "row" || it.key() == "source_id") {
      continue;
    }
    pub.metrics.emplace_back(it.key(), r.positive_number(it.key()));
  }
  r.done();
  return pub;
}

/// simulator.speedup (scenario.h, Speedups): lever name to factor. Stream
/// names are checked against the lowered programs (app/step.cc).
Speedups parse_speedups(const Json& j, const std::string& file, std::array<double, kLinkKinds>& link) {
  const std::string ptr = "/simulator/speedup";
  if (!j.is_object())
    throw InputError(file, ptr, "expected an object of levers to factors, got " + detail::describe(j));
  ObjectReader r(j, file, ptr);
  Speedups sp;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const double k = r.positive_number(key);
    if (k > 1e6) r.fail(key, "expected a factor in (0, 1e6], got " + detail::describe(it.value()));
    sp.levers.emplace_back(key, k);
    bool known = false;
    for (int c = 0; c < kComputeKinds; ++c) {
      // "compute" is every kind the SMs run: not the host link's copies.
      const bool all = key == "compute" && static_cast<ComputeKind>(c) != ComputeKind::kHostCopy;
      if (all || key == to_string(static_cast<ComputeKind>(c))) {
        sp.compute[static_cast<size_t>(c)] *= k;
        known = true;
      }
    }
    for (int l = 0; l < kLinkKinds; ++l) {
      if (key == "net" || key == "net:" + std::string(to_string(static_cast<LinkKind>(l)))) {
        link[static_cast<size_t>(l)] *= k;
        known = true;
      }
    }
    if (key.rfind("stream:", 0) == 0 && key.size() > 7) {
      sp.stream.emplace_back(key.substr(7), k);
      known = true;
    }
    if (!known) {
      r.fail(key,
             "expected a lever: a compute kind (matmul, attention, elementwise, norm, softmax, embedding, loss, "
             "optimizer), compute, stream:NAME, net or net:KIND (ici, nvlink, nic, switch)");
    }
  }
  r.done();
  return sp;
}

SimulatorSpec parse_simulator(const Json& j, const std::string& file, std::array<double, kLinkKinds>& link_speedup) {
  if (!j.is_object()) throw InputError(file, "/simulator", "expected an object, got " + detail::describe(j));
  ObjectReader r(j, file, "/simulator");
  SimulatorSpec s;
  s.backend = r.choice("backend", {"native", "simgrid"}, "native") == "simgrid" ? SimulatorSpec::Backend::kSimgrid
                                                                                : SimulatorSpec::Backend::kNative;
  s.simgrid_model = r.choice("simgrid_network_model", {"CM02", "LV08"}, "CM02") == "LV08"
                        ? SimulatorSpec::SimgridModel::kLv08
                        : SimulatorSpec::SimgridModel::kCm02;
  if (r.has("speedup")) s.speedup = parse_speedups(r.raw("speedup"), file, link_speedup);
  s.symmetry = r.boolean("symmetry", true);
  r.done();
  return s;
}

Json load_root(const std::string& text, const std::string& name, const std::vector<Override>& overrides) {
  Json root = detail::parse_json_text(text, name);
  if (!root.is_object()) throw InputError(name, "/", "expected a scenario object with model, cluster and plan");
  for (const auto& o : overrides) apply_override(root, o, name);
  return root;
}

}  // namespace

namespace detail {

Json preset_json(const std::string& kind, const std::string& name, const std::string& file, const std::string& ptr) {
  auto p = find_preset(kind, name);
  if (!p) {
    std::string names;
    for (const auto& e : all_presets()) {
      if (e.kind == kind) names += (names.empty() ? "" : ", ") + std::string(e.name);
    }
    throw InputError(file, ptr, "unknown " + kind + " preset \"" + name + "\" (known: " + names + ")");
  }
  return Json::parse(p->json);
}

ModelSpec model_preset(const std::string& name, const std::string& file, const std::string& ptr) {
  return parse_model(preset_json("model", name, file, ptr), file);
}

}  // namespace detail

Scenario parse_scenario(const std::string& text, const std::string& name, const std::vector<Override>& overrides) {
  Json root = load_root(text, name, overrides);
  ObjectReader r(root, name, "");
  Scenario sc;
  sc.file = name;
  const bool serving = r.has("serving");
  if (r.has("workload")) {
    // A trace instead of a model and a plan.
    for (const char* part : {"model", "plan", "serving"}) {
      if (r.has(part)) r.fail(part, "a scenario whose workload is a trace has no model, plan or serving object");
    }
    const Json& w = r.raw("workload");
    if (!w.is_object()) r.fail("workload", "expected an object {\"kind\": \"chakra\", \"dir\": DIR}");
    ObjectReader wr(w, name, "/workload");
    wr.choice("kind", {"chakra"}, "chakra");
    sc.workload.present = true;
    std::string dir = std::filesystem::path(sibling_path(name, wr.string("dir"))).lexically_normal().string();
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    sc.workload.dir = dir.empty() ? "." : dir;
    sc.workload.retime = wr.boolean("retime", false);
    sc.workload.custom_all_reduce = wr.boolean("custom_all_reduce", false);
    wr.done();
    sc.cluster = parse_cluster(r.raw("cluster"), name);
    sc.model.name = "trace";
    sc.plan.dp = sc.cluster.devices;
    sc.plan.global_batch = sc.cluster.devices;
  } else {
    sc.model = parse_model(r.raw("model"), name);
    sc.cluster = parse_cluster(r.raw("cluster"), name);
    sc.plan = parse_plan(r.raw("plan"), name, sc.model, sc.cluster, serving);
  }
  // Serving engines reduce small tensor-parallel messages inside an NVLink
  // node with their own kernels, up to 8 MiB (vLLM's and TensorRT-LLM's
  // custom all-reduce; topology.h CustomAllReduce).
  const bool custom_all_reduce =
      sc.workload.present ? sc.workload.custom_all_reduce : sc.plan.inference() && sc.plan.custom_all_reduce;
  if (custom_all_reduce && sc.cluster.chip.nvlink_links > 0) {
    CustomAllReduce& ca = sc.cluster.collective.custom_all_reduce;
    ca.max_bytes = int64_t{8} << 20;
    if (!sc.workload.present && sc.plan.custom_all_reduce_kernels == Plan::AllReduceKernels::kTrtllm) {
      // TensorRT-LLM's engine plugin under its default strategy AUTO
      // (cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp,
      // selectImplementation, and customAllReduceUtils.h
      // getMaxRequiredWorkspaceSize, 0.17 and the releases around it):
      // workspace 16 MB for two ranks, 8 MB beyond; one-shot at two ranks,
      // below 1 MB up to four, below 500 kB beyond; two-shot disabled
      // ("temporary measure", nvbug 4718747), so everything else is NCCL.
      // The kernels' fixed times are vLLM's (not measured for TensorRT-LLM).
      ca.max_bytes = 8'000'000;
      ca.pair_max_bytes = 16'000'000;
      ca.one_shot_max_ranks = 4;
      ca.one_shot_small_max_bytes = 1'000'000;
      ca.one_shot_max_bytes = 500'000;
      ca.two_shot = false;
    }
  }
  r.string("description", "");
  if (r.has("published")) sc.published = parse_published(r.raw("published"), name);
  if (r.has("simulator")) sc.simulator = parse_simulator(r.raw("simulator"), name, sc.cluster.link_speedup);
  if (sc.simulator.backend == SimulatorSpec::Backend::kSimgrid && sc.cluster.fabric == FabricKind::kGraph &&
      sc.cluster.graph.ecmp == Ecmp::kSplit) {
    // SimGrid routes each flow on one path.
    throw InputError(name, "/cluster/fabric/ecmp",
                     "\"split\" needs the native backend (SimGrid routes a flow on one path); use \"hash\"");
  }
  sc.cluster.collective.nccl.bandwidth_speedup = sc.cluster.link_speedup[static_cast<size_t>(LinkKind::kNvlink)];
  if (serving) sc.serving = parse_serving(r.raw("serving"), name, sc);
  r.done();
  // Stamp: FNV-1a 64 of the scenario as simulated (overrides applied, keys
  // sorted by nlohmann's std::map), so a result names what produced it.
  sc.json = root.dump(-1, ' ', false, Json::error_handler_t::replace);
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : sc.json) {
    h = (h ^ ch) * 0x100000001b3ull;
  }
  // A calibration profile is named by path: its contents count too.
  if (sc.cluster.calibration) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((sc.cluster.calibration->content_hash >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  sc.config_hash = hex;
  return sc;
}

std::string render_scenario(const std::string& file, const std::vector<Override>& overrides) {
  return load_root(read_file_text(file), file, overrides).dump(2) + "\n";
}

std::string plan_json(const Plan& p) {
  return detail::write_plan_fields(p).dump();
}

std::string scenario_json(const Scenario& s) {
  Json root = detail::parse_json_text(s.json, s.file);
  if (!s.workload.present) root["plan"] = detail::write_plan_fields(s.plan);
  apply_override(root, Override{"cluster.devices", std::to_string(s.cluster.devices)}, s.file);
  return root.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Scenario load_scenario(const std::string& file, const std::vector<Override>& overrides) {
  // A directory (a Chakra trace `shardsim export chakra` wrote) stands for
  // its scenario.json.
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    const std::string scenario = (std::filesystem::path(file) / "scenario.json").string();
    if (!std::filesystem::exists(scenario, ec)) {
      throw InputError(file, "",
                       "a directory without scenario.json: expected a scenario file, or a trace directory with the "
                       "scenario that runs it (a \"workload\" of {\"kind\": \"chakra\", \"dir\": ...})");
    }
    return parse_scenario(read_file_text(scenario), scenario, overrides);
  }
  return parse_scenario(read_file_text(file), file, overrides);
}

ClusterSpec load_cluster(const std::string& file_or_preset, const std::vector<Override>& overrides) {
  if (find_preset("cluster", file_or_preset)) {
    Json root = Json::object();
    root["cluster"] = file_or_preset;
    // Paths name fields of the cluster, as in a bare cluster file
    // (fabric.nvls); "cluster." in front is accepted too.
    for (const auto& o : overrides) {
      const bool rooted = o.path.rfind("cluster.", 0) == 0;
      apply_override(root, rooted ? o : Override{"cluster." + o.path, o.value}, file_or_preset);
    }
    return parse_cluster(root["cluster"], file_or_preset);
  }
  return parse_cluster_text(read_file_text(file_or_preset), file_or_preset, overrides);
}

ClusterSpec parse_cluster_text(const std::string& text, const std::string& name,
                               const std::vector<Override>& overrides) {
  Json root = load_root(text, name, {});
  // A bare cluster object (a cluster file): its fields named from its own
  // root, --set chip.hbm_GBps reaching into its chip preset as
  // cluster.chip.hbm_GBps does in a scenario.
  const bool bare = !root.contains("cluster");
  for (const auto& o : overrides) apply_override(root, o, name, bare ? "" : "/cluster");
  return bare ? parse_cluster(root, name, "") : parse_cluster(root["cluster"], name);
}

std::unique_ptr<Topology> build_topology(const ClusterSpec& c) {
  std::unique_ptr<Topology> t = c.fabric == FabricKind::kTorus   ? make_torus(c.torus)
                                : c.fabric == FabricKind::kGraph ? make_graph_fabric(c.graph)
                                                                 : make_fat_tree(c.fat_tree, c.devices);
  t->speed_up_links(c.link_speedup);
  return t;
}

Mesh build_mesh(const Plan& p) {
  std::array<int64_t, kNumMeshAxes> sizes{};
  sizes[static_cast<size_t>(MeshAxis::kTp)] = p.tp;
  sizes[static_cast<size_t>(MeshAxis::kCp)] = p.cp;
  sizes[static_cast<size_t>(MeshAxis::kPp)] = p.pp;
  sizes[static_cast<size_t>(MeshAxis::kDp)] = p.dp;
  const int64_t ds = p.zero == 3 && p.fsdp_shard_size > 0 && p.fsdp_shard_size < p.dp ? p.fsdp_shard_size : 1;
  // The mesh's ep axis is the data-parallel part of an expert group.
  return Mesh(sizes, p.mesh_order, p.ep / expert_fold(p), ds);
}

}  // namespace shardsim
