// A byte encoding of an EngineResult, so a simulation run in another process
// (the SimGrid worker) can hand its result back. Same machine and build only:
// numbers are written in native byte order behind a versioned magic.
#pragma once

#include <string>

#include "shardsim/sim/engine.h"

namespace shardsim {

std::string encode_engine_result(const EngineResult& r);
/// Throws std::runtime_error when `bytes` is not a complete encoding.
EngineResult decode_engine_result(const std::string& bytes);

}  // namespace shardsim
