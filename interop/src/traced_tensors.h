// The tensors a converted PyTorch execution trace names in a node's inputs
// and outputs (Chakra's IOInfo.values: the Python repr of the ET's values,
// each tensor [tensor_id, storage_id, offset, numel, itemsize, device]):
// private to interop/, for the memory a foreign trace holds.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace shardsim::chakra::detail {

struct TracedTensor {
  int64_t tensor_id = 0;
  int64_t storage_id = 0;  ///< > 0: the storage it views (PyTorch ET)
  int64_t offset = 0;      ///< elements into the storage
  int64_t numel = 0;
  int64_t itemsize = 0;  ///< bytes per element
  bool host = false;     ///< on a "cpu" device
};

/// Appends the tensors of `values` (a list literal: nested lists of ints,
/// floats, strings, True / False / None) to `out`: every list of six items
/// whose first five are non-negative integers. Returns false, appending
/// nothing, for text that is not such a literal, or nested deeper than 64.
bool traced_tensors(std::string_view values, std::vector<TracedTensor>& out);

}  // namespace shardsim::chakra::detail
