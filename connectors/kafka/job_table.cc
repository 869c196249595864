#include "connectors/kafka/job_table.h"

namespace sluice::kafka {

void JobTable::queued(const std::string& id, std::int64_t unix_ms, const std::string& tenant) {
  MutexLock lock(mu_);
  if (auto found = index_.find(id); found != index_.end()) {
    // A result already seen keeps the tenant it carries.
    found->second->job.queued_unix_ms = unix_ms;
    return written_locked(found->second);
  }
  entries_.push_front(Entry{id, http::JobLookup{http::JobLookup::State::kQueued, unix_ms, {}, tenant}});
  index_.emplace(id, entries_.begin());
  bytes_ += cost(entries_.front());
  written_locked(entries_.begin());
}

void JobTable::forget_queued(const std::string& id) {
  MutexLock lock(mu_);
  auto found = index_.find(id);
  if (found == index_.end() || found->second->job.state != http::JobLookup::State::kQueued) return;
  bytes_ -= cost(*found->second);
  entries_.erase(found->second);
  index_.erase(found);
}

void JobTable::finished(const std::string& id, std::string result_line, std::string tenant) {
  MutexLock lock(mu_);
  auto found = index_.find(id);
  if (found == index_.end()) {
    entries_.push_front(Entry{id, http::JobLookup{}});
    found = index_.emplace(id, entries_.begin()).first;
  } else {
    bytes_ -= cost(*found->second);
  }
  Entry& e = *found->second;
  e.job.state = http::JobLookup::State::kFinished;
  e.job.result_line = std::move(result_line);
  e.job.tenant = std::move(tenant);
  bytes_ += cost(e);
  written_locked(found->second);
}

void JobTable::written_locked(std::list<Entry>::iterator it) {
  entries_.splice(entries_.begin(), entries_, it);
  // The entry just written stays even when it alone is over max_bytes: its GET is the one
  // being waited for.
  while (entries_.size() > 1 && (entries_.size() > max_entries_ || bytes_ > max_bytes_)) {
    bytes_ -= cost(entries_.back());
    index_.erase(entries_.back().id);
    entries_.pop_back();
    ++evicted_;
  }
}

std::optional<http::JobLookup> JobTable::lookup(const std::string& id) const {
  MutexLock lock(mu_);
  auto found = index_.find(id);
  if (found == index_.end()) return std::nullopt;
  return found->second->job;
}

std::size_t JobTable::size() const {
  MutexLock lock(mu_);
  return entries_.size();
}

std::size_t JobTable::bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

std::uint64_t JobTable::evicted() const {
  MutexLock lock(mu_);
  return evicted_;
}

}  // namespace sluice::kafka
