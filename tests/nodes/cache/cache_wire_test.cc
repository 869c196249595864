// What instances exchange through Redis (nodes/cache/cache_wire.h), without a Redis: records out
// of range are no answer, events round-trip, and hostile or malformed events (anyone who can
// PUBLISH may send them) decode to nothing instead of throwing on the subscriber thread.
#include <gtest/gtest.h>

#include <limits>

#include "nodes/cache/cache_wire.h"

namespace sluice::cache {
namespace {

v1::CachedAnswerRecord good_record(const Clock& clock) {
  CachedAnswer a;
  a.parts.push_back({false, "", "text"});
  a.created = clock.now();
  return answer_record(a, clock);
}

TEST(CacheWire, RecordsOutOfRangeAreNoAnswer) {
  SteadyClock clock;
  ASSERT_NE(answer_from_record(good_record(clock), clock), nullptr);
  auto bad = [&](auto change) {
    v1::CachedAnswerRecord r = good_record(clock);
    change(r);
    return answer_from_record(r, clock) == nullptr;
  };
  EXPECT_TRUE(bad([](auto& r) { r.set_created_unix_ms(std::numeric_limits<std::int64_t>::min()); }));
  EXPECT_TRUE(bad([](auto& r) { r.set_created_unix_ms(0); }));
  EXPECT_TRUE(bad([](auto& r) { r.set_created_unix_ms(std::numeric_limits<std::int64_t>::max()); }));
  EXPECT_TRUE(bad([](auto& r) { r.set_prompt_tokens(-1); }));
  EXPECT_TRUE(bad([](auto& r) { r.set_completion_tokens(-5); }));
  EXPECT_TRUE(bad([](auto& r) { r.set_seconds(std::numeric_limits<double>::quiet_NaN()); }));
  EXPECT_TRUE(bad([](auto& r) { r.set_seconds(-1); }));
  // A writer's clock a few seconds ahead is skew, not forgery: age 0.
  EXPECT_FALSE(bad([](auto& r) { r.set_created_unix_ms(r.created_unix_ms() + 5000); }));
}

TEST(CacheWire, EventsRoundTrip) {
  const CacheEvent add{"inst1", CacheEvent::Op::kAdd, "inst1-7", {}};
  EXPECT_EQ(decode_cache_event(encode_cache_event(add)), add);
  const CacheEvent inv{"inst2", CacheEvent::Op::kInvalidate, "", {false, "acme", {"doc#1", "doc#2"}}};
  EXPECT_EQ(decode_cache_event(encode_cache_event(inv)), inv);
  const CacheEvent all{"inst2", CacheEvent::Op::kInvalidate, "", {true, std::nullopt, {}}};
  EXPECT_EQ(decode_cache_event(encode_cache_event(all)), all);
}

TEST(CacheWire, MalformedEventsDecodeToNothing) {
  for (const char* m : {"", "not json", "[]", "{}", "5", R"({"from": 5, "op": "add", "id": "x"})",
                        R"({"from": "a", "op": 1})", R"({"from": "a", "op": "add"})", R"({"from": "a", "op": "add", "id": ""})",
                        R"({"from": "a", "op": "drop"})", R"({"from": "a", "op": "invalidate", "all": "yes"})",
                        R"({"from": "a", "op": "invalidate", "tenant": 3})", R"({"from": "a", "op": "invalidate", "chunks": "doc#1"})",
                        R"({"from": "a", "op": "invalidate", "chunks": ["doc#1", 2]})", "{\"from\": \"a\", \"op\": \"add\", \"id\": \"\xff\"}"}) {
    EXPECT_FALSE(decode_cache_event(m).has_value()) << m;
  }
  EXPECT_FALSE(decode_cache_event(encode_cache_event(CacheEvent{"a", CacheEvent::Op::kAdd, "a-1", {}}) + std::string(1, '\0') + "x"))
      << "bytes after a NUL are not dropped unread";
  // Bytes that are not UTF-8 in a chunk key are replaced on the way out, not thrown.
  const CacheEvent odd{"i", CacheEvent::Op::kInvalidate, "", {false, std::nullopt, {"doc\xff#1"}}};
  const auto back = decode_cache_event(encode_cache_event(odd));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->invalidation.chunks.size(), 1u);
}

}  // namespace
}  // namespace sluice::cache
