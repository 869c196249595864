// JobTable: the bounded table behind GET /v1/jobs/{id} (KafkaJobQueue). It remembers jobs this
// process queued and every result line read from the results topic, by job id.
//
// Bounded by entries and by bytes (ids and result lines): past either bound the least recently
// written entry is forgotten (a lookup then finds nothing, and GET answers 404), so a results
// topic far larger than memory cannot grow it. A lookup does not refresh an entry: polling a job
// keeps nothing alive. A second result for one id (a duplicate delivery the workers redid)
// replaces the first.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "connectors/http/job_queue.h"
#include "graph/mutex.h"

namespace sluice::kafka {

class JobTable {
 public:
  JobTable(std::size_t max_entries, std::size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // A job this process accepted (kQueued until its result arrives; a result already seen stays).
  void queued(const std::string& id, std::int64_t unix_ms, const std::string& tenant);
  // Its queueing failed: forgotten unless a result is there.
  void forget_queued(const std::string& id);
  // A result line for `id` from the results topic, of the job's `tenant` (x_sluice.tenant).
  void finished(const std::string& id, std::string result_line, std::string tenant);

  std::optional<http::JobLookup> lookup(const std::string& id) const;
  std::size_t size() const;
  std::size_t bytes() const;
  std::uint64_t evicted() const;

 private:
  struct Entry {
    std::string id;
    http::JobLookup job;
  };
  static std::size_t cost(const Entry& e) {
    return e.id.size() + e.job.result_line.size() + e.job.tenant.size() + sizeof(Entry);
  }
  // Moves `it` to the front (most recently written) and evicts past the bounds.
  void written_locked(std::list<Entry>::iterator it) REQUIRES(mu_);

  const std::size_t max_entries_, max_bytes_;
  mutable Mutex mu_;
  std::list<Entry> entries_ GUARDED_BY(mu_);  // most recently written first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_ GUARDED_BY(mu_);
  std::size_t bytes_ GUARDED_BY(mu_) = 0;
  std::uint64_t evicted_ GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::kafka
