// A scenario: model + cluster + plan, loaded from the user's JSON file.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardsim/topology/calibration.h"
#include "shardsim/topology/chip.h"
#include "shardsim/topology/fabric_graph.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/topology/topology.h"
#include "shardsim/workloads/model.h"
#include "shardsim/workloads/plan.h"

namespace shardsim {

struct ClusterSpec {
  ChipSpec chip;
  int64_t devices = 0;
  FabricKind fabric = FabricKind::kNvswitchFatTree;
  TorusSpec torus;
  FatTreeSpec fat_tree;        ///< kGraph: the fat tree's keys, and the graph's NVLink domain size and device 0's rates
  GraphFabricSpec graph;       ///< kGraph only
  CollectiveCosts collective;  ///< base latency and pipeline chunk of collectives
  /// Measured kernel and collective figures (cluster.calibration), or null.
  std::shared_ptr<const CalibrationProfile> calibration;
  /// What-if (simulator.speedup "net:KIND"): link bandwidth by LinkKind
  /// times this, applied by build_topology; 1 in a scenario as measured.
  std::array<double, kLinkKinds> link_speedup{1.0, 1.0, 1.0, 1.0};
};

/// Published measurements a scenario reproduces (its optional "published"
/// object): metric name to value, for `shardsim validate`.
struct Published {
  std::vector<std::pair<std::string, double>> metrics;
  std::string source;
  std::string assumptions;
  /// The row was used to fit a named parameter (its "fitted" flag), so it
  /// is not a held-out test of it.
  bool fitted = false;
  /// Which side of the validation protocol the row is on: "held_out"
  /// (evaluated, never tuned on), "development" (mechanisms were developed
  /// against it) or "in_sample" (the 2021-era tables the project was
  /// developed against).
  std::string split = "in_sample";
  std::string row;        ///< the row's id in its collection (modern_runs.json)
  std::string source_id;  ///< the source's short id, for grouping
};

/// What-if speed-ups (the "simulator" object's "speedup", and `shardsim
/// whatif`): a part of the step k times faster, everything else as it was.
/// Keys of the JSON object and what k does:
///   a compute kind ("matmul", "attention", ...), or "compute" for every
///     kind: its ops take time / k;
///   "stream:NAME": the collectives and transfers of that communication
///     stream ("stream:tp comm") take time / k, bytes and latency alike;
///   "net:KIND" (ici, nvlink, nic, switch), or "net" for every kind: links
///     of that kind carry k times their bandwidth (latencies unchanged).
/// k may be below 1 (a slow-down). Several keys multiply where they meet.
struct Speedups {
  std::array<double, kComputeKinds> compute{1, 1, 1, 1, 1, 1, 1, 1, 1};  ///< by ComputeKind
  std::vector<std::pair<std::string, double>> stream;                    ///< by stream name
  std::vector<std::pair<std::string, double>> levers;                    ///< as written, sorted by key
  bool any() const { return !levers.empty(); }
};

/// How a scenario is simulated (its optional "simulator" object).
struct SimulatorSpec {
  enum class Backend : uint8_t { kNative, kSimgrid };
  /// SimGrid's network model: CM02 with no cross-traffic and no TCP window
  /// (a lone transfer takes size / bandwidth, as in the native model), or
  /// LV08, SimGrid's TCP model calibrated against packet-level simulation
  /// (latency x13.01, bandwidth x0.97, 5% reverse traffic, RTT-weighted
  /// sharing, TCP window cap).
  enum class SimgridModel : uint8_t { kCm02, kLv08 };
  Backend backend = Backend::kNative;
  SimgridModel simgrid_model = SimgridModel::kCm02;
  Speedups speedup;
  /// Simulate one device per orbit of the step's symmetry, where that is
  /// exact (EngineOptions::symmetry decides which); false: every device.
  bool symmetry = true;
};

/// A distribution of token counts: fixed, uniform on [min, max], or
/// lognormal with the given mean and sigma (of the underlying normal),
/// clamped to [min, max].
struct LengthDistribution {
  enum class Kind : uint8_t { kFixed, kUniform, kLognormal };
  Kind kind = Kind::kFixed;
  double mean = 1;
  int64_t min = 1, max = 1;
  double sigma = 0.5;
};

/// How requests reach the replicas: the three ways engines' benchmark
/// scripts drive a server (vLLM's `bench serve`, SGLang's `bench_serving`,
/// TensorRT-LLM's `trtllm-bench`).
enum class Arrivals : uint8_t {
  kPoisson,    ///< exponential gaps at rate_per_s (`--request-rate R`)
  kBurst,      ///< every request queued at 0: maximum load (`--request-rate inf`, trtllm-bench throughput)
  kClosedLoop  ///< `concurrency` clients, each sending its next request when its last one ends (`--max-concurrency`)
};

/// When a replica takes KV blocks for a request.
enum class Admission : uint8_t {
  kOnDemand,      ///< the prompt's at admission, one more per block crossed; preempt when none is free (vLLM, SGLang)
  kReserveOutput  ///< prompt + every output token at admission, never preempted (TensorRT-LLM GUARANTEED_NO_EVICT)
};

/// The "serving" object: the request stream and the scheduler of
/// `shardsim serve` (see workloads/serving.h). `engine` names a scheduler
/// policy whose defaults fill the fields a scenario leaves out
/// (docs/inference.md, "Engines").
struct ServingSpec {
  bool present = false;
  std::string engine = "generic";  ///< "generic", "vllm", "sglang" or "trtllm"
  int64_t requests = 1000;
  Arrivals arrivals = Arrivals::kPoisson;
  double rate_per_s = 1;    ///< Poisson arrival rate, all replicas together
  int64_t concurrency = 0;  ///< closed loop: clients
  uint64_t seed = 1;
  LengthDistribution prompt, output;
  std::string trace_file;   ///< JSON array of {arrival_s, prompt_tokens, output_tokens}; replaces the generator
  int64_t max_batch = 256;  ///< sequences per iteration (vLLM max_num_seqs)
  int64_t max_batched_tokens = 8192;  ///< tokens per iteration (vLLM max_num_batched_tokens)
  int64_t block_tokens = 16;          ///< tokens per KV block (vLLM block_size)
  double kv_memory_fraction = 0.9;    ///< of HBM usable for weights + KV (vLLM gpu_memory_utilization)
  bool kv_memory_of_free = false;  ///< the fraction is of what the weights leave, for the KV cache alone (TensorRT-LLM)
  bool activation_workspace = true;  ///< the cache is sized after the largest iteration's activations and logits
  /// Device memory the engine's process holds before it sizes the cache
  /// and outside it (the CUDA context); counted only where the cache is a
  /// fraction of the free memory (kv_memory_of_free), which it has left.
  int64_t runtime_reserved_bytes = 0;
  bool chunked_prefill = false;  ///< a prompt longer than the token budget is prefilled in chunks
  bool mixed_batches = false;    ///< decodes and prefills share an iteration
  Admission admission = Admission::kOnDemand;
  double iteration_overhead_us = 0;  ///< the engine's host time per iteration not hidden behind the GPU
  int64_t prefill_replicas = 0;      ///< > 0: disaggregated, this many of plan.dp replicas only prefill
  /// Prompts that begin with a prefix a replica has cached reuse its KV
  /// blocks instead of prefilling them again (vLLM's automatic prefix
  /// caching, SGLang's radix cache, TensorRT-LLM's KV block reuse).
  bool prefix_caching = false;
  /// How arrivals are spread over replicas: to the one with the fewest
  /// requests, or as SGLang's router's cache_aware policy does it.
  enum class Routing { kLeastLoaded, kCacheAware };
  Routing routing = Routing::kLeastLoaded;
  /// Generated requests: every prompt begins with one of
  /// shared_prefix_groups prefixes of shared_prefix_tokens tokens (drawn
  /// uniformly per request), then its own prompt_tokens (0: no prefix).
  int64_t shared_prefix_tokens = 0;
  int64_t shared_prefix_groups = 0;
  /// Speculative decoding (0: off): every decode step runs the drafter
  /// speculative_tokens times to propose that many tokens, then the target
  /// verifies the last token and the proposals in one pass; each proposal is
  /// accepted with probability speculative_acceptance, independently, up to
  /// the first rejection, and the pass adds one token of its own (Leviathan
  /// et al. 2023, "Fast Inference from Transformers via Speculative
  /// Decoding"; Chen et al. 2023).
  int64_t speculative_tokens = 0;
  double speculative_acceptance = 0;
  /// The drafter: a model of its own on the replica's devices (a preset;
  /// draft_model.layers > 0), else a head of draft_layers decoder layers of
  /// the target's shape that shares its embedding and LM head (EAGLE; the
  /// multi-token-prediction modules of DeepSeek-V3).
  ModelSpec draft_model;
  int64_t draft_layers = 1;
};

/// A step given as a trace instead of a model and a plan (the scenario's
/// "workload" object): a directory of Chakra execution traces, one file per
/// rank (PREFIX.<rank>.et), run as per-rank programs (interop/chakra.h;
/// docs/chakra.md). The cluster, its fabric and the simulator are the
/// scenario's; rank r runs on device r.
struct TraceWorkload {
  bool present = false;
  std::string dir;      ///< as resolved (relative to the scenario file's directory)
  bool retime = false;  ///< compute nodes with FLOPs or bytes take the compute model's time, not their recorded one
  /// All-reduces up to 8 MiB inside an NVLink node run a serving engine's
  /// custom all-reduce (the plan field custom_all_reduce of an inference
  /// step), not NCCL.
  bool custom_all_reduce = false;
};

struct Scenario {
  std::string file;  ///< where it came from, for messages
  /// A trace workload: `model` and `plan` are then unused (the plan is
  /// data parallel over every device, so that its mesh is the cluster's).
  TraceWorkload workload;
  ModelSpec model;
  ClusterSpec cluster;
  Plan plan;
  Published published;
  SimulatorSpec simulator;
  ServingSpec serving;
  std::string config_hash;  ///< hash of the scenario JSON as simulated (overrides applied)
  /// The scenario JSON as simulated (overrides applied, compact): what a
  /// worker process is handed to simulate this scenario itself.
  std::string json;
};

/// One `--set path=value` override: path in dots ("plan.tp"), value as JSON
/// text (a bare word that is not JSON is taken as a string).
struct Override {
  std::string path;
  std::string value;
};

/// Reads, applies overrides to, and validates a scenario file (a directory
/// stands for its scenario.json: a Chakra trace's). Throws InputError
/// naming the file and JSON path on any problem.
Scenario load_scenario(const std::string& file, const std::vector<Override>& overrides = {});
/// Same, from JSON text (`name` is used in messages).
Scenario parse_scenario(const std::string& text, const std::string& name, const std::vector<Override>& overrides = {});
/// The scenario file's JSON with `overrides` applied, pretty-printed (for
/// writing a scenario a search found). Throws InputError like load_scenario.
std::string render_scenario(const std::string& file, const std::vector<Override>& overrides);
/// The "plan" object, as JSON text, that loads back as exactly `p`: every
/// field of its phase written out, the framework first (plan_fields.cc).
std::string plan_json(const Plan& p);
/// The scenario JSON that loads as `s` as the caller holds it:
/// Scenario::json with the plan and the device count replaced by s.plan and
/// s.cluster.devices (what a search, a sweep or a report changes in
/// memory). What a SimGrid worker is handed. Other in-memory changes (to the
/// model or the chip) are not carried.
std::string scenario_json(const Scenario& s);
/// A cluster alone (a cluster preset name or a cluster JSON file), for
/// `shardsim collective`.
ClusterSpec load_cluster(const std::string& file_or_preset, const std::vector<Override>& overrides = {});
/// Same, from JSON text: an object with a "cluster" member, or a cluster
/// object itself (`name` is used in messages).
ClusterSpec parse_cluster_text(const std::string& text, const std::string& name,
                               const std::vector<Override>& overrides = {});

/// Why a plan cannot run on its model and cluster: the plan field to blame
/// ("" for the plan as a whole) and a one-line reason.
struct PlanIssue {
  std::string field;
  std::string message;
};
/// The cross-field checks of a plan (divisibility, device count, schedule,
/// size caps): the loader's, shared with the plan search.
std::optional<PlanIssue> check_plan(const Plan& p, const ModelSpec& m, const ClusterSpec& c);

std::unique_ptr<Topology> build_topology(const ClusterSpec& c);
Mesh build_mesh(const Plan& p);

}  // namespace shardsim
