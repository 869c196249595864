#include "connectors/kafka/offset_tracker.h"

#include <algorithm>

namespace sluice::kafka {

void OffsetTracker::assign(const std::vector<Partition>& partitions) {
  MutexLock lock(mu_);
  for (const auto& p : partitions) {
    State& s = partitions_[p];
    outstanding_ -= s.outstanding.size();
    s = State{};
    s.epoch = next_epoch_++;
  }
}

void OffsetTracker::revoke(const std::vector<Partition>& partitions) {
  MutexLock lock(mu_);
  for (const auto& p : partitions) {
    auto it = partitions_.find(p);
    if (it == partitions_.end()) continue;
    outstanding_ -= it->second.outstanding.size();
    partitions_.erase(it);
  }
}

std::uint64_t OffsetTracker::take(const std::string& topic, std::int32_t partition, std::int64_t offset) {
  MutexLock lock(mu_);
  auto it = partitions_.find({topic, partition});
  if (it == partitions_.end()) return 0;
  State& s = it->second;
  if (s.outstanding.insert(offset).second) ++outstanding_;
  s.next_after_taken = std::max(s.next_after_taken, offset + 1);
  return s.epoch;
}

void OffsetTracker::ack(const std::string& topic, std::int32_t partition, std::int64_t offset, std::uint64_t epoch) {
  MutexLock lock(mu_);
  auto it = partitions_.find({topic, partition});
  if (it == partitions_.end() || it->second.epoch != epoch) return;
  if (it->second.outstanding.erase(offset)) --outstanding_;
}

std::vector<OffsetTracker::Commit> OffsetTracker::commits_due(bool all) {
  MutexLock lock(mu_);
  std::vector<Commit> out;
  for (auto& [p, s] : partitions_) {
    const std::int64_t at = point(s);
    if (at < 0 || (!all && at == s.committed)) continue;
    s.committed = at;
    out.push_back({p.first, p.second, at});
  }
  return out;
}

std::vector<OffsetTracker::Commit> OffsetTracker::commits_for(const std::vector<Partition>& partitions) {
  MutexLock lock(mu_);
  std::vector<Commit> out;
  for (const auto& p : partitions) {
    auto it = partitions_.find(p);
    if (it == partitions_.end()) continue;
    const std::int64_t at = point(it->second);
    if (at < 0) continue;
    it->second.committed = at;
    out.push_back({p.first, p.second, at});
  }
  return out;
}

std::size_t OffsetTracker::outstanding() const {
  MutexLock lock(mu_);
  return outstanding_;
}

bool OffsetTracker::owns(const std::string& topic, std::int32_t partition) const {
  MutexLock lock(mu_);
  return partitions_.count({topic, partition}) != 0;
}

}  // namespace sluice::kafka
