// Small command-line helpers shared by the shardsim subcommands.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardsim/core/error.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {

/// A usage error: printed as "shardsim: error: ..." with exit status 2.
using shardsim::UsageError;
/// Thrown when the error was already printed (by a worker process): main
/// exits with `status` and prints nothing more.
using shardsim::AlreadyReported;

/// "256MiB", "1GB", "4096", "1.5GiB" -> bytes. Decimal prefixes for kB/MB/GB/TB,
/// binary for KiB/MiB/GiB/TiB.
int64_t parse_bytes(const std::string& flag, const std::string& text);
/// "0,1,8-15" -> {0,1,8,...,15}; every id below `limit`.
std::vector<uint32_t> parse_device_list(const std::string& flag, const std::string& text, int64_t limit);
/// "--set PATH=VALUE" -> {PATH, VALUE}.
Override parse_set(const std::string& text);
/// Next argument after a flag, or a UsageError naming the flag.
std::string take_value(const std::vector<std::string>& args, size_t& i);
/// An integer in [lo, hi], or a UsageError naming the flag.
int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi);
/// Seconds in (0, 86400], or a UsageError naming the flag.
double parse_seconds(const std::string& flag, const std::string& v);
/// An argument that is no known option: the scenario file (into `file`), or a
/// UsageError for an unknown option or a second file. `cmd` prefixes the
/// message ("run: unknown option --x"); "" for none.
void take_scenario_file(const std::string& cmd, const std::string& a, std::string& file);
/// Whether long work shows a progress line: stderr is a terminal and CI is
/// not set (silent on pipes and in CI).
bool progress_wanted();

}  // namespace shardsim::cli
