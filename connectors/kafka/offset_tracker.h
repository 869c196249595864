// OffsetTracker: for each partition this worker owns, the records taken and not yet
// acknowledged, and so up to where its offset may be committed.
//
// At-least-once end to end: a record's offset may be committed only once the broker has
// acknowledged what the worker wrote for it (its result, its retry or its dead letter). Records
// finish out of order (a short job overtakes a long one), so the commit point of a partition is
// its lowest offset still outstanding, or, with none outstanding, one past the highest taken.
// A crash then redoes at most the outstanding records and those acknowledged since the last
// commit; it never skips one.
//
// Rebalances: assign() gives a partition a fresh epoch; take() returns it and ack() must bring
// it back. revoke() forgets a partition, so the acknowledgement of a job that was in flight
// when its partition moved is ignored: the partition's new owner redoes that job (a duplicate
// the job id identifies) and commits for itself.
//
// Thread-safety: thread-safe (the consumer thread takes and commits; delivery reports ack).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/mutex.h"

namespace sluice::kafka {

class OffsetTracker {
 public:
  using Partition = std::pair<std::string, std::int32_t>;  // topic, partition
  struct Commit {
    std::string topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;  // the next offset to consume: everything before it is done
  };

  // The worker now owns these partitions (a rebalance's assignment).
  void assign(const std::vector<Partition>& partitions);
  // The worker no longer owns these; their outstanding records are forgotten.
  void revoke(const std::vector<Partition>& partitions);
  // A record was taken; returns the partition's epoch for ack(), or 0 when the partition is not
  // assigned (the record is then not tracked and must not be processed).
  std::uint64_t take(const std::string& topic, std::int32_t partition, std::int64_t offset);
  // What was written for the record is acknowledged. Ignored for a stale epoch.
  void ack(const std::string& topic, std::int32_t partition, std::int64_t offset, std::uint64_t epoch);
  // The partitions whose commit point moved since the last call (or, with `all`, every
  // assigned partition that has taken a record), with that point; marks them committed.
  std::vector<Commit> commits_due(bool all = false);
  // The commit points of `partitions` (for the commit before they are revoked).
  std::vector<Commit> commits_for(const std::vector<Partition>& partitions);
  // Records taken and not acknowledged, over every partition.
  std::size_t outstanding() const;
  bool owns(const std::string& topic, std::int32_t partition) const;

 private:
  struct State {
    std::uint64_t epoch = 0;
    std::set<std::int64_t> outstanding;
    std::int64_t next_after_taken = -1;  // -1: nothing taken yet
    std::int64_t committed = -1;         // the last point handed out by commits_due
  };
  static std::int64_t point(const State& s) {
    return s.outstanding.empty() ? s.next_after_taken : *s.outstanding.begin();
  }

  mutable Mutex mu_;
  std::map<Partition, State> partitions_ GUARDED_BY(mu_);
  std::uint64_t next_epoch_ GUARDED_BY(mu_) = 1;
  std::size_t outstanding_ GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::kafka
