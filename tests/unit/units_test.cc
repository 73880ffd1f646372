#include "shardsim/core/units.h"

#include <gtest/gtest.h>

namespace shardsim {
namespace {

TEST(Units, SimTimeIsIntegerPicoseconds) {
  EXPECT_EQ(microseconds(1).ps(), 1'000'000);
  EXPECT_EQ(nanoseconds(3).ps(), 3'000);
  EXPECT_DOUBLE_EQ(SimTime::from_ps(2'500'000'000'000).seconds(), 2.5);
}

TEST(Units, ToSimTimeRoundsUpSoNothingTakesZeroTime) {
  EXPECT_EQ(to_sim_time(1e-15).ps(), 1);
  EXPECT_EQ(to_sim_time(0.0).ps(), 0);
  EXPECT_EQ(to_sim_time(1e-6).ps(), 1'000'000);
}

TEST(Units, TransferTimeIsBytesOverBandwidth) {
  EXPECT_DOUBLE_EQ(transfer_seconds(Bytes(1'000'000'000), gbyte_per_s(100)), 0.01);
  EXPECT_DOUBLE_EQ(compute_seconds(Flops(1e15), flops_per_s(1e15)), 1.0);
  EXPECT_EQ(gib(1).value(), 1073741824);
  EXPECT_EQ((Bytes(3) + Bytes(4)).value(), 7);
}

}  // namespace
}  // namespace shardsim
