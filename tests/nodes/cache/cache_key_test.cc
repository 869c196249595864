#include <gtest/gtest.h>

#include "nodes/cache/cache_key.h"

namespace sluice::cache {
namespace {

RequestPtr chat(std::string question, std::string tenant = "", float temperature = 0) {
  RequestInput in;
  in.kind = RequestInput::Kind::kChat;
  in.model = "sluice";
  in.messages = {{"system", "Be brief."}, {"user", std::move(question)}};
  in.sampling.temperature = temperature;
  auto r = std::make_shared<Request>(1, std::move(in), nullptr);
  r->tenant = std::move(tenant);
  return r;
}

const CacheIdentity kId{"default", "0123456789abcdef", ""};

TEST(CacheKey, FieldsAreLengthPrefixedSoBoundariesCannotShift) {
  EXPECT_NE(CacheKey("d").field("a", std::string_view("bc")).bytes(), CacheKey("d").field("ab", std::string_view("c")).bytes());
  EXPECT_NE(CacheKey("d1").field("a", std::string_view("b")).bytes(), CacheKey("d2").field("a", std::string_view("b")).bytes());
  // A string "1" and an integer 1 are different fields.
  EXPECT_NE(CacheKey("d").field("n", std::string_view("1")).bytes(), CacheKey("d").field("n", std::int64_t{1}).bytes());
}

TEST(CacheKey, WhitespaceAloneDoesNotChangeTheKey) {
  EXPECT_EQ(request_cache_key(*chat("How do I  enable\n dark mode? "), kId), request_cache_key(*chat("How do I enable dark mode?"), kId));
  EXPECT_EQ(normalize_whitespace("  a \t b\n"), "a b");
}

TEST(CacheKey, NoKeyIsSharedAcrossTenantsPipelinesSamplingOrQuestions) {
  const std::string base = request_cache_key(*chat("q"), kId);
  EXPECT_NE(base, request_cache_key(*chat("q", "acme"), kId));
  EXPECT_NE(base, request_cache_key(*chat("q"), CacheIdentity{"other", kId.pipeline_fingerprint, ""}));
  EXPECT_NE(base, request_cache_key(*chat("q"), CacheIdentity{kId.pipeline, "fedcba9876543210", ""}));
  EXPECT_NE(base, request_cache_key(*chat("q"), CacheIdentity{kId.pipeline, kId.pipeline_fingerprint, "fp_other_model"}));
  EXPECT_NE(base, request_cache_key(*chat("q", "", 0.5f), kId));
  EXPECT_NE(base, request_cache_key(*chat("Q"), kId));
  // The exact and the semantic keys of one request never meet (domains differ).
  EXPECT_NE(base, semantic_scope(*chat("q"), kId));
}

TEST(CacheKey, TheSemanticScopeLeavesOutOnlyTheQuestion) {
  EXPECT_EQ(semantic_scope(*chat("How do I enable dark mode?"), kId), semantic_scope(*chat("Turn dark mode on?"), kId));
  EXPECT_NE(semantic_scope(*chat("q"), kId), semantic_scope(*chat("q", "acme"), kId));
  EXPECT_EQ(semantic_question(chat(" How  do I?")->input()), "How do I?");
}

TEST(CacheKey, SampledRequestsWithoutASeedAreNotCachedUnlessThePipelineSaysSo) {
  EXPECT_EQ(not_cacheable(chat("q", "", 0)->input(), false), "");
  EXPECT_EQ(not_cacheable(chat("q", "", 0.7f)->input(), false), "sampled without a seed");
  EXPECT_EQ(not_cacheable(chat("q", "", 0.7f)->input(), true), "");
  RequestInput seeded = chat("q", "", 0.7f)->input();
  seeded.sampling.seed = 7;
  EXPECT_EQ(not_cacheable(seeded, false), "");
  RequestInput embed;
  embed.kind = RequestInput::Kind::kEmbed;
  EXPECT_NE(not_cacheable(embed, true), "");
}

}  // namespace
}  // namespace sluice::cache
