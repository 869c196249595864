// The cited-prompt layout: numbering, placeholders, cutting passages, the conversation the
// chat template sees, and template errors.
#include "nodes/generation/cited_prompt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/error_message.h"

namespace sluice::generation {

using namespace sluice::inference;
namespace {

CitedPromptOptions options() {
  CitedPromptOptions o;
  o.system = "SYSTEM";
  o.passage_template = "[{{n}}] {{title}} ({{doc_id}})\n{{text}}\n\n";
  o.question_template = "Q: {{question}}\nA:";
  o.no_passages = "(none)\n\n";
  o.max_passages = 4;
  return o;
}

TEST(CitedPrompt, NumbersPassagesInRankOrderThenAsks) {
  const std::vector<Passage> passages = {{"b.md", "Beta", "second"}, {"a.md", "", "first"}};
  EXPECT_EQ(passages_and_question(options(), passages, "why?"),
            "[1] Beta (b.md)\nsecond\n\n[2] a.md (a.md)\nfirst\n\nQ: why?\nA:");
}

TEST(CitedPrompt, MaxPassagesLeavesTheRestOut) {
  auto o = options();
  o.max_passages = 1;
  const std::vector<Passage> passages = {{"a", "A", "one"}, {"b", "B", "two"}};
  EXPECT_EQ(passages_and_question(o, passages, "q"), "[1] A (a)\none\n\nQ: q\nA:");
  EXPECT_EQ(passages_used(o, 2), 1u);
  EXPECT_EQ(passages_used(o, 0), 0u);
}

TEST(CitedPrompt, NoPassagesSaysSo) {
  EXPECT_EQ(passages_and_question(options(), {}, "q"), "(none)\n\nQ: q\nA:");
}

TEST(CitedPrompt, PlaceholderValuesAreNotExpandedAgain) {
  const std::vector<Passage> passages = {{"d", "T", "text with {{question}} inside"}};
  EXPECT_EQ(passages_and_question(options(), passages, "{{n}}"),
            "[1] T (d)\ntext with {{question}} inside\n\nQ: {{n}}\nA:");
}

TEST(CitedPrompt, CutsAtAWordAndMarksTheCut) {
  EXPECT_EQ(cut_passage("the quick brown fox", 12), "the quick...");       // inside "brown": back to the space
  EXPECT_EQ(cut_passage("the quick brown fox", 9), "the quick...");        // right at a space
  EXPECT_EQ(cut_passage("the quick brown fox", 19), "the quick brown fox");  // fits
  EXPECT_EQ(cut_passage("the quick brown fox", 0), "the quick brown fox");   // 0: no limit
  EXPECT_EQ(cut_passage("a verylongwordindeed", 10), "a verylong...");     // the only space is too early
  EXPECT_EQ(cut_passage("", 5), "");
}

TEST(CitedPrompt, CountsCharactersNotBytesAndNeverSplitsOne) {
  const std::string e = "\xC3\xA9";  // é: two bytes
  EXPECT_EQ(cut_passage(e + e + e + e + e, 3), e + e + e + "...");
  EXPECT_EQ(cut_passage(e + e + e, 3), e + e + e);
  const std::string snow = "\xE2\x98\x83";  // ☃: three bytes
  EXPECT_EQ(cut_passage(snow + snow + " " + snow, 2), snow + snow + "...");
}

TEST(CitedPrompt, ConversationPutsTheConfiguredSystemFirstAndReplacesTheLastUserTurn) {
  RequestInput in;
  in.kind = RequestInput::Kind::kChat;
  in.messages = {{"user", "earlier"}, {"assistant", "reply"}, {"system", "client rules"}, {"user", "now?"}};
  const auto conv = cited_conversation(options(), in, "PASSAGES+QUESTION");
  ASSERT_EQ(conv.size(), 4u);
  EXPECT_EQ(conv[0].role, "system");
  EXPECT_EQ(conv[0].content, "SYSTEM\n\nclient rules");
  EXPECT_EQ(conv[1].content, "earlier");
  EXPECT_EQ(conv[2].role, "assistant");
  EXPECT_EQ(conv[3].role, "user");
  EXPECT_EQ(conv[3].content, "PASSAGES+QUESTION");
}

TEST(CitedPrompt, ConversationOfACompletionIsSystemThenTheUserTurn) {
  RequestInput in;
  in.kind = RequestInput::Kind::kCompletion;
  in.prompt = "ignored here: the question is already in the user turn";
  auto o = options();
  auto conv = cited_conversation(o, in, "U");
  ASSERT_EQ(conv.size(), 2u);
  EXPECT_EQ(conv[0].content, "SYSTEM");
  EXPECT_EQ(conv[1].content, "U");
  o.system.clear();
  conv = cited_conversation(o, in, "U");
  ASSERT_EQ(conv.size(), 1u);
  EXPECT_EQ(conv[0].role, "user");
}

TEST(CitedPrompt, ChatWithoutAUserMessageGetsOneAppended) {
  RequestInput in;
  in.kind = RequestInput::Kind::kChat;
  in.messages = {{"system", "only rules"}};
  const auto conv = cited_conversation(options(), in, "U");
  ASSERT_EQ(conv.size(), 2u);
  EXPECT_EQ(conv[1].content, "U");
}

// The error check_cited_prompt_options gives after `change` is applied to valid options.
std::string config_error(void (*change)(CitedPromptOptions&)) {
  auto o = options();
  change(o);
  return inference::testing::invalid_argument_message([&] { check_cited_prompt_options(o); });
}

TEST(CitedPrompt, TemplateErrorsNameTheFieldAndTheProblem) {
  EXPECT_NO_THROW(check_cited_prompt_options(options()));
  EXPECT_EQ(config_error([](auto& o) { o.passage_template = "[{{n}}] {{body}}"; }),
            "passage_template: unknown placeholder '{{body}}' (allowed: {{n}}, {{doc_id}}, {{title}}, {{text}})");
  EXPECT_EQ(config_error([](auto& o) { o.passage_template = "[{{n}}] {{text"; }),
            "passage_template: '{{' at byte 8 is never closed by '}}'");
  EXPECT_EQ(config_error([](auto& o) { o.passage_template = "{{text}}"; }), "passage_template: must contain {{n}}");
  EXPECT_EQ(config_error([](auto& o) { o.question_template = "Answer:"; }),
            "question_template: must contain {{question}}");
  EXPECT_EQ(config_error([](auto& o) { o.no_passages = "none for {{question}}"; }),
            "no_passages: unknown placeholder '{{question}}' (none are allowed)");
}

}  // namespace
}  // namespace sluice::generation
