// The shipped default pipeline (pipelines/default.yaml) end to end over loopback, with and
// without SLUICE_MODEL: documents posted to /v1/documents, then concurrent streaming questions.
// With the model (../shared/models/stories260K.gguf) every stream gets generated text followed
// by its sources, and the engine batched them; without it the same file answers extractively.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/connectors/http/default_pipeline.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;

TEST(DefaultPipeline, WithAModelConcurrentStreamsGetGeneratedCitedAnswers) {
  const std::string model = std::string(SLUICE_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "needs " << model << " (../shared)";
  DefaultPipeline p(model);
  constexpr int kStreams = 8;
  std::vector<DefaultPipeline::Answer> answers(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i)
    threads.emplace_back([&, i] { answers[size_t(i)] = p.ask(i % 2 ? "Why do otters hold hands?" : "How does a volcano erupt?"); });
  for (auto& t : threads) t.join();
  for (const auto& a : answers) {
    ASSERT_FALSE(a.text.empty());
    // The sources ride beside the answer; its text is the model's alone (citations: field).
    EXPECT_EQ(a.text.find("Sources:"), std::string::npos) << a.text;
    ASSERT_TRUE(a.sources.is_array()) << a.text;
    ASSERT_FALSE(a.sources.empty());
    EXPECT_EQ(a.sources[0]["n"], 1);
  }
  const std::string m = p.metrics();
  EXPECT_NE(m.find("sluice_engine_generated_tokens_total"), std::string::npos);
  // Evidence of continuous batching: some step ran more than one sequence.
  const auto at = m.find("sluice_engine_step_sequences_bucket{model=");
  ASSERT_NE(at, std::string::npos);
  const auto le1 = m.find("le=\"1\"} ", at);
  const auto count = m.find("sluice_engine_step_sequences_count", at);
  ASSERT_NE(le1, std::string::npos);
  ASSERT_NE(count, std::string::npos);
  const double steps_of_one = std::stod(m.substr(m.find("} ", le1) + 2));
  const double steps = std::stod(m.substr(m.find("} ", count) + 2));
  EXPECT_LT(steps_of_one, steps) << "no step batched two sequences";
}

// A deadline too short for the model to answer ends as an HTTP status, not as a 200 stream of
// tokens that breaks off with an error chunk the SDKs report without a status.
TEST(DefaultPipeline, ADeadlineThatPassesBeforeTheFirstTokenIsAStatus) {
  const std::string model = stories_model();
  if (model.empty()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  DefaultPipeline p(model);
  for (const char* timeout : {"0.001ms", "0.01ms"}) {  // past before the model starts: never a race
    TestClient c(p.served->source->port());
    json body{{"model", "sluice"}, {"stream", true}, {"max_tokens", 24}, {"messages", {{{"role", "user"}, {"content", "Why do otters hold hands?"}}}}};
    c.send(TestClient::post("/v1/chat/completions", body.dump(), std::string("X-Request-Timeout: ") + timeout + "\r\n"));
    auto r = c.read_response();
    EXPECT_EQ(r.status, 504) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["type"], "timeout_error") << r.body;
  }
}

TEST(DefaultPipeline, WithoutAModelTheSameFileAnswersExtractively) {
  DefaultPipeline p("");
  const DefaultPipeline::Answer a = p.ask("Why do otters hold hands?");
  EXPECT_NE(a.text.find("hold hands"), std::string::npos) << a.text;
  EXPECT_EQ(a.text.find("Sources:"), std::string::npos) << a.text;
  ASSERT_TRUE(a.sources.is_array()) << a.text;
  EXPECT_EQ(a.sources[0]["doc_id"], "otters.md");
  EXPECT_EQ(p.metrics().find("sluice_engine_generated_tokens_total"), std::string::npos);
}

}  // namespace
}  // namespace sluice::http::testing
