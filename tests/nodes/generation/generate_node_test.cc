// The `generate` node: streams the model's answer into the request's sink, sets usage and
// finish_reason, honours cancellation, bounds its waiting list, and hands the batch on once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "graph/batch.h"
#include "nodes/generation/generate_node.h"
#include "nodes/generation/prompt_node.h"
#include "tests/support/scoped_env.h"
#include "test_models.h"

namespace sluice::generation {
namespace {

class RecordingSink : public ResponseSink {
 public:
  void on_token(std::string_view piece) override { text += piece; }
  void on_complete(const Request& r) override {
    std::lock_guard lock(mu);
    completed = true;
    status = r.status();
    cv.notify_all();
  }
  std::string text;
  std::mutex mu;
  std::condition_variable cv;
  bool completed = false;
  Status status;
};

struct Fixture {
  explicit Fixture(int max_running = 4, size_t max_waiting = 8) {
    options.model_path = testing::shared_model("stories260K.gguf");
    options.engine.max_running = max_running;
    options.engine.max_waiting = max_waiting;
    options.engine.context = 256;
  }
  RequestPtr request(uint64_t id, const std::string& prompt, int max_tokens, std::shared_ptr<RecordingSink> sink) {
    RequestInput in;
    in.kind = RequestInput::Kind::kCompletion;
    in.prompt = prompt;
    in.sampling.temperature = 0;
    in.sampling.max_tokens = max_tokens;
    return std::make_shared<Request>(id, in, sink);
  }
  // Runs one batch through the node and waits for it to be handed on.
  void run(GenerateNode& node, std::vector<RequestPtr> requests) {
    auto batch = std::make_shared<Batch>();
    batch->requests = std::move(requests);
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    node.start_batch(batch, [&](BatchPtr) {
      std::lock_guard lock(mu);
      done = true;
      cv.notify_all();
    });
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  GenerateNodeOptions options;
  ManualClock clock;
};

TEST(GenerateNode, StreamsTheGreedyAnswerWithUsage) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  Fixture f;
  GenerateNode node(f.options, &f.clock);
  auto sink = std::make_shared<RecordingSink>();
  auto r = f.request(1, "Once upon a time", 12, sink);
  f.run(node, {r});
  EXPECT_TRUE(sink->completed);
  EXPECT_TRUE(r->status().ok()) << r->status().message;
  EXPECT_THAT(sink->text, ::testing::StartsWith(", there was a little girl"));
  EXPECT_EQ(r->usage.completion_tokens, 12);
  EXPECT_EQ(r->finish_reason, "length");
  EXPECT_EQ(r->tokens_emitted, 12u);
}

TEST(GenerateNode, CancelledRequestCompletesOnceAndTheBatchMovesOn) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  Fixture f(2);
  GenerateNode node(f.options, &f.clock);
  auto s1 = std::make_shared<RecordingSink>(), s2 = std::make_shared<RecordingSink>();
  auto live = f.request(1, "Tom", 5, s1), gone = f.request(2, "Ann", 5, s2);
  gone->cancel(AbortCause::kClientDisconnect);
  f.run(node, {live, gone});
  EXPECT_TRUE(live->status().ok());
  EXPECT_FALSE(s2->completed);  // inactive requests are the runtime's to complete
  EXPECT_EQ(gone->tokens_emitted, 0u);
}

TEST(GenerateNode, ExpiredRequestStopsWithDeadlineExceeded) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  Fixture f;
  GenerateNode node(f.options, &f.clock);
  auto sink = std::make_shared<RecordingSink>();
  auto r = f.request(1, "Tom", 50, sink);
  r->deadline = f.clock.now() + 10;
  f.clock.advance(100);  // already past its deadline when the stream picks it up
  f.run(node, {r});
  EXPECT_EQ(r->status().code, StatusCode::kDeadlineExceeded);
}

TEST(GenerateNode, ABatchIsGeneratedTogetherAndEachAnswerMatchesItsSoloRun) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  Fixture f(8, 16);
  GenerateNode node(f.options, &f.clock);
  const std::vector<std::string> prompts = {"Tom", "Ann had a cat", "Once upon a time", "The sun"};
  std::vector<std::string> solo;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto sink = std::make_shared<RecordingSink>();
    f.run(node, {f.request(100 + i, prompts[i], 20, sink)});
    solo.push_back(sink->text);
  }
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  std::vector<RequestPtr> batch;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    batch.push_back(f.request(200 + i, prompts[i], 20, sinks.back()));
  }
  f.run(node, batch);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_TRUE(batch[i]->status().ok());
    EXPECT_EQ(sinks[i]->text, solo[i]) << prompts[i];
  }
}

TEST(GenerateNode, APromptLongerThanTheContextFailsWithAClearError) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  Fixture f;
  f.options.engine.context = 16;
  GenerateNode node(f.options, &f.clock);
  auto sink = std::make_shared<RecordingSink>();
  auto r = f.request(1, std::string(300, 'x'), 5, sink);
  f.run(node, {r});
  EXPECT_EQ(r->status().code, StatusCode::kInvalidArgument);
  EXPECT_THAT(r->status().message, ::testing::HasSubstr("context holds 16"));
}

TEST(GenerateNode, WithoutAModelAnOptionalNodePassesRequestsOn) {
  sluice::testing::ScopedEnv no_model("SLUICE_MODEL", nullptr);
  GenerateConfig c;
  EXPECT_THROW(generate_options_from(c, "/pipes"), std::invalid_argument);  // required by default
  c.set_optional(true);
  const GenerateNodeOptions o = generate_options_from(c, "/pipes");
  EXPECT_TRUE(o.model_path.empty());
  ManualClock clock;
  GenerateNode node(o, &clock);
  EXPECT_EQ(node.engine(), nullptr);
  Fixture f;
  auto sink = std::make_shared<RecordingSink>();
  auto r = f.request(1, "Tom", 5, sink);
  f.run(node, {r});
  EXPECT_TRUE(r->active()) << "left for the next node";
  EXPECT_FALSE(sink->completed);
}

TEST(GenerateNode, RetrievalOnlyRequestsPassOnToTheAnswerNode) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  Fixture f;
  GenerateNode node(f.options, &f.clock);
  RequestInput in;
  in.kind = RequestInput::Kind::kRetrieve;
  in.prompt = "what is a KV cache";
  auto sink = std::make_shared<RecordingSink>();
  auto r = std::make_shared<Request>(7, in, sink);
  f.run(node, {r});
  EXPECT_TRUE(r->active());
  EXPECT_EQ(r->tokens_emitted, 0u);
}

TEST(GenerateNode, CitationsFromThePromptNodeFollowTheAnswer) {
  SLUICE_REQUIRE_SHARED(testing::shared_model("stories260K.gguf"));
  Fixture f;
  GenerateNode node(f.options, &f.clock);
  auto sink = std::make_shared<RecordingSink>();
  auto r = f.request(1, "ignored", 5, sink);
  r->attach("prompt", std::make_shared<std::string>("Once upon a time"));
  r->attach(kCitationsKey, std::make_shared<std::vector<retrieval::Citation>>(
                               std::vector<retrieval::Citation>{{1, "doc-a", "Title A", 0, 10}}));
  f.run(node, {r});
  EXPECT_TRUE(r->status().ok());
  EXPECT_THAT(sink->text, ::testing::EndsWith("\n\nSources:\n[1] Title A (doc-a)\n"));
}

TEST(GenerateNode, BadModelPathIsAConfigError) {
  GenerateNodeOptions o;
  o.model_path = "/nonexistent/model.gguf";
  ManualClock clock;
  EXPECT_THROW(GenerateNode(o, &clock), std::invalid_argument);
  GenerateConfig c;
  c.set_model("m.gguf");
  // auto reads the chat template from the file, so a missing file fails at configuration.
  EXPECT_THROW(generate_options_from(c, "/pipes"), std::invalid_argument);
  c.set_chat_template("plain");
  EXPECT_EQ(generate_options_from(c, "/pipes").model_path, "/pipes/m.gguf");
  EXPECT_EQ(generate_options_from(c, "/pipes").max_tokens, 256);
}

}  // namespace
}  // namespace sluice::generation
