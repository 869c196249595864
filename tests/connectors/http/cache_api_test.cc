// DELETE /v1/cache's body (connectors/http/cache_api.h): read as every API body is, and each
// kind of bad body answered 400 naming the problem, with nothing dropped.
#include "connectors/http/cache_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace sluice::http {
namespace {

using ::testing::HasSubstr;

class CountingTier : public CacheTier {
 public:
  std::string node() const override { return "answers"; }
  std::string tier() const override { return "exact"; }
  std::size_t invalidate(const CacheInvalidation& what) override {
    ++calls;
    last = what;
    return 3;
  }
  std::string stats_json() const override { return R"({"entries":3})"; }
  int calls = 0;
  CacheInvalidation last;
};

TEST(CacheApi, DeleteReadsATenantOrDropsEveryTenant) {
  CountingTier tier;
  const std::vector<CacheTier*> tiers{&tier};
  HttpResponse r = cache_response("DELETE", "", tiers);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(tier.last.all_tenants);
  r = cache_response("DELETE", R"({"tenant": "acme"})", tiers);
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(tier.last.all_tenants);
  EXPECT_EQ(tier.last.tenant, "acme");
  EXPECT_EQ(nlohmann::json::parse(r.body)["invalidated"], 3);
}

TEST(CacheApi, BadBodiesAreRefusedAndDropNothing) {
  CountingTier tier;
  const std::vector<CacheTier*> tiers{&tier};
  const struct {
    std::string body, message;
  } cases[] = {
      {R"({"tenant": )", "not valid JSON: parse error at line 1, column 12"},
      {"[1]", "must be a JSON object, got an array"},
      {std::string(R"({"tenant":"acme"})") + std::string(1, '\0') + "junk", "a NUL byte at byte 17"},
      {std::string(100, '[') + std::string(100, ']'), "nests deeper than 64 levels"},
      {R"({"tenant": "a", "all": true})", "unknown field 'all'"},
      {R"({"tenant": 7})", "tenant must be a string"},
  };
  for (const auto& c : cases) {
    const HttpResponse r = cache_response("DELETE", c.body, tiers);
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_THAT(nlohmann::json::parse(r.body)["error"]["message"].get<std::string>(), HasSubstr(c.message)) << c.body;
  }
  EXPECT_EQ(tier.calls, 0);
}

}  // namespace
}  // namespace sluice::http
