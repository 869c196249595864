#include "graph/span_exporter.h"

#include <chrono>
#include <cstdio>

#include "graph/http_post.h"
#include "graph/monotonic_time.h"

namespace sluice {

SpanExporter::SpanExporter(SpanExporterOptions options, SpanNaming naming, const Clock& clock, MetricsRegistry& metrics)
    : options_(std::move(options)),
      naming_(std::move(naming)),
      clock_(clock),
      exported_(&metrics.counter("sluice_tracing_spans_exported_total", "Spans the OTLP collector accepted")),
      dropped_full_(&metrics.counter("sluice_tracing_spans_dropped_total", "Spans not exported",
                                     {{"reason", "queue_full"}})),
      dropped_failed_(&metrics.counter("sluice_tracing_spans_dropped_total", "Spans not exported",
                                       {{"reason", "export_failed"}})),
      sent_(&metrics.counter("sluice_tracing_exports_total", "OTLP export requests", {{"result", "sent"}})),
      failed_(&metrics.counter("sluice_tracing_exports_total", "OTLP export requests", {{"result", "failed"}})),
      queued_gauge_(&metrics.gauge("sluice_tracing_queued_spans", "Spans waiting for export (bounded by tracing.max_queued_spans)")) {
  thread_ = std::thread([this] { run(); });
}

SpanExporter::~SpanExporter() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void SpanExporter::add(const Request& r) {
  const std::size_t spans = r.trace().size() + 1;
  // Under load with everything sampled the queue is mostly full: refuse before copying.
  if (queued_spans_seen_.load(std::memory_order_relaxed) + spans > options_.max_queued_spans) {
    dropped_full_->inc(static_cast<double>(spans));
    return;
  }
  FinishedRequest request = finished_request(r);
  // Counted from the copy: a branch still running may stamp a stage after the size was read.
  const std::size_t copied = request.stamps.size() + 1;
  bool wake = false;  // the thread sleeps without a deadline while the queue is empty
  {
    MutexLock lock(mu_);
    if (queued_spans_ + copied > options_.max_queued_spans) {
      dropped_full_->inc(static_cast<double>(copied));
      return;
    }
    if (queue_.empty()) oldest_ = monotonic_nanos();
    wake = queue_.empty() || (queued_spans_ < options_.batch_spans && queued_spans_ + copied >= options_.batch_spans);
    queue_.push_back(std::move(request));
    queued_spans_ += copied;
    queued_spans_seen_.store(queued_spans_, std::memory_order_relaxed);
    queued_gauge_->set(static_cast<double>(queued_spans_));
  }
  if (wake) wake_.notify_all();
}

void SpanExporter::run() {
  MutexLock lock(mu_);
  while (true) {
    if (stopping_ && failing_) {  // no collector to flush to: do not hold shutdown for it
      dropped_failed_->inc(static_cast<double>(queued_spans_));
      queue_.clear();
      queued_spans_ = 0;
      queued_spans_seen_.store(0, std::memory_order_relaxed);
    }
    if (queue_.empty()) {
      if (stopping_) return;
      wake_.wait(lock);
      continue;
    }
    const Nanos due = oldest_ + options_.flush_interval;
    const Nanos now = monotonic_nanos();
    if (!stopping_ && queued_spans_ < options_.batch_spans && now < due) {
      wake_.wait_for(lock, std::chrono::nanoseconds(due - now));
      continue;
    }
    // Whole requests up to batch_spans (at least one, however many spans it has).
    std::vector<FinishedRequest> batch;
    std::size_t batch_spans = 0;
    while (!queue_.empty() && (batch.empty() || batch_spans + queue_.front().stamps.size() + 1 <= options_.batch_spans)) {
      batch_spans += queue_.front().stamps.size() + 1;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    queued_spans_ -= batch_spans;
    queued_spans_seen_.store(queued_spans_, std::memory_order_relaxed);
    oldest_ = monotonic_nanos();  // requests left over wait at most one more flush_interval
    queued_gauge_->set(static_cast<double>(queued_spans_));
    lock.unlock();  // building, encoding and the post run without the lock: add() never waits for them
    const auto unix_now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
    const Nanos offset = unix_now - clock_.now();
    std::vector<SpanRecord> spans;
    spans.reserve(batch_spans);
    for (const FinishedRequest& r : batch) {
      for (SpanRecord& s : request_spans(r, naming_, offset)) spans.push_back(std::move(s));
    }
    const Status posted =
        http_post(options_.endpoint, "application/x-protobuf", encode_otlp_traces(options_.service_name, spans), options_.timeout);
    if (posted.ok()) {
      sent_->inc();
      exported_->inc(static_cast<double>(spans.size()));
      if (failing_) std::fprintf(stderr, "sluice: tracing: the OTLP collector accepts spans again\n");
      failing_ = false;
    } else {
      failed_->inc();
      dropped_failed_->inc(static_cast<double>(spans.size()));
      if (!failing_) std::fprintf(stderr, "sluice: tracing: export failed, spans dropped until it works: %s\n", posted.message.c_str());
      failing_ = true;
    }
    lock.lock();
  }
}

}  // namespace sluice
