// TokenConstraint on a small vocabulary: which tokens a state allows, the end token only once
// the document is complete, and the budget rule (an answer with random logits always parses
// within its token limit).
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <tuple>

#include <nlohmann/json.hpp>

#include "inference/constrain/token_mask.h"

namespace sluice::constrain {
namespace {

using ojson = nlohmann::ordered_json;

// Token 0 ends generation; the others are pieces a SentencePiece vocabulary has, including
// every printable ASCII byte on its own (byte fallback).
std::vector<std::string> vocabulary() {
  std::vector<std::string> v = {"", "{\"", "\":", "\",", " the", " cat", "\"}", "ab", "12", "true", "null", " ", "},",
                                "[\"", "\"]", "Lily", " went"};
  for (int c = 0x20; c < 0x7f; ++c) v.push_back(std::string(1, char(c)));
  return v;
}

std::shared_ptr<const JsonGrammar> compile(const std::string& schema) {
  GrammarError e;
  auto g = JsonGrammar::compile(ojson::parse(schema), "schema", &e);
  EXPECT_TRUE(g) << e.message;
  return g;
}

std::vector<int> allowed(TokenConstraint& c, std::size_t vocab, int tokens_left) {
  std::vector<float> logits(vocab, 0.0f);
  c.mask(logits, tokens_left);
  std::vector<int> out;
  for (std::size_t i = 0; i < vocab; ++i)
    if (logits[i] != -std::numeric_limits<float>::infinity()) out.push_back(int(i));
  return out;
}

TEST(TokenMask, AllowsOnlyTokensThatStayInTheGrammar) {
  const auto pieces = vocabulary();
  auto trie = std::make_shared<VocabTrie>(pieces);
  TokenConstraint c(compile(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})"), trie, {0});
  auto index = [&](const std::string& p) { return int(std::find(pieces.begin(), pieces.end(), p) - pieces.begin()); };
  EXPECT_EQ(allowed(c, pieces.size(), 100), (std::vector<int>{index("{\""), index("{")}));
  ASSERT_TRUE(c.accept("{\"a\":"));
  const std::vector<int> value = allowed(c, pieces.size(), 100);
  EXPECT_TRUE(std::count(value.begin(), value.end(), index(" ")));  // ": "
  EXPECT_TRUE(std::count(value.begin(), value.end(), index("\"")));
  EXPECT_FALSE(std::count(value.begin(), value.end(), index("12")));
  EXPECT_FALSE(std::count(value.begin(), value.end(), 0));  // not complete: no end token
  ASSERT_TRUE(c.accept("\"the"));
  // Inside the string with room to spare: words, and the closing quote with the brace.
  const std::vector<int> body = allowed(c, pieces.size(), 100);
  EXPECT_TRUE(std::count(body.begin(), body.end(), index(" cat")));
  EXPECT_TRUE(std::count(body.begin(), body.end(), index("\"}")));
  // Two tokens left: only what still lets the document close ("\"}" now, or '"' then '}').
  EXPECT_EQ(allowed(c, pieces.size(), 2), (std::vector<int>{index("{\""), index("\"}"), index("[\""), index("\"")}));  // "{" and "[" are text here
  EXPECT_EQ(allowed(c, pieces.size(), 1), (std::vector<int>{index("\"}")}));
  ASSERT_TRUE(c.accept("\"}"));
  EXPECT_TRUE(c.finished());
  EXPECT_FALSE(c.accept("x"));
}

TEST(TokenMask, RandomLogitsAlwaysParseWithinTheLimit) {
  const auto pieces = vocabulary();
  auto trie = std::make_shared<VocabTrie>(pieces);
  auto walked = std::make_shared<VocabTrie>(pieces, /*split_plain=*/false);  // every mask by the walk alone
  const std::string schemas[] = {
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
          "tags":{"type":"array","items":{"type":"string"}},"ok":{"type":"boolean"},"n":{"type":["number","null"]}},
          "required":["name","age","tags","ok","n"],"additionalProperties":false})",
      R"({"type":"object"})",
      R"({"type":"object","properties":{"year":{"type":"integer","minimum":1900,"maximum":2100},
          "score":{"type":"integer","minimum":-40,"exclusiveMaximum":-3}},"required":["year","score"]})",
      R"({"$defs":{"t":{"type":"object","properties":{"v":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/t"}}},
          "required":["v","kids"]}},"$ref":"#/$defs/t"})",
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  for (const std::string& schema : schemas) {
    auto grammar = compile(schema);
    for (int limit : {int(grammar->min_bytes()), int(grammar->min_bytes()) + 3, int(grammar->min_bytes()) + 40, 200}) {
      for (int trial = 0; trial < 20; ++trial) {
        TokenConstraint c(grammar, trie, {0}), reference(grammar, walked, {0});
        std::string text;
        int used = 0;
        for (; used < limit && !c.finished(); ++used) {
          std::vector<float> logits(pieces.size());
          for (float& l : logits) l = noise(rng);
          std::vector<float> same = logits;
          ASSERT_GT(c.mask(logits, limit - used), 0u) << schema << " after " << text;
          reference.mask(same, limit - used);
          ASSERT_EQ(logits, same) << "the plain-token shortcut and the walk disagree after " << text;
          const int next = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
          if (next == 0) break;  // the end token: complete
          ASSERT_TRUE(c.accept(pieces[std::size_t(next)]));
          ASSERT_TRUE(reference.accept(pieces[std::size_t(next)]));
          text += pieces[std::size_t(next)];
        }
        EXPECT_TRUE(c.accepts()) << schema << " limit " << limit << ": " << text;
        EXPECT_TRUE(nlohmann::json::accept(text)) << text;
        EXPECT_NO_THROW(std::ignore = nlohmann::json::parse(text)) << text;
      }
    }
  }
}

}  // namespace
}  // namespace sluice::constrain
