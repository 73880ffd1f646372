// The symmetry of a step (EngineOptions::symmetry): the translations of the
// mesh under which a whole simulation maps onto itself, so that one device
// per orbit stands for its orbit and one flow per orbit for its images.
// Private to sim/.
//
// Every device of a pipeline stage runs the stage's program, and a mesh
// translation maps collective groups onto groups and transfer peers onto
// peers. If it also maps the fabric's rates onto themselves
// (Topology::permute_links), every route the step uses onto a route of the
// same latency, and every collective plan onto the translated group's plan,
// then the translated run is again a run of the same step: the engine is
// deterministic and max-min fair rates are unique, so every device's
// timeline equals that of its orbit's canonical device. The engine then runs
// the canonical devices alone on the quotient network: a link stands for
// its orbit, and a flow crossing it counts once per group element that maps
// one of its links there (the size of the link's stabiliser).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/topology/calibration.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/topology/topology.h"

namespace shardsim::detail {

struct StepSymmetry {
  MeshSymmetry group;  ///< per axis, the step of its translations
  /// What was found, for the report: the axes and their steps, or why
  /// none (empty when symmetry was not asked for).
  std::string note;
  /// Per link: the representative of its orbit (Topology::kUnboundLink:
  /// the link can never limit a rate and is left out), and how many group
  /// elements fix it. Empty when the group is trivial.
  std::vector<LinkId> link_rep;
  std::vector<double> link_fixers;  ///< FluidNetwork::use_quotient's weights
};

/// The largest group of mesh translations, one step per axis (the smallest
/// that passes; pipeline stages differ and never move), under which the
/// step maps onto itself: for each axis's generator, the fabric
/// (Topology::permute_links), every transfer's route latency, and every
/// collective plan of the programs (flows, phases and latencies, each group
/// against its image; calibrated collectives need only the group map) are
/// checked over every device. Steps are chosen large enough that every
/// device of `keep` is canonical (traced devices must run). Fabrics that
/// cannot tell give the trivial group, with the reason in `note`.
StepSymmetry find_symmetry(const ProgramSet& programs, const Mesh& mesh, const Topology& topo,
                           const CollectiveCosts& costs, const CalibrationProfile* calibration,
                           const std::vector<uint32_t>& keep = {});

}  // namespace shardsim::detail
