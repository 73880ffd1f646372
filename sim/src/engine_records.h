// The engine's records: its events, the collective plans it caches and the
// runs of them in flight, each device's clock of what its streams do, and
// the point-to-point transfers and receive channels. Plain data; the logic
// that moves them is EngineCore's (engine_core.h). Private to sim/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/units.h"
#include "shardsim/sim/collective.h"

namespace shardsim::detail {

enum class EvType : uint8_t { kOpEnd, kFlowEnd, kPhaseEnd, kTransferEnd };

struct Event {
  uint32_t a;  // device | flow | run
  uint32_t b;  // op | version
  EvType type;
};

/// Plans depend only on the collective, its size and its group, so the
/// instances of one layer's collective across microbatches share a plan.
struct PlanKey {
  uint64_t bytes;
  uint32_t group;
  uint8_t axes;
  CollectiveKind kind;
  double speedup = 1;  ///< of the op's stream (EngineOptions::stream_speedup)
  bool operator==(const PlanKey&) const = default;
};
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    uint64_t h = k.bytes * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<uint64_t>(k.group) << 16 | static_cast<uint64_t>(k.axes) << 8 | static_cast<uint64_t>(k.kind)) +
         0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};
struct CachedPlan {
  std::vector<DeviceId> members;
  CollectivePlan plan;
  /// Under the symmetry reduction, per phase the flows laid: one per orbit
  /// of the plan's flows (each stands for its images), from its canonical
  /// device. Empty without it (every flow is laid).
  std::vector<std::vector<FlowSpec>> orbit_flows;
};

struct CollectiveRun {
  OpId op = 0;
  int64_t instance = -1;  ///< per-rank programs: the instance (CollectiveInstances)
  const CachedPlan* cached = nullptr;
  size_t phase = 0;
  size_t pending = 0;
  SimTime start;  // when the last member arrived
};

/// Per-device accounting of what its streams are doing, for the breakdown.
struct DeviceClock {
  SimTime last;
  SimTime compute;
  SimTime comm_only;
  SimTime end;
  SimTime compute_start;  // of the compute op running now
  int comm_active = 0;
  int sm_comm_active = 0;  ///< of which hold the chip's comm_compute_units SMs
  int sm_few_active = 0;   ///< of which hold fewer (Op::sms; compute beside them slows less)
  /// The rate compute runs at now: 0 alone, 1 beside communication that
  /// holds a few SMs, 2 beside communication that holds the usual count.
  uint8_t level() const { return sm_comm_active > 0 ? 2 : sm_few_active > 0 ? 1 : 0; }
  /// A communication op starts (+1) or ends (-1).
  void hold_sms(const Op& o, int delta) {
    if (!o.holds_sms) return;
    (o.sms > 0 ? sm_few_active : sm_comm_active) += delta;
  }
  bool computing = false;
  /// Compute ops running now (usually one; one per compute stream): when
  /// each ends at the rate it runs at now, and whether that rate is the
  /// one beside communication (fewer SMs).
  struct Running {
    OpId op;
    SimTime end;
    uint8_t level;  ///< DeviceClock::level() when it last changed rate
  };
  std::vector<Running> running;
  void advance(SimTime now) {
    const SimTime dt = now - last;
    if (computing) {
      compute += dt;
    } else if (comm_active > 0) {
      comm_only += dt;
    }
    last = now;
  }
};

/// A point-to-point transfer in flight (pipeline activations, ring-attention
/// blocks); eager: the sender does not wait for the receiver to post its
/// receive.
struct Transfer {
  DeviceId src = 0;
  DeviceId dst = 0;
  OpId send_op = 0;
  uint32_t lane = 0;  ///< of its channel (EngineCore::lane)
  SimTime start;
};

/// Receives of one (receiver, sender, lane) channel, matched in order with
/// the sender's sends on it.
struct Channel {
  uint32_t arrived = 0;      ///< transfers delivered before their receive was posted
  std::deque<OpId> waiting;  ///< receives posted before their transfer arrived
};

constexpr uint32_t kP2pOwner = 0x80000000u;  // flow owner: a Transfer, not a collective run

}  // namespace shardsim::detail
