#include "connectors/http/stream_journals.h"

#include <algorithm>
#include <vector>

namespace sluice::http {
namespace {

constexpr const char* kOverflowHelp =
    "Resumable streams that lost kept events: bound stream (a stream over resume.max_stream_bytes dropped its oldest "
    "events) or total (the source's journals were over resume.max_total_bytes, so a stream stopped keeping events).";

}  // namespace

StreamJournals::StreamJournals(StreamResumeOptions options, const Clock& clock, MetricsRegistry& metrics,
                               const std::string& source)
    : options_(options), clock_(clock), metrics_(metrics), source_(source), budget_(std::make_shared<JournalBudget>()),
      listed_(metrics.gauge("sluice_http_stream_journals", "Streams whose events are kept for resuming.",
                            {{"source", source}})) {
  budget_->max_total_bytes = options_.max_total_bytes;
  budget_->bytes_gauge = &metrics.gauge("sluice_http_stream_journal_bytes",
                                        "Bytes of SSE events kept for resuming streams.", {{"source", source}});
  budget_->stream_overflows =
      &metrics.counter("sluice_http_stream_journal_overflows_total", kOverflowHelp, {{"source", source}, {"bound", "stream"}});
  budget_->total_overflows =
      &metrics.counter("sluice_http_stream_journal_overflows_total", kOverflowHelp, {{"source", source}, {"bound", "total"}});
}

std::shared_ptr<StreamJournal> StreamJournals::create(std::string id, std::string tenant, Nanos keep_running,
                                                      std::shared_ptr<ResponseWriter> writer) {
  return std::make_shared<StreamJournal>(std::move(id), std::move(tenant), options_.max_stream_bytes, keep_running,
                                         budget_, clock_, std::move(writer));
}

void StreamJournals::sweep_locked(Nanos now) {
  // Every add would otherwise walk every listed journal (thousands at a few hundred streams a
  // second kept 30 s): the walk runs once per kSweepInterval, or when the journals are over
  // three quarters of the budget, and then evicts ended journals down to half of it, so the
  // next eviction is a quarter of the budget away.
  const bool over = budget_->total_bytes.load(std::memory_order_relaxed) * 4 > options_.max_total_bytes * 3;
  if (!over && now - last_sweep_ < kSweepInterval) return;
  last_sweep_ = now;
  for (auto it = journals_.begin(); it != journals_.end();) {
    if (!it->second->expired(now, options_.grace)) {
      ++it;
      continue;
    }
    it->second->forget();  // its bytes go back now, though its request may still hold it
    it = journals_.erase(it);
  }
  if (budget_->total_bytes.load(std::memory_order_relaxed) * 4 <= options_.max_total_bytes * 3) return;
  std::vector<std::pair<Nanos, std::string>> ended;
  for (const auto& [id, journal] : journals_) {
    if (journal->ended()) ended.emplace_back(journal->ended_at(), id);
  }
  std::sort(ended.begin(), ended.end());
  for (const auto& [at, id] : ended) {
    if (budget_->total_bytes.load(std::memory_order_relaxed) * 2 <= options_.max_total_bytes) break;
    auto it = journals_.find(id);
    it->second->forget();
    journals_.erase(it);
  }
}

void StreamJournals::add(const std::shared_ptr<StreamJournal>& journal) {
  std::lock_guard lock(mu_);
  sweep_locked(clock_.now());
  journals_[journal->id()] = journal;
  listed_.set(static_cast<double>(journals_.size()));
}

std::shared_ptr<StreamJournal> StreamJournals::find(std::string_view id, std::string_view tenant) {
  std::lock_guard lock(mu_);
  auto it = journals_.find(id);
  if (it == journals_.end()) return nullptr;
  if (it->second->expired(clock_.now(), options_.grace)) {  // not swept yet: forgotten all the same
    it->second->forget();
    journals_.erase(it);
    listed_.set(static_cast<double>(journals_.size()));
    return nullptr;
  }
  return it->second->tenant() == tenant ? it->second : nullptr;
}

void StreamJournals::count_resume(std::string_view result) {
  metrics_
      .counter("sluice_http_stream_resumes_total",
               "Reconnections to GET /v1/streams/{id}, by result: resumed, not_found (unknown, expired or another "
               "tenant's), gone (the events after Last-Event-ID were dropped), not_kept (the stream kept no events), "
               "bad_request.",
               {{"source", source_}, {"result", std::string(result)}})
      .inc();
}

}  // namespace sluice::http
