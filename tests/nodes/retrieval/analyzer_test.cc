#include "nodes/retrieval/text/analyzer.h"

#include <gtest/gtest.h>

#include "nodes/retrieval/text/utf8.h"

namespace sluice::retrieval {
namespace {


TEST(Analyzer, LowercasesSplitsDropsStopwordsAndStems) {
  Analyzer a;
  EXPECT_EQ(a.terms("The Flows of heated WINGS, at Mach-2."),
            (std::vector<std::string>{"flow", "heat", "wing", "mach", "2"}));
}

TEST(Analyzer, UnicodeLettersAreWordsAndFoldCase) {
  Analyzer a(AnalyzerOptions{"", "none", {}, 64});
  EXPECT_EQ(a.terms("ÉCOLE Straße ΑΒΓ Москва"), (std::vector<std::string>{"école", "straße", "αβγ", "москва"}));
  // General punctuation (em dash, ellipsis) separates words.
  EXPECT_EQ(a.terms("alpha\xE2\x80\x94" "beta\xE2\x80\xA6"), (std::vector<std::string>{"alpha", "beta"}));
}

TEST(Analyzer, InvalidUtf8IsASeparatorNotACrash) {
  Analyzer a(AnalyzerOptions{"", "none", {}, 64});
  EXPECT_EQ(a.terms(std::string("ab\xFF\xFE" "cd\xC3")), (std::vector<std::string>{"ab", "cd"}));
}

TEST(Analyzer, TokensKeepOffsetsAndPositionsCountingStopwords) {
  Analyzer a;
  const auto t = a.tokens("flow of the air");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].term, "flow");
  EXPECT_EQ(t[0].position, 0u);
  EXPECT_EQ(t[1].term, "air");
  EXPECT_EQ(t[1].position, 3u);
  EXPECT_EQ(t[1].begin, 12u);
  EXPECT_EQ(t[1].end, 15u);
}

TEST(Analyzer, LongTokensAreTruncated) {
  Analyzer a(AnalyzerOptions{"", "none", {}, 8});
  EXPECT_EQ(a.terms(std::string(100, 'x')), (std::vector<std::string>{std::string(8, 'x')}));
}

TEST(Analyzer, UnknownOptionsAreRejectedByName) {
  EXPECT_THROW(Analyzer(AnalyzerOptions{"klingon", "lucene33", {}, 64}), std::invalid_argument);
  EXPECT_THROW(Analyzer(AnalyzerOptions{"porter", "most", {}, 64}), std::invalid_argument);
}

TEST(Analyzer, Porter2IsAvailable) {
  Analyzer a(AnalyzerOptions{"english", "lucene33", {}, 64});
  EXPECT_EQ(a.terms("generously"), (std::vector<std::string>{"generous"}));
}

}  // namespace
}  // namespace sluice::retrieval
