// CachedAnswer: one answer as the caches keep it, everything a replay needs to give a client
// the same bytes a live answer did (the pieces in order, the side events such as "sources",
// usage and finish reason), plus what invalidation reads: the knowledge-base version the
// answer was retrieved at and the chunk keys it cited (Citation::chunk_key).
//
// AnswerRecorder is the tap (Request::add_tap) a cache puts on a request it missed: it copies
// the answer as it streams and, when the request completes successfully (finish "stop" or
// "length"), hands the finished CachedAnswer to the cache. Answers past `max_bytes` are not
// kept (the recording stops, nothing is stored).
//
// Thread-safety: a CachedAnswer is immutable once stored (shared_ptr<const>); an
// AnswerRecorder is called under its request's lock, one call at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/clock.h"
#include "graph/request.h"

namespace sluice::cache {

struct AnswerPart {
  bool event = false;  // false: a piece of the answer text; true: a side event
  std::string type;    // the event's type
  std::string text;    // the piece, or the event's JSON
};

struct CachedAnswer {
  std::vector<AnswerPart> parts;
  Usage usage;
  std::string finish_reason = "stop";
  std::uint64_t kb_version = 0;     // the knowledge-base snapshot the answer was built on (0: none)
  std::vector<std::string> cited;   // chunk keys of its citations, sorted
  double seconds = 0;               // arrival to completion of the original: what a hit saves
  Nanos created = 0;
  // Memory the entry holds, for the byte budget.
  std::size_t bytes() const;
};

// Streams `answer` into `request` (usage and finish reason first, then the parts, then
// completion), exactly as the node that made it did.
void replay(const CachedAnswer& answer, Request& request, Nanos now);

class AnswerRecorder final : public ResponseSink {
 public:
  using Store = std::function<void(std::shared_ptr<const CachedAnswer>)>;
  AnswerRecorder(Store store, std::size_t max_bytes, Nanos now);
  void on_token(std::string_view piece) override;
  void on_event(std::string_view type, std::string_view json) override;
  void on_complete(const Request& request) override;

 private:
  void add(AnswerPart part);
  Store store_;
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  bool overflow_ = false;
  std::shared_ptr<CachedAnswer> answer_;
};

}  // namespace sluice::cache
