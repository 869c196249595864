#include "graph/metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace sluice {

namespace {

constexpr std::size_t kMaxTable = 4096;  // 256 binary orders of magnitude

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      stride_((bounds_.size() + 2 + 7) / 8 * 8),
      rows_(new std::atomic<std::uint64_t>[stride_ * metric_slot_count()]) {
  for (std::size_t i = 0; i + 1 < bounds_.size(); ++i) {
    if (!(bounds_[i] < bounds_[i + 1])) throw std::logic_error("histogram bounds must increase");
  }
  for (std::size_t i = 0; i < stride_ * metric_slot_count(); ++i) rows_[i].store(0, std::memory_order_relaxed);
  if (!bounds_.empty() && bounds_.front() > 0 && std::isfinite(bounds_.back()) && bounds_.size() < 65535) {
    key_lo_ = table_key(bounds_.front());
    std::uint64_t key_hi = table_key(bounds_.back());
    if (key_hi - key_lo_ < kMaxTable) {
      first_candidate_.resize(key_hi - key_lo_ + 1);
      for (std::uint64_t k = key_lo_; k <= key_hi; ++k) {
        double smallest = std::bit_cast<double>(k << 48);  // the least double with key k
        first_candidate_[k - key_lo_] = static_cast<std::uint16_t>(
            std::lower_bound(bounds_.begin(), bounds_.end(), smallest) - bounds_.begin());
      }
    }
  }
}

std::size_t Histogram::search_bucket(double v) const {
  return std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
}

std::uint64_t Histogram::bucket_total(std::size_t i) const {
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < metric_slot_count(); ++s) total += rows_[s * stride_ + i].load(std::memory_order_relaxed);
  return total;
}

double Histogram::sum() const {
  double total = 0;
  for (std::size_t s = 0; s < metric_slot_count(); ++s) {
    total += std::bit_cast<double>(rows_[s * stride_ + bounds_.size() + 1].load(std::memory_order_relaxed));
  }
  return total;
}

std::uint64_t Histogram::count() const {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) total += bucket_total(i);
  return total;
}

std::vector<std::uint64_t> Histogram::bucket_counts() const {
  std::vector<std::uint64_t> out(bounds_.size() + 1);
  for (std::size_t i = 0; i <= bounds_.size(); ++i) out[i] = bucket_total(i);
  return out;
}

std::uint64_t Histogram::cumulative(std::size_t i) const {
  std::uint64_t total = 0;
  for (std::size_t j = 0; j <= i && j <= bounds_.size(); ++j) total += bucket_total(j);
  return total;
}

double Histogram::quantile(double q) const {
  std::vector<std::uint64_t> counts(bounds_.size() + 1);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    counts[i] = bucket_total(i);
    total += counts[i];
  }
  if (total == 0) return 0.0;
  double rank = q * static_cast<double>(total);
  std::uint64_t below = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    if (counts[i] == 0) continue;
    if (static_cast<double>(below + counts[i]) >= rank) {
      if (i == bounds_.size()) return bounds_.empty() ? 0.0 : bounds_.back();
      double lo = i == 0 ? 0.0 : bounds_[i - 1];
      double hi = bounds_[i];
      double frac = (rank - static_cast<double>(below)) / static_cast<double>(counts[i]);
      return lo + (hi - lo) * std::clamp(frac, 0.0, 1.0);
    }
    below += counts[i];
  }
  return bounds_.empty() ? 0.0 : bounds_.back();
}

std::vector<double> Histogram::exponential(double start, double factor, int count) {
  std::vector<double> b;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

std::vector<double> Histogram::latency_buckets() { return exponential(1e-6, std::sqrt(2.0), 54); }
std::vector<double> Histogram::size_buckets() { return exponential(1, 2, 13); }

MetricsRegistry::Series& MetricsRegistry::series_for(const std::string& name, const std::string& help,
                                                     Type type, const Labels& labels) {
  auto [it, inserted] = families_.try_emplace(name);
  Family& f = it->second;
  if (inserted) {
    f.type = type;
    f.help = help;
  } else if (f.type != type) {
    throw std::logic_error("metric '" + name + "' registered with two types");
  }
  for (auto& s : f.series) {
    if (s->labels == labels) return *s;
  }
  f.series.push_back(std::make_unique<Series>());
  f.series.back()->labels = labels;
  return *f.series.back();
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  MutexLock lock(mu_);
  Series& s = series_for(name, help, Type::kCounter, labels);
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  MutexLock lock(mu_);
  Series& s = series_for(name, help, Type::kGauge, labels);
  if (!s.gauge && !s.fn) s.gauge = std::make_unique<Gauge>();
  if (!s.gauge) throw std::logic_error("gauge '" + name + "' is computed; it cannot be set");
  return *s.gauge;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help, const Labels& labels,
                                      std::vector<double> bounds) {
  MutexLock lock(mu_);
  Series& s = series_for(name, help, Type::kHistogram, labels);
  if (!s.histogram) s.histogram = std::make_unique<Histogram>(std::move(bounds));
  return *s.histogram;
}

void MetricsRegistry::gauge_fn(const std::string& name, const std::string& help, const Labels& labels,
                               std::function<double()> fn) {
  MutexLock lock(mu_);
  Series& s = series_for(name, help, Type::kGauge, labels);
  s.gauge.reset();
  s.fn = std::move(fn);
}

void MetricsRegistry::remove_gauge_fns(const std::string& name) {
  MutexLock lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  auto& series = it->second.series;
  series.erase(std::remove_if(series.begin(), series.end(), [](const auto& s) { return bool(s->fn); }),
               series.end());
}

std::string escape_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {

std::string format_labels(const Labels& labels, const char* extra_key = nullptr, const std::string& extra_value = "") {
  if (labels.empty() && !extra_key) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k + "=\"" + escape_label_value(v) + "\"";
  }
  if (extra_key) {
    if (!first) out += ',';
    out += std::string(extra_key) + "=\"" + extra_value + "\"";
  }
  return out + "}";
}

std::string format_value(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string MetricsRegistry::exposition() const {
  MutexLock lock(mu_);
  std::string out;
  out.reserve(64 * 1024);
  for (const auto& [name, f] : families_) {
    if (f.series.empty()) continue;
    const char* type = f.type == Type::kCounter ? "counter" : f.type == Type::kGauge ? "gauge" : "histogram";
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& s : f.series) {
      switch (f.type) {
        case Type::kCounter:
          out += name + format_labels(s->labels) + " " + format_value(s->counter->value()) + "\n";
          break;
        case Type::kGauge: {
          double v = s->fn ? s->fn() : s->gauge->value();
          out += name + format_labels(s->labels) + " " + format_value(v) + "\n";
          break;
        }
        case Type::kHistogram: {
          const Histogram& h = *s->histogram;
          std::vector<std::uint64_t> counts = h.bucket_counts();
          std::uint64_t running = 0;
          for (std::size_t i = 0; i < h.bounds().size(); ++i) {
            running += counts[i];
            out += name + "_bucket" + format_labels(s->labels, "le", format_value(h.bounds()[i])) + " " +
                   std::to_string(running) + "\n";
          }
          running += counts.back();
          out += name + "_bucket" + format_labels(s->labels, "le", "+Inf") + " " + std::to_string(running) + "\n";
          out += name + "_sum" + format_labels(s->labels) + " " + format_value(h.sum()) + "\n";
          out += name + "_count" + format_labels(s->labels) + " " + std::to_string(running) + "\n";
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace sluice
