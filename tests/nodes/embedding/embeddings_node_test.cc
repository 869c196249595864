// The `embeddings` node on batches made by hand: the texts of several requests in one encoder
// call (max_batch permitting), each request's rows and tokens in its own event, other request
// kinds passed on untouched, and the limits refusing one request without touching the others.
#include "nodes/embedding/embeddings_node.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/clock.h"
#include "graph/embedding_result.h"
#include "graph/metrics.h"
#include "tests/inference/encoder/encoder_fixture.h"

namespace sluice {
namespace {

using nlohmann::json;

class RecordingSink final : public ResponseSink {
 public:
  void on_token(std::string_view) override {}
  void on_event(std::string_view type, std::string_view payload) override {
    if (type == kEmbeddingEvent) event = json::parse(payload);
  }
  void on_complete(const Request& r) override { status = r.status(); ++completed; }
  json event;
  Status status;
  int completed = 0;
};

struct Fixture {
  ManualClock clock;
  MetricsRegistry metrics;
  NodeContext ctx;
  Fixture() {
    ctx.name = "embeddings";
    ctx.pipeline_name = "test";
    ctx.clock = &clock;
    ctx.metrics = &metrics;
  }
  RequestPtr embed_request(std::vector<std::string> texts, std::shared_ptr<RecordingSink>& sink) {
    RequestInput in;
    in.kind = RequestInput::Kind::kEmbed;
    in.model = "use-lite";
    in.inputs = std::move(texts);
    sink = std::make_shared<RecordingSink>();
    return std::make_shared<Request>(++ids, std::move(in), sink);
  }
  uint64_t ids = 0;
};

TEST(EmbeddingsNode, OneEncoderCallServesTheWholeBatchAndOthersPassOn) {
  SLUICE_REQUIRE_ENCODER();
  Fixture f;
  EmbeddingsConfig config;
  config.set_max_batch(256);
  config.set_max_inputs(4);
  config.set_max_input_chars(100);
  EmbeddingsNode node(config, f.ctx);
  ASSERT_TRUE(node.answers_embeddings());
  Batch batch;
  std::shared_ptr<RecordingSink> a, b, too_many, too_long;
  batch.requests.push_back(f.embed_request({"How do I enable dark mode?", ""}, a));
  batch.requests.push_back(f.embed_request({"Sea otters hold hands."}, b));
  batch.requests.push_back(f.embed_request({"1", "2", "3", "4", "5"}, too_many));
  batch.requests.push_back(f.embed_request({"ok", std::string(101, 'x')}, too_long));
  RequestInput chat;
  chat.kind = RequestInput::Kind::kChat;
  auto chat_sink = std::make_shared<RecordingSink>();
  batch.requests.push_back(std::make_shared<Request>(99, chat, chat_sink));
  node.process(batch);

  ASSERT_EQ(a->completed, 1);
  ASSERT_TRUE(a->status.ok()) << a->status.message;
  EXPECT_EQ(a->event["data"].size(), 2u);
  EXPECT_EQ(b->event["data"].size(), 1u);
  EXPECT_EQ(b->event["data"][0]["embedding"].size(), 512u);
  EXPECT_EQ(a->event["usage"]["prompt_tokens"], int(inference::testing::shared_encoder_model()->tokenizer().encode("How do I enable dark mode?").size()));
  EXPECT_EQ(too_many->status.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(too_many->status.param, "input");
  EXPECT_NE(too_many->status.message.find("at most 4"), std::string::npos) << too_many->status.message;
  EXPECT_EQ(too_long->status.param, "input[1]");
  EXPECT_EQ(chat_sink->completed, 0) << "a chat request is not the node's to answer";
  // The three accepted texts went through one encoder call.
  const std::string m = f.metrics.exposition();
  EXPECT_NE(m.find("sluice_embeddings_batch_texts_count{pipeline=\"test\",node=\"embeddings\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("sluice_embeddings_texts_total{pipeline=\"test\",node=\"embeddings\"} 3"), std::string::npos) << m;
}

TEST(EmbeddingsNode, MaxBatchSplitsTheCalls) {
  SLUICE_REQUIRE_ENCODER();
  Fixture f;
  EmbeddingsConfig config;
  config.set_max_batch(2);
  config.set_max_inputs(2048);
  config.set_max_input_chars(32768);
  EmbeddingsNode node(config, f.ctx);
  Batch batch;
  std::shared_ptr<RecordingSink> a, b;
  batch.requests.push_back(f.embed_request({"one", "two", "three"}, a));
  batch.requests.push_back(f.embed_request({"four", "five"}, b));
  node.process(batch);
  EXPECT_TRUE(a->status.ok());
  EXPECT_TRUE(b->status.ok());
  const std::string m = f.metrics.exposition();
  EXPECT_NE(m.find("sluice_embeddings_batch_texts_count{pipeline=\"test\",node=\"embeddings\"} 3"), std::string::npos) << m;
  // Split or not, a text's vector is the same as alone.
  std::shared_ptr<RecordingSink> alone;
  Batch single;
  single.requests.push_back(f.embed_request({"four"}, alone));
  node.process(single);
  EXPECT_EQ(alone->event["data"][0]["embedding"], b->event["data"][0]["embedding"]);
}

TEST(EmbeddingsNode, OptionalAndAbsentIsOffWhileAbsentAloneRefusesToBuild) {
  Fixture f;
  EmbeddingsConfig config;
  config.set_model("/nonexistent/use-lite.gguf");
  EXPECT_THROW(EmbeddingsNode(config, f.ctx), std::invalid_argument);
  config.set_optional(true);
  EmbeddingsNode off(config, f.ctx);
  EXPECT_FALSE(off.answers_embeddings());
}

}  // namespace
}  // namespace sluice
