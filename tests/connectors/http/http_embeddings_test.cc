// POST /v1/embeddings over loopback on the shipped default pipeline: OpenAI's shape (float and
// base64), vectors equal to the encoder's own, usage, concurrent requests all answered and counted,
// and every refusal naming its field (token ids, dimensions, limits, unknown model).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "inference/encoder/shared_encoders.h"
#include "tests/connectors/http/default_pipeline.h"
#include "tests/inference/encoder/encoder_fixture.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;
using inference::default_encoder_path;

struct Reply {
  int status = 0;
  json body;
};
Reply post_embeddings(const DefaultPipeline& p, const json& body, const std::string& headers = "") {
  TestClient c(p.served->source->port());
  c.send(TestClient::post("/v1/embeddings", body.dump(), headers));
  auto r = c.read_response();
  return {r.status, json::parse(r.body, nullptr, false)};
}

std::vector<float> decode_base64_floats(const std::string& b64) {
  const std::vector<uint8_t> bytes = inference::testing::base64_decode(b64);
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

TEST(Embeddings, AnswersInOpenAisShapeWithTheEncodersVectors) {
  SLUICE_REQUIRE_ENCODER();
  DefaultPipeline p("");
  const std::vector<std::string> texts = {"How do I enable dark mode?", "How can I turn on dark mode?", ""};
  const Reply r = post_embeddings(p, {{"model", "use-lite"}, {"input", texts}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["object"], "list");
  EXPECT_EQ(r.body["model"], "use-lite");
  ASSERT_EQ(r.body["data"].size(), texts.size());
  auto encoder = inference::shared_sentence_encoder(default_encoder_path(), 1);
  std::vector<float> want(texts.size() * 512);
  encoder->embed(texts, want.data());
  int tokens = 0;
  for (const auto& t : texts) tokens += int(encoder->count_tokens(t));
  for (size_t i = 0; i < texts.size(); ++i) {
    const json& d = r.body["data"][i];
    EXPECT_EQ(d["object"], "embedding");
    EXPECT_EQ(d["index"], i);
    ASSERT_EQ(d["embedding"].size(), 512u);
    for (size_t k = 0; k < 512; ++k) ASSERT_EQ(d["embedding"][k].get<float>(), want[i * 512 + k]) << i << "," << k;
  }
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(r.body["usage"]["total_tokens"], tokens);
  // The paraphrase is nearer than an unrelated text.
  double same = 0;
  for (size_t k = 0; k < 512; ++k) same += double(want[k]) * want[512 + k];
  EXPECT_GT(same, 0.9);
}

TEST(Embeddings, Base64IsTheLittleEndianFloatsOfTheSameVector) {
  SLUICE_REQUIRE_ENCODER();
  DefaultPipeline p("");
  const Reply f = post_embeddings(p, {{"model", "use-lite"}, {"input", "Sea otters hold hands."}});
  const Reply b = post_embeddings(p, {{"model", "use-lite"}, {"input", "Sea otters hold hands."}, {"encoding_format", "base64"},
                                      {"user", "ignored"}});
  ASSERT_EQ(f.status, 200) << f.body.dump();
  ASSERT_EQ(b.status, 200) << b.body.dump();
  const auto decoded = decode_base64_floats(b.body["data"][0]["embedding"].get<std::string>());
  ASSERT_EQ(decoded.size(), 512u);
  for (size_t k = 0; k < 512; ++k) EXPECT_EQ(decoded[k], f.body["data"][0]["embedding"][k].get<float>());
}

TEST(Embeddings, TimingsOnRequestNameTheEmbeddingsStage) {
  SLUICE_REQUIRE_ENCODER();
  DefaultPipeline p("");
  TestClient c(p.served->source->port());
  c.send(TestClient::post("/v1/embeddings", json{{"model", "use-lite"}, {"input", "a"}}.dump(), "X-Sluice-Timings: 1\r\n"));
  const auto r = c.read_response();
  ASSERT_EQ(r.status, 200) << r.body;
  const json timings = json::parse(r.header("x-sluice-timings"));
  bool saw = false;
  for (const auto& s : timings["stages"]) saw = saw || s["stage"] == "embeddings";
  EXPECT_TRUE(saw) << timings.dump();
  TestClient quiet(p.served->source->port());
  quiet.send(TestClient::post("/v1/embeddings", json{{"model", "use-lite"}, {"input", "a"}}.dump()));
  EXPECT_EQ(quiet.read_response().header("x-sluice-timings"), "");
}

TEST(Embeddings, ConcurrentRequestsAreAllAnsweredAndCounted) {
  SLUICE_REQUIRE_ENCODER();
  DefaultPipeline p("");
  constexpr int kRequests = 16;
  std::vector<int> statuses(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i)
    threads.emplace_back([&, i] {
      statuses[size_t(i)] = post_embeddings(p, {{"model", "use-lite"}, {"input", {"text " + std::to_string(i), "another"}}}).status;
    });
  for (auto& t : threads) t.join();
  for (int s : statuses) EXPECT_EQ(s, 200);
  const std::string m = p.metrics();
  EXPECT_NE(m.find("sluice_embeddings_texts_total{pipeline=\"default\",node=\"embeddings\"} 32"), std::string::npos) << m;
  EXPECT_NE(m.find("sluice_embeddings_batch_texts_sum{pipeline=\"default\",node=\"embeddings\"} 32"), std::string::npos);
}

TEST(Embeddings, RefusalsNameTheFieldAndTheLimit) {
  SLUICE_REQUIRE_ENCODER();
  DefaultPipeline p("");
  struct Case {
    json body;
    int status;
    std::string param, code, says;
  };
  const std::vector<Case> cases = {
      {{{"model", "use-lite"}, {"input", {1, 2, 3}}}, 400, "input", "unsupported", "token ids"},
      {{{"model", "use-lite"}, {"input", {"a", {1, 2}}}}, 400, "input[1]", "unsupported", "token ids"},
      {{{"model", "use-lite"}, {"input", "a"}, {"dimensions", 256}}, 400, "dimensions", "unsupported", "one output size"},
      {{{"model", "use-lite"}, {"input", json::array()}}, 400, "input", "invalid_value", "empty"},
      {{{"model", "use-lite"}, {"input", 5}}, 400, "input", "invalid_type", "a string or an array of strings"},
      {{{"model", "use-lite"}, {"input", "a"}, {"encoding_format", "int8"}}, 400, "encoding_format", "invalid_value", "float, base64"},
      {{{"input", "a"}}, 400, "model", "invalid_value", "required"},
      {{{"model", "use-lite"}, {"input", "a"}, {"extra", 1}}, 400, "extra", "unknown_field", "unknown field"},
      {{{"model", "text-embedding-3-small"}, {"input", "a"}}, 404, "model", "model_not_found", "does not exist"},
      {{{"model", "use-lite"}, {"input", std::vector<std::string>(2049, "x")}}, 400, "input", "invalid_value", "at most 2048"},
      {{{"model", "use-lite"}, {"input", {"ok", std::string(40000, 'y')}}}, 400, "input[1]", "invalid_value", "at most 32768"},
  };
  for (const Case& c : cases) {
    const Reply r = post_embeddings(p, c.body);
    EXPECT_EQ(r.status, c.status) << c.body.dump().substr(0, 200) << " -> " << r.body.dump().substr(0, 300);
    EXPECT_EQ(r.body["error"]["param"], c.param) << r.body.dump().substr(0, 300);
    EXPECT_EQ(r.body["error"]["code"], c.code) << r.body.dump().substr(0, 300);
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find(c.says), std::string::npos) << r.body.dump().substr(0, 300);
  }
  // Through the same admission as every request: an unknown class is refused there too.
  const Reply r = post_embeddings(p, {{"model", "use-lite"}, {"input", "a"}}, "X-Priority: P9\r\n");
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["param"], "X-Priority");
}

TEST(Embeddings, APipelineWithoutTheEncoderAnswers404) {
  sluice::testing::ScopedEnv env;
  env.set("SLUICE_ENCODER", "/nonexistent/use-lite.gguf");
  DefaultPipeline p("");
  const Reply r = post_embeddings(p, {{"model", "use-lite"}, {"input", "a"}});
  EXPECT_EQ(r.status, 404) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], "no_embeddings_node");
  EXPECT_NE(p.ask("Why do otters hold hands?").text.find("hold hands"), std::string::npos) << "the rest still serves";
}

}  // namespace
}  // namespace sluice::http::testing
