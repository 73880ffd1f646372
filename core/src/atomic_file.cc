#include "shardsim/core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardsim {

bool write_file_atomic(const std::string& path, std::string_view content, std::string& error) {
  return write_file_atomic(
      path, [&](std::FILE* f) { return std::fwrite(content.data(), 1, content.size(), f) == content.size(); }, error);
}

bool write_file_atomic(const std::string& path, const std::function<bool(std::FILE*)>& write, std::string& error) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  const bool ok = write(f);
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot write: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace shardsim
