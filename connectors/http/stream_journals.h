// StreamJournals: the resumable streams of one HTTP source, by request id (X-Request-Id, the
// chunks' `id`), bounded in bytes and in time (config `resume`, docs/operations.md "Resumable
// streams").
//
// A streamed completion gets a StreamJournal when it is submitted (create) and is listed once
// its stream starts (add, from the sink), so GET /v1/streams/{id} finds it (find). A journal
// is forgotten `grace` after its stream ended or its last client left, whichever is later
// (StreamJournal::expired): find never returns one past that, and an add sweeps them out at
// most once per kSweepInterval. When the journals together keep more than three quarters of
// max_total_bytes, an add also evicts ended ones, oldest first, down to half of it, so running
// streams keep their room and the eviction's sort runs once per quarter of the budget. `grace` 0 turns the whole thing off: enabled() is
// false, streams carry no ids and nothing is kept.
//
// Metrics (labelled with the source): sluice_http_stream_journals (listed now),
// sluice_http_stream_journal_bytes, sluice_http_stream_journal_overflows_total{bound="stream"|
// "total"}, sluice_http_stream_resumes_total{result="resumed"|"not_found"|"gone"|...}.
//
// Thread-safety: every method from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "connectors/http/stream_journal.h"
#include "graph/clock.h"
#include "graph/metrics.h"

namespace sluice::http {

struct StreamResumeOptions {
  Nanos grace = 30 * kNanosPerSecond;             // 0: off
  std::size_t max_stream_bytes = 1024 * 1024;
  std::size_t max_total_bytes = 64 * 1024 * 1024;
  Nanos max_keep_running = 5 * 60 * kNanosPerSecond;  // the largest X-Sluice-Resume accepted
};

class StreamJournals {
 public:
  static constexpr Nanos kSweepInterval = kNanosPerSecond;

  StreamJournals(StreamResumeOptions options, const Clock& clock, MetricsRegistry& metrics, const std::string& source);

  bool enabled() const { return options_.grace > 0; }
  const StreamResumeOptions& options() const { return options_; }

  // A journal for a new stream, with `writer` (the request's connection) attached; not yet listed.
  std::shared_ptr<StreamJournal> create(std::string id, std::string tenant, Nanos keep_running,
                                        std::shared_ptr<ResponseWriter> writer);
  // Lists the journal (its stream started), after sweeping forgotten ones.
  void add(const std::shared_ptr<StreamJournal>& journal);
  // The listed journal with this id and tenant (another tenant's stream is not found), or null.
  std::shared_ptr<StreamJournal> find(std::string_view id, std::string_view tenant);
  void count_resume(std::string_view result);

 private:
  void sweep_locked(Nanos now);

  const StreamResumeOptions options_;
  const Clock& clock_;
  MetricsRegistry& metrics_;
  const std::string source_;
  std::shared_ptr<JournalBudget> budget_;
  Gauge& listed_;
  mutable std::mutex mu_;
  Nanos last_sweep_ = 0;  // mu_
  std::map<std::string, std::shared_ptr<StreamJournal>, std::less<>> journals_;
};

}  // namespace sluice::http
