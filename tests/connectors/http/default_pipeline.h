// DefaultPipeline: the shipped pipelines/default.yaml served over loopback for a test, with
// SLUICE_MODEL set to `model` ("" answers extractively), a scratch knowledge base holding two
// small documents, and helpers that talk to it as a stock OpenAI client does.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "nodes/builtin_nodes.h"
#include "tests/connectors/http/served_pipeline.h"
#include "tests/connectors/http/test_client.h"
#include "tests/support/read_file.h"
#include "tests/support/scoped_env.h"

namespace sluice::http::testing {

using sluice::testing::read_file;

struct DefaultPipeline {
  using json = nlohmann::json;

  // `edits`: text replacements made in the file before it is served (each must match).
  explicit DefaultPipeline(const std::string& model, const std::vector<std::pair<std::string, std::string>>& edits = {}) {
    kb = (std::filesystem::temp_directory_path() / ("sluice-default-kb-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(kb);
    env.set("SLUICE_KB", kb);
    env.set("SLUICE_LISTEN", "127.0.0.1:0");
    env.set("SLUICE_MODEL", model);
    std::string text = read_file(std::string(SLUICE_SOURCE_DIR) + "/pipelines/default.yaml");
    for (const auto& [from, to] : edits) {
      const std::size_t at = text.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) text.replace(at, from.size(), to);
    }
    served = std::make_unique<ServedPipeline>(text, register_builtin_nodes);
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

// ../shared's stories260K, or "" when ../shared is absent.
inline std::string stories_model() {
  const std::string model = std::string(SLUICE_SHARED_DIR) + "/models/stories260K.gguf";
  return std::filesystem::exists(model) ? model : std::string();
}

}  // namespace sluice::http::testing
