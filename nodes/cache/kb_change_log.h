// KbChangeLog: what an answer cache remembers of its knowledge base's commits, to decide
// whether an answer built at some version may still be served (docs/caching.md,
// "Invalidation"). The nodes drop entries actively when a change is committed (before the
// ingest is acknowledged); the log covers the answers that were being made meanwhile: an answer
// retrieved at version v and stored after the change to v+1 is checked here before it enters.
//
// Policy kCited: valid when no change after its version retired a chunk it cited. Policy kAll:
// valid only at the current version. An answer older than the log (the last 256 changes)
// counts as invalid. An answer without a version (no retrieval) is always valid.
//
// Thread-safety: every method from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "graph/mutex.h"

namespace sluice::cache {

enum class InvalidationPolicy { kCited, kAll };
// "cited" or "all"; throws std::invalid_argument otherwise.
InvalidationPolicy invalidation_policy(const std::string& name);

class KbChangeLog {
 public:
  explicit KbChangeLog(InvalidationPolicy policy, std::uint64_t current_version = 0);
  // A commit of `version` retiring `retired` (sorted chunk keys).
  void record(std::uint64_t version, const std::vector<std::string>& retired) EXCLUDES(mu_);
  // `cited` sorted.
  bool valid(std::uint64_t version, const std::vector<std::string>& cited) const EXCLUDES(mu_);
  // Whether a commit retiring `retired` invalidates an answer of `version` citing `cited`
  // (the active drop at commit time uses the same rule).
  bool retires(std::uint64_t version, const std::vector<std::string>& cited, std::uint64_t change_version,
               const std::vector<std::string>& retired) const;
  InvalidationPolicy policy() const { return policy_; }

 private:
  struct Change {
    std::uint64_t version;
    std::vector<std::string> retired;
  };
  static constexpr std::size_t kCapacity = 256;
  const InvalidationPolicy policy_;
  mutable Mutex mu_;
  std::deque<Change> changes_ GUARDED_BY(mu_);
  std::uint64_t first_known_ GUARDED_BY(mu_);  // versions before this one are unknown history
  std::uint64_t current_ GUARDED_BY(mu_);
};

}  // namespace sluice::cache
