// Micro-benchmarks (Google Benchmark) of the pieces the engine spends its
// time in: a lone collective end to end, and max-min rate updates.
#include <benchmark/benchmark.h>

#include "shardsim/sim/engine.h"
#include "shardsim/sim/fluid_network.h"
#include "shardsim/topology/mesh.h"

namespace shardsim {
namespace {

FatTreeSpec fabric() {
  FatTreeSpec f;
  f.nvlink_bandwidth = gbyte_per_s(450);
  f.nic_bandwidth = gbyte_per_s(50);
  return f;
}

void BM_RingAllReduceAcrossNodes(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto topo = make_fat_tree(fabric(), n);
  const Mesh mesh({1, 1, 1, n}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  uint64_t events = 0;
  for (auto _ : state) {
    const EngineResult r = simulate_collective(CollectiveKind::kAllReduce, Bytes(1 << 30), mesh,
                                               axis_bit(MeshAxis::kDp), *topo, ChipSpec{}, CollectiveCosts{}, false);
    events += r.events;
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RingAllReduceAcrossNodes)->Arg(64)->Arg(1024)->Arg(8192);

void BM_MaxMinUpdateAllToAll(benchmark::State& state) {
  const int64_t n = state.range(0);
  FatTreeSpec f = fabric();
  f.oversubscription = 4;
  const auto topo = make_fat_tree(f, n);
  std::vector<FluidNetwork::Finish> out;
  for (auto _ : state) {
    FluidNetwork net(*topo);
    for (DeviceId a = 0; a < n; ++a) {
      for (DeviceId b = 0; b < n; ++b) {
        if (a != b) net.add(a, b, 1e6, 0, SimTime());
      }
    }
    out.clear();
    net.update(SimTime(), out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["flows"] = static_cast<double>(n * (n - 1));
}
BENCHMARK(BM_MaxMinUpdateAllToAll)->Arg(64)->Arg(256);

}  // namespace
}  // namespace shardsim

BENCHMARK_MAIN();
