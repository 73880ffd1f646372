// Routing on a graph fabric at scale (topology/fabric_graph.h): builds
// DeepSeek-V3's multi-plane fat tree for 16,384 GPUs (2,048 servers of 8,
// 8 planes, leaves of 32 NICs) and a 4,096-GPU dragonfly, and routes what a
// step routes: every GPU to its ring neighbours on each parallel axis
// (tensor inside a server, pipeline and data across servers at strides 8,
// 64 and 512) and 8 further destinations spread over the cluster. Prints
// the wall time per phase and the peak resident memory (docs/performance.md).
//   build/bench/graph_routing_bench
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "shardsim/topology/fabric_graph.h"

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void route_all(const char* name, const shardsim::FabricGraph& g) {
  using namespace shardsim;
  auto t0 = std::chrono::steady_clock::now();
  GraphFabricSpec spec;
  spec.graph = std::make_shared<FabricGraph>(g);
  check_fabric_graph(*spec.graph, name);
  const auto topo = make_graph_fabric(spec);
  const double build_s = since(t0);
  t0 = std::chrono::steady_clock::now();
  const int64_t n = topo->num_devices();
  std::vector<LinkId> route;
  int64_t routes = 0, hops = 0;
  for (int64_t d = 0; d < n; ++d) {
    for (const int64_t stride :
         {int64_t{1}, int64_t{8}, int64_t{64}, int64_t{512}, n / 8 + 1, n / 4 + 3, n / 2 + 5, 3 * n / 4 + 7}) {
      for (int64_t sign : {+1, -1}) {
        const int64_t peer = ((d + sign * stride) % n + n) % n;
        route.clear();
        topo->route(static_cast<DeviceId>(d), static_cast<DeviceId>(peer), route);
        ++routes;
        hops += static_cast<int64_t>(route.size());
      }
    }
  }
  const double route_s = since(t0);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%s: %lld devices, %zu nodes, %zu links\n", name, static_cast<long long>(n), g.nodes.size(),
              g.links.size());
  std::printf("  check + build       %.3f s\n", build_s);
  std::printf("  %lld routes          %.3f s (%.2f us each, %.2f hops mean)\n", static_cast<long long>(routes), route_s,
              route_s / static_cast<double>(routes) * 1e6, static_cast<double>(hops) / static_cast<double>(routes));
  std::printf("  peak resident memory %.1f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
}

}  // namespace

int main() {
  route_all("multi-plane fat tree", shardsim::multi_plane_graph(2048, 8, 450, 50, 32, 950, 2000, 500));
  route_all("dragonfly", shardsim::dragonfly_graph(32, 16, 8, 50, 400, 200, 2000, 500));
  return 0;
}
