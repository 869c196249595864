// The class-scheduling policy on hand-made queue fronts: strict priority only when capacity is
// scarce or the ladder sheds, smooth weighted round robin otherwise, aging that promotes a
// waiting request one class per `aging`, and the aging credit that bounds how often aged work
// passes waiting higher-class work.
#include "nodes/admission/class_scheduler.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice {
namespace {

constexpr Nanos kEmpty = ClassScheduler::kEmptyQueue;
constexpr Nanos kNow = 1000 * kNanosPerSecond;

ClassSchedulerSettings settings(Nanos aging = 0, double aging_share = 0.1) {
  ClassSchedulerSettings s;
  s.weights = {6, 3, 1};
  s.strict_above = 0.9;
  s.aging = aging;
  s.aging_share = aging_share;
  return s;
}

// `n` picks with the same fronts; the classes picked, in order.
std::vector<int> picks(ClassScheduler& s, const std::vector<Nanos>& fronts, int n, bool strict) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(s.pick(fronts, kNow, strict));
  return out;
}

TEST(ClassScheduler, StrictFromTheBusyThresholdOrWhileTheLadderSheds) {
  ClassScheduler s(settings());
  EXPECT_FALSE(s.strict(0.89, false));
  EXPECT_TRUE(s.strict(0.9, false));
  EXPECT_TRUE(s.strict(1.0, false));
  EXPECT_TRUE(s.strict(0.0, true));
}

TEST(ClassScheduler, EmptyQueuesGiveNoPick) {
  ClassScheduler s(settings(10 * kNanosPerSecond));
  std::vector<Nanos> none{kEmpty, kEmpty, kEmpty};
  EXPECT_EQ(s.pick(none, kNow, true), -1);
  EXPECT_EQ(s.pick(none, kNow, false), -1);
}

TEST(ClassScheduler, StrictPriorityTakesTheMostUrgentWaitingClass) {
  ClassScheduler s(settings());
  // P1 waited less than P2; without aging, age does not matter.
  EXPECT_EQ(picks(s, {kEmpty, kNow, kNow - 100 * kNanosPerSecond}, 3, true), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(s.pick(std::vector<Nanos>{kNow, kNow, kNow}, kNow, true), 0);
}

// Nginx's smooth weighted round robin at 6:3:1: the shares over one round of ten, interleaved.
TEST(ClassScheduler, WeightedRoundRobinSharesTheSlotsByWeightSmoothly) {
  ClassScheduler s(settings());
  std::vector<Nanos> all{kNow, kNow, kNow};
  EXPECT_EQ(picks(s, all, 10, false), (std::vector<int>{0, 1, 0, 0, 1, 0, 2, 0, 1, 0}));
  // The round repeats.
  EXPECT_EQ(picks(s, all, 10, false), (std::vector<int>{0, 1, 0, 0, 1, 0, 2, 0, 1, 0}));
}

TEST(ClassScheduler, WeightedRoundRobinCountsOnlyWaitingClasses) {
  ClassScheduler s(settings());
  EXPECT_EQ(picks(s, {kEmpty, kEmpty, kNow}, 3, false), (std::vector<int>{2, 2, 2}));
  // P1 and P2 alone share 3:1.
  std::vector<int> got = picks(s, {kEmpty, kNow, kNow}, 8, false);
  int p1 = 0;
  for (int c : got) p1 += c == 1 ? 1 : 0;
  EXPECT_EQ(p1, 6) << ::testing::PrintToString(got);
}

TEST(ClassScheduler, AgingPromotesOneClassPerAgingWaitedAndTheOlderGoesOnATie) {
  ClassScheduler s(settings(10 * kNanosPerSecond, 1.0));  // share 1: aging passes freely
  // P2 waited 20s: it ranks as P0 and is older than the P0 waiting 1s.
  EXPECT_EQ(s.pick(std::vector<Nanos>{kNow - kNanosPerSecond, kEmpty, kNow - 20 * kNanosPerSecond}, kNow, true), 2);
  // P2 waited 19s: one step only, it ranks as P1 and the P0 goes.
  EXPECT_EQ(s.pick(std::vector<Nanos>{kNow - kNanosPerSecond, kEmpty, kNow - 19 * kNanosPerSecond}, kNow, true), 0);
  // P2 at P1's rank and older than the P1: it goes.
  EXPECT_EQ(s.pick(std::vector<Nanos>{kEmpty, kNow - kNanosPerSecond, kNow - 10 * kNanosPerSecond}, kNow, true), 2);
  // Aging applies only under strict priority: weighted round robin ignores age.
  ClassScheduler w(settings(10 * kNanosPerSecond, 1.0));
  EXPECT_EQ(w.pick(std::vector<Nanos>{kNow, kEmpty, kNow - 100 * kNanosPerSecond}, kNow, false), 0);
}

TEST(ClassScheduler, NoAgingWhenItIsOff) {
  ClassScheduler s(settings(0));
  EXPECT_EQ(picks(s, {kNow, kEmpty, kNow - 1000 * kNanosPerSecond}, 4, true), (std::vector<int>{0, 0, 0, 0}));
}

// One pass banked, then one pass per 1 / share slots given out.
TEST(ClassScheduler, AgedWorkPassesHigherClassesOnlyWithinItsShareOfSlots) {
  ClassScheduler s(settings(10 * kNanosPerSecond, 0.25));
  std::vector<Nanos> aged_p2{kNow, kEmpty, kNow - 20 * kNanosPerSecond};
  EXPECT_EQ(picks(s, aged_p2, 9, true), (std::vector<int>{2, 0, 0, 0, 2, 0, 0, 0, 2}));
}

TEST(ClassScheduler, EverySlotGivenOutEarnsCreditWhateverTheMode) {
  ClassScheduler s(settings(10 * kNanosPerSecond, 0.25));
  std::vector<Nanos> aged_p2{kNow, kEmpty, kNow - 20 * kNanosPerSecond};
  EXPECT_EQ(s.pick(aged_p2, kNow, true), 2);  // spends the banked pass, earns 0.25
  // Three slots by weighted round robin while capacity was free: a whole pass again.
  picks(s, {kNow, kNow, kNow}, 3, false);
  EXPECT_EQ(s.pick(aged_p2, kNow, true), 2);
  EXPECT_EQ(s.pick(aged_p2, kNow, true), 0);  // 0.25 only
}

TEST(ClassScheduler, AgedWorkAlreadyFirstSpendsNoCredit) {
  ClassScheduler s(settings(10 * kNanosPerSecond, 0.01));
  // Only the aged P2 waits: it goes without passing anyone, every time.
  EXPECT_EQ(picks(s, {kEmpty, kEmpty, kNow - 20 * kNanosPerSecond}, 3, true), (std::vector<int>{2, 2, 2}));
  // The banked pass is still there.
  EXPECT_EQ(s.pick(std::vector<Nanos>{kNow, kEmpty, kNow - 20 * kNanosPerSecond}, kNow, true), 2);
  EXPECT_EQ(s.pick(std::vector<Nanos>{kNow, kEmpty, kNow - 20 * kNanosPerSecond}, kNow, true), 0);
}

}  // namespace
}  // namespace sluice
