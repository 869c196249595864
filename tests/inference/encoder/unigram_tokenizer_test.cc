// The USE-lite unigram tokenizer: the reference's rules on a small vocabulary made here, then
// token-for-token parity with the JavaScript reference on every string of the reference file.
#include "inference/encoder/unigram_tokenizer.h"

#include <gtest/gtest.h>

#include "inference/model_error.h"
#include "tests/inference/encoder/encoder_fixture.h"

namespace sluice::inference {
namespace {

using testing::reference;

// Ids 0-5 reserved as in the model ("\uFFFD" is the unknown piece).
UnigramTokenizer small(std::vector<UnigramPiece> extra) {
  std::vector<UnigramPiece> pieces = {{"\xEF\xBF\xBD", 0}, {"<s>", 0}, {"</s>", 0}, {"x1", 0}, {"x2", 0}, {"x3", 0}};
  for (auto& p : extra) pieces.push_back(std::move(p));
  return UnigramTokenizer(std::move(pieces), 6);
}

TEST(UnigramTokenizer, PicksTheBestScoringSegmentation) {
  // "▁ab": ▁a + b scores -1 + -1 = -2; ▁ + ab = -3 + -0.5 = -3.5; ▁ab alone = -2.5.
  auto t = small({{"\xE2\x96\x81", -3}, {"\xE2\x96\x81" "a", -1}, {"b", -1}, {"ab", -0.5}, {"\xE2\x96\x81" "ab", -2.5},
                  {"a", -4}});
  EXPECT_EQ(t.encode("ab"), (std::vector<int32_t>{7, 8}));
}

TEST(UnigramTokenizer, SpacesBecomeWordBoundariesAndEmptyTextHasNoIds) {
  auto t = small({{"\xE2\x96\x81", -1}, {"a", -1}});
  EXPECT_TRUE(t.encode("").empty());
  EXPECT_EQ(t.encode(" "), (std::vector<int32_t>{6, 6}));  // the leading ▁ and the space
  EXPECT_EQ(t.encode("a a"), (std::vector<int32_t>{6, 7, 6, 7}));
  // Only ASCII spaces are boundaries; a tab is a character the vocabulary lacks (unknown).
  EXPECT_EQ(t.encode("a\ta"), (std::vector<int32_t>{6, 7, 0, 7}));
}

TEST(UnigramTokenizer, UnknownCharactersMergeIntoOneUnknownId) {
  auto t = small({{"\xE2\x96\x81", -1}, {"a", -1}});
  EXPECT_EQ(t.encode("a\xE6\x97\xA5\xE6\x9C\xAC" "a"), (std::vector<int32_t>{6, 7, 0, 7}));  // a日本a
  EXPECT_EQ(t.encode("\xF0\x9F\x98\x80"), (std::vector<int32_t>{6, 0}));                     // an emoji: one code point
}

TEST(UnigramTokenizer, NormalisesNfkcFirst) {
  auto t = small({{"\xE2\x96\x81", -1}, {"fi", -1}, {"A", -1}, {"1", -1}});
  EXPECT_EQ(t.encode("\xEF\xAC\x81"), t.encode("fi"));      // the ligature ﬁ
  EXPECT_EQ(t.encode("\xEF\xBC\xA1\xEF\xBC\x91"), t.encode("A1"));  // full-width Ａ１
}

TEST(UnigramTokenizer, AZeroBestIsTreatedAsUnsetAndTiesGoToTheLaterStart) {
  // Both paths to the end score 0: "▁" (0) + "ab" (0) and "▁a" (0) + "b" (0). The later start
  // (b, from position 2) wins the tie, as the reference's >= does.
  auto t = small({{"\xE2\x96\x81", 0}, {"ab", 0}, {"\xE2\x96\x81" "a", 0}, {"b", 0}});
  EXPECT_EQ(t.encode("ab"), (std::vector<int32_t>{8, 9}));
}

TEST(UnigramTokenizer, APieceListedTwiceKeepsItsLastId) {
  auto t = small({{"\xE2\x96\x81", -1}, {"z", -1}, {"z", -2}});
  EXPECT_EQ(t.encode("z"), (std::vector<int32_t>{6, 8}));
}

TEST(UnigramTokenizer, RefusesAnEmptyVocabulary) {
  EXPECT_THROW(UnigramTokenizer({}, 0), ModelError);
  EXPECT_THROW(UnigramTokenizer({{"a", 0}}, 2), ModelError);
}

TEST(UnigramTokenizer, MatchesTheReferenceTokenForToken) {
  SLUICE_REQUIRE_ENCODER();
  const UnigramTokenizer& t = testing::shared_encoder_model()->tokenizer();
  const auto& ref = reference();
  ASSERT_GE(ref.tokens.size(), 300u) << ref.path;
  size_t mismatches = 0;
  for (const auto& entry : ref.tokens) {
    const std::string text = entry.at("text").get<std::string>();
    const auto want = entry.at("ids").get<std::vector<int32_t>>();
    const auto got = t.encode(text);
    if (got != want && ++mismatches <= 5) ADD_FAILURE() << "text '" << text << "': " << ::testing::PrintToString(got)
                                                        << " != reference " << ::testing::PrintToString(want);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << ref.tokens.size() << " strings (" << ref.path << ")";
}

}  // namespace
}  // namespace sluice::inference
