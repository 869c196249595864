#include "nodes/retrieval/kb/loaders.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sluice::retrieval {
namespace {

TEST(Loaders, FormatsByExtension) {
  LoadedSource s;
  load_text("a.md", "intro\n# Title Here\nbody", s);
  load_text("b.html", "<html><title>Page &amp; co</title><script>x()</script><p>One</p><p>Two &lt;3</p></html>", s);
  load_text("c.py", "def f():\n    pass\n", s);
  load_text("my-FAQ.txt", "Q: a?\nA: b\n", s);
  ASSERT_EQ(s.documents.size(), 4u);
  EXPECT_EQ(s.documents[0].title, "Title Here");
  EXPECT_EQ(s.documents[1].title, "Page & co");
  EXPECT_EQ(s.documents[1].text, "One\n\nTwo <3");
  EXPECT_EQ(s.documents[2].kind, DocumentKind::kCode);
  EXPECT_EQ(s.documents[2].language, CodeLanguage::kPython);
  EXPECT_EQ(s.documents[3].kind, DocumentKind::kFaq);
  EXPECT_TRUE(s.problems.empty());
}

TEST(Loaders, BadInputIsReportedWithPlaceAndSkipped) {
  LoadedSource s;
  load_text("c.jsonl",
            "{\"_id\":\"1\",\"title\":\"t\",\"text\":\"fine\"}\n"
            "{not json\n"
            "{\"title\":\"no id\",\"text\":\"x\"}\n"
            "{\"_id\":\"4\",\"text\":\"   \"}\n"
            "{\"_id\":\"5\",\"text\":\"also fine\"}\n" +
                std::string("{\"_id\":\"6\",\"text\":\"x\"}") + std::string(1, '\0') + "{\"_id\":\"7\"}\n",
            s);
  load_text("empty.txt", "  \n", s);
  load_text("image.png", "\x89PNG", s);
  ASSERT_EQ(s.documents.size(), 2u);
  EXPECT_EQ(s.documents[1].id, "5");
  ASSERT_EQ(s.problems.size(), 6u);
  EXPECT_EQ(s.problems[0].to_string(), "c.jsonl:2: not a JSON object");
  EXPECT_EQ(s.problems[1].line, 3u);
  EXPECT_EQ(s.problems[2].to_string(), "c.jsonl:4: empty document '4' (no title and no text)");
  // The parser would read the line up to its NUL as document 6 and drop the rest unread.
  EXPECT_EQ(s.problems[3].to_string(), "c.jsonl:6: not a JSON object: a NUL byte at byte 22");
  EXPECT_EQ(s.problems[4].message, "empty document");
  EXPECT_EQ(s.problems[5].message, "unsupported file type '.png'");
}

// Configuration files are text documents (the default knowledge base holds docs/alerts.yaml).
TEST(Loaders, AJsonlRecordWithATitleAndNoTextIsADocument) {
  LoadedSource s;
  load_text("corpus.jsonl",
            "{\"_id\":\"1\",\"title\":\"Preliminary Report-International Algebraic Language\",\"text\":\"\"}\n"
            "{\"_id\":\"2\",\"title\":\"\",\"text\":\"\"}\n",
            s);
  ASSERT_EQ(s.documents.size(), 1u);
  EXPECT_EQ(s.documents[0].title, "Preliminary Report-International Algebraic Language");
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_EQ(s.problems[0].to_string(), "corpus.jsonl:2: empty document '2' (no title and no text)");
}

TEST(Loaders, ConfigurationFilesAreText) {
  LoadedSource s;
  load_text("alerts.yaml", "groups:\n  - name: sluice\n", s);
  load_text("pipeline.yml", "name: default\n", s);
  ASSERT_EQ(s.documents.size(), 2u);
  EXPECT_EQ(s.documents[0].kind, DocumentKind::kNarrative);
  EXPECT_TRUE(s.problems.empty());
}

// File names and JSONL _ids become document ids: one that breaks graph/document_id.h skips its
// file or record, reported with the name quoted (it may hold the very control character).
TEST(Loaders, InvalidIdsAreSkippedNamingTheFileOrRecord) {
  LoadedSource s;
  load_text("ok.txt", "fine", s);
  load_text("bad\nname.txt", "text", s);
  load_text("\xFF.md", "text", s);
  load_text("c.jsonl",
            "{\"_id\":\"" + std::string(600, 'x') + "\",\"text\":\"t\"}\n"
            "{\"_id\":\"../up\",\"text\":\"t\"}\n"
            "{\"_id\":\"ok\",\"text\":\"t\"}\n",
            s);
  ASSERT_EQ(s.documents.size(), 2u);
  EXPECT_EQ(s.documents[0].id, "ok.txt");
  EXPECT_EQ(s.documents[1].id, "ok");
  ASSERT_EQ(s.problems.size(), 4u);
  EXPECT_EQ(s.problems[0].to_string(),
            "\"bad\\u000Aname.txt\": the file name is not a valid document id: it contains the control character "
            "U+000A at byte 3");
  EXPECT_EQ(s.problems[1].to_string(),
            "\"\\xFF.md\": the file name is not a valid document id: it is not valid UTF-8 (byte 0xFF at offset 0)");
  EXPECT_EQ(s.problems[2].file, "c.jsonl");
  EXPECT_EQ(s.problems[2].line, 1u);
  EXPECT_NE(s.problems[2].message.find("it is 600 bytes, over the limit of 512"), std::string::npos) << s.problems[2].message;
  EXPECT_EQ(s.problems[3].to_string(),
            "c.jsonl:2: \"_id\" \"../up\" is not a valid document id: it has a '..' path segment, which steps out of "
            "the directory it is relative to");
}

TEST(Loaders, DirectoryWalkAndUnreadableFile) {
  const auto dir = std::filesystem::temp_directory_path() / "sluice-loaders-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "sub");
  std::filesystem::create_directories(dir / ".git");
  std::ofstream(dir / "a.txt") << "alpha";
  std::ofstream(dir / "sub" / "b.md") << "# B\nbeta";
  std::ofstream(dir / ".git" / "c.txt") << "hidden";
  const auto s = load_path(dir.string());
  ASSERT_EQ(s.documents.size(), 2u);
  EXPECT_EQ(s.documents[0].id, "a.txt");
  EXPECT_EQ(s.documents[1].id, "sub/b.md");
  // A single file's id is its name, not the path it was given (an absolute path is no valid id).
  const auto single = load_path((dir / "sub" / "b.md").string());
  ASSERT_EQ(single.documents.size(), 1u);
  EXPECT_EQ(single.documents[0].id, "b.md");
  const auto missing = load_path((dir / "nope.txt").string());
  ASSERT_EQ(missing.problems.size(), 1u);
  EXPECT_NE(missing.problems[0].message.find("cannot read"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::retrieval
