// Structured outputs on the real stories260K model: a toy that writes children's stories and
// knows no JSON, so everything its answers get right is the constraint's doing. Every answer
// must parse and match the schema, greedy and sampled, alone and batched, within max_tokens.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "inference/engine/engine_scheduler.h"
#include "tests/inference/stories_model_test.h"

namespace sluice::inference {
namespace {

using Steady = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

constexpr const char* kCharacter = R"({"type":"object","properties":{
    "name":{"type":"string"},"age":{"type":"integer"},"happy":{"type":"boolean"},
    "friends":{"type":"array","items":{"type":"string"},"maxItems":3},
    "mood":{"enum":["glad","sad","sleepy"]}},
    "required":["name","age","happy","friends","mood"],"additionalProperties":false})";

std::shared_ptr<const constrain::JsonGrammar> grammar(const char* schema) {
  constrain::GrammarError e;
  auto g = constrain::JsonGrammar::compile(ojson::parse(schema), "schema", &e);
  EXPECT_TRUE(g) << e.message;
  return g;
}

struct StructuredOutputTest : testing::StoriesModelTest {
  struct Out {
    std::string streamed;
    GenerationResult result;
  };
  static GenerationRequest request(std::shared_ptr<const constrain::JsonGrammar> g, int max_tokens, Out* out,
                                   SamplingParams sampling) {
    GenerationRequest r;
    r.prompt = "Lily was a little girl. She had a friend.";
    r.max_tokens = max_tokens;
    r.sampling = sampling;
    r.grammar = std::move(g);
    r.on_text = [out](std::string_view s) { out->streamed += s; };
    r.on_finish = [out](const GenerationResult& res) { out->result = res; };
    return r;
  }
  static void run(EngineScheduler& s) {
    for (int i = 0; i < 100000 && !s.idle(); ++i) s.step();
    ASSERT_TRUE(s.idle());
  }
  static void expect_character(const std::string& text) {
    ASSERT_TRUE(nlohmann::json::accept(text)) << text;
    const auto v = nlohmann::json::parse(text);
    EXPECT_TRUE(v.at("name").is_string()) << text;
    EXPECT_TRUE(v.at("age").is_number_integer()) << text;
    EXPECT_TRUE(v.at("happy").is_boolean()) << text;
    EXPECT_TRUE(v.at("friends").is_array() && v.at("friends").size() <= 3) << text;
    const std::string mood = v.at("mood");
    EXPECT_TRUE(mood == "glad" || mood == "sad" || mood == "sleepy") << text;
  }
};

TEST_F(StructuredOutputTest, GreedyAnswerParsesAndStopsAtTheClosingBrace) {
  EngineScheduler s(*model, EngineOptions{});
  Out out;
  ASSERT_TRUE(s.add(request(grammar(kCharacter), 200, &out, greedy()), Steady::now()).ok());
  run(s);
  EXPECT_EQ(out.result.finish, FinishReason::kStop) << out.result.error;
  expect_character(out.result.text);
  EXPECT_EQ(out.streamed, out.result.text);
  EXPECT_EQ(out.result.text.back(), '}');
}

// 100 sampled answers, 25 at a time in one batch, at temperature 1 and with a token limit
// that the free-running strings would overrun: every one parses.
TEST_F(StructuredOutputTest, HundredSampledAnswersAllParse) {
  EngineScheduler s(*model, EngineOptions{});
  auto g = grammar(kCharacter);
  std::vector<Out> outs(100);
  for (int wave = 0; wave < 4; ++wave) {
    for (int i = wave * 25; i < wave * 25 + 25; ++i) {
      SamplingParams p;
      p.temperature = 1.0f;
      p.seed = std::uint64_t(i + 1);
      ASSERT_TRUE(s.add(request(g, 64 + i % 3 * 32, &outs[std::size_t(i)], p), Steady::now()).ok());
    }
    run(s);
  }
  int stopped = 0;
  for (const Out& o : outs) {
    expect_character(o.result.text);
    EXPECT_LE(o.result.completion_tokens, 128);
    stopped += o.result.finish == FinishReason::kStop;
  }
  EXPECT_EQ(stopped, 100);  // the budget rule closes the document in time
}

TEST_F(StructuredOutputTest, AnyObjectAndTheBudgetAtItsMinimum) {
  EngineScheduler s(*model, EngineOptions{});
  Out any, tight;
  SamplingParams p;
  p.seed = 3;
  ASSERT_TRUE(s.add(request(constrain::JsonGrammar::any_object(), 48, &any, p), Steady::now()).ok());
  auto g = grammar(kCharacter);
  ASSERT_TRUE(s.add(request(g, int(g->min_bytes()), &tight, p), Steady::now()).ok());
  run(s);
  EXPECT_TRUE(nlohmann::json::parse(any.result.text).is_object()) << any.result.text;
  expect_character(tight.result.text);
  EXPECT_EQ(tight.result.finish, FinishReason::kStop);
}

TEST_F(StructuredOutputTest, TooFewTokensForTheSchemaIsRefusedUpFront) {
  EngineScheduler s(*model, EngineOptions{});
  Out out;
  auto g = grammar(kCharacter);
  Status st = s.add(request(g, int(g->min_bytes()) - 1, &out, greedy()), Steady::now());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.api_code, "invalid_value");
  EXPECT_EQ(st.param, "max_tokens");
  EXPECT_NE(st.message.find("shortest answer"), std::string::npos) << st.message;
}

}  // namespace
}  // namespace sluice::inference
