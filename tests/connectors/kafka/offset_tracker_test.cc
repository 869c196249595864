#include "connectors/kafka/offset_tracker.h"

#include <gtest/gtest.h>

namespace sluice::kafka {
namespace {

TEST(OffsetTracker, CommitsUpToTheLowestUnacknowledgedOffset) {
  OffsetTracker t;
  t.assign({{"jobs", 0}});
  const auto e = t.take("jobs", 0, 10);
  ASSERT_NE(e, 0u);
  t.take("jobs", 0, 11);
  t.take("jobs", 0, 12);
  t.ack("jobs", 0, 11, e);
  t.ack("jobs", 0, 12, e);
  auto due = t.commits_due();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].offset, 10);  // 10 is still out: a crash must redo it
  EXPECT_TRUE(t.commits_due().empty());  // unchanged since
  t.ack("jobs", 0, 10, e);
  due = t.commits_due();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].offset, 13);  // one past the highest taken
  EXPECT_EQ(t.outstanding(), 0u);
}

TEST(OffsetTracker, AcknowledgementsOfARevokedPartitionAreIgnored) {
  OffsetTracker t;
  t.assign({{"jobs", 0}, {"jobs", 1}});
  const auto e0 = t.take("jobs", 0, 5);
  t.take("jobs", 1, 7);
  t.revoke({{"jobs", 0}});
  EXPECT_EQ(t.take("jobs", 0, 6), 0u);  // not ours
  t.assign({{"jobs", 0}});               // back, with a new epoch
  t.ack("jobs", 0, 5, e0);               // the old job's ack: ignored
  EXPECT_EQ(t.outstanding(), 1u);        // only partition 1's
  const auto e0b = t.take("jobs", 0, 5);
  EXPECT_NE(e0b, e0);
  t.ack("jobs", 0, 5, e0b);
  const auto due = t.commits_for({{"jobs", 0}});
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].offset, 6);
}

}  // namespace
}  // namespace sluice::kafka
