// The shedding ladder on hand-made samples: sustained saturation with a growing backlog raises
// the level one step at a time; load at capacity (a full bottleneck draining in bursts, the
// backlog not growing) never does; a level that sheds exactly the excess holds instead of
// flapping; calm lowers it after the cooldown.
#include "nodes/admission/shed_ladder.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sluice {
namespace {

constexpr Nanos kStep = 250 * kNanosPerMilli;

struct Load {
  double busy = 1.0;
  double in = 100, out = 100;        // all classes, requests/s
  double p0_in = 20, p0_out = 20;    // the first class
  double readmit = 0;
  double backlog = 1;
};

ShedLadder::Sample sample(Nanos t, const Load& l) {
  ShedLadder::Sample s;
  s.now = t;
  s.busy_fraction = l.busy;
  s.inflow = l.in;
  s.outflow = l.out;
  s.first_class_inflow = l.p0_in;
  s.first_class_outflow = l.p0_out;
  s.readmit_inflow = l.readmit;
  s.backlog_seconds = l.backlog;
  return s;
}

// Twice the capacity offered, the bottleneck full: the backlog grows from the first sample.
TEST(ShedLadder, SustainedSaturationWithGrowingBacklogRaisesOneStepAtATime) {
  ShedLadder ladder({});
  Load twice{.in = 200, .out = 100};
  Nanos t = 0;
  // 2s of overload (samples at 0 .. 1.75s) are not yet sustained for 2s.
  for (int i = 0; i < 8; ++i, t += kStep) EXPECT_EQ(ladder.observe(sample(t, twice)), 0) << i;
  EXPECT_EQ(ladder.observe(sample(t, twice)), 1);
  // Still growing with the lowest class shed (what is admitted still exceeds the outflow):
  // the next step needs its own sustained period.
  for (int i = 0; i < 7; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, twice)), 1) << i;
  EXPECT_EQ(ladder.observe(sample(t += kStep, twice)), 2);
  EXPECT_EQ(ladder.observe(sample(t += kStep * 20, twice)), 2);  // never above max_level
}

// A bottleneck at capacity that drains one batch per 1.24s cycle: the decayed outflow jumps
// at every batch (128 / 5s = +25.6/s) and decays in between, around the inflow. Full, with a
// short backlog that is not growing: never overload, for ten minutes.
TEST(ShedLadder, FullBottleneckAtCapacityDrainingInBurstsNeverRises) {
  ShedLadder ladder({});
  Nanos t = 0;
  const double cycle = 1.24, tau = 5.0, burst = 128 / tau;
  // The steady-state decayed rate right after a burst, so its cycle average is 128 / 1.24.
  const double peak = burst / (1 - std::exp(-cycle / tau));
  for (int i = 0; i < 2400; ++i) {
    t += kStep;
    double since_burst = std::fmod(nanos_to_seconds(t), cycle);
    Load at_capacity{.busy = 1.0, .in = 100, .out = peak * std::exp(-since_burst / tau), .p0_in = 20,
                     .p0_out = 0.2 * peak * std::exp(-since_burst / tau), .backlog = 1.5};
    ASSERT_EQ(ladder.observe(sample(t, at_capacity)), 0) << "at " << nanos_to_seconds(t) << "s";
  }
}

TEST(ShedLadder, SaturationIsNotOverloadWithoutGrowthUnlessTheBacklogIsLong) {
  ShedLadder ladder({});
  Nanos t = 0;
  // Growing but the bottleneck is not full (utilisation 0.8): no overload.
  for (int i = 0; i < 40; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, {.busy = 0.8, .in = 200, .out = 100})), 0);
  // Full, not growing, 3s of backlog: no overload.
  for (int i = 0; i < 40; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, {.backlog = 3})), 0);
  // Full, not growing, 30s of backlog: overload.
  for (int i = 0; i < 8; ++i) ladder.observe(sample(t += kStep, {.backlog = 30}));
  EXPECT_EQ(ladder.observe(sample(t += kStep, {.backlog = 30})), 1);
}

TEST(ShedLadder, TheFirstClassGrowingIsOverloadOnItsOwn) {
  ShedLadder ladder({});
  Nanos t = 0;
  // All classes together drain as fast as they come (lower classes give way), P0 grows.
  Load p0_grows{.in = 100, .out = 100, .p0_in = 90, .p0_out = 60};
  for (int i = 0; i < 8; ++i) ladder.observe(sample(t += kStep, p0_grows));
  EXPECT_EQ(ladder.observe(sample(t += kStep, p0_grows)), 1);
}

// 2x overload shed down to capacity: at level 1 the admitted classes drain as fast as they
// come, and the refused class would double the inflow again. The level holds (no fall, no
// further rise) for ten minutes; when the offered load itself falls, calm lowers it after the
// cooldown, one step per cooldown.
TEST(ShedLadder, ALevelThatShedsTheExcessHoldsAndFallsOnlyWhenTheDemandFalls) {
  ShedLadder ladder({});
  Nanos t = 0;
  while (ladder.level() < 1) ladder.observe(sample(t += kStep, {.in = 200, .out = 100}));
  Load shed_to_capacity{.in = 100, .out = 100, .readmit = 100, .backlog = 4};
  for (int i = 0; i < 2400; ++i) ASSERT_EQ(ladder.observe(sample(t += kStep, shed_to_capacity)), 1) << i;
  // The offered load drops: the admitted classes leave room, the refused demand would fit.
  Load lighter{.busy = 0.95, .in = 50, .out = 60, .readmit = 10, .backlog = 1};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, lighter)), 1) << i;
  EXPECT_EQ(ladder.observe(sample(t += kStep, lighter)), 0);
}

TEST(ShedLadder, HysteresisHoldsBetweenThresholdsAndCooldownLowers) {
  ShedLadder ladder({});
  Nanos t = 0;
  while (ladder.level() < 2) ladder.observe(sample(t += kStep, {.in = 200, .out = 100}));
  // 0.8 is below the rise threshold and above recovery, with a long backlog: hold for a minute.
  for (int i = 0; i < 240; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, {.busy = 0.8, .backlog = 30})), 2) << i;
  // Calm (0.5 busy): one step down per 5s cooldown.
  Load idle{.busy = 0.5, .in = 10, .out = 10, .p0_in = 2, .p0_out = 2};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, idle)), 2) << i;
  EXPECT_EQ(ladder.observe(sample(t += kStep, idle)), 1);
  for (int i = 0; i < 19; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, idle)), 1) << i;
  EXPECT_EQ(ladder.observe(sample(t += kStep, idle)), 0);
  // A single overloaded sample in calm does not flap it back up.
  EXPECT_EQ(ladder.observe(sample(t += kStep, {.in = 200, .out = 100})), 0);
  EXPECT_EQ(ladder.observe(sample(t += kStep, idle)), 0);
}

TEST(ShedLadder, DisabledStaysAtZero) {
  ShedLadderSettings s;
  s.enabled = false;
  ShedLadder ladder(s);
  Nanos t = 0;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, {.in = 400, .out = 100, .backlog = 60})), 0);
}

}  // namespace
}  // namespace sluice
