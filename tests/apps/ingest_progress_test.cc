// `sluice ingest`'s progress bar: what a terminal sees (redrawn line, stages, rates), that it
// is throttled, and that it is silent when disabled (stderr not a terminal).
#include "apps/sluice/ingest_progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace sluice::cli {
namespace {

struct Captured {
  Captured() : file(open_memstream(&data, &size)) {}
  ~Captured() {
    if (file) std::fclose(file);
    std::free(data);
  }
  std::string text() {
    std::fflush(file);
    return std::string(data, size);
  }
  char* data = nullptr;
  std::size_t size = 0;
  std::FILE* file;
};

TEST(IngestProgressBar, DrawsEachStageWithItsRateAndClearsAtTheEnd) {
  Captured out;
  double now = 100;
  IngestProgressBar bar(out.file, true, [&] { return now; });
  bar.files(0, 10);
  now += 2;
  bar.files(10, 10);
  retrieval::IngestProgress p;
  p.documents_total = 8;
  bar.ingest(p);
  now += 1;
  p.documents_done = 8;
  p.fitting_chunks = 40;
  bar.ingest(p);  // the embedder's fit
  now += 3;
  p.fitting_chunks = 0;
  p.chunks_to_embed = 40;
  bar.ingest(p);  // a new stage: embedding
  now += 0.5;
  p.chunks_embedded = 40;
  bar.ingest(p);
  bar.finish();
  const std::string text = out.text();
  EXPECT_NE(text.find("loading    [....................] 0/10 files"), std::string::npos) << text;
  EXPECT_NE(text.find("loading    [####################] 10/10 files  5/s"), std::string::npos) << text;
  EXPECT_NE(text.find("chunking   [....................] 0/8 documents"), std::string::npos) << text;
  EXPECT_NE(text.find("fitting    [....................] 0/40 chunks (LSA)"), std::string::npos) << text;
  EXPECT_NE(text.find("embedding  [####################] 40/40 chunks  80/s"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K");  // the line is cleared for the summary
}

TEST(IngestProgressBar, RedrawsAtMostTenTimesASecondExceptAtTheEnd) {
  Captured out;
  double now = 0;
  IngestProgressBar bar(out.file, true, [&] { return now; });
  for (std::size_t i = 0; i <= 1000; ++i) {
    now += 0.001;  // 1,000 updates in one second
    bar.files(i, 1000);
  }
  const std::string text = out.text();
  std::size_t draws = 0;
  for (std::size_t p = text.find('\r'); p != std::string::npos; p = text.find('\r', p + 1)) ++draws;
  EXPECT_GE(draws, 9u);
  EXPECT_LE(draws, 12u);
  EXPECT_NE(text.find("1000/1000 files"), std::string::npos);
}

TEST(IngestProgressBar, SilentWhenNotATerminal) {
  Captured out;
  IngestProgressBar bar(out.file, false, [] { return 0.0; });
  bar.files(1, 2);
  retrieval::IngestProgress p;
  p.documents_total = 3;
  bar.ingest(p);
  bar.finish();
  EXPECT_EQ(out.text(), "");
  EXPECT_FALSE(bar.enabled());
}

}  // namespace
}  // namespace sluice::cli
