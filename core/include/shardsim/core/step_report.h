// The result of one step, simulated or measured: what `simulate --json` prints.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shardsim {

/// Where the step's time went on the device that finished last. The four
/// parts sum to step_time_s: compute_s is time the compute stream was busy;
/// exposed_comm_s is time only communication ran; bubble_s is idle time of a
/// pipeline stage; other_s is any remaining idle time (waiting for peers).
struct StepBreakdown {
  double compute_s = 0;
  double exposed_comm_s = 0;
  double bubble_s = 0;
  double other_s = 0;
};

/// Per-device memory at its peak. Components sum to peak_bytes_per_device.
struct MemoryReport {
  /// False where nothing says what the step holds (an imported trace that
  /// records no memory): the other fields are then empty and fits is true.
  bool known = true;
  int64_t peak_bytes_per_device = 0;
  int64_t capacity_bytes = 0;
  bool fits = true;
  /// Where the peak falls: "stage S: op (pass, layer L, microbatch M)" from
  /// the lowered program; empty for the analytic estimate.
  std::string peak_at;
  struct Component {
    std::string name;
    int64_t bytes = 0;
  };
  std::vector<Component> components;
};

/// The step's critical path (analysis/critical_path.h): the chain of op
/// instances, each started when the one before it ended, from the step's
/// start to its end.
struct CriticalPathReport {
  bool present = false;  ///< computed (SimulateOptions::critical_path)
  std::string skipped;   ///< why not, when it was left out for its size
  double length_s = 0;   ///< the path's length: the step time
  int64_t ops = 0;       ///< op instances on the path (of non-zero length)
  int64_t devices = 0;   ///< devices the path visits
  /// Time on the path by category ("compute: matmul", "tp comm:
  /// all-reduce", "pp send next: transfer"), largest first; sums to length_s.
  std::vector<std::pair<std::string, double>> by_category_s;
  /// A stretch of the path on one device and one stream: consecutive path
  /// ops of one kind ("compute", or a communication stream's name).
  struct Segment {
    int64_t device = 0;
    std::string stream;
    std::string first_op, last_op;  ///< labels ("L3 qkv fwd mb1")
    int64_t ops = 0;
    double start_s = 0, end_s = 0;
  };
  /// The longest segments (at most 10), in time order.
  std::vector<Segment> top_segments;
};

struct StepReport {
  std::string scenario;
  std::string config_hash;  ///< of the scenario as simulated
  std::string version;      ///< shardsim's
  std::string model;
  /// A trace workload: what was read ("chakra trace DIR: N ranks, M
  /// nodes, schema S"); empty for a model and plan.
  std::string workload;
  std::string chip;
  int64_t devices = 0;
  double step_time_s = 0;
  double mfu = 0;  ///< model FLOPs / (step · devices · bf16 peak)
  double hfu = 0;  ///< executed matmul+attention FLOPs / same
  double model_flops_per_step = 0;
  double model_tflops_per_device = 0;     ///< model FLOP/s per device, in 1e12
  double hardware_tflops_per_device = 0;  ///< executed matmul+attention FLOP/s per device, in 1e12
  double tokens_per_s = 0;
  int64_t tokens_per_step = 0;
  StepBreakdown breakdown;
  /// Where the critical device spent its time: compute by op kind, and how
  /// long each communication stream was busy (overlapping).
  int64_t critical_device = 0;
  /// What binds the step: "memory" when it does not fit, else the largest
  /// part of the breakdown ("compute", "communication (STREAM)" naming the
  /// busiest communication stream, "pipeline bubble", "waiting").
  std::string binding;
  std::vector<std::pair<std::string, double>> compute_by_kind_s;
  std::vector<std::pair<std::string, double>> comm_busy_by_stream_s;
  /// Of that compute time, what the ops took beyond their time alone because
  /// communication ran beside them (part of compute_s, not added to it).
  double compute_beside_comm_s = 0;
  MemoryReport memory;
  CriticalPathReport critical_path;
  struct SimStats {
    uint64_t events = 0;
    uint64_t flows = 0;
    double wall_s = 0;
    int64_t devices = 0;
    int64_t ops_per_device = 0;     ///< of the largest stage program
    int64_t simulated_devices = 0;  ///< devices whose programs ran (replica shortcut: fewer)
    /// The translations each simulated device stood for, exactly (the
    /// engine's symmetry reduction, docs/model.md), or why none; empty when
    /// not asked (simulator.symmetry false).
    std::string symmetry;
    /// Data-parallel replica 0 stood for the others beyond the symmetry:
    /// the replica shortcut's estimate.
    bool replica_estimate = false;
    std::string backend = "native";
  } sim;
};

}  // namespace shardsim
