#include "nodes/retrieval/kb/extractive_answer.h"

#include <gtest/gtest.h>

#include <string>

#include "nodes/retrieval/kb/answer_sentences.h"
#include "nodes/retrieval/kb/knowledge_base.h"
#include "nodes/retrieval/kb/retriever.h"

namespace sluice::retrieval {
namespace {

KnowledgeBaseOptions small_options() {
  KnowledgeBaseOptions o;
  o.lsa.dimensions = 8;
  o.embed_batch = 7;
  return o;
}

ExtractiveAnswer answer_over(const std::vector<SourceDocument>& docs, const std::string& question) {
  KnowledgeBase kb(small_options());
  kb.upsert(docs);
  const auto gen = kb.current();
  RetrieveOptions o;
  o.mode = RetrieveMode::kBm25;
  return extractive_answer(question, retrieve(*gen, question, o).hits, *gen);
}

TEST(ExtractiveAnswer, QuotesMatchingSentencesWithCitationsThenSources) {
  const std::vector<SourceDocument> docs = {
      {"cache.md", "Caching", "The cache stores answers. It is invalidated when the index version changes. Colours are nice.",
       DocumentKind::kNarrative, CodeLanguage::kNone},
      {"ingest.md", "Ingest", "Ingest re-embeds changed documents only. Bananas are yellow.", DocumentKind::kNarrative,
       CodeLanguage::kNone},
      {"other.md", "Other", "Nothing related here at all.", DocumentKind::kNarrative, CodeLanguage::kNone}};
  const auto a = answer_over(docs, "when is the cache invalidated");
  ASSERT_FALSE(a.sources.empty());
  EXPECT_EQ(a.sources[0].doc_id, "cache.md");
  const std::string text = a.text();
  EXPECT_NE(text.find("It is invalidated when the index version changes. [1]"), std::string::npos) << text;
  EXPECT_EQ(text.find("Colours"), std::string::npos) << text;
  EXPECT_NE(text.find("Sources:\n[1] Caching (cache.md)"), std::string::npos) << text;
  const auto none = answer_over(docs, "zebra");
  EXPECT_TRUE(none.sources.empty());
  EXPECT_EQ(none.text(), "No passage in the knowledge base matches the question.");
}

// A document that is only its title (half of CACM's records) is quoted by its title.
TEST(ExtractiveAnswer, ATitleOnlyDocumentIsQuotedByItsTitle) {
  const std::vector<SourceDocument> docs = {
      {"2", "Extraction of Roots by Repeated Subtractions for Digital Computers", "", DocumentKind::kNarrative,
       CodeLanguage::kNone},
      {"9", "Matrix Programs", "Programs that invert a matrix by repeated elimination.", DocumentKind::kNarrative,
       CodeLanguage::kNone}};
  const auto a = answer_over(docs, "extraction of roots by repeated subtractions");
  ASSERT_FALSE(a.sources.empty());
  EXPECT_EQ(a.sources[0].doc_id, "2");
  const std::string text = a.text();
  EXPECT_EQ(text.rfind("Extraction of Roots by Repeated Subtractions for Digital Computers [1]", 0), 0u) << text;
}

// A table row or heading that matches more query terms than any sentence is not quoted while a
// prose sentence matches: it says nothing a reader can take as the answer.
TEST(ExtractiveAnswer, PrefersProseToTableRowsAndHeadings) {
  const std::string text =
      answer_over({{"shed.md", "Shedding",
                    "# How the shedding ladder sheds load\n\n| shedding | ladder | load | level |\n| --- | --- | --- | --- |\n\n"
                    "The ladder sheds the lowest class first when load stays high.",
                    DocumentKind::kNarrative, CodeLanguage::kNone},
                   {"other.md", "Other", "Nothing related here at all.", DocumentKind::kNarrative, CodeLanguage::kNone}},
                  "how does the shedding ladder shed load")
          .text();
  EXPECT_NE(text.find("The ladder sheds the lowest class first when load stays high. [1]"), std::string::npos) << text;
  EXPECT_EQ(text.find("| shedding"), std::string::npos) << text;
  EXPECT_EQ(text.find("# How"), std::string::npos) << text;
}

// A benchmark result matches a "how does it work" question's words (here more of them) without
// explaining anything: the explanation is quoted. A question that asks for a quantity gets it.
TEST(ExtractiveAnswer, ExplainsRatherThanQuotingMeasurementsUnlessAskedForAQuantity) {
  const std::vector<SourceDocument> docs = {
      {"shed.md", "Shedding",
       "Sustained overload raises the level one step, and level 1 sheds the lowest class. "
       "On the overload stage the ladder sheds load 2.75-3 s into a 2x overload and stays at 0 at 0.5x.",
       DocumentKind::kNarrative, CodeLanguage::kNone},
      {"other.md", "Other", "Nothing related here at all.", DocumentKind::kNarrative, CodeLanguage::kNone}};
  const std::string how = answer_over(docs, "how does the ladder shed load under overload").text();
  EXPECT_NE(how.find("Sustained overload raises the level one step"), std::string::npos) << how;
  EXPECT_EQ(how.find("2.75-3 s"), std::string::npos) << how;
  const std::string fast = answer_over(docs, "how fast does the ladder shed load under overload").text();
  EXPECT_NE(fast.find("2.75-3 s"), std::string::npos) << fast;
  // Only measurements match: they are quoted rather than nothing.
  const std::string only = answer_over(docs, "what happens at 0.5x").text();
  EXPECT_NE(only.find("stays at 0 at 0.5x"), std::string::npos) << only;
}

TEST(AnswerSentences, TableRowTailsCodeAndFragmentsAreStructure) {
  const std::string text =
      "| `lookback` | duration | `1h` | Results of this long ago. 0: only results written after start. |\n\n"
      "Prose sentence one. Another prose sentence.\n\n"
      "```json\n{\"custom_id\": \"q1\", \"url\": \"/v1/chat\"} More code.\n```\n\n"
      "    indented code line here.\n\n"
      "after the cut, a fragment.";
  std::vector<std::pair<std::string, SentenceKind>> got;
  for (const auto& s : answer_sentences(text)) got.emplace_back(text.substr(s.begin, s.end - s.begin), s.kind);
  auto kind_of = [&](const std::string& prefix) {
    for (const auto& [t, k] : got)
      if (t.rfind(prefix, 0) == 0) return k;
    ADD_FAILURE() << "no sentence starts with " << prefix;
    return SentenceKind::kProse;
  };
  EXPECT_EQ(kind_of("| `lookback`"), SentenceKind::kStructure);
  EXPECT_EQ(kind_of("0: only results"), SentenceKind::kStructure);
  EXPECT_EQ(kind_of("Prose sentence one."), SentenceKind::kProse);
  EXPECT_EQ(kind_of("Another prose sentence."), SentenceKind::kProse);
  EXPECT_EQ(kind_of("{\"custom_id\""), SentenceKind::kStructure);
  EXPECT_EQ(kind_of("indented code line"), SentenceKind::kStructure);
  EXPECT_EQ(kind_of("after the cut"), SentenceKind::kStructure);
}

// A chunk that begins inside a code block (its opening fence in the previous chunk): the bare
// fence closes it when the next fence opens another block.
TEST(AnswerSentences, AChunkStartingInsideACodeBlockKnowsIt) {
  const std::string text =
      "Kind: code inside the block\n```\n\nProse between blocks.\n\n```yaml\nKey: value\n```\n";
  const auto sentences = answer_sentences(text);
  ASSERT_FALSE(sentences.empty());
  for (const auto& s : sentences) {
    const std::string t = text.substr(s.begin, s.end - s.begin);
    EXPECT_EQ(s.kind, t == "Prose between blocks." ? SentenceKind::kProse : SentenceKind::kStructure) << t;
  }
}

TEST(AnswerSentences, FiguresAreNumbersWithUnitsOrShape) {
  EXPECT_EQ(count_figures("sheds P2 2.75-3 s into a 2x overload at 0.5x"), 3u);
  EXPECT_EQ(count_figures("P0 p99 within 99 % and 1,984 refused"), 2u);
  EXPECT_EQ(count_figures("level 1 answers 429 to P2 and v1 clients"), 0u);
  EXPECT_EQ(count_figures("(2 s) then 250 ms"), 2u);
  EXPECT_TRUE(asks_for_quantity("How fast is the HTTP source?"));
  EXPECT_TRUE(asks_for_quantity("what is the P99 latency"));
  EXPECT_FALSE(asks_for_quantity("How does Sluice shed load when it is overloaded?"));
}

}  // namespace
}  // namespace sluice::retrieval
