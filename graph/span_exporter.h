// SpanExporter: sends finished requests' spans to an OTLP/HTTP collector (TracingSpec), on its
// own thread, so tracing never slows or fails a request.
//
// Contract:
//  - add() takes one finished request (graph/request_spans.h: a copy of its stamps, not yet
//    spans) and never blocks on the network: when the queue holds max_queued_spans spans it
//    drops the request's spans all (a trace is useful whole or not at all) and counts them
//    (sluice_tracing_spans_dropped_total{reason="queue_full"});
//  - the exporter thread builds the spans (request_spans) and posts batches of at most
//    batch_spans of them (protobuf ExportTraceServiceRequest, graph/otlp_encoding.h; a
//    request's spans are never split) when a batch is full or its oldest request has waited
//    flush_interval; an export that fails (no connection, timeout, an answer other than 2xx)
//    drops its spans (reason="export_failed") and logs once per outage;
//  - measured: sluice_tracing_spans_exported_total, sluice_tracing_spans_dropped_total{reason},
//    sluice_tracing_exports_total{result="sent"|"failed"}, sluice_tracing_queued_spans;
//  - the destructor exports what is queued (bounded by `timeout` per batch; nothing more once
//    an export has failed), then stops.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/otlp_encoding.h"
#include "graph/request_spans.h"

namespace sluice {

struct SpanExporterOptions {
  std::string endpoint;
  std::string service_name = "sluice";
  std::size_t max_queued_spans = 8192;
  std::size_t batch_spans = 512;
  Nanos flush_interval = kNanosPerSecond;
  Nanos timeout = 5 * kNanosPerSecond;
};

class SpanExporter {
 public:
  // `naming`'s vectors and `clock` (the runtime clock of the stamps) must outlive it.
  SpanExporter(SpanExporterOptions options, SpanNaming naming, const Clock& clock, MetricsRegistry& metrics);
  ~SpanExporter();
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  // Queues `request`'s spans (copying what they need, finished_request) unless the queue is
  // full, which is checked first: a full queue costs a dropped request one atomic load.
  void add(const Request& request);

 private:
  void run();

  const SpanExporterOptions options_;
  const SpanNaming naming_;
  const Clock& clock_;
  Counter* exported_;
  Counter* dropped_full_;
  Counter* dropped_failed_;
  Counter* sent_;
  Counter* failed_;
  Gauge* queued_gauge_;
  Mutex mu_;
  CondVar wake_;
  std::deque<FinishedRequest> queue_ GUARDED_BY(mu_);
  std::size_t queued_spans_ GUARDED_BY(mu_) = 0;  // what queue_ will make
  std::atomic<std::size_t> queued_spans_seen_{0};  // queued_spans_ as last stored, read without the lock
  Nanos oldest_ GUARDED_BY(mu_) = 0;  // monotonic time the queue's first request arrived
  bool stopping_ GUARDED_BY(mu_) = false;
  bool failing_ = false;  // exporter thread only: inside an outage (logged once)
  std::thread thread_;
};

}  // namespace sluice
