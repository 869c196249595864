#include "nodes/cache/cache_key.h"

#include "nodes/cache/question_courtesy.h"

#include <cstdio>

namespace sluice::cache {

CacheKey::CacheKey(std::string_view domain) { put(domain); }

void CacheKey::put(std::string_view part) {
  const auto n = static_cast<std::uint32_t>(part.size());
  for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  bytes_.append(part);
}

CacheKey& CacheKey::field(std::string_view name, std::string_view value) {
  put(name);
  bytes_.push_back('s');
  put(value);
  return *this;
}

CacheKey& CacheKey::field(std::string_view name, std::int64_t value) {
  put(name);
  bytes_.push_back('i');
  put(std::to_string(value));
  return *this;
}

CacheKey& CacheKey::field(std::string_view name, double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  put(name);
  bytes_.push_back('d');
  put(text);
  return *this;
}

std::string not_cacheable(const RequestInput& input, bool cache_sampled) {
  if (input.kind != RequestInput::Kind::kChat && input.kind != RequestInput::Kind::kCompletion) {
    return "not a chat or completion request";
  }
  // The grammar of a structured answer is not part of the key (it is compiled from the
  // request's schema, which the key would have to carry whole); such answers are not cached.
  if (input.structured.kind != StructuredOutput::Kind::kText) return "structured output";
  if (input.sampling.temperature > 0 && !input.sampling.seed && !cache_sampled) return "sampled without a seed";
  return "";
}

std::string normalize_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    const bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (ws) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

namespace {

// The fields both keys share: everything but the question.
CacheKey common_key(std::string_view domain, const Request& request, const CacheIdentity& identity) {
  const RequestInput& in = request.input();
  const SamplingParams& s = in.sampling;
  CacheKey key(domain);
  key.field("tenant", request.tenant)
      .field("pipeline", identity.pipeline)
      .field("pipeline_fingerprint", identity.pipeline_fingerprint)
      .field("system_fingerprint", identity.system_fingerprint)
      .field("kind", static_cast<std::int64_t>(in.kind))
      .field("model", in.model)
      .field("max_tokens", static_cast<std::int64_t>(in.max_tokens))
      .field("temperature", static_cast<double>(s.temperature))
      .field("top_k", static_cast<std::int64_t>(s.top_k))
      .field("top_p", static_cast<double>(s.top_p))
      .field("min_p", static_cast<double>(s.min_p))
      .field("repetition_penalty", static_cast<double>(s.repetition_penalty))
      .field("presence_penalty", static_cast<double>(s.presence_penalty))
      .field("frequency_penalty", static_cast<double>(s.frequency_penalty))
      .field("repeat_last_n", static_cast<std::int64_t>(s.repeat_last_n))
      .field("seed", s.seed ? std::to_string(*s.seed) : std::string("none"));
  key.field("stops", static_cast<std::int64_t>(in.stop.size()));
  for (const auto& stop : in.stop) key.field("stop", stop);
  return key;
}

// Index of the question in a chat: the last user message (RequestInput::query()).
int question_index(const RequestInput& in) {
  for (int i = static_cast<int>(in.messages.size()) - 1; i >= 0; --i) {
    if (in.messages[i].role == "user") return i;
  }
  return static_cast<int>(in.messages.size()) - 1;
}

}  // namespace

std::string request_cache_key(const Request& request, const CacheIdentity& identity) {
  const RequestInput& in = request.input();
  CacheKey key = common_key("sluice.response_cache.v1", request, identity);
  if (in.kind == RequestInput::Kind::kChat) {
    key.field("messages", static_cast<std::int64_t>(in.messages.size()));
    for (const auto& m : in.messages) key.field("role", m.role).field("content", normalize_whitespace(m.content));
  } else {
    key.field("prompt", normalize_whitespace(in.prompt));
  }
  return key.bytes();
}

std::string semantic_scope(const Request& request, const CacheIdentity& identity) {
  const RequestInput& in = request.input();
  CacheKey key = common_key("sluice.semantic_cache.v1", request, identity);
  if (in.kind == RequestInput::Kind::kChat) {
    const int q = question_index(in);
    key.field("messages", static_cast<std::int64_t>(in.messages.size())).field("question_at", static_cast<std::int64_t>(q));
    for (int i = 0; i < static_cast<int>(in.messages.size()); ++i) {
      if (i == q) continue;
      key.field("role", in.messages[i].role).field("content", normalize_whitespace(in.messages[i].content));
    }
  }
  return key.bytes();
}

std::string semantic_question(const RequestInput& input) { return semantic_question_text(input.query()); }

std::string semantic_question_text(std::string_view text) { return without_courtesy(normalize_whitespace(text)); }

}  // namespace sluice::cache
