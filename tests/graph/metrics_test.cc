// Metrics: histogram quantiles, and the Prometheus exposition parsed back line by line.
#include "graph/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

namespace sluice {
namespace {

TEST(Histogram, QuantilesInterpolateWithinBuckets) {
  Histogram h(Histogram::exponential(1, 2, 10));  // 1, 2, 4, ... 512
  for (int i = 1; i <= 100; ++i) h.observe(i);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_DOUBLE_EQ(h.sum(), 5050);
  EXPECT_NEAR(h.quantile(0.5), 50, 50 * 0.3);
  EXPECT_NEAR(h.quantile(0.99), 99, 99 * 0.3);
  Histogram empty(Histogram::latency_buckets());
  EXPECT_EQ(empty.quantile(0.5), 0);
}

TEST(Histogram, LatencyBucketsSpanMicrosecondsToMinutes) {
  auto b = Histogram::latency_buckets();
  EXPECT_DOUBLE_EQ(b.front(), 1e-6);
  EXPECT_GT(b.back(), 60);
}

// Parses "name{labels} value" lines; checks HELP/TYPE precede samples and values parse.
std::map<std::string, double> parse_exposition(const std::string& text) {
  std::map<std::string, double> samples;
  std::istringstream in(text);
  std::string line;
  std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([-+0-9.eEInfNa]+)$)");
  std::string typed;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      typed = line.substr(7, line.find(' ', 7) - 7);
      continue;
    }
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, sample)) << "bad line: " << line;
    EXPECT_EQ(m[1].str().rfind(typed, 0), 0u) << line << " outside its family " << typed;
    samples[m[1].str() + m[2].str()] = std::stod(m[3].str() == "+Inf" ? "inf" : m[3].str());
  }
  return samples;
}

TEST(MetricsRegistry, ExpositionParsesBack) {
  MetricsRegistry reg;
  reg.counter("sluice_test_total", "A counter", {{"cause", "a\"b"}}).inc(3);
  reg.gauge("sluice_test_gauge", "A gauge").set(2.5);
  reg.gauge_fn("sluice_test_fn", "Computed", {{"class", "P0"}}, [] { return 7.0; });
  Histogram& h = reg.histogram("sluice_test_seconds", "A histogram", {{"stage", "x"}}, {0.1, 1});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(5);
  auto s = parse_exposition(reg.exposition());
  EXPECT_EQ(s["sluice_test_total{cause=\"a\\\"b\"}"], 3);
  EXPECT_EQ(s["sluice_test_gauge"], 2.5);
  EXPECT_EQ(s["sluice_test_fn{class=\"P0\"}"], 7);
  EXPECT_EQ(s["sluice_test_seconds_bucket{stage=\"x\",le=\"0.10000000000000001\"}"], 1);
  EXPECT_EQ(s["sluice_test_seconds_bucket{stage=\"x\",le=\"1\"}"], 2);
  EXPECT_EQ(s["sluice_test_seconds_bucket{stage=\"x\",le=\"+Inf\"}"], 3);
  EXPECT_EQ(s["sluice_test_seconds_count{stage=\"x\"}"], 3);
  EXPECT_DOUBLE_EQ(s["sluice_test_seconds_sum{stage=\"x\"}"], 5.55);
  EXPECT_EQ(s.count("sluice_test_seconds_quantiles{stage=\"x\",quantile=\"0.99\"}"), 1u);
}

TEST(MetricsRegistry, SameNameSameLabelsIsTheSameSeries) {
  MetricsRegistry reg;
  Counter& a = reg.counter("c", "h", {{"k", "v"}});
  Counter& b = reg.counter("c", "h", {{"k", "v"}});
  EXPECT_EQ(&a, &b);
  EXPECT_THROW(reg.gauge("c", "h"), std::logic_error);
}

}  // namespace
}  // namespace sluice
