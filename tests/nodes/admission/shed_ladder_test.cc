// The shedding ladder: sustained overload raises the level one step at a time, calm lowers
// it after the cooldown, samples between the thresholds hold it (hysteresis).
#include "nodes/admission/shed_ladder.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

constexpr Nanos kStep = 250 * kNanosPerMilli;

ShedLadder::Sample sample(Nanos t, double busy, std::int64_t p0_depth, double backlog = 0, std::int64_t queued = 10) {
  ShedLadder::Sample s;
  s.now = t;
  s.busy_fraction = busy;
  s.first_class_depth = p0_depth;
  s.backlog_seconds = backlog;
  s.queued = queued;
  return s;
}

TEST(ShedLadder, SustainedOverloadWithRisingFirstClassQueueRaisesOneStepAtATime) {
  ShedLadder ladder({});
  Nanos t = 0;
  std::int64_t depth = 0;
  ladder.observe(sample(t, 0.95, depth));  // the first sample only sets the growth baseline
  // 1.75s of overload: not yet sustained for 2s.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, 0.95, ++depth)), 0) << i;
  EXPECT_EQ(ladder.observe(sample(t += kStep, 0.95, ++depth)), 1);
  // The next step needs its own sustained period.
  for (int i = 0; i < 7; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, 0.95, ++depth)), 1);
  EXPECT_EQ(ladder.observe(sample(t += kStep, 0.95, ++depth)), 2);
  EXPECT_EQ(ladder.observe(sample(t += kStep * 20, 0.99, ++depth)), 2);  // never above 2
}

TEST(ShedLadder, FullButNotGrowingIsNotOverloadUnlessBacklogIsLong) {
  ShedLadder ladder({});
  Nanos t = 0;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, 1.0, 5, /*backlog=*/3)), 0);
  for (int i = 0; i < 8; ++i) ladder.observe(sample(t += kStep, 1.0, 5, /*backlog=*/30));
  EXPECT_EQ(ladder.observe(sample(t += kStep, 1.0, 5, 30)), 1);
}

TEST(ShedLadder, HysteresisHoldsBetweenThresholdsAndCooldownLowers) {
  ShedLadder ladder({});
  Nanos t = 0;
  std::int64_t depth = 0;
  while (ladder.level() < 2) ladder.observe(sample(t += kStep, 0.95, ++depth));
  // 0.8 is below the rise threshold and above recovery, with a long backlog: hold for a minute.
  for (int i = 0; i < 240; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, 0.8, depth, 30)), 2) << i;
  // Calm (0.5 busy): one step down per 5s cooldown.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, 0.5, depth)), 2) << i;
  EXPECT_EQ(ladder.observe(sample(t += kStep, 0.5, depth)), 1);
  for (int i = 0; i < 19; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, 0.5, depth)), 1) << i;
  EXPECT_EQ(ladder.observe(sample(t += kStep, 0.5, depth)), 0);
  // A single overloaded sample in calm does not flap it back up.
  EXPECT_EQ(ladder.observe(sample(t += kStep, 0.95, depth + 1)), 0);
  EXPECT_EQ(ladder.observe(sample(t += kStep, 0.5, depth)), 0);
}

TEST(ShedLadder, DisabledStaysAtZero) {
  ShedLadderSettings s;
  s.enabled = false;
  ShedLadder ladder(s);
  Nanos t = 0;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ladder.observe(sample(t += kStep, 1.0, i)), 0);
}

}  // namespace
}  // namespace sluice
