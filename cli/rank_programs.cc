#include "rank_programs.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "args.h"

namespace shardsim::cli {

std::string sibling(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path p = self.parent_path() / name;
  return fs::exists(p, ec) ? p.string() : "";
}

/// --backend cuda: returns the CUDA rank program and this machine's device
/// count, or says precisely why the run cannot happen (not built, or no
/// usable device) and exits 2.
std::string cuda_rank_program(int* devices) {
  std::string exe = sibling("shardsim-rank-cuda"), probe = sibling("shardsim-cuda-probe");
  if (exe.empty() || probe.empty()) {
    throw UsageError(
        "--backend cuda: this shardsim was built without the CUDA executor (nvcc, NCCL, MPI or OpenBLAS not found "
        "at configure time, or SHARDSIM_WITH_CUDA=OFF); use --backend cpu");
  }
  std::string line;
  if (std::FILE* p = ::popen(("'" + probe + "' 2>&1").c_str(), "r")) {
    char buf[512];
    if (std::fgets(buf, sizeof buf, p)) line = buf;
    ::pclose(p);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("devices 0", 0) == 0 || line.rfind("devices ", 0) != 0) {
    const std::string why = line.rfind("devices 0: ", 0) == 0 ? line.substr(11) : line;
    throw UsageError("--backend cuda: no usable CUDA device (" + (why.empty() ? "probe failed" : why) +
                     "); use --backend cpu");
  }
  *devices = std::atoi(line.c_str() + 8);
  return exe;
}

}  // namespace shardsim::cli
