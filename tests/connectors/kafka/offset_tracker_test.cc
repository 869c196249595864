#include "connectors/kafka/offset_tracker.h"
#include "connectors/kafka/rdkafka_handles.h"

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

// The producer's settings: Sluice's defaults first, so a file's properties override them (librdkafka
// keeps the last value set); the guarantees last; consumer-only properties left out.
namespace sluice::kafka {
namespace {
TEST(ProducerProperties, AFileOverridesTheDefaultsButNotTheGuarantees) {
  const std::vector<Property> out =
      producer_properties({{"linger.ms", "50"}, {"fetch.min.bytes", "65536"}, {"client.id", "c"}});
  auto last = [&](const std::string& key) {
    std::string v;
    for (const auto& [k, value] : out) {
      if (k == key) v = value;
    }
    return v;
  };
  EXPECT_EQ(last("linger.ms"), "50");
  EXPECT_EQ(last("client.id"), "c");
  EXPECT_EQ(last("fetch.min.bytes"), "") << "a consumer property is not given to the producer";
  EXPECT_EQ(last("enable.idempotence"), "true");
  EXPECT_EQ(last("acks"), "all");
  EXPECT_EQ(producer_properties({}).front(), (Property{"linger.ms", "5"}));
}
}  // namespace
}  // namespace sluice::kafka
