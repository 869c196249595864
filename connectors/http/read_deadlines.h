// ReadDeadlines: the time limits on reading a request, so that a client sending a byte now and
// then (slowloris) cannot hold a connection for ever. Two rules, each 0 to disable:
//
//   header_timeout   the head (request line and headers) must be complete this long after its
//                    clock started. The clock of a connection's first request starts when the
//                    connection is accepted: nobody opens a connection to wait, and a silent
//                    one holds a descriptor as surely as a trickling one. The clock of each
//                    later request on a keep-alive connection starts at its first byte, or at
//                    the end of the previous response when its bytes were already waiting; the
//                    wait between requests belongs to idle_timeout.
//   body_min_rate    once the head is in, n bytes of the body must be in by
//   body_rate_grace  head + grace + n / rate (as Apache's mod_reqtimeout MinRate): the grace is
//                    free, and past it the body must keep an average of `rate` bytes/s; bytes
//                    that came early are credit.
//
// The event loop keeps a ReadClock in each connection and calls start_head / start_body /
// stop as the connection moves between states; expire_due() then reports the connections
// whose read has run out. Cost: one timer entry per connection with a running deadline, in
// time order, so a tick costs O(1) when nothing is due and O(log n) per due entry. The body's
// deadline moves later with every byte; instead of re-sorting on each read, its entry keeps
// the earlier time and is re-armed when it comes due, so reads cost nothing here.
//
// Thread-safety: none; one per event loop, used on its thread.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <utility>

#include "graph/clock.h"

namespace sluice::http {

enum class ReadTimeout { kNone, kHeader, kBody };

// The read state of one connection, as far as the deadlines care.
struct ReadClock {
  bool reading_head = false;    // the head's clock runs
  bool reading_body = false;    // the head is in, the body is still arriving
  Nanos started = 0;            // when the running clock started (head or body)
  std::uint64_t body_bytes = 0;  // body bytes in so far; the event loop keeps it current
  bool armed = false;           // this connection has an entry in the timer set, at armed_at
  Nanos armed_at = 0;
};

class ReadDeadlines {
 public:
  struct Policy {
    Nanos header_timeout = 0;        // 0: the head may take any time
    std::uint64_t body_min_rate = 0;  // bytes per second; 0: no rate is enforced
    Nanos body_rate_grace = 0;
  };

  explicit ReadDeadlines(Policy policy) : policy_(policy) {}

  const Policy& policy() const { return policy_; }

  // A head starts (no-op while one is already being read).
  void start_head(std::uint64_t id, ReadClock& clock, Nanos now);
  // The head is in and a body follows: the head's clock stops and the body's starts (no-op
  // while the body is already being read).
  void start_body(std::uint64_t id, ReadClock& clock, Nanos now);
  // The request was read (or the connection ends): no deadline until the next start.
  void stop(std::uint64_t id, ReadClock& clock);

  // Which rule bounds this read now, and until when (kNoDeadline under kNone).
  ReadTimeout running(const ReadClock& clock) const;
  Nanos deadline(const ReadClock& clock) const;

  // The earliest time at which expire_due() may find something; nullopt when nothing runs.
  std::optional<Nanos> next_due() const {
    if (timers_.empty()) return std::nullopt;
    return timers_.begin()->first;
  }
  // Connections with an entry in the timer set.
  std::size_t armed() const { return timers_.size(); }

  // For each connection whose read ran out by `now`: stops its clock, then calls
  // expire(id, which). `find(id)` returns the connection's ReadClock*, or nullptr when it is
  // gone. `expire` may close the connection.
  template <class Find, class Expire>
  void expire_due(Nanos now, Find&& find, Expire&& expire) {
    while (!timers_.empty() && timers_.begin()->first <= now) {
      const std::uint64_t id = timers_.begin()->second;
      timers_.erase(timers_.begin());
      ReadClock* clock = find(id);
      if (!clock) continue;
      clock->armed = false;
      const ReadTimeout which = running(*clock);
      if (which == ReadTimeout::kNone) continue;
      const Nanos due = deadline(*clock);
      if (due > now) {  // the body moved its deadline on since the entry was made
        arm(id, *clock, due);
        continue;
      }
      stop(id, *clock);
      expire(id, which);
    }
  }

 private:
  // Makes sure an entry exists no later than `at` (an earlier one is kept: it re-arms).
  void arm(std::uint64_t id, ReadClock& clock, Nanos at);

  Policy policy_;
  std::set<std::pair<Nanos, std::uint64_t>> timers_;
};

}  // namespace sluice::http
