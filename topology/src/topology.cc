// What every fabric shares: link kind names and the what-if link speed-up.
#include "shardsim/topology/topology.h"

namespace shardsim {

std::string_view to_string(LinkKind k) {
  switch (k) {
    case LinkKind::kIci:
      return "ici";
    case LinkKind::kNvlink:
      return "nvlink";
    case LinkKind::kNic:
      return "nic";
    case LinkKind::kSwitch:
      return "switch";
  }
  return "?";
}

void Topology::speed_up_links(const std::array<double, kLinkKinds>& factor) {
  for (LinkSpec& l : links_) l.bandwidth = l.bandwidth * factor[static_cast<size_t>(l.kind)];
}

}  // namespace shardsim
