// What answer cache instances exchange through Redis (redis_tier.h), as pure functions with no
// connection, so that what another process wrote is read the same way here and by the fuzzer:
//  - the entry record: a CachedAnswer <-> v1::CachedAnswerRecord (proto/sluice/cache_record.proto);
//    a record that is not version 1, or whose fields are out of range (a creation time not in
//    the past, negative token counts, a non-finite duration), reads as no answer;
//  - the pub/sub events on <prefix>events, one JSON object each:
//      {"from": "<instance>", "op": "add", "id": "<entry id>"}
//      {"from": "<instance>", "op": "invalidate", "all": false, "tenant": "t", "chunks": ["..."]}
//    Any other text (not JSON, another op, fields of the wrong type) decodes to nothing: anyone
//    able to PUBLISH on the Redis can send it, and it must never stop the subscriber.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/clock.h"
#include "nodes/cache/cached_answer.h"
#include "sluice/cache_record.pb.h"

namespace sluice::cache {

// An invalidation as instances exchange it.
struct SharedInvalidation {
  bool all = false;                   // every entry
  std::optional<std::string> tenant;  // or this tenant's entries
  std::vector<std::string> chunks;    // or the entries citing any of these chunk keys
  bool operator==(const SharedInvalidation&) const = default;
};

constexpr std::uint32_t kCachedAnswerRecordVersion = 1;

// CachedAnswer <-> record (the answer's fields; the caller sets key, tenant, question, vector).
v1::CachedAnswerRecord answer_record(const CachedAnswer& answer, const Clock& clock);
// Null when the record is of another version or out of range; `created` is placed on `clock`
// by the record's age (wall clock: instances share no monotonic clock).
std::shared_ptr<const CachedAnswer> answer_from_record(const v1::CachedAnswerRecord& record, const Clock& clock);

struct CacheEvent {
  enum class Op { kAdd, kInvalidate };
  std::string from;  // the sending instance
  Op op = Op::kAdd;
  std::string id;                   // kAdd: the new entry's id
  SharedInvalidation invalidation;  // kInvalidate
  bool operator==(const CacheEvent&) const = default;
};
std::string encode_cache_event(const CacheEvent& event);
// Never throws; nullopt for anything that is not a well-formed event.
std::optional<CacheEvent> decode_cache_event(std::string_view message);

}  // namespace sluice::cache
