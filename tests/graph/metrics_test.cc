// Metrics: histogram quantiles, and the Prometheus exposition parsed back line by line.
#include "graph/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

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

TEST(Histogram, TableBucketIndexAgreesWithBinarySearch) {
  // The table lookup must give exactly the Prometheus `le` bucket (first bound >= v),
  // including values equal to a bound, between bounds, outside the range, 0, negative, NaN.
  for (const auto& bounds : {Histogram::latency_buckets(), Histogram::size_buckets(), Histogram::exponential(1, 1.5, 30),
                             std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 1000}, std::vector<double>{-1, 0, 1}}) {
    Histogram h(bounds);
    auto expected = [&](double v) {
      return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
    };
    std::vector<double> values{0.0, -5.0, 1e-12, 1e12};
    for (double b : bounds) values.insert(values.end(), {b, std::nextafter(b, -1e300), std::nextafter(b, 1e300), b * 1.01});
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> exponent(-8, 5);
    for (int i = 0; i < 20000; ++i) values.push_back(std::pow(10.0, exponent(rng)));
    for (double v : values) ASSERT_EQ(h.bucket_index(v), expected(v)) << "value " << v << " bounds from " << bounds.front();
    EXPECT_EQ(h.bucket_index(std::nan("")), bounds.front() > 0 ? bounds.size() : expected(std::nan("")));
  }
}

TEST(MetricRows, ThreadsOwnRowsAndReturnThemWhenTheyExit) {
  MetricSlot mine = metric_slot();
  EXPECT_TRUE(mine.exclusive);
  EXPECT_LT(mine.index, metric_slot_count() - 1);
  MetricSlot other{};
  std::thread([&] { other = metric_slot(); }).join();
  EXPECT_TRUE(other.exclusive);
  EXPECT_NE(other.index, mine.index);
  // The exited thread's row goes back to the pool and the next thread gets it.
  MetricSlot next{};
  std::thread([&] { next = metric_slot(); }).join();
  EXPECT_EQ(next.index, other.index);
}

TEST(MetricRows, CountsStayExactWithMoreThreadsThanRows) {
  // More threads alive at once than exclusive rows: the rest share the overflow row, updated
  // atomically; every update must still count.
  const std::size_t threads = metric_slot_count() + 8;
  constexpr int kPerThread = 20000;
  Histogram h(Histogram::latency_buckets());
  Counter c;
  ShardedCount n;
  std::atomic<std::size_t> ready{0};
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();  // all alive at once
      for (int i = 0; i < kPerThread; ++i) {
        h.observe(1e-3);
        c.inc();
        n.add(1);
      }
    });
  }
  for (auto& t : pool) t.join();
  const double total = static_cast<double>(threads) * kPerThread;
  EXPECT_EQ(h.count(), threads * kPerThread);
  EXPECT_NEAR(h.sum(), total * 1e-3, total * 1e-3 * 1e-9);
  EXPECT_EQ(c.value(), total);
  EXPECT_EQ(n.value(), static_cast<std::int64_t>(total));
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
  // No quantile gauges beside a histogram: Prometheus lints a "quantile" label outside a summary
  // (promtool check metrics); histogram_quantile() over the buckets gives them.
  for (const auto& [series, value] : s) EXPECT_EQ(series.find("quantile"), std::string::npos) << series;
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
