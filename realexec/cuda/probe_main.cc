// shardsim-cuda-probe: prints one line, "devices N" or "devices 0: WHY", and
// with devices also "self-check ok" or "self-check failed: WHY". `shardsim
// run --backend cuda` runs it to decide what to tell the user.
#include <cstdio>
#include <string>

#include "cuda_probe.h"

int main() {
  std::string why;
  const int n = shardsim::realexec::cuda_device_count(why);
  if (n == 0) {
    std::printf("devices 0: %s\n", why.c_str());
    return 0;
  }
  std::printf("devices %d\n", n);
  if (shardsim::realexec::cuda_self_check(why)) {
    std::printf("self-check ok\n");
  } else {
    std::printf("self-check failed: %s\n", why.c_str());
  }
  return 0;
}
