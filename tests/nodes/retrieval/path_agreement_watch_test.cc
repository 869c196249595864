// PathAgreementWatch (node/path_agreement_watch.h): the gauges follow the live snapshot, and a
// change of lead is logged once.
#include "nodes/retrieval/node/path_agreement_watch.h"

#include <gtest/gtest.h>

#include "tests/nodes/retrieval/path_agreement_fixtures.h"

namespace sluice::retrieval {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PathAgreementWatch, GaugesFollowTheSnapshotAndEachChangeOfLeadIsLoggedOnce) {
  MetricsRegistry metrics;
  PathAgreementWatch watch("fuse", &metrics);
  Gauge& agreement = metrics.gauge("sluice_fuse_path_agreement", "", {{"node", "fuse"}});
  Gauge& led = metrics.gauge("sluice_fuse_bm25_led", "", {{"node", "fuse"}});
  const RetrieveOptions options;
  const auto chunks = topical_corpus();
  const auto fitted = snapshot_with(lsa_on(chunks), chunks, 1);
  const auto unrelated = snapshot_with(std::make_shared<HashEmbedder>(), chunks, 2);

  testing::internal::CaptureStderr();
  watch.observe(*fitted, options);
  watch.observe(*fitted, options);  // the same version: nothing new
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_DOUBLE_EQ(agreement.value(), fitted->path_agreement().overlap);
  EXPECT_EQ(led.value(), 0);
  EXPECT_EQ(count(log, "the hybrid is led by the configured weights"), 1u) << log;

  testing::internal::CaptureStderr();
  watch.observe(*unrelated, options);
  watch.observe(*unrelated, options);
  log = testing::internal::GetCapturedStderr();
  EXPECT_DOUBLE_EQ(agreement.value(), unrelated->path_agreement().overlap);
  EXPECT_EQ(led.value(), 1);
  EXPECT_EQ(count(log, "knowledge base version 2"), 1u) << log;
  EXPECT_EQ(count(log, "the hybrid is now led by BM25"), 1u) << log;

  // A request pinned to the snapshot before the swap reports nothing and moves nothing back.
  testing::internal::CaptureStderr();
  watch.observe(*fitted, options);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(led.value(), 1);

  // A new version with the same lead updates the gauges without a line.
  const auto again = snapshot_with(std::make_shared<HashEmbedder>(), chunks, 3);
  testing::internal::CaptureStderr();
  watch.observe(*again, options);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(led.value(), 1);
}

TEST(PathAgreementWatch, WorksWithoutMetrics) {
  PathAgreementWatch watch("fuse", nullptr);
  const auto chunks = topical_corpus();
  testing::internal::CaptureStderr();
  watch.observe(*snapshot_with(std::make_shared<HashEmbedder>(), chunks), RetrieveOptions{});
  EXPECT_NE(testing::internal::GetCapturedStderr().find("led by BM25"), std::string::npos);
}

}  // namespace
}  // namespace sluice::retrieval
