// Fitting a cited prompt to a token budget: whole passages dropped last first, then the first
// dropped one cut at its tail, never the system part or the question; citations follow.
#include "nodes/generation/prompt_fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/test_models.h"

namespace sluice::generation {

using namespace sluice::inference;
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kDocIds[] = {"doc0", "doc1", "doc2"};
constexpr const char* kTitles[] = {"T0", "T1", "T2"};

class PromptFit : public ::testing::Test {
 protected:
  void SetUp() override {
    auto options = std::make_shared<PromptNodeOptions>();
    options->layout.system = "Answer from the passages.";
    options->layout.passage_template = "[{{n}}] {{title}}\n{{text}}\n\n";
    options->layout.question_template = "Question: {{question}}\nAnswer:";
    options->layout.no_passages = "No passages were found.\n\n";
    options->layout.max_passages = 4;
    draft_.options = options;
    draft_.input.kind = RequestInput::Kind::kCompletion;
    draft_.input.prompt = "who said hello?";
    for (int i = 0; i < 3; ++i) {
      texts_.push_back("hello " + std::string(size_t(i + 1) * 20, 'a') + " and then some words of passage " +
                       std::to_string(i + 1) + " that go on for a while to be cut somewhere in the middle");
    }
    for (int i = 0; i < 3; ++i) {
      draft_.passages.push_back({kDocIds[i], kTitles[i], texts_[size_t(i)]});
      draft_.citations.push_back({i + 1, kDocIds[i], kTitles[i], 0, 10, ""});
    }
  }
  int64_t size_with(std::size_t n, std::size_t last_chars = 0) const {
    return int64_t(tok_->encode_prompt(draft_.render(n, last_chars), true).size());
  }
  std::string text_of(const FittedPrompt& f) const {
    return tok_->decode(std::vector<int32_t>(f.tokens.begin() + 1, f.tokens.end()));
  }
  // The system part first and the question last, whatever was cut.
  void expect_frame(const FittedPrompt& f) const {
    EXPECT_EQ(f.tokens.front(), tok_->bos());
    EXPECT_THAT(text_of(f), StartsWith("Answer from the passages.\n\n"));
    EXPECT_THAT(text_of(f), EndsWith("Question: who said hello?\nAnswer:"));
  }
  inference::testing::TinyVocab vocab_;
  const Tokenizer* tok_ = &vocab_.tokenizer;
  std::vector<std::string> texts_;
  CitedPromptDraft draft_;
};

TEST_F(PromptFit, APromptThatFitsIsUntouched) {
  const FittedPrompt f = fit_prompt(draft_, *tok_, size_with(3));
  EXPECT_EQ(f.passages, 3u);
  EXPECT_EQ(f.last_passage_chars, 0u);
  EXPECT_EQ(f.tokens, tok_->encode_prompt(draft_.render(), true));
}

TEST_F(PromptFit, WholePassagesGoLastFirst) {
  // Room for two passages and a few tokens: too few for a useful cut of the third.
  const FittedPrompt f = fit_prompt(draft_, *tok_, size_with(2) + 3);
  EXPECT_EQ(f.passages, 2u);
  EXPECT_EQ(f.last_passage_chars, 0u);
  EXPECT_EQ(f.tokens, tok_->encode_prompt(draft_.render(2), true));
  expect_frame(f);
  EXPECT_THAT(text_of(f), HasSubstr("[2] T1\n" + texts_[1]));
  EXPECT_EQ(text_of(f).find("[3]"), std::string::npos);
}

TEST_F(PromptFit, ThenTheFirstDroppedPassageIsCutAtItsTailToFill) {
  const int64_t budget = (size_with(1) + size_with(2)) / 2;  // room for part of passage 2
  const FittedPrompt f = fit_prompt(draft_, *tok_, budget);
  EXPECT_EQ(f.passages, 2u);
  EXPECT_GE(f.last_passage_chars, kMinCutPassageChars);
  EXPECT_LE(int64_t(f.tokens.size()), budget);
  expect_frame(f);
  const std::string text = text_of(f);
  EXPECT_THAT(text, HasSubstr("[1] T0\n" + texts_[0] + "\n\n[2] T1\nhello "));
  EXPECT_THAT(text, HasSubstr("...\n\nQuestion:"));
  EXPECT_EQ(f.tokens, tok_->encode_prompt(draft_.render(2, f.last_passage_chars), true));
  // The longest cut that fits: one more character would not.
  EXPECT_GT(size_with(2, f.last_passage_chars + 1), budget);
}

TEST_F(PromptFit, TheQuestionAndSystemAreNeverCut) {
  // Less room than the passage-less prompt: no passage is kept, the frame stays whole and the
  // engine's own rule decides (refuse beyond the context, else answer until it is full).
  const FittedPrompt f = fit_prompt(draft_, *tok_, size_with(0) - 1);
  EXPECT_EQ(f.passages, 0u);
  EXPECT_EQ(f.tokens, tok_->encode_prompt(draft_.render(0), true));
  expect_frame(f);
  EXPECT_THAT(text_of(f), HasSubstr("No passages were found."));
}

TEST_F(PromptFit, MaxPassageCharsStillBoundsEveryPassage) {
  auto options = std::make_shared<PromptNodeOptions>(*draft_.options);
  options->layout.max_passage_chars = 40;
  draft_.options = options;
  const FittedPrompt f = fit_prompt(draft_, *tok_, 100000);
  EXPECT_EQ(f.passages, 3u);
  EXPECT_EQ(text_of(f).find(texts_[0]), std::string::npos);  // cut to 40 characters
  EXPECT_THAT(text_of(f), HasSubstr("[3] T2\nhello"));
}

}  // namespace
}  // namespace sluice::generation
