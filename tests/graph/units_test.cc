#include "graph/units.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Units, ParsesDurations) {
  std::string err;
  EXPECT_EQ(parse_duration("250ms", &err), 250'000'000);
  EXPECT_EQ(parse_duration("1.5s", &err), 1'500'000'000);
  EXPECT_EQ(parse_duration("2m", &err), 120'000'000'000);
  EXPECT_EQ(parse_duration("1m30s", &err), 90'000'000'000);
  EXPECT_EQ(parse_duration("100us", &err), 100'000);
  EXPECT_EQ(parse_duration("10 ms", &err), 10'000'000);
  EXPECT_EQ(parse_duration("0", &err), 0);
  EXPECT_EQ(parse_duration("0.010s", &err), 10'000'000);  // proto3 JSON form
}

TEST(Units, RefusesBadDurationsWithAReason) {
  std::string err;
  EXPECT_FALSE(parse_duration("5", &err));
  EXPECT_EQ(err, "duration \"5\" needs a unit (ns, us, ms, s, m, h), e.g. \"5ms\"");
  EXPECT_FALSE(parse_duration("10 parsecs", &err));
  EXPECT_EQ(err, "\"parsecs\" in \"10 parsecs\" is not a duration unit (ns, us, ms, s, m, h)");
  EXPECT_FALSE(parse_duration("-1s", &err));
  EXPECT_EQ(err, "duration \"-1s\" is negative");
  EXPECT_FALSE(parse_duration("soon", &err));
  EXPECT_EQ(err, "\"soon\" is not a duration; write a number with a unit, e.g. \"250ms\", \"1.5s\", \"2m\"");
}

// 2^63 ns, the double INT64_MAX rounds to, used to pass the "too long" check and overflow
// llround into a negative duration (found by spec_fuzz as default_deadline: 9223372036854775807ns).
TEST(Units, DurationsOfAbout2To63NanosecondsAreTooLong) {
  std::string err;
  EXPECT_FALSE(parse_duration("9223372036854775807ns", &err));
  EXPECT_EQ(err, "duration \"9223372036854775807ns\" is too long");
  EXPECT_FALSE(parse_duration("9223372036854775808ns", &err));
  EXPECT_GT(parse_duration("2562047h", &err).value_or(-1), 9'223'000'000'000'000'000);  // just below: fine
}

TEST(Units, ParsesSizes) {
  std::string err;
  EXPECT_EQ(parse_size("4096", &err), 4096u);
  EXPECT_EQ(parse_size("64KiB", &err), 65536u);
  EXPECT_EQ(parse_size("1MB", &err), 1'000'000u);
  EXPECT_EQ(parse_size("1.5KiB", &err), 1536u);
  EXPECT_FALSE(parse_size("12 parsecs", &err));
  EXPECT_EQ(err, "\"parsecs\" in \"12 parsecs\" is not a size unit (B, KB, MB, GB, KiB, MiB, GiB)");
  EXPECT_FALSE(parse_size("0.5B", &err));
  EXPECT_EQ(err, "size \"0.5B\" is not a whole number of bytes");
}

TEST(Units, FormatsDurations) {
  EXPECT_EQ(format_duration(250'000'000), "250ms");
  EXPECT_EQ(format_duration(30'000'000'000), "30s");
  EXPECT_EQ(format_duration(0), "0s");
}

TEST(Units, SuggestsCloseNames) {
  EXPECT_EQ(did_you_mean("templat", {"template", "passthrough"}), "template");
  EXPECT_EQ(did_you_mean("zzzzzzzz", {"template", "passthrough"}), "");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace sluice
