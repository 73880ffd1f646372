// Loads a scenario (model + cluster + plan) from JSON, applying presets and
// --set overrides, and validates everything before any simulation.
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "json_reader.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/presets.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {
namespace {

using detail::Json;
using detail::ObjectReader;

// Caps that keep absurd inputs from allocating the machine away.
constexpr int64_t kMaxDevices = 1 << 20;
constexpr int64_t kMaxLayers = 10'000;
constexpr int64_t kMaxDim = 1 << 24;
constexpr int64_t kMaxOpsEstimate = 200'000'000;  // devices x ops per device

std::string read_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "", "cannot read file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

/// Replaces a preset name at `node` by its JSON object so fields can be set.
void expand_if_preset(Json& node, const std::string& kind, const std::string& file, const std::string& ptr) {
  if (node.is_string()) node = preset_json(kind, node.get<std::string>(), file, ptr);
}

std::string kind_of_part(const std::string& parent, const std::string& key) {
  if (parent.empty() && (key == "model" || key == "cluster" || key == "plan")) return key;
  if (parent == "/cluster" && key == "chip") return "chip";
  return "";
}

void apply_override(Json& root, const Override& o, const std::string& file) {
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
      (*node)[key] = value;
      return;
    }
    Json& child = (*node)[key];
    const std::string kind = kind_of_part(parent, key);
    if (!kind.empty()) expand_if_preset(child, kind, file, ptr);
    if (child.is_null()) child = Json::object();
    node = &child;
    start = dot + 1;
  }
}

ChipSpec parse_chip(const Json& j, const std::string& file, const std::string& ptr) {
  if (j.is_string()) return parse_chip(preset_json("chip", j.get<std::string>(), file, ptr), file, ptr);
  ObjectReader r(j, file, ptr);
  ChipSpec c;
  c.name = r.string("name");
  const std::string fam = r.choice("family", {"gpu", "tpu", "cpu"}, "gpu");
  c.family = fam == "gpu" ? ChipFamily::kGpu : fam == "tpu" ? ChipFamily::kTpu : ChipFamily::kCpu;
  c.bf16_peak = FlopsPerSec(r.positive_number("bf16_flops_per_s"));
  c.fp8_peak = FlopsPerSec(r.number_in("fp8_flops_per_s", 0, 1e18, 0));
  c.hbm_capacity = Bytes(r.positive_int("hbm_bytes"));
  c.hbm_bandwidth = gbyte_per_s(r.positive_number("hbm_GBps"));
  c.nvlink_per_gpu = gbyte_per_s(r.number_in("nvlink_GBps_per_gpu", 0, 1e6, 0));
  c.nic_per_gpu = gbyte_per_s(r.number_in("nic_GBps_per_gpu", 0, 1e6, 0));
  c.ici_per_link = gbyte_per_s(r.number_in("ici_GBps_per_link", 0, 1e6, 0));
  r.int_in("ici_ports", 0, 64, 0);
  c.nvlink_ring_efficiency = r.number_in("nvlink_ring_efficiency", 0.01, 1, 1);
  c.matmul_efficiency = r.number_in("matmul_efficiency", 0.01, 1, 1);
  c.attention_efficiency = r.number_in("attention_efficiency", 0.01, 1, 1);
  c.memory_efficiency = r.number_in("memory_efficiency", 0.01, 1, 1);
  c.launch_overhead = microseconds(r.number_in("launch_overhead_us", 0, 1e6, 0));
  c.compute_units = static_cast<int>(r.int_in("compute_units", 1, 1 << 20, 1));
  c.tile_m = static_cast<int>(r.int_in("tile_m", 1, 1 << 16, 128));
  c.tile_n = static_cast<int>(r.int_in("tile_n", 1, 1 << 16, 128));
  c.tile_k = static_cast<int>(r.int_in("tile_k", 1, 1 << 16, 64));
  c.source = r.string("source", "");
  r.done();
  return c;
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
  m.mlp = r.choice("mlp", {"gelu", "swiglu"}, "swiglu") == "gelu" ? MlpKind::kGelu : MlpKind::kSwiglu;
  m.norm =
      r.choice("norm", {"layernorm", "rmsnorm"}, "rmsnorm") == "layernorm" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  m.position =
      r.choice("position", {"learned", "rope"}, "rope") == "learned" ? PositionKind::kLearned : PositionKind::kRope;
  m.tied_embeddings = r.boolean("tied_embeddings", false);
  m.dropout = r.boolean("dropout", false);
  m.source = r.string("source", "");
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

FatTreeSpec parse_fat_tree(ObjectReader& r, const ChipSpec& chip, int64_t devices, ClusterSpec& c) {
  FatTreeSpec f;
  f.gpus_per_node = r.int_in("gpus_per_node", 1, 1024, 8);
  if (devices % f.gpus_per_node != 0) {
    r.fail("gpus_per_node", "devices (" + std::to_string(devices) + ") is not a multiple of gpus_per_node (" +
                                std::to_string(f.gpus_per_node) + ")");
  }
  const double nvl = r.number_in("nvlink_GBps_per_gpu", 0, 1e6, chip.nvlink_per_gpu.value() / 1e9);
  if (!(nvl > 0) && f.gpus_per_node > 1) {
    r.fail("nvlink_GBps_per_gpu", "required: chip " + chip.name + " names no NVLink bandwidth");
  }
  f.nvlink_bandwidth = gbyte_per_s(nvl > 0 ? nvl : 1);
  const double nic = r.number_in("nic_GBps_per_gpu", 0, 1e6, chip.nic_per_gpu.value() / 1e9);
  if (!(nic > 0)) r.fail("nic_GBps_per_gpu", "required: chip " + chip.name + " names no NIC bandwidth");
  f.nic_bandwidth = gbyte_per_s(nic);
  // NCCL ring bus bandwidth over NVLink line rate, from the chip preset.
  f.nvlink_efficiency = r.number_in("nvlink_efficiency", 0.01, 1, chip.nvlink_ring_efficiency);
  // Assumed: no measured NIC figure in shared/reference; replace by calibration.
  f.nic_efficiency = r.number_in("nic_efficiency", 0.01, 1, 0.9);
  // NCCL's tuning model (src/graph/tuning.cc, hwLat, ring LL128): about 1.9 us
  // per step over NVLink and 4.0 us over the network; a step crosses two links.
  f.nvlink_latency = microseconds(r.number_in("nvlink_latency_us", 0, 1e6, 0.95));
  f.nic_latency = microseconds(r.number_in("nic_latency_us", 0, 1e6, 2.0));
  f.switch_latency = microseconds(r.number_in("switch_latency_us", 0, 1e6, 0.5));
  f.rail_optimized = r.boolean("rail_optimized", true);
  f.nics_per_leaf = r.int_in("nics_per_leaf", 1, 1 << 16, 32);
  f.tiers = static_cast<int>(r.int_in("tiers", 2, 3, 2));
  f.leaves_per_pod = r.int_in("leaves_per_pod", 1, 1 << 16, 16);
  f.oversubscription = r.number_in("oversubscription", 1, 1000, 1);
  // NCCL tuning model baseLat for ring LL128: about 10 us per collective call.
  c.collective.base_latency = microseconds(r.number_in("base_latency_us", 0, 1e6, 10.0));
  // NCCL_BUFFSIZE default (4 MiB): the data a ring step moves across its
  // channels. It reproduces the pipeline-fill cost seen in nccl-tests
  // (docs/model.md, section 9).
  c.collective.pipeline_chunk = Bytes(r.int_in("pipeline_chunk_bytes", 0, int64_t{1} << 40, int64_t{4} << 20));
  return f;
}

TorusSpec parse_torus(ObjectReader& r, const ChipSpec& chip, int64_t devices, ClusterSpec& c) {
  TorusSpec t;
  const Json& dims = r.raw("dims");
  if (!dims.is_array() || dims.empty() || dims.size() > 6) {
    r.fail("dims", "expected an array of 1 to 6 positive integers, got " + detail::describe(dims));
  }
  int64_t product = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    const Json& d = dims[i];
    if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > kMaxDevices) {
      r.fail("dims/" + std::to_string(i),
             "expected a positive integer up to " + std::to_string(kMaxDevices) + ", got " + detail::describe(d));
    }
    t.dims.push_back(d.get<int64_t>());
    product *= t.dims.back();
    if (product > kMaxDevices) r.fail("dims", "product exceeds " + std::to_string(kMaxDevices) + " devices");
  }
  if (product != devices) {
    r.fail("dims",
           "product of dims (" + std::to_string(product) + ") differs from devices (" + std::to_string(devices) + ")");
  }
  if (r.has("wraparound")) {
    const Json& w = r.raw("wraparound");
    if (!w.is_array() || w.size() != dims.size()) {
      r.fail("wraparound", "expected an array of " + std::to_string(dims.size()) + " booleans, one per axis");
    }
    for (size_t i = 0; i < w.size(); ++i) {
      if (!w[i].is_boolean())
        r.fail("wraparound/" + std::to_string(i), "expected true or false, got " + detail::describe(w[i]));
      t.wraparound.push_back(w[i].get<bool>());
    }
  } else {
    t.wraparound.assign(dims.size(), true);
  }
  const double link = r.number_in("link_GBps", 0, 1e6, chip.ici_per_link.value() / 1e9);
  if (!(link > 0)) r.fail("link_GBps", "required: chip " + chip.name + " names no ICI link bandwidth");
  t.link_bandwidth = gbyte_per_s(link);
  t.link_efficiency = r.number_in("link_efficiency", 0.01, 1, 1.0);
  // Scaling book rule of thumb: about 1 us per ICI hop.
  t.hop_latency = microseconds(r.number_in("hop_latency_us", 0, 1e6, 1.0));
  c.collective.base_latency = microseconds(r.number_in("base_latency_us", 0, 1e6, 0.0));
  c.collective.pipeline_chunk = Bytes(r.int_in("pipeline_chunk_bytes", 0, int64_t{1} << 40, 0));
  return t;
}

/// A profile written by `shardsim calibrate` (realexec/src/calibrate.cc).
std::shared_ptr<const CalibrationProfile> load_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot read the calibration profile (cluster.calibration)");
  std::stringstream ss;
  ss << in.rdbuf();
  const Json root = detail::parse_json_text(ss.str(), path);
  if (!root.is_object()) throw InputError(path, "/", "expected a calibration profile object");
  auto prof = std::make_shared<CalibrationProfile>();
  prof->file = path;
  prof->content_hash = 0xcbf29ce484222325ull;  // FNV-1a 64 of the file's bytes
  for (unsigned char ch : ss.str()) prof->content_hash = (prof->content_hash ^ ch) * 0x100000001b3ull;
  ObjectReader r(root, path, "");
  r.string("backend", "");
  r.positive_int("ranks", 1);
  r.string("note", "");
  ObjectReader c(r.raw("compute"), path, "/compute");
  const Json& mm = c.raw("matmul");
  if (!mm.is_array() || mm.empty() || mm.size() > 1000) c.fail("matmul", "expected an array of measured matmuls");
  for (size_t i = 0; i < mm.size(); ++i) {
    ObjectReader m(mm[i], path, "/compute/matmul/" + std::to_string(i));
    const double v = static_cast<double>(m.positive_int("m")) * static_cast<double>(m.positive_int("n")) *
                     static_cast<double>(m.positive_int("k"));
    m.positive_number("time_s");
    prof->matmul.push_back({v, m.positive_number("flops_per_s")});
    m.done();
  }
  std::sort(prof->matmul.begin(), prof->matmul.end(), [](const auto& a, const auto& b) { return a.volume < b.volume; });
  {
    ObjectReader a(c.raw("attention"), path, "/compute/attention");
    a.positive_int("tokens");
    a.positive_int("heads");
    a.positive_int("head_dim");
    a.positive_number("time_s");
    prof->attention_flops_per_s = a.positive_number("flops_per_s");
    a.done();
    ObjectReader mem(c.raw("memory"), path, "/compute/memory");
    mem.positive_int("bytes");
    mem.positive_number("time_s");
    prof->memory_bytes_per_s = mem.positive_number("GBps") * 1e9;
    mem.done();
    ObjectReader l(c.raw("loss"), path, "/compute/loss");
    l.positive_int("values");
    l.positive_number("time_s");
    prof->loss_values_per_s = l.positive_number("values_per_s");
    l.done();
  }
  c.done();
  const Json& cs = r.raw("collectives");
  if (!cs.is_array() || cs.size() > 10000) r.fail("collectives", "expected an array of collective fits");
  for (size_t i = 0; i < cs.size(); ++i) {
    ObjectReader f(cs[i], path, "/collectives/" + std::to_string(i));
    CalibrationProfile::Fit fit;
    fit.kind =
        f.choice("kind", {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "send-recv"}, "");
    fit.group = f.positive_int("group");
    f.raw("points");
    fit.latency_s = f.number_in("latency_us", 0, 1e9, 0) * 1e-6;
    fit.bytes_per_s = f.positive_number("bandwidth_GBps") * 1e9;
    f.done();
    prof->collectives.push_back(fit);
  }
  r.done();
  return prof;
}

std::string sibling_path(const std::string& file, const std::string& name) {
  if (!name.empty() && name.front() == '/') return name;
  const size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? name : file.substr(0, slash + 1) + name;
}

ClusterSpec parse_cluster(const Json& j, const std::string& file) {
  if (j.is_string()) return parse_cluster(preset_json("cluster", j.get<std::string>(), file, "/cluster"), file);
  ObjectReader r(j, file, "/cluster");
  ClusterSpec c;
  c.chip = parse_chip(r.raw("chip"), file, "/cluster/chip");
  c.devices = r.positive_int("devices");
  if (c.devices > kMaxDevices) r.fail("devices", "at most " + std::to_string(kMaxDevices) + " devices are supported");
  r.string("source", "");
  if (r.has("calibration")) {
    const std::string name = r.string("calibration");
    if (name.empty()) r.fail("calibration", "expected the path of a profile written by shardsim calibrate");
    const std::string path = sibling_path(file, name);
    if (!std::ifstream(path))
      r.fail("calibration", "cannot read the profile " + path + " (shardsim calibrate writes one)");
    c.calibration = load_calibration(path);
  }
  ObjectReader f(r.raw("fabric"), file, "/cluster/fabric");
  const std::string kind = f.choice("kind", {"torus", "nvswitch_fat_tree"}, "");
  if (kind == "torus") {
    c.fabric = FabricKind::kTorus;
    c.torus = parse_torus(f, c.chip, c.devices, c);
  } else {
    c.fabric = FabricKind::kNvswitchFatTree;
    c.fat_tree = parse_fat_tree(f, c.chip, c.devices, c);
  }
  f.done();
  r.done();
  return c;
}

MeshAxis parse_axis(const Json& v, const ObjectReader& r, const std::string& key) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "tp") return MeshAxis::kTp;
    if (s == "cp") return MeshAxis::kCp;
    if (s == "pp") return MeshAxis::kPp;
    if (s == "dp") return MeshAxis::kDp;
  }
  r.fail(key, "expected one of \"tp\", \"cp\", \"pp\", \"dp\", got " + detail::describe(v));
}

DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::kFp32;
  if (s == "fp8") return DType::kFp8;
  return DType::kBf16;
}

DType parse_storage_dtype(const std::string& s) {
  if (s == "fp8") return DType::kFp8;
  if (s == "int8") return DType::kInt8;
  return DType::kBf16;
}

/// An inference plan: the parallelism of the serving replicas and the shape
/// of the step (see Plan).
Plan parse_inference_plan(ObjectReader& r, Phase phase, const ModelSpec& m, const ClusterSpec& c, bool serving) {
  Plan p;
  p.phase = phase;
  p.dp = r.positive_int("dp", 1);
  p.tp = r.positive_int("tp", 1);
  p.pp = r.positive_int("pp", 1);
  p.ep = r.positive_int("ep", 1);
  p.microbatch_size = r.positive_int("batch", 1);
  const char* len_key = phase == Phase::kPrefill ? "prompt_tokens" : "context_tokens";
  // `shardsim serve` sizes each iteration itself: the step shape is optional.
  p.seq_len = serving ? r.positive_int(len_key, 1) : r.positive_int(len_key);
  p.global_batch = p.microbatch_size * p.dp;
  p.weight_dtype = parse_storage_dtype(r.choice("weight_dtype", {"bf16", "fp8", "int8"}, "bf16"));
  p.kv_dtype = parse_storage_dtype(r.choice("kv_dtype", {"bf16", "fp8", "int8"}, "bf16"));
  p.cuda_graphs = r.boolean("cuda_graphs", phase == Phase::kDecode);
  p.matmul_dtype = p.weight_dtype == DType::kFp8 ? DType::kFp8 : DType::kBf16;
  p.sequence_parallel = false;
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
  Plan p;
  const std::string phase = r.choice("phase", {"train", "prefill", "decode"}, "train");
  if (phase != "train") {
    return parse_inference_plan(r, phase == "prefill" ? Phase::kPrefill : Phase::kDecode, m, c, serving);
  }
  if (serving) r.fail("phase", "a scenario with a \"serving\" object needs an inference plan (\"phase\": \"decode\")");
  p.dp = r.positive_int("dp", 1);
  p.tp = r.positive_int("tp", 1);
  p.pp = r.positive_int("pp", 1);
  p.cp = r.positive_int("cp", 1);
  p.ep = r.positive_int("ep", 1);
  p.zero = static_cast<int>(r.int_in("zero", 0, 3, 0));
  p.microbatch_size = r.positive_int("microbatch_size", 1);
  p.global_batch = r.positive_int("global_batch");
  p.seq_len = r.positive_int("seq_len");
  const std::string sched = r.choice("schedule", {"1f1b", "gpipe", "interleaved"}, "1f1b");
  p.schedule = sched == "gpipe"         ? PipelineSchedule::kGpipe
               : sched == "interleaved" ? PipelineSchedule::kInterleaved
                                        : PipelineSchedule::kOneFOneB;
  p.virtual_stages = r.int_in("virtual_stages", 1, 1024, 1);
  const std::string rc = r.choice("recompute", {"none", "selective", "full"}, "none");
  p.recompute = rc == "none" ? Recompute::kNone : rc == "selective" ? Recompute::kSelective : Recompute::kFull;
  p.fused_attention = r.choice("attention", {"fused", "unfused"}, "fused") == "fused";
  p.sequence_parallel = r.boolean("sequence_parallel", false);
  p.fsdp_prefetch = r.boolean("fsdp_prefetch", true);
  p.fsdp_shard_size = r.positive_int("fsdp_shard_size", 0);
  p.fsdp_bucket_params = r.positive_int("fsdp_bucket_params", 0);
  p.master_weights_dtype = parse_dtype(r.choice("master_weights_dtype", {"fp32", "bf16"}, "fp32"));
  p.optimizer_state_dtype = parse_dtype(r.choice("optimizer_state_dtype", {"fp32", "bf16"}, "fp32"));
  p.grad_bucket_bytes = r.positive_int("grad_bucket_bytes", p.grad_bucket_bytes);
  p.grad_reduce_dtype = parse_dtype(r.choice("grad_reduce_dtype", {"fp32", "bf16"}, "fp32"));
  p.matmul_dtype = parse_dtype(r.choice("matmul_dtype", {"bf16", "fp8"}, "bf16"));
  if (r.has("mesh_order")) {
    const Json& mo = r.raw("mesh_order");
    if (!mo.is_array() || mo.size() != kNumMeshAxes) {
      r.fail("mesh_order", "expected an array naming each of \"tp\", \"cp\", \"pp\", \"dp\" once, innermost first");
    }
    uint8_t seen = 0;
    for (size_t i = 0; i < mo.size(); ++i) {
      const MeshAxis a = parse_axis(mo[i], r, "mesh_order/" + std::to_string(i));
      if (seen & axis_bit(a)) r.fail("mesh_order/" + std::to_string(i), "axis named twice");
      seen |= axis_bit(a);
      p.mesh_order[i] = a;
    }
  }
  if (r.has("layers_per_stage")) {
    const Json& ls = r.raw("layers_per_stage");
    if (!ls.is_array() || ls.empty() || ls.size() > 1 << 16) {
      r.fail("layers_per_stage", "expected an array of layer counts, one per pipeline chunk");
    }
    for (size_t i = 0; i < ls.size(); ++i) {
      if (!ls[i].is_number_integer() || ls[i].get<int64_t>() < 0 || ls[i].get<int64_t>() > kMaxLayers) {
        r.fail("layers_per_stage/" + std::to_string(i),
               "expected a layer count from 0 to " + std::to_string(kMaxLayers) + ", got " + detail::describe(ls[i]));
      }
      p.layers_per_stage.push_back(ls[i].get<int64_t>());
    }
  }
  r.done();

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
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "source" || it.key() == "assumptions") continue;
    pub.metrics.emplace_back(it.key(), r.positive_number(it.key()));
  }
  r.done();
  return pub;
}

SimulatorSpec parse_simulator(const Json& j, const std::string& file) {
  if (!j.is_object()) throw InputError(file, "/simulator", "expected an object, got " + detail::describe(j));
  ObjectReader r(j, file, "/simulator");
  SimulatorSpec s;
  s.backend = r.choice("backend", {"native", "simgrid"}, "native") == "simgrid" ? SimulatorSpec::Backend::kSimgrid
                                                                                : SimulatorSpec::Backend::kNative;
  s.simgrid_model = r.choice("simgrid_network_model", {"CM02", "LV08"}, "CM02") == "LV08"
                        ? SimulatorSpec::SimgridModel::kLv08
                        : SimulatorSpec::SimgridModel::kCm02;
  r.done();
  return s;
}

LengthDistribution parse_length(const Json& j, const std::string& file, const std::string& ptr) {
  LengthDistribution d;
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < 1 || v > (int64_t{1} << 20)) {
      throw InputError(file, ptr, "expected a token count from 1 to 1048576, got " + detail::describe(j));
    }
    d.mean = static_cast<double>(v);
    d.min = d.max = v;
    return d;
  }
  if (!j.is_object()) {
    throw InputError(
        file, ptr,
        "expected a token count or {\"dist\": \"fixed|uniform|lognormal\", ...}, got " + detail::describe(j));
  }
  ObjectReader r(j, file, ptr);
  const std::string kind = r.choice("dist", {"fixed", "uniform", "lognormal"}, "fixed");
  d.kind = kind == "uniform"     ? LengthDistribution::Kind::kUniform
           : kind == "lognormal" ? LengthDistribution::Kind::kLognormal
                                 : LengthDistribution::Kind::kFixed;
  constexpr int64_t kMaxLen = int64_t{1} << 20;
  if (d.kind == LengthDistribution::Kind::kFixed) {
    d.min = d.max = r.int_in("tokens", 1, kMaxLen, 1);
    d.mean = static_cast<double>(d.min);
  } else {
    d.min = r.int_in("min", 1, kMaxLen, 1);
    d.max = r.int_in("max", 1, kMaxLen, kMaxLen);
    if (d.max < d.min) r.fail("max", "max must be at least min");
    d.mean = d.kind == LengthDistribution::Kind::kUniform
                 ? (static_cast<double>(d.min) + static_cast<double>(d.max)) / 2
                 : r.number_in("mean", 1, static_cast<double>(kMaxLen), 512);
    if (d.kind == LengthDistribution::Kind::kLognormal) d.sigma = r.number_in("sigma", 0, 4, 0.5);
  }
  r.done();
  return d;
}

ServingSpec parse_serving(const Json& j, const std::string& file, const Plan& plan) {
  if (!j.is_object()) throw InputError(file, "/serving", "expected an object, got " + detail::describe(j));
  ObjectReader r(j, file, "/serving");
  ServingSpec s;
  s.present = true;
  s.trace_file = r.string("trace_file", "");
  if (s.trace_file.empty()) {
    s.requests = r.int_in("requests", 1, 1'000'000, 1000);
    s.rate_per_s = r.number_in("rate_per_s", 1e-6, 1e9, 1.0);
    s.seed = static_cast<uint64_t>(r.int_in("seed", 0, INT64_MAX, 1));
    s.prompt =
        parse_length(r.has("prompt_tokens") ? r.raw("prompt_tokens") : Json(512), file, "/serving/prompt_tokens");
    s.output =
        parse_length(r.has("output_tokens") ? r.raw("output_tokens") : Json(128), file, "/serving/output_tokens");
  }
  s.max_batch = r.int_in("max_batch", 1, 1 << 20, 256);
  s.max_batched_tokens = r.int_in("max_batched_tokens", 1, 1 << 24, 8192);
  s.block_tokens = r.int_in("block_tokens", 1, 1 << 16, 16);
  s.kv_memory_fraction = r.number_in("kv_memory_fraction", 0.01, 1.0, 0.9);
  s.chunked_prefill = r.boolean("chunked_prefill", false);
  s.prefill_replicas = r.int_in("prefill_replicas", 0, 1 << 20, 0);
  r.done();
  if (s.prefill_replicas > 0 && s.prefill_replicas >= plan.dp) {
    r.fail("prefill_replicas", "disaggregation needs fewer prefill replicas (" + std::to_string(s.prefill_replicas) +
                                   ") than plan.dp (" + std::to_string(plan.dp) + ") so some replicas decode");
  }
  if (s.prefill_replicas > 0 && s.chunked_prefill) {
    r.fail("chunked_prefill", "chunked prefill mixes prefill and decode on one replica; disaggregation separates them");
  }
  return s;
}

Json load_root(const std::string& text, const std::string& name, const std::vector<Override>& overrides) {
  Json root = detail::parse_json_text(text, name);
  if (!root.is_object()) throw InputError(name, "/", "expected a scenario object with model, cluster and plan");
  for (const auto& o : overrides) apply_override(root, o, name);
  return root;
}

}  // namespace

std::optional<PlanIssue> check_plan(const Plan& p, const ModelSpec& m, const ClusterSpec& c) {
  auto s = [](int64_t x) { return std::to_string(x); };
  if (p.cp > 1) {
    if (p.seq_len % (2 * p.cp) != 0) {
      return PlanIssue{"cp", "cp (" + s(p.cp) + ") needs seq_len (" + s(p.seq_len) +
                                 ") to split into 2·cp equal chunks (load-balanced causal ring attention)"};
    }
    if (!p.fused_attention) return PlanIssue{"cp", "ring attention (cp > 1) needs \"attention\": \"fused\""};
  }
  if (p.ep > 1 && !m.is_moe())
    return PlanIssue{"ep", "expert parallelism needs a mixture-of-experts model; use ep = 1"};
  if (p.fsdp_bucket_params > 0 && p.zero != 3) return PlanIssue{"fsdp_bucket_params", "needs zero 3"};
  if (p.fsdp_bucket_params > 0 && p.fsdp_bucket_params < 1'000'000) {
    return PlanIssue{"fsdp_bucket_params", "at least 1,000,000 parameters per bucket are supported"};
  }
  if (p.fsdp_shard_size > 0) {
    if (p.zero != 3) return PlanIssue{"fsdp_shard_size", "hybrid FSDP needs zero 3"};
    if (p.dp % p.fsdp_shard_size != 0) {
      return PlanIssue{"fsdp_shard_size",
                       "fsdp_shard_size (" + s(p.fsdp_shard_size) + ") must divide dp (" + s(p.dp) + ")"};
    }
    if (p.ep > 1) return PlanIssue{"fsdp_shard_size", "hybrid FSDP with expert parallelism is not supported yet"};
  }
  if (p.dp % p.ep != 0)
    return PlanIssue{"ep",
                     "ep (" + s(p.ep) + ") must divide dp (" + s(p.dp) + "): experts split the data-parallel ranks"};
  if (m.is_moe() && m.moe.experts % p.ep != 0) {
    return PlanIssue{"ep", "ep (" + s(p.ep) + ") must divide the " + s(m.moe.experts) + " experts"};
  }
  if (m.is_moe() && p.tp > 1 && !p.sequence_parallel && !p.inference()) {
    return PlanIssue{"sequence_parallel",
                     "a mixture of experts with tp > 1 needs sequence_parallel: each tp rank routes its own tokens"};
  }
  if (p.matmul_dtype == DType::kFp8 && c.chip.fp8_peak.value() <= 0) {
    return PlanIssue{"matmul_dtype", "chip " + c.chip.name + " has no fp8 matmul peak"};
  }
  if (m.heads % p.tp != 0) return PlanIssue{"tp", "tp (" + s(p.tp) + ") must divide heads (" + s(m.heads) + ")"};
  if (m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0) {
    return PlanIssue{"tp", "tp (" + s(p.tp) + ") and kv_heads (" + s(m.kv_heads) + ") must divide one another"};
  }
  if (m.ffn_hidden % p.tp != 0)
    return PlanIssue{"tp", "tp (" + s(p.tp) + ") must divide ffn_hidden (" + s(m.ffn_hidden) + ")"};
  if (p.sequence_parallel && (p.seq_len / p.cp) % p.tp != 0) {
    return PlanIssue{"seq_len", "with sequence_parallel, tp (" + s(p.tp) + ") must divide the tokens per cp rank (" +
                                    s(p.seq_len / p.cp) + ")"};
  }
  __int128 prod = static_cast<__int128>(p.dp) * p.tp * p.pp * p.cp;
  if (prod != c.devices) {
    const std::string got =
        prod > kMaxDevices ? std::string("more than ") + s(kMaxDevices) : s(static_cast<int64_t>(prod));
    return PlanIssue{"", "dp·tp·pp·cp = " + got + " but the cluster has " + s(c.devices) + " devices"};
  }
  if (p.pp > 1024) return PlanIssue{"pp", "at most 1024 pipeline stages are supported"};
  if (p.schedule == PipelineSchedule::kOneFOneB && p.virtual_stages > 1) {
    return PlanIssue{"virtual_stages", "virtual_stages > 1 needs schedule \"interleaved\" (or \"gpipe\")"};
  }
  if (p.layers_per_stage.empty()) {
    if (p.pp * p.virtual_stages > m.layers) {
      return PlanIssue{"virtual_stages",
                       "pp·virtual_stages (" + s(p.pp * p.virtual_stages) + ") exceeds the " + s(m.layers) + " layers"};
    }
  } else {
    if (static_cast<int64_t>(p.layers_per_stage.size()) != p.pp * p.virtual_stages) {
      return PlanIssue{"layers_per_stage", "expected pp·virtual_stages = " + s(p.pp * p.virtual_stages) +
                                               " entries, got " + s(static_cast<int64_t>(p.layers_per_stage.size()))};
    }
    int64_t sum = 0;
    for (int64_t x : p.layers_per_stage) sum += x;
    if (sum != m.layers) {
      return PlanIssue{"layers_per_stage",
                       "the entries sum to " + s(sum) + " but the model has " + s(m.layers) + " layers"};
    }
  }
  if (p.global_batch % (p.dp * p.microbatch_size) != 0) {
    return PlanIssue{"global_batch", "global_batch (" + s(p.global_batch) +
                                         ") must be a multiple of dp·microbatch_size (" + s(p.dp * p.microbatch_size) +
                                         ")"};
  }
  if (p.schedule == PipelineSchedule::kInterleaved && p.pp > 1 && p.microbatches() % p.pp != 0) {
    return PlanIssue{"global_batch", "the interleaved schedule needs the microbatches per replica (" +
                                         s(p.microbatches()) + ") to be a multiple of pp (" + s(p.pp) + ")"};
  }
  const __int128 tokens = static_cast<__int128>(p.global_batch) * p.seq_len;
  if (tokens > (static_cast<__int128>(1) << 50))
    return PlanIssue{"global_batch", "global_batch·seq_len exceeds 2^50 tokens"};
  if (p.seq_len > (int64_t{1} << 24))
    return PlanIssue{"seq_len", "at most 2^24 (16,777,216) tokens per sequence are supported"};
  if (p.microbatch_size > (int64_t{1} << 24) || p.microbatch_size * p.seq_len > (int64_t{1} << 26)) {
    return PlanIssue{"microbatch_size", "microbatch_size·seq_len exceeds 2^26 tokens per microbatch"};
  }
  const __int128 ops = static_cast<__int128>(c.devices) * p.microbatches() * m.layers *
                       (p.recompute == Recompute::kFull ? 60 : 40) / p.pp;
  if (ops > kMaxOpsEstimate) {
    return PlanIssue{"", "the step would have about " + s(static_cast<int64_t>(std::min<__int128>(ops, INT64_MAX))) +
                             " device-ops, more than the supported " + s(kMaxOpsEstimate) +
                             "; use a larger microbatch_size or fewer devices"};
  }
  return std::nullopt;
}

Scenario parse_scenario(const std::string& text, const std::string& name, const std::vector<Override>& overrides) {
  Json root = load_root(text, name, overrides);
  ObjectReader r(root, name, "");
  Scenario sc;
  sc.file = name;
  sc.model = parse_model(r.raw("model"), name);
  sc.cluster = parse_cluster(r.raw("cluster"), name);
  const bool serving = r.has("serving");
  sc.plan = parse_plan(r.raw("plan"), name, sc.model, sc.cluster, serving);
  r.string("description", "");
  if (r.has("published")) sc.published = parse_published(r.raw("published"), name);
  if (r.has("simulator")) sc.simulator = parse_simulator(r.raw("simulator"), name);
  if (serving) sc.serving = parse_serving(r.raw("serving"), name, sc.plan);
  r.done();
  // Stamp: FNV-1a 64 of the scenario as simulated (overrides applied, keys
  // sorted by nlohmann's std::map), so a result names what produced it.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : root.dump(-1, ' ', false, Json::error_handler_t::replace)) {
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
  return load_root(read_file(file), file, overrides).dump(2) + "\n";
}

Scenario load_scenario(const std::string& file, const std::vector<Override>& overrides) {
  return parse_scenario(read_file(file), file, overrides);
}

ClusterSpec load_cluster(const std::string& file_or_preset, const std::vector<Override>& overrides) {
  if (find_preset("cluster", file_or_preset)) {
    Json root = Json::object();
    root["cluster"] = file_or_preset;
    for (const auto& o : overrides) apply_override(root, o, file_or_preset);
    return parse_cluster(root["cluster"], file_or_preset);
  }
  Json root = load_root(read_file(file_or_preset), file_or_preset, overrides);
  if (root.contains("cluster")) return parse_cluster(root["cluster"], file_or_preset);
  // A bare cluster object: reuse the cluster parser with its own pointer.
  Json wrapped = Json::object();
  wrapped["cluster"] = root;
  return parse_cluster(wrapped["cluster"], file_or_preset);
}

std::unique_ptr<Topology> build_topology(const ClusterSpec& c) {
  if (c.fabric == FabricKind::kTorus) return make_torus(c.torus);
  return make_fat_tree(c.fat_tree, c.devices);
}

Mesh build_mesh(const Plan& p) {
  std::array<int64_t, kNumMeshAxes> sizes{};
  sizes[static_cast<size_t>(MeshAxis::kTp)] = p.tp;
  sizes[static_cast<size_t>(MeshAxis::kCp)] = p.cp;
  sizes[static_cast<size_t>(MeshAxis::kPp)] = p.pp;
  sizes[static_cast<size_t>(MeshAxis::kDp)] = p.dp;
  const int64_t ds = p.zero == 3 && p.fsdp_shard_size > 0 && p.fsdp_shard_size < p.dp ? p.fsdp_shard_size : 1;
  return Mesh(sizes, p.mesh_order, p.ep, ds);
}

}  // namespace shardsim
