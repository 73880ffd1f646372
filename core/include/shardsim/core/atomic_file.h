// Writing output files so that an interrupted run never leaves a truncated
// file under the real name: write "<path>.tmp.<pid>", then rename.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace shardsim {

/// Writes `content` to `path` atomically. Returns false (and leaves no
/// file behind) if the file cannot be written; `error` then says why.
bool write_file_atomic(const std::string& path, std::string_view content, std::string& error);
/// The same with the content produced by `write` (false: it failed).
bool write_file_atomic(const std::string& path, const std::function<bool(std::FILE*)>& write, std::string& error);

}  // namespace shardsim
