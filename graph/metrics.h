// Metrics: counters, gauges and histograms, exposed in Prometheus text format on /metrics.
//
// Metrics are created once (at build time) through MetricsRegistry and then updated on hot
// paths through the returned references, which stay valid as long as the registry lives.
// Updates are lock-free atomics; creation and exposition take the registry's lock.
//
// Hot-path updates go to one of a few cache-line-padded shards picked by thread, so two cores
// recording into the same histogram do not fight over one cache line; reads sum the shards.
//
// Histograms use fixed bucket bounds (Prometheus `le` buckets) and also report P50/P95/P99,
// interpolated within the bucket, as a companion gauge family `<name>_quantiles`. The default
// latency buckets grow by √2 from 1 µs to about 2 minutes (54 buckets), so an interpolated
// quantile is within about 20% of the exact one.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sluice {

using Labels = std::vector<std::pair<std::string, std::string>>;

// The shard a thread writes to: threads get consecutive indexes on first use.
constexpr std::size_t kMetricShards = 8;
std::size_t metric_shard();

// A double added to from many threads: one padded slot per shard, summed on read.
class ShardedSum {
 public:
  void add(double v) {
    // Threads sharing a shard are rare; fetch_add keeps the sum exact when they collide.
    slots_[metric_shard()].v.fetch_add(v, std::memory_order_relaxed);
  }
  double value() const {
    double total = 0;
    for (const auto& s : slots_) total += s.v.load(std::memory_order_relaxed);
    return total;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<double> v{0.0};
  };
  Slot slots_[kMetricShards];
};

// An integer changed from many threads (in-flight counts): sharded like ShardedSum.
class ShardedCount {
 public:
  void add(std::int64_t v) { slots_[metric_shard()].v.fetch_add(v, std::memory_order_relaxed); }
  std::int64_t value() const {
    std::int64_t total = 0;
    for (const auto& s : slots_) total += s.v.load(std::memory_order_relaxed);
    return total;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<std::int64_t> v{0};
  };
  Slot slots_[kMetricShards];
};

class Counter {
 public:
  void inc(double v = 1.0) { sum_.add(v); }
  double value() const { return sum_.value(); }

 private:
  ShardedSum sum_;
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds` are the upper bounds of the finite buckets, strictly increasing.
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  std::uint64_t count() const;
  double sum() const { return sum_.value(); }
  // Interpolated quantile (q in [0,1]); 0 when empty.
  double quantile(double q) const;
  const std::vector<double>& bounds() const { return bounds_; }
  // Observations per bucket (not cumulative); the last entry is the +Inf bucket.
  std::vector<std::uint64_t> bucket_counts() const;
  // Cumulative count of observations <= bounds()[i]; i == bounds().size() is +Inf.
  std::uint64_t cumulative(std::size_t i) const;

  static std::vector<double> latency_buckets();      // seconds, 1 µs .. ~2 min
  static std::vector<double> size_buckets();         // counts, 1 .. 4096 (powers of 2)
  static std::vector<double> exponential(double start, double factor, int count);

 private:
  std::size_t stride() const { return stride_; }
  std::vector<double> bounds_;
  std::size_t stride_;  // bucket slots per shard, padded to whole cache lines
  // kMetricShards rows of stride_ counters: buckets 0..bounds_.size() (last is +Inf).
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;
  ShardedSum sum_;
};

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Returns the series with these labels, creating family and series on first use. Asking
  // for an existing name with another type throws std::logic_error.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const Labels& labels = {},
                       std::vector<double> bounds = Histogram::latency_buckets());
  // A gauge computed at scrape time (queue depths, free KV blocks). `fn` must be thread-safe
  // and must outlive the registry or be removed with remove_gauge_fn.
  void gauge_fn(const std::string& name, const std::string& help, const Labels& labels,
                std::function<double()> fn);
  void remove_gauge_fns(const std::string& name);

  // Prometheus text exposition format 0.0.4.
  std::string exposition() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series {
    Labels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> fn;
  };
  struct Family {
    Type type;
    std::string help;
    std::vector<std::unique_ptr<Series>> series;
  };
  Series& series_for(const std::string& name, const std::string& help, Type type, const Labels& labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

// Escapes a label value for the exposition format.
std::string escape_label_value(const std::string& v);

}  // namespace sluice
