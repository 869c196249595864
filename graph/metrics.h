// Metrics: counters, gauges and histograms, exposed in Prometheus text format on /metrics.
//
// Metrics are created once (at build time) through MetricsRegistry and then updated on hot
// paths through the returned references, which stay valid as long as the registry lives.
// Updates are lock-free atomics; creation and exposition take the registry's lock.
//
// Hot-path updates go to a cache-line-padded row owned by the calling thread
// (graph/metric_slot.h), so two cores recording into the same histogram never share a cache
// line and an update needs no locked instruction; reads sum the rows.
//
// Histograms use fixed bucket bounds (Prometheus `le` buckets); Histogram::quantile()
// interpolates within a bucket for in-process readers (Prometheus computes its own with
// histogram_quantile(), so the exposition has no quantile series). The default latency
// buckets grow by √2 from 1 µs to about 2 minutes (54 buckets), so an interpolated quantile is
// within about 20% of the exact one.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/metric_slot.h"
#include "graph/mutex.h"

namespace sluice {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A double added to from many threads: one padded row per thread (graph/metric_slot.h),
// summed on read.
class ShardedSum {
 public:
  ShardedSum() : slots_(new Slot[metric_slot_count()]) {}
  void add(double v) {
    MetricSlot s = metric_slot();
    slot_add_double(slots_[s.index].bits, v, s.exclusive);
  }
  double value() const {
    double total = 0;
    for (std::size_t i = 0; i < metric_slot_count(); ++i) {
      total += std::bit_cast<double>(slots_[i].bits.load(std::memory_order_relaxed));
    }
    return total;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> bits{0};  // the bit pattern of 0.0 is 0
  };
  std::unique_ptr<Slot[]> slots_;
};

// An integer changed from many threads (in-flight counts): sharded like ShardedSum.
class ShardedCount {
 public:
  ShardedCount() : slots_(new Slot[metric_slot_count()]) {}
  void add(std::int64_t v) {
    MetricSlot s = metric_slot();
    slot_add(slots_[s.index].v, v, s.exclusive);
  }
  std::int64_t value() const {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < metric_slot_count(); ++i) total += slots_[i].v.load(std::memory_order_relaxed);
    return total;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<std::int64_t> v{0};
  };
  std::unique_ptr<Slot[]> slots_;
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
  void observe(double v) {  // inline: it runs twice per stage per request
    MetricSlot s = metric_slot();
    std::atomic<std::uint64_t>* row = &rows_[s.index * stride_];
    slot_add(row[bucket_index(v)], 1, s.exclusive);
    slot_add_double(row[bounds_.size() + 1], v, s.exclusive);
  }
  std::uint64_t count() const;
  double sum() const;
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

  // The bucket of v: the first bound >= v, bounds().size() for the +Inf bucket.
  std::size_t bucket_index(double v) const {
    const std::size_t n = bounds_.size();
    if (first_candidate_.empty()) return search_bucket(v);
    if (!(v > bounds_[0])) return v <= bounds_[0] ? 0 : n;  // at or below the first bound; NaN to +Inf
    std::uint64_t k = table_key(v) - key_lo_;
    if (k >= first_candidate_.size()) return n;  // beyond the last bound's key: above it
    std::size_t i = first_candidate_[k];
    while (i < n && bounds_[i] < v) ++i;
    return i;
  }

 private:
  std::uint64_t bucket_total(std::size_t i) const;
  std::size_t search_bucket(double v) const;  // binary search, when there is no table
  // The table key of a positive double: its exponent and the top 4 bits of its mantissa, so
  // keys grow with the value and one key spans a factor of at most 2^(1/16).
  static std::uint64_t table_key(double v) { return std::bit_cast<std::uint64_t>(v) >> 48; }
  std::vector<double> bounds_;
  // Each thread's row (graph/metric_slot.h) holds the counts of buckets 0..bounds_.size()
  // (the last is +Inf) and then the sum of observations as double bits, padded to whole
  // cache lines: one observation touches one row.
  std::size_t stride_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> rows_;
  // First candidate bucket per (exponent, top 4 mantissa bits) of a positive double, for
  // doubles from bounds_.front() to bounds_.back(); empty when the bounds do not allow it
  // (non-positive bounds, too wide a range), then bucket_index searches.
  std::vector<std::uint16_t> first_candidate_;
  std::uint64_t key_lo_ = 0;
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
  Series& series_for(const std::string& name, const std::string& help, Type type, const Labels& labels) REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, Family> families_ GUARDED_BY(mu_);
};

// Escapes a label value for the exposition format.
std::string escape_label_value(const std::string& v);

}  // namespace sluice
