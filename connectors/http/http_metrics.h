// HttpMetrics: the HTTP source's series in the pipeline's MetricsRegistry, all prefixed
// `sluice_http_` and labelled with the source name:
//   sluice_http_requests_total{source,endpoint,code}      responses sent, by endpoint and status
//   sluice_http_open_connections{source}                  gauge
//   sluice_http_active_streams{source}                    gauge: SSE responses in progress
//   sluice_http_refused_connections_total{source}         over max_connections
//   sluice_http_slow_client_closes_total{source}          over max_stream_buffer_bytes
//   sluice_http_idle_closes_total{source}                 over idle_timeout
//   sluice_http_read_timeouts_total{source,reason}        read deadlines run out (408 and close):
//                                                         reason "header" (header_timeout) or
//                                                         "body" (under body_min_rate)
//   sluice_http_per_ip_refused_connections_total{source}  over max_connections_per_ip
//   sluice_http_client_disconnects_total{source}          client left before its answer was done
//   sluice_http_handler_exceptions_total{source}          requests ended with 500 by the last-resort guard
//   sluice_http_ingests_running{source}                   gauge: POST /v1/documents ingests in progress (0 or 1)
//   sluice_http_ingest_seconds{source}                    histogram: duration of accepted ingests
// `endpoint` is one of a fixed set (unknown paths count as "other"), so cardinality is bounded.
//
// Shared (shared_ptr) by the source and the response sinks of its requests, which may finish
// after the source stopped; the registry must outlive both. Thread-safety: all methods.
#pragma once

#include <array>
#include <atomic>
#include <string>
#include <string_view>

#include "graph/metrics.h"

namespace sluice::http {

enum class Endpoint : std::uint8_t {
  kChatCompletions, kCompletions, kEmbeddings, kRetrieve, kDocuments, kJobs, kStreams, kModels, kCache, kUi, kHealthz, kReadyz, kMetrics, kOther, kCount
};

std::string_view endpoint_label(Endpoint endpoint);
// The endpoint a path belongs to (exact match; kJobs: /v1/jobs/{id}; kStreams: /v1/streams/{id}), or kOther.
Endpoint endpoint_for_path(std::string_view path);

class HttpMetrics {
 public:
  HttpMetrics(MetricsRegistry& registry, std::string source);
  void count_response(Endpoint endpoint, int status);

  Gauge& open_connections;
  Gauge& active_streams;
  Counter& refused_connections;
  Counter& slow_client_closes;
  Counter& idle_closes;
  Counter& header_timeouts;     // sluice_http_read_timeouts_total{reason="header"}
  Counter& body_rate_timeouts;  // sluice_http_read_timeouts_total{reason="body"}
  Counter& per_ip_refused_connections;
  Counter& client_disconnects;
  Counter& handler_exceptions;
  Gauge& ingests_running;
  Histogram& ingest_seconds;
  // sluice_http_async_jobs_total{outcome}: requests written as Kafka jobs and answered 202
  // (queued), of those the shed ones (deferred, counted again as queued or refused), and the
  // ones the job queue could not take (refused).
  Counter& async_jobs_queued;
  Counter& async_jobs_deferred;
  Counter& async_jobs_refused;

 private:
  static constexpr int kMinStatus = 100;
  static constexpr int kMaxStatus = 599;
  MetricsRegistry& registry_;
  const std::string source_;
  // Created on first use; the registry returns the same series for the same labels, so a
  // race between two threads creating one only stores the same pointer twice.
  std::array<std::array<std::atomic<Counter*>, kMaxStatus - kMinStatus + 1>, static_cast<std::size_t>(Endpoint::kCount)>
      by_status_{};
};

}  // namespace sluice::http
