#include "nodes/cache/kb_change_log.h"

#include <algorithm>
#include <stdexcept>

namespace sluice::cache {

InvalidationPolicy invalidation_policy(const std::string& name) {
  if (name.empty() || name == "cited") return InvalidationPolicy::kCited;
  if (name == "all") return InvalidationPolicy::kAll;
  throw std::invalid_argument("invalidate: '" + name + "' is not one of cited, all");
}

KbChangeLog::KbChangeLog(InvalidationPolicy policy, std::uint64_t current_version)
    : policy_(policy), first_known_(current_version), current_(current_version) {}

bool KbChangeLog::retires(std::uint64_t version, const std::vector<std::string>& cited, std::uint64_t change_version,
                          const std::vector<std::string>& retired) const {
  if (version == 0 || change_version <= version) return false;
  if (policy_ == InvalidationPolicy::kAll) return true;
  // Both sorted: a linear merge finds a shared key.
  auto a = cited.begin();
  auto b = retired.begin();
  while (a != cited.end() && b != retired.end()) {
    if (*a < *b) {
      ++a;
    } else if (*b < *a) {
      ++b;
    } else {
      return true;
    }
  }
  return false;
}

void KbChangeLog::record(std::uint64_t version, const std::vector<std::string>& retired) {
  MutexLock lock(mu_);
  changes_.push_back({version, retired});
  current_ = std::max(current_, version);
  while (changes_.size() > kCapacity) {
    first_known_ = changes_.front().version;
    changes_.pop_front();
  }
}

bool KbChangeLog::valid(std::uint64_t version, const std::vector<std::string>& cited) const {
  if (version == 0) return true;
  MutexLock lock(mu_);
  if (version >= current_) return true;
  if (version < first_known_) return false;
  for (const Change& c : changes_) {
    if (retires(version, cited, c.version, c.retired)) return false;
  }
  return true;
}

}  // namespace sluice::cache
