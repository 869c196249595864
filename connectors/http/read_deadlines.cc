#include "connectors/http/read_deadlines.h"

namespace sluice::http {
namespace {

// Durations come from files ("100000h" is valid): saturate instead of wrapping past kNoDeadline.
Nanos add_saturated(Nanos a, Nanos b) { return a > kNoDeadline - b ? kNoDeadline : a + b; }

// n bytes at `rate` bytes/s, in nanoseconds, without the overflow of n * 1e9.
Nanos time_for(std::uint64_t bytes, std::uint64_t rate) {
  const std::uint64_t whole = bytes / rate;
  if (whole >= static_cast<std::uint64_t>(kNoDeadline / kNanosPerSecond)) return kNoDeadline;
  const std::uint64_t rest = bytes % rate;  // rest * 1e9 in 128 bits: a code-built config may set any rate
  return static_cast<Nanos>(whole) * kNanosPerSecond +
         static_cast<Nanos>(static_cast<unsigned __int128>(rest) * kNanosPerSecond / rate);
}

}  // namespace

void ReadDeadlines::start_head(std::uint64_t id, ReadClock& clock, Nanos now) {
  if (clock.reading_head) return;
  clock.reading_head = true;
  clock.reading_body = false;
  clock.started = now;
  clock.body_bytes = 0;
  if (running(clock) != ReadTimeout::kNone) arm(id, clock, deadline(clock));
}

void ReadDeadlines::start_body(std::uint64_t id, ReadClock& clock, Nanos now) {
  if (clock.reading_body) return;
  clock.reading_head = false;
  clock.reading_body = true;
  clock.started = now;
  clock.body_bytes = 0;
  // A header entry later than the body's deadline is moved earlier; an earlier one re-arms
  // when it comes due.
  if (running(clock) != ReadTimeout::kNone) arm(id, clock, deadline(clock));
}

void ReadDeadlines::stop(std::uint64_t id, ReadClock& clock) {
  if (clock.armed) timers_.erase({clock.armed_at, id});
  clock = ReadClock{};
}

ReadTimeout ReadDeadlines::running(const ReadClock& clock) const {
  if (clock.reading_head && policy_.header_timeout > 0) return ReadTimeout::kHeader;
  if (clock.reading_body && policy_.body_min_rate > 0) return ReadTimeout::kBody;
  return ReadTimeout::kNone;
}

Nanos ReadDeadlines::deadline(const ReadClock& clock) const {
  switch (running(clock)) {
    case ReadTimeout::kHeader:
      return add_saturated(clock.started, policy_.header_timeout);
    case ReadTimeout::kBody:
      return add_saturated(add_saturated(clock.started, policy_.body_rate_grace),
                           time_for(clock.body_bytes, policy_.body_min_rate));
    case ReadTimeout::kNone:
      break;
  }
  return kNoDeadline;
}

void ReadDeadlines::arm(std::uint64_t id, ReadClock& clock, Nanos at) {
  if (clock.armed) {
    if (clock.armed_at <= at) return;
    timers_.erase({clock.armed_at, id});
  }
  timers_.emplace(at, id);
  clock.armed = true;
  clock.armed_at = at;
}

}  // namespace sluice::http
