// Cache keys of the answer caches: typed, domain-separated byte strings of everything that
// decides an answer, compared whole on every hit (a hash only picks the bucket), so two
// different requests can never share an entry through a hash collision.
//
// CacheKey encodes each field as its name and value, each length-prefixed, after a domain
// string naming the key's kind and version ("sluice.response_cache.v1"): no two different field
// lists give the same bytes ("ab"+"c" vs "a"+"bc"), and the keys of two kinds never meet.
//
// request_cache_key / semantic_scope make the keys of a request (docs/caching.md, "Keys and
// scopes"): tenant, pipeline and its fingerprint (graph/node.h: any setting that can change an
// answer), the process's system fingerprint (build and every loaded model file's identity),
// the request's kind, model, sampling parameters, token limit and stop strings, and its
// whitespace-normalised messages or prompt. The semantic scope is the same without the last
// user message, the question the semantic cache compares by meaning.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "graph/request.h"

namespace sluice::cache {

class CacheKey {
 public:
  explicit CacheKey(std::string_view domain);
  CacheKey& field(std::string_view name, std::string_view value);
  CacheKey& field(std::string_view name, std::int64_t value);
  CacheKey& field(std::string_view name, double value);
  const std::string& bytes() const { return bytes_; }

 private:
  void put(std::string_view part);
  std::string bytes_;
};

// What the node knows of the pipeline it serves.
struct CacheIdentity {
  std::string pipeline;
  std::string pipeline_fingerprint;
  std::string system_fingerprint;  // graph/system_fingerprint.h, read once the models are loaded
};

// Why `request` must not be cached ("" when it may be): only chat and completion requests
// with a text answer are; a sampled request (temperature > 0) without a seed only when
// `cache_sampled`.
std::string not_cacheable(const RequestInput& input, bool cache_sampled);

// Runs of whitespace become one space; leading and trailing whitespace goes.
std::string normalize_whitespace(std::string_view text);

// The exact cache's key of a cacheable request.
std::string request_cache_key(const Request& request, const CacheIdentity& identity);
// The semantic cache's scope of a cacheable request: the exact key's fields except the last
// user message (or the prompt), which `semantic_question` gives: that text with its whitespace
// normalised and its courtesy taken off (question_courtesy.h), as `semantic_question_text`
// does to any text. The semantic cache embeds, verifies and stores this form.
std::string semantic_scope(const Request& request, const CacheIdentity& identity);
std::string semantic_question(const RequestInput& input);
std::string semantic_question_text(std::string_view text);

}  // namespace sluice::cache
