// libFuzzer target for what answer cache instances read from Redis (nodes/cache/cache_wire.h,
// redis_connection.h; run by scripts/fuzz): each input is read three ways. Nothing here catches
// what they might throw: an escaping exception crashes the fuzzer, which is the point (the
// events are read on the subscriber thread, where one would end the process). Besides:
//  - as a redis_url: accepted means a host, a port of 1-65535 and a database >= 0; refused means
//    a message that does not depend on the password part of the input;
//  - as a pub/sub event: a decoded event encodes and decodes to itself;
//  - as a CachedAnswerRecord (protobuf bytes): an answer read from it has sane fields, and
//    written back and read again gives the same parts, citations and usage.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "nodes/cache/cache_wire.h"
#include "nodes/cache/redis_connection.h"
#include "tests/support/fuzz_check.h"

namespace {

using namespace sluice::cache;

void fuzz_url(std::string_view text) {
  RedisAddress a;
  const sluice::Status s = parse_redis_url(text, &a);
  if (s.ok()) {
    FUZZ_CHECK(!a.host.empty());
    FUZZ_CHECK(a.port >= 1 && a.port <= 65535);
    FUZZ_CHECK(a.db >= 0);
    return;
  }
  FUZZ_CHECK(!s.message.empty());
  // The message does not depend on the password (what lies between "redis://" and the last
  // '@'): the same URL with another password gives the same message, so nothing of it leaks.
  // (Looking for the password's text in the message was a weaker oracle: a "password" cut from
  // the URL form the message quotes, or from its "***", is found there without leaking.)
  const auto at = text.rfind('@');
  if (text.substr(0, 8) == "redis://" && at != std::string_view::npos && at > 8) {
    const std::string other = "redis://:x" + std::string(text.substr(at));
    RedisAddress b;
    const sluice::Status t = parse_redis_url(other, &b);
    FUZZ_CHECK(!t.ok());
    FUZZ_CHECK(t.message == s.message);
  }
}

void fuzz_event(std::string_view text) {
  const auto event = decode_cache_event(text);
  if (!event) return;
  const auto again = decode_cache_event(encode_cache_event(*event));
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *event);
}

void fuzz_record(std::string_view bytes) {
  sluice::v1::CachedAnswerRecord record;
  if (!record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  const sluice::SteadyClock clock;
  const auto answer = answer_from_record(record, clock);
  if (!answer) return;
  FUZZ_CHECK(answer->usage.prompt_tokens >= 0 && answer->usage.completion_tokens >= 0);
  FUZZ_CHECK(answer->seconds >= 0);
  FUZZ_CHECK(answer->created <= clock.now());
  const auto back = answer_from_record(answer_record(*answer, clock), clock);
  FUZZ_CHECK(back != nullptr);
  FUZZ_CHECK(back->parts.size() == answer->parts.size());
  for (std::size_t i = 0; i < back->parts.size(); ++i) {
    FUZZ_CHECK(back->parts[i].event == answer->parts[i].event && back->parts[i].type == answer->parts[i].type &&
               back->parts[i].text == answer->parts[i].text);
  }
  FUZZ_CHECK(back->cited == answer->cited);
  FUZZ_CHECK(back->usage.prompt_tokens == answer->usage.prompt_tokens);
  FUZZ_CHECK(back->kb_version == answer->kb_version && back->finish_reason == answer->finish_reason);
}

void ignore_log(google::protobuf::LogLevel, const char*, int, const std::string&) {}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs each string field of invalid UTF-8 it parses; that is expected here.
  google::protobuf::SetLogHandler(&ignore_log);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz_url(text);
  fuzz_event(text);
  fuzz_record(text);
  return 0;
}
