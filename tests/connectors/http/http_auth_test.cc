// API keys over loopback (connectors/http/request_auth.h): 401 without or with a wrong key,
// each scope allowed and refused, tenants reaching the request, the priority ceiling, request
// and token rate limits on the injected clock, reload (SIGHUP's path) on a live connection,
// keys from the environment, and key files with problems. Also the pieces: key hashes,
// Bearer parsing, the key ring's verified-key cache, and the loopback rule.
#include <gmock/gmock.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "connectors/http/api_key_hash.h"
#include "connectors/http/api_keys.h"
#include "graph/listen_rules.h"
#include "tests/connectors/http/http_test_fixture.h"
#include "tests/support/scoped_env.h"

namespace sluice::http::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

const std::string kInferKey = "sk-sluice-infer-key-0123456789abcdef";
const std::string kAdminKey = "sk-sluice-admin-key-0123456789abcdef";
const std::string kRagKey = "sk-sluice-rag-key-0123456789abcdef";

std::string bearer(const std::string& key) { return "Authorization: Bearer " + key + "\r\n"; }

class HttpAuthTest : public HttpSourceTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sluice-auth-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    keys_file_ = (dir_ / "keys.yaml").string();
  }
  void TearDown() override {
    source_.reset();
    std::filesystem::remove_all(dir_);
  }

  void write_keys(const std::string& text) {
    std::ofstream(keys_file_) << text;
  }
  static std::string key_entry(const std::string& id, const std::string& key, const std::string& scopes,
                               const std::string& extra = "") {
    return "  - id: " + id + "\n    hash: \"" + hash_api_key(key) + "\"\n    scopes: [" + scopes + "]\n" + extra;
  }
  void start_with_keys(const std::string& keys, const std::function<void(HttpSourceConfig&)>& tweak = {}) {
    write_keys("keys:\n" + keys);
    start([&](HttpSourceConfig& c) {
      c.mutable_auth()->set_keys_file(keys_file_);
      c.mutable_auth()->add_open_paths("/readyz");
      if (tweak) tweak(c);
    });
  }
  ClientResponse chat(const std::string& headers) {
    return roundtrip(TestClient::post("/v1/chat/completions", chat_body(false), headers));
  }
  // Plays the pipeline for the next submitted request: answers it with `usage`.
  RequestPtr answer_next(Usage usage = {1, 1}) {
    RequestPtr req = intake_.next_request();
    req->emit_token("ok", now());
    req->usage = usage;
    req->complete(Status::Ok(), now());
    return req;
  }
  // A chat request answered by the test; returns the response and the request.
  std::pair<ClientResponse, RequestPtr> answered_chat(const std::string& headers, Usage usage = {1, 1}) {
    TestClient client(port());
    client.send(TestClient::post("/v1/chat/completions", chat_body(false), headers));
    RequestPtr req = answer_next(usage);
    return {client.read_response(), req};
  }

  std::filesystem::path dir_;
  std::string keys_file_;
};

TEST_F(HttpAuthTest, NoKeyOrAWrongKeyIs401InOpenAiShape) {
  start_with_keys(key_entry("app", kInferKey, "infer"));
  ClientResponse r = chat("");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.header("www-authenticate"), "Bearer realm=\"sluice\"");
  json body = parse_json(r.body);
  EXPECT_EQ(body["error"]["code"], "missing_api_key");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("Authorization: Bearer"));

  r = chat(bearer("sk-sluice-not-a-key-at-all-000000"));
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(parse_json(r.body)["error"]["code"], "invalid_api_key");
  r = chat("Authorization: Basic " + kInferKey + "\r\n");  // another scheme is no key
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(parse_json(r.body)["error"]["code"], "missing_api_key");

  EXPECT_EQ(metric("sluice_http_auth_refusals_total{source=\"web\",reason=\"missing_key\"}"), 2);
  EXPECT_EQ(metric("sluice_http_auth_refusals_total{source=\"web\",reason=\"invalid_key\"}"), 1);
  EXPECT_EQ(metric("sluice_http_requests_total{source=\"web\",endpoint=\"/v1/chat/completions\",code=\"401\"}"), 3);
}

TEST_F(HttpAuthTest, HealthzAndOpenPathsNeedNoKeyMetricsNeedsAdmin) {
  start_with_keys(key_entry("app", kInferKey, "infer") + key_entry("ops", kAdminKey, "admin"));
  EXPECT_EQ(roundtrip(TestClient::get("/healthz")).status, 200);
  EXPECT_EQ(roundtrip(TestClient::get("/readyz")).status, 200);
  EXPECT_EQ(roundtrip(TestClient::get("/metrics")).status, 401);
  EXPECT_EQ(roundtrip(TestClient::get("/metrics", bearer(kInferKey))).status, 403);
  ClientResponse r = roundtrip(TestClient::get("/metrics", bearer(kAdminKey)));
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("sluice_http_api_keys{source=\"web\"} 2"));
  // Unknown paths stay 404 with or without a key: auth guards routes, it does not hide them.
  EXPECT_EQ(roundtrip(TestClient::get("/nope")).status, 404);
}

TEST_F(HttpAuthTest, EachScopeIsAllowedAndRefused) {
  start_with_keys(key_entry("app", kInferKey, "infer") + key_entry("rag", kRagKey, "retrieve, documents:write") +
                  key_entry("ops", kAdminKey, "admin"));
  // infer: completions and models.
  auto [ok, req] = answered_chat(bearer(kInferKey));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(roundtrip(TestClient::get("/v1/models", bearer(kInferKey))).status, 200);
  ClientResponse r = roundtrip(TestClient::post("/v1/retrieve", R"({"query":"x"})", bearer(kInferKey)));
  EXPECT_EQ(r.status, 403);
  json body = parse_json(r.body);
  EXPECT_EQ(body["error"]["code"], "insufficient_scope");
  EXPECT_EQ(body["error"]["type"], "permission_error");
  EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("'retrieve'"));
  EXPECT_EQ(roundtrip(TestClient::post("/v1/documents", R"({"delete":["a"]})", bearer(kInferKey))).status, 403);
  // retrieve + documents:write, not infer. (No knowledge base here: past auth the answer is 404.)
  EXPECT_EQ(chat(bearer(kRagKey)).status, 403);
  EXPECT_EQ(roundtrip(TestClient::post("/v1/retrieve", R"({"query":"x"})", bearer(kRagKey))).status, 404);
  EXPECT_EQ(roundtrip(TestClient::post("/v1/documents", R"({"delete":["a"]})", bearer(kRagKey))).status, 404);
  // admin alone is no inference key.
  EXPECT_EQ(chat(bearer(kAdminKey)).status, 403);
  EXPECT_EQ(metric("sluice_http_auth_refusals_total{source=\"web\",reason=\"scope\"}"), 4);
}

TEST_F(HttpAuthTest, TheKeysTenantReachesTheRequest) {
  start_with_keys(key_entry("app", kInferKey, "infer", "    tenant: team-a\n") + key_entry("other", kAdminKey, "infer"));
  auto [r1, a] = answered_chat(bearer(kInferKey));
  EXPECT_EQ(r1.status, 200);
  EXPECT_EQ(a->tenant, "team-a");  // scopes the engine's prefix cache (tenants never share KV)
  auto [r2, b] = answered_chat(bearer(kAdminKey));
  EXPECT_EQ(b->tenant, "other");  // default: the key's id
}

TEST_F(HttpAuthTest, AStreamResumesOnlyForItsOwnTenant) {
  start_with_keys(key_entry("app", kInferKey, "infer", "    tenant: team-a\n") + key_entry("other", kAdminKey, "infer"));
  TestClient client(port());
  client.send(TestClient::post("/v1/chat/completions", chat_body(true), bearer(kInferKey)));
  RequestPtr req = intake_.next_request();
  req->emit_token("a", now());
  req->complete(Status::Ok(), now());
  EXPECT_EQ(client.read_head().status, 200);
  const std::string path = "/v1/streams/" + req->external_id;
  // Another tenant's stream is not found: a key learns nothing of streams it does not own.
  EXPECT_EQ(roundtrip(TestClient::get(path, bearer(kAdminKey))).status, 404);
  EXPECT_EQ(roundtrip(TestClient::get(path)).status, 401);
  TestClient owner(port());
  owner.send(TestClient::get(path, bearer(kInferKey)));
  EXPECT_EQ(owner.read_head().status, 200);
  EXPECT_EQ(owner.next_event()->id, "1");
}

TEST_F(HttpAuthTest, APriorityCeilingRefusesHigherClassesAndLowersTheDefault) {
  start_with_keys(key_entry("batch", kInferKey, "infer", "    max_priority: P1\n"),
                  [](HttpSourceConfig& c) { c.set_default_priority("P0"); });
  ClientResponse r = chat(bearer(kInferKey) + "X-Priority: P0\r\n");
  EXPECT_EQ(r.status, 403);
  json body = parse_json(r.body);
  EXPECT_EQ(body["error"]["code"], "priority_not_allowed");
  EXPECT_EQ(body["error"]["param"], "X-Priority");
  EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("at most P1"));
  auto [r2, lowered] = answered_chat(bearer(kInferKey));  // no header: the default P0 is above P1
  EXPECT_EQ(lowered->priority, 1);
  auto [r3, p2] = answered_chat(bearer(kInferKey) + "X-Priority: P2\r\n");
  EXPECT_EQ(p2->priority, 2);
  EXPECT_EQ(metric("sluice_http_auth_refusals_total{source=\"web\",reason=\"priority\"}"), 1);
}

TEST_F(HttpAuthTest, RequestsPerSecondIsATokenBucketOnTheInjectedClock) {
  start_with_keys(key_entry("app", kInferKey, "infer", "    requests_per_second: 0.5\n    burst: 2\n"));
  EXPECT_EQ(answered_chat(bearer(kInferKey)).first.status, 200);
  EXPECT_EQ(answered_chat(bearer(kInferKey)).first.status, 200);
  ClientResponse r = chat(bearer(kInferKey));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("retry-after"), "2");  // one request refills in 1 / 0.5 s
  json body = parse_json(r.body);
  EXPECT_EQ(body["error"]["code"], "rate_limit_exceeded");
  EXPECT_EQ(body["error"]["type"], "rate_limit_error");
  intake_.clock_.advance(1 * kNanosPerSecond);
  EXPECT_EQ(chat(bearer(kInferKey)).header("retry-after"), "1");
  intake_.clock_.advance(1 * kNanosPerSecond);
  EXPECT_EQ(answered_chat(bearer(kInferKey)).first.status, 200);
  EXPECT_EQ(metric("sluice_http_rate_limited_total{source=\"web\",key=\"app\",limit=\"requests\"}"), 2);
}

TEST_F(HttpAuthTest, TokensPerMinuteChargesWhatTheAnswerUsed) {
  start_with_keys(key_entry("app", kInferKey, "infer, retrieve", "    tokens_per_minute: 120\n"));
  // 130 tokens leave the bucket (120 full) 10 in debt: the next completion waits for 11 tokens
  // at 2/s, 5.5 s -> Retry-After 6.
  EXPECT_EQ(answered_chat(bearer(kInferKey), Usage{80, 50}).first.status, 200);
  ClientResponse r = chat(bearer(kInferKey));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("retry-after"), "6");
  // Retrieval spends no generation tokens: not held back by the token budget.
  EXPECT_NE(roundtrip(TestClient::post("/v1/retrieve", R"({"query":"x"})", bearer(kInferKey))).status, 429);
  intake_.clock_.advance(6 * kNanosPerSecond);
  EXPECT_EQ(answered_chat(bearer(kInferKey)).first.status, 200);
  EXPECT_EQ(metric("sluice_http_rate_limited_total{source=\"web\",key=\"app\",limit=\"tokens\"}"), 1);
}

TEST_F(HttpAuthTest, ReloadSwapsKeysWithoutDroppingConnectionsAndKeepsOldKeysOnABadFile) {
  start_with_keys(key_entry("old", kInferKey, "infer"));
  TestClient client(port());  // one keep-alive connection across the reloads
  auto call = [&](const std::string& key) {
    client.send(TestClient::get("/v1/models", bearer(key)));
    return client.read_response().status;
  };
  EXPECT_EQ(call(kInferKey), 200);
  write_keys("keys:\n" + key_entry("new", kAdminKey, "infer"));
  EXPECT_TRUE(source_->reload_auth().ok());
  EXPECT_EQ(call(kInferKey), 401);
  EXPECT_EQ(call(kAdminKey), 200);

  write_keys("keys:\n  - id: broken\n    hash: \"sha256:00\"\n    scopes: [infer]\n");
  const Status problem = source_->reload_auth();
  EXPECT_FALSE(problem.ok());
  EXPECT_THAT(problem.message, HasSubstr(keys_file_ + ":3:11: key 'broken': a key hash is"));
  EXPECT_EQ(call(kAdminKey), 200);  // the previous keys still serve
  EXPECT_EQ(metric("sluice_http_auth_reloads_total{source=\"web\",result=\"ok\"}"), 1);
  EXPECT_EQ(metric("sluice_http_auth_reloads_total{source=\"web\",result=\"failed\"}"), 1);
}

TEST_F(HttpAuthTest, ABucketSurvivesAReloadOfItsKey) {
  start_with_keys(key_entry("app", kInferKey, "infer", "    requests_per_second: 1\n    burst: 1\n"));
  EXPECT_EQ(answered_chat(bearer(kInferKey)).first.status, 200);
  write_keys("keys:\n" + key_entry("app", kInferKey, "infer", "    requests_per_second: 1\n    burst: 1\n"));
  ASSERT_TRUE(source_->reload_auth().ok());
  EXPECT_EQ(chat(bearer(kInferKey)).status, 429);  // a reload is no way around the limit
}

TEST_F(HttpAuthTest, KeysFromTheEnvironment) {
  sluice::testing::ScopedEnv env("SLUICE_TEST_API_KEYS",
                                 ("{\"keys\":[{\"id\":\"ci\",\"hash\":\"" + hash_api_key(kInferKey) +
                                  "\",\"scopes\":[\"infer\"]}]}")
                                     .c_str());
  start([](HttpSourceConfig& c) { c.mutable_auth()->set_keys_env("SLUICE_TEST_API_KEYS"); });
  EXPECT_EQ(roundtrip(TestClient::get("/v1/models", bearer(kInferKey))).status, 200);
  EXPECT_EQ(roundtrip(TestClient::get("/v1/models")).status, 401);
}

TEST_F(HttpAuthTest, KeyFileProblemsStopTheSourceAtFileLineColumn) {
  write_keys("keys:\n"
             "  - id: a\n    hash: \"" + hash_api_key(kInferKey) + "\"\n    scopes: [infer, write]\n"
             "  - id: a\n    hash: \"" + hash_api_key(kAdminKey) + "\"\n    scopes: [admin]\n    max_priority: P9\n"
             "    rate: 5\n");
  HttpSourceConfig c;
  c.set_listen("127.0.0.1:0");
  c.mutable_auth()->set_keys_file(keys_file_);
  try {
    HttpSource source(c, "web", intake_);
    FAIL() << "a bad key file was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_THAT(what, HasSubstr("http source 'web': auth: " + keys_file_ + ":4:21: key 'a': scope 'write' is not one of"));
    EXPECT_THAT(what, HasSubstr(keys_file_ + ":5:9: key 'a': the id is used by another key"));
    EXPECT_THAT(what, HasSubstr(keys_file_ + ":9:5: key 'a': unknown field 'rate'"));
    EXPECT_THAT(what, HasSubstr(":8:19: key 'a': max_priority 'P9' is not a priority class"));
    EXPECT_EQ(what.find("sha256:"), std::string::npos) << "errors never quote a hash";
  }
  c.mutable_auth()->set_keys_file((dir_ / "absent.yaml").string());
  EXPECT_THROW(HttpSource(c, "web", intake_), std::invalid_argument);
}

TEST_F(HttpAuthTest, ANonLoopbackListenNeedsAuthOrAnExplicitNone) {
  HttpSourceConfig c;
  c.set_listen("0.0.0.0:0");
  try {
    HttpSource source(c, "web", intake_);
    FAIL() << "0.0.0.0 without auth was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("http source 'web': listen: '0.0.0.0:0' is reachable from other machines"));
  }
  c.mutable_auth()->set_mode("none");
  HttpSource open(c, "web", intake_);  // said on purpose
  open.start();
  open.stop();
}

// ---------------------------------------------------------------- pieces

TEST(ApiKeyHash, StoredFormRoundTripsAndSaltsDiffer) {
  const std::string key = make_api_key();
  EXPECT_EQ(key.rfind("sk-sluice-", 0), 0u);
  EXPECT_EQ(key.size(), 53u);
  EXPECT_NE(make_api_key(), key);
  const std::string a = hash_api_key(key), b = hash_api_key(key);
  EXPECT_NE(a, b);  // a fresh salt each time
  std::string error;
  auto stored = parse_stored_key_hash(a, &error);
  ASSERT_TRUE(stored) << error;
  EXPECT_TRUE(key_matches(*stored, key));
  EXPECT_FALSE(key_matches(*stored, key + "x"));
  EXPECT_FALSE(parse_stored_key_hash("md5:abc", &error));
  EXPECT_FALSE(parse_stored_key_hash(a.substr(0, a.size() - 1), &error));
  // SHA-256 of "abc", the FIPS 180-2 example.
  const Sha256Digest abc = sha256("ab", "c");
  EXPECT_EQ(abc[0], 0xba);
  EXPECT_EQ(abc[31], 0xad);
}

TEST(BearerToken, SchemeIsCaseInsensitiveAndSpacesAreTrimmed) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer   abc  "), "abc");
  EXPECT_EQ(bearer_token("BEARER\tabc"), "abc");
  EXPECT_EQ(bearer_token("Bearerabc"), "");
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearer "), "");
}

TEST(KeyRing, FindsEachKeyAndRemembersVerifiedOnes) {
  std::string doc = "keys:\n";
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) {
    keys.push_back(make_api_key());
    doc += "  - {id: k" + std::to_string(i) + ", hash: \"" + hash_api_key(keys.back()) + "\", scopes: [infer]}\n";
  }
  auto ring = KeyRing::parse(doc, "keys.yaml", [](const std::string&) { return 0; });
  for (int round = 0; round < 2; ++round) {  // the second round is served from the verified cache
    for (int i = 0; i < 20; ++i) {
      const ApiKey* k = ring->find(keys[i]);
      ASSERT_NE(k, nullptr);
      EXPECT_EQ(k->id, "k" + std::to_string(i));
    }
  }
  EXPECT_EQ(ring->find("sk-sluice-unknown"), nullptr);
}

TEST(ListenRules, LoopbackHostsAndTheAuthRule) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "0:0:0:0:0:0:0:1", "localhost"}) EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "example.com", ""}) EXPECT_FALSE(is_loopback_host(h)) << h;
  HttpSourceConfig c;
  c.set_listen("[::]:8080");
  ASSERT_TRUE(listen_auth_problem(c));
  EXPECT_EQ(listen_auth_problem(c)->field, "listen");
  c.mutable_auth()->set_keys_env("KEYS");
  EXPECT_FALSE(listen_auth_problem(c));
  c.mutable_auth()->set_mode("none");
  EXPECT_EQ(listen_auth_problem(c)->field, "auth.keys_env");
  c.mutable_auth()->clear_keys_env();
  EXPECT_FALSE(listen_auth_problem(c));
  c.mutable_auth()->set_mode("keys");
  EXPECT_EQ(listen_auth_problem(c)->field, "auth.mode");
}

}  // namespace
}  // namespace sluice::http::testing
