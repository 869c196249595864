#include "nodes/cache/cache_wire.h"

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "graph/json_reading.h"

namespace sluice::cache {
namespace {

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

v1::CachedAnswerRecord answer_record(const CachedAnswer& answer, const Clock& clock) {
  v1::CachedAnswerRecord r;
  r.set_version(kCachedAnswerRecordVersion);
  for (const auto& p : answer.parts) {
    auto* part = r.add_parts();
    part->set_event(p.event);
    part->set_type(p.type);
    part->set_text(p.text);
  }
  r.set_prompt_tokens(answer.usage.prompt_tokens);
  r.set_completion_tokens(answer.usage.completion_tokens);
  r.set_finish_reason(answer.finish_reason);
  r.set_kb_version(answer.kb_version);
  for (const auto& c : answer.cited) r.add_cited(c);
  r.set_seconds(answer.seconds);
  const Nanos age = clock.now() - answer.created;
  r.set_created_unix_ms(unix_ms() - age / 1'000'000);
  return r;
}

std::shared_ptr<const CachedAnswer> answer_from_record(const v1::CachedAnswerRecord& r, const Clock& clock) {
  if (r.version() != kCachedAnswerRecordVersion) return nullptr;
  const std::int64_t now_ms = unix_ms();
  // Out of range is another writer's bug or a forged value: not an answer to serve. (A clock a
  // little ahead on the writer's machine gives a creation time just past now: age 0.)
  constexpr std::int64_t kClockSkewMs = 60'000;
  if (r.created_unix_ms() <= 0 || r.created_unix_ms() > now_ms + kClockSkewMs || r.prompt_tokens() < 0 ||
      r.completion_tokens() < 0 || !std::isfinite(r.seconds()) || r.seconds() < 0) {
    return nullptr;
  }
  auto a = std::make_shared<CachedAnswer>();
  for (const auto& p : r.parts()) a->parts.push_back({p.event(), p.type(), p.text()});
  a->usage.prompt_tokens = r.prompt_tokens();
  a->usage.completion_tokens = r.completion_tokens();
  a->finish_reason = r.finish_reason();
  a->kb_version = r.kb_version();
  a->cited.assign(r.cited().begin(), r.cited().end());
  a->seconds = r.seconds();
  const std::int64_t age_ms = std::max<std::int64_t>(0, now_ms - r.created_unix_ms());  // both in (0, now + skew]
  a->created = clock.now() - age_ms * 1'000'000;
  return a;
}

std::string encode_cache_event(const CacheEvent& e) {
  nlohmann::json j{{"from", e.from}};
  if (e.op == CacheEvent::Op::kAdd) {
    j["op"] = "add";
    j["id"] = e.id;
  } else {
    j["op"] = "invalidate";
    j["all"] = e.invalidation.all;
    j["chunks"] = e.invalidation.chunks;
    if (e.invalidation.tenant) j["tenant"] = *e.invalidation.tenant;
  }
  // Replaced, not thrown: a chunk key or tenant is bytes, and JSON wants UTF-8.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<CacheEvent> decode_cache_event(std::string_view message) {
  if (json_nul_byte(message)) return std::nullopt;
  const auto j = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto string_field = [&](const char* name) -> const std::string* {
    auto it = j.find(name);
    return it != j.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  const std::string* from = string_field("from");
  const std::string* op = string_field("op");
  if (!from || !op) return std::nullopt;
  CacheEvent e;
  e.from = *from;
  if (*op == "add") {
    const std::string* id = string_field("id");
    if (!id || id->empty()) return std::nullopt;
    e.op = CacheEvent::Op::kAdd;
    e.id = *id;
    return e;
  }
  if (*op != "invalidate") return std::nullopt;
  e.op = CacheEvent::Op::kInvalidate;
  if (auto all = j.find("all"); all != j.end()) {
    if (!all->is_boolean()) return std::nullopt;
    e.invalidation.all = all->get<bool>();
  }
  if (j.contains("tenant")) {
    const std::string* tenant = string_field("tenant");
    if (!tenant) return std::nullopt;
    e.invalidation.tenant = *tenant;
  }
  if (auto chunks = j.find("chunks"); chunks != j.end()) {
    if (!chunks->is_array()) return std::nullopt;
    for (const auto& c : *chunks) {
      if (!c.is_string()) return std::nullopt;
      e.invalidation.chunks.push_back(c.get<std::string>());
    }
  }
  return e;
}

}  // namespace sluice::cache
