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

#include "nodes/builtin_nodes.h"
#include "tests/connectors/http/served_pipeline.h"
#include "tests/support/scoped_env.h"
#include "tests/connectors/http/test_client.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


struct DefaultPipeline {
  explicit DefaultPipeline(const std::string& model) {
    kb = (std::filesystem::temp_directory_path() / ("sluice-default-kb-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(kb);
    env.set("SLUICE_KB", kb);
    env.set("SLUICE_LISTEN", "127.0.0.1:0");
    env.set("SLUICE_MODEL", model);
    served = std::make_unique<ServedPipeline>(read_file(std::string(SLUICE_SOURCE_DIR) + "/pipelines/default.yaml"),
                                              register_builtin_nodes);
    json docs{{"documents",
               {{{"id", "otters.md"},
                 {"text", "# Sea otters\n\nSea otters hold hands while they sleep so they do not drift apart."}},
                {{"id", "volcano.txt"},
                 {"text", "Volcanoes\nA volcano erupts when magma rises through the crust and escapes as lava."}}}}};
    TestClient c(served->source->port());
    c.send(TestClient::post("/v1/documents", docs.dump()));
    auto r = c.read_response();
    EXPECT_EQ(r.status, 200) << r.body;
  }
  ~DefaultPipeline() {
    served.reset();
    std::filesystem::remove_all(kb);
  }
  struct Answer {
    std::string text;  // the concatenated content (empty on a protocol error)
    json sources;      // the finish chunk's sluice_sources
  };
  // Streams one chat question as a stock OpenAI client reads it: every SSE event is a plain data
  // event whose chunk has choices[0] (the SDKs' ordinary loop indexes it without a check).
  Answer ask(const std::string& question) const {
    TestClient c(served->source->port());
    json body{{"model", "sluice"}, {"stream", true}, {"max_tokens", 24},
              {"messages", {{{"role", "user"}, {"content", question}}}}};
    c.send(TestClient::post("/v1/chat/completions", body.dump()));
    if (c.read_head().status != 200) return {};
    Answer a;
    bool done = false;
    while (auto ev = c.next_event()) {
      EXPECT_EQ(ev->event, "") << "a named SSE event reaches a stock client's loop as a chunk";
      if (ev->data == "[DONE]") {
        done = true;
        break;
      }
      const json chunk = json::parse(ev->data, nullptr, false);
      EXPECT_FALSE(chunk.is_discarded()) << ev->data;
      if (chunk.is_discarded()) continue;
      EXPECT_FALSE(chunk["choices"].empty()) << ev->data;
      if (chunk["choices"].empty()) continue;
      const json& delta = chunk["choices"][0]["delta"];
      if (delta.contains("content")) a.text += delta["content"].get<std::string>();
      if (chunk.contains("sluice_sources")) a.sources = chunk["sluice_sources"];
    }
    return done ? a : Answer{};
  }
  std::string metrics() const {
    TestClient c(served->source->port());
    c.send(TestClient::get("/metrics"));
    return c.read_response().body;
  }

  sluice::testing::ScopedEnv env;
  std::string kb;
  std::unique_ptr<ServedPipeline> served;
};

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
