// The reference loop of the benchmark gate (scripts/bench_gate.py): a fixed
// workload shaped like the simulator's inner loop (a binary heap of timed
// events, a hash map of keyed state, a sort), run on one core. The gate
// divides every benchmark figure by this loop's time measured in the same
// run, so a slower or busier machine moves both and the ratio stays.
//   ./build/bench/reference_bench        prints "reference loop: S s" (best of 3)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

namespace {

/// splitmix64: a fixed pseudo-random sequence, the same on every machine.
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// The workload; returns a checksum so that nothing is optimised away.
uint64_t workload() {
  uint64_t state = 42, sum = 0;
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> events;
  std::unordered_map<uint64_t, uint64_t> state_of;
  constexpr int kEvents = 2'000'000;
  for (int i = 0; i < 1024; ++i) events.push(next_random(state) >> 20);
  for (int i = 0; i < kEvents; ++i) {
    const uint64_t t = events.top();
    events.pop();
    uint64_t& v = state_of[t & 0xffff];
    v += t;
    sum += v;
    events.push(t + (next_random(state) >> 44));
  }
  std::vector<uint64_t> keys(1'000'000);
  for (uint64_t& k : keys) k = next_random(state);
  std::sort(keys.begin(), keys.end());
  return sum + keys[keys.size() / 2];
}

}  // namespace

int main() {
  double best = 1e300;
  uint64_t check = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    check ^= workload();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("reference loop: %.4f s (checksum %016llx)\n", best, static_cast<unsigned long long>(check));
  return 0;
}
