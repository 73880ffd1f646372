#include "shardsim/core/read_file.h"

#include <fstream>
#include <sstream>

#include "shardsim/core/error.h"

namespace shardsim {

std::string read_file_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", what);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path, "", what);
  return ss.str();
}

}  // namespace shardsim
