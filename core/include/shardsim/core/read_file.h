// Reading an input file whole, with the one-line error every input gets.
#pragma once

#include <string>

namespace shardsim {

/// The bytes of `path`. Throws InputError(path, "", `what`) when it cannot
/// be opened or read ("cannot read file" unless the caller names the file's
/// role, "cannot read the accuracy record").
std::string read_file_text(const std::string& path, const std::string& what = "cannot read file");

}  // namespace shardsim
