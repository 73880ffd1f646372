// The CUDA side of real execution, as far as it exists: probing for devices
// and checking that a kernel compiled by nvcc runs. The CUDA executor
// (cuBLASLt matmuls, NCCL communicators) is not built yet (docs/realexec.md).
#pragma once

#include <string>

namespace shardsim::realexec {

/// Number of CUDA devices; 0 with `why` set when there are none or the
/// runtime cannot reach a driver (any error of cudaGetDeviceCount counts as
/// "no device": without a driver it reports "CUDA driver version is
/// insufficient").
int cuda_device_count(std::string& why);

/// Runs a small elementwise kernel on device 0 and checks it against the
/// host. False with `why` on any error or mismatch.
bool cuda_self_check(std::string& why);

}  // namespace shardsim::realexec
