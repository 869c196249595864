#include "nodes/retrieval/chunk/chunker.h"

#include <gtest/gtest.h>

namespace sluice::retrieval {
namespace {

std::string words(int from, int n) {
  std::string s;
  for (int i = from; i < from + n; ++i) s += (i > from ? " w" : "w") + std::to_string(i);
  return s + ".";
}

TEST(Chunker, NarrativePacksParagraphsWithinTheLimit) {
  // Ten paragraphs of 30 words, limit 100, no overlap -> 3 paragraphs per chunk.
  std::string text;
  for (int p = 0; p < 10; ++p) text += words(p * 30, 30) + "\n\n";
  const auto chunks = chunk_document({"d", "T", text, DocumentKind::kNarrative, CodeLanguage::kNone}, {100, 0.0});
  ASSERT_EQ(chunks.size(), 4u);
  for (const auto& c : chunks) {
    EXPECT_LE(count_words(c.text), 100u);
    EXPECT_EQ(c.text, text.substr(c.begin, c.end - c.begin));  // offsets cite exactly
    EXPECT_EQ(c.doc_id, "d");
    EXPECT_EQ(c.title, "T");
  }
  EXPECT_EQ(count_words(chunks[0].text), 90u);
  EXPECT_EQ(chunks[3].ordinal, 3u);
}

// A BEIR record that is a title and no abstract (half of CACM) is one chunk: the title is what
// the index reads. A document with neither gives no chunk.
TEST(Chunker, ATitleWithoutTextIsOneChunk) {
  const auto chunks =
      chunk_document({"7", "Extraction of Roots by Repeated Subtractions", " \n", DocumentKind::kNarrative, CodeLanguage::kNone},
                     {100, 0.0});
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].doc_id, "7");
  EXPECT_EQ(chunks[0].text, "");
  EXPECT_EQ(chunks[0].begin, 0u);
  EXPECT_EQ(chunks[0].end, 0u);
  EXPECT_EQ(index_text(chunks[0]), "Extraction of Roots by Repeated Subtractions\n");
  EXPECT_TRUE(chunk_document({"8", "  ", "", DocumentKind::kNarrative, CodeLanguage::kNone}, {100, 0.0}).empty());
}

TEST(Chunker, ConsecutiveChunksOverlapByTheConfiguredShare) {
  // One long paragraph of 40 sentences x 10 words; limit 100, overlap 20% -> 2 sentences carried.
  std::string text;
  for (int s = 0; s < 40; ++s) text += words(s * 10, 10) + " ";
  const auto chunks = chunk_document({"d", "", text, DocumentKind::kNarrative, CodeLanguage::kNone}, {100, 0.2});
  ASSERT_GE(chunks.size(), 4u);
  for (std::size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_LE(count_words(chunks[i].text), 100u);
    ASSERT_LT(chunks[i + 1].begin, chunks[i].end) << "chunk " << i << " does not overlap the next";
    const std::string shared = text.substr(chunks[i + 1].begin, chunks[i].end - chunks[i + 1].begin);
    EXPECT_EQ(count_words(shared), 20u);
  }
}

TEST(Chunker, OverlongSentenceIsCutAtWords) {
  const std::string text = words(0, 250);
  const auto chunks = chunk_document({"d", "", text, DocumentKind::kNarrative, CodeLanguage::kNone}, {100, 0.0});
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(count_words(chunks[0].text), 100u);
}

TEST(Chunker, FaqOneEntryPerChunk) {
  const std::string text =
      "Intro text about the product.\n\nQ: How do I reset?\nA: Hold the button.\n\n"
      "Q: Is it waterproof?\nA: No.\n# Can I return it?\nYes, within 30 days.\n";
  const auto chunks = chunk_document({"faq", "", text, DocumentKind::kFaq, CodeLanguage::kNone}, {});
  ASSERT_EQ(chunks.size(), 4u);
  EXPECT_EQ(chunks[0].text, "Intro text about the product.");
  EXPECT_EQ(chunks[1].text, "Q: How do I reset?\nA: Hold the button.");
  EXPECT_EQ(chunks[2].text, "Q: Is it waterproof?\nA: No.");
  EXPECT_EQ(chunks[3].text, "# Can I return it?\nYes, within 30 days.");
}

TEST(Chunker, CppOneFunctionOrClassPerChunk) {
  const std::string text =
      "#include <vector>\n"
      "namespace n {\n"
      "// Adds.\n"
      "int add(int a, int b) {\n  return a + b; // }\n}\n"
      "class Box {\n public:\n  int f() { return \"}\"[0]; }\n};\n"
      "}  // namespace n\n";
  const auto chunks = chunk_document({"a.cc", "a.cc", text, DocumentKind::kCode, CodeLanguage::kCpp}, {});
  std::vector<std::string> texts;
  for (const auto& c : chunks) texts.push_back(c.text);
  ASSERT_GE(texts.size(), 3u);
  EXPECT_NE(std::find(texts.begin(), texts.end(), "// Adds.\nint add(int a, int b) {\n  return a + b; // }\n}"), texts.end());
  EXPECT_NE(std::find(texts.begin(), texts.end(), "class Box {\n public:\n  int f() { return \"}\"[0]; }\n};"), texts.end());
}

TEST(Chunker, JavaScriptFunctions) {
  const std::string text = "const x = 1;\nfunction a() {\n  return `}`;\n}\n\nfunction b() { return 2; }\n";
  const auto chunks = chunk_document({"a.js", "", text, DocumentKind::kCode, CodeLanguage::kJavaScript}, {});
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1].text, "function a() {\n  return `}`;\n}");
  EXPECT_EQ(chunks[2].text, "function b() { return 2; }");
}

TEST(Chunker, PythonDefinitionsWithDecorators) {
  const std::string text =
      "import os\n\n@cache\ndef a(x):\n    if x:\n        return 1\n\n    return 2\n\nclass B:\n    def m(self):\n        pass\n\nX = 3\n";
  const auto chunks = chunk_document({"a.py", "", text, DocumentKind::kCode, CodeLanguage::kPython}, {});
  std::vector<std::string> texts;
  for (const auto& c : chunks) texts.push_back(c.text);
  ASSERT_EQ(texts.size(), 4u);
  EXPECT_EQ(texts[0], "import os");
  EXPECT_EQ(texts[1], "@cache\ndef a(x):\n    if x:\n        return 1\n\n    return 2");
  EXPECT_EQ(texts[2], "class B:\n    def m(self):\n        pass");
  EXPECT_EQ(texts[3], "X = 3");
}

// A Markdown paragraph or list item hard-wrapped at a column reads as its sentences; headings,
// list items, table rows and blank lines still end one, and nothing continues a heading or row.
TEST(Chunker, SentencesJoinSoftWrappedLinesButNotBlocks) {
  const std::string text =
      "## Shedding\n"
      "The ladder samples the busy fraction every\n"
      "250 ms and raises its level. It drops P2 first.\n"
      "\n"
      "- one item\n"
      "- a wrapped item that goes\n"
      "  on to the next line. Then more\n"
      "| a | b |\n"
      "plain after a row\n"
      "1. first step\n"
      "# Heading\n"
      "A last line";
  std::vector<std::string> got;
  for (const auto& [b, e] : split_sentences(text)) got.push_back(text.substr(b, e - b));
  const std::vector<std::string> want = {"## Shedding",
                                         "The ladder samples the busy fraction every\n250 ms and raises its level.",
                                         "It drops P2 first.",
                                         "- one item",
                                         "- a wrapped item that goes\n  on to the next line.",
                                         "Then more",
                                         "| a | b |",
                                         "plain after a row",
                                         "1. first step",
                                         "# Heading",
                                         "A last line"};
  EXPECT_EQ(got, want);
}

TEST(Chunker, RejectsBadOptions) {
  EXPECT_THROW(chunk_document({"d", "", "x", DocumentKind::kNarrative, CodeLanguage::kNone}, {0, 0.1}), std::invalid_argument);
  EXPECT_THROW(chunk_document({"d", "", "x", DocumentKind::kNarrative, CodeLanguage::kNone}, {10, 0.9}), std::invalid_argument);
}

}  // namespace
}  // namespace sluice::retrieval
