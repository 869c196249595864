// KnowledgeBaseDocuments: how POST /v1/documents upserts become SourceDocuments (the same as
// the file loaders would make them), all-or-nothing checks, and one store per knowledge base.
#include "nodes/retrieval/node/knowledge_base_documents.h"

#include <gtest/gtest.h>

#include "nodes/retrieval/kb/loaders.h"
#include "nodes/retrieval/node/retrieval_nodes.h"

namespace sluice::retrieval {
namespace {

SourceDocument converted(const DocumentUpsert& u) {
  SourceDocument d;
  auto problem = to_source_document(u, &d);
  EXPECT_FALSE(problem) << problem->field << ": " << problem->message;
  return d;
}

std::optional<DocumentProblem> refused(const DocumentUpsert& u) {
  SourceDocument d;
  return to_source_document(u, &d);
}

TEST(KnowledgeBaseDocuments, WithoutAKindTheIdDecidesAsForFiles) {
  const std::string md = "intro\n# Guide\n\nBody text.";
  const SourceDocument posted = converted({"docs/guide.md", "", md, "", ""});
  LoadedSource loaded;
  load_text("docs/guide.md", md, loaded);
  ASSERT_EQ(loaded.documents.size(), 1u);
  EXPECT_EQ(posted.title, "Guide");
  EXPECT_EQ(content_fingerprint(posted), content_fingerprint(loaded.documents[0]));  // same doc, same fingerprint
  EXPECT_EQ(converted({"team-faq.txt", "", "Q: a?\nA: b", "", ""}).kind, DocumentKind::kFaq);
  EXPECT_EQ(converted({"util.py", "", "def f():\n    pass\n", "", ""}).language, CodeLanguage::kPython);
  const SourceDocument plain = converted({"record-17", "", "First line\nsecond", "", ""});
  EXPECT_EQ(plain.kind, DocumentKind::kNarrative);
  EXPECT_EQ(plain.title, "First line");
}

TEST(KnowledgeBaseDocuments, ExplicitKindLanguageAndTitle) {
  const SourceDocument html = converted({"page", "", "<title>T</title><p>One</p><p>Two</p>", "html", ""});
  EXPECT_EQ(html.title, "T");
  EXPECT_EQ(html.text, "One\n\nTwo");
  EXPECT_EQ(converted({"q", "", "## Why?\nBecause.", "faq", ""}).kind, DocumentKind::kFaq);
  const SourceDocument code = converted({"snippet", "", "int f() { return 1; }", "code", "c"});
  EXPECT_EQ(code.kind, DocumentKind::kCode);
  EXPECT_EQ(code.language, CodeLanguage::kCpp);
  EXPECT_EQ(code.title, "snippet");
  EXPECT_EQ(converted({"lib.js", "", "function f() {}", "code", ""}).language, CodeLanguage::kJavaScript);
  EXPECT_EQ(converted({"a.md", "Given title", "# Heading\ntext", "md", ""}).title, "Given title");
}

TEST(KnowledgeBaseDocuments, RefusalsNameTheField) {
  auto p = refused({"a", "", "t", "pdf", ""});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "kind");
  EXPECT_EQ(p->message, "'pdf' is not one of txt, md, html, faq, code");
  p = refused({"a", "", "t", "code", "rust"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "language");
  EXPECT_NE(p->message.find("'rust'"), std::string::npos);
  p = refused({"a", "", "t", "", "python"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "language");
  p = refused({"a.html", "", "<script>x()</script>", "", ""});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "text");
  EXPECT_EQ(p->message, "is empty once the HTML is converted to text, and no title is given");
  p = refused({"a", "", " \n", "", ""});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->message, "is empty, and no title is given");
}

// A title with no text is a document of its title, as a BEIR record with no text is for
// `sluice ingest` (loaders.h).
TEST(KnowledgeBaseDocuments, AGivenTitleWithoutTextIsADocument) {
  const SourceDocument d = converted({"2", "Extraction of Roots by Repeated Subtractions", "", "", ""});
  EXPECT_EQ(d.title, "Extraction of Roots by Repeated Subtractions");
  EXPECT_EQ(d.text, "");
  LoadedSource loaded;
  load_text("c.jsonl", R"({"_id":"2","title":"Extraction of Roots by Repeated Subtractions","text":""})", loaded);
  ASSERT_EQ(loaded.documents.size(), 1u);
  EXPECT_EQ(content_fingerprint(d), content_fingerprint(loaded.documents[0]));
}

// The HTTP source refuses bad ids first; the store refuses them too, for any other connector.
TEST(KnowledgeBaseDocuments, BadIdsAreRefusedByTheStore) {
  auto p = refused({"../x.md", "", "t", "", ""});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "id");
  EXPECT_EQ(p->message, "\"../x.md\" is not a valid document id: it has a '..' path segment, which steps out of the "
                        "directory it is relative to");
  p = refused({std::string("a\0b", 3), "", "t", "", ""});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "id");
  EXPECT_NE(p->message.find("\"a\\u0000b\""), std::string::npos) << p->message;
}

TEST(KnowledgeBaseDocuments, ApplyIsAllOrNothing) {
  KnowledgeBaseOptions o;
  o.lsa.dimensions = 8;
  auto kb = std::make_shared<KnowledgeBase>(o);
  auto store = documents_of(kb);
  DocumentChanges changes;
  changes.upserts = {{"a.md", "", "# A\nalpha text", "", ""}, {"b", "", "beta", "pdf", ""}};
  DocumentChangeResult r = store->apply(changes);
  ASSERT_TRUE(r.rejected);
  EXPECT_EQ(r.rejected->index, 1u);
  EXPECT_EQ(kb->version(), 0u);
  EXPECT_EQ(kb->document_count(), 0u);
  changes.upserts[1].kind = "txt";
  r = store->apply(changes);
  ASSERT_FALSE(r.rejected);
  EXPECT_EQ(r.stats.added, 2u);
  EXPECT_EQ(r.stats.version, 1u);
  EXPECT_EQ(store->version(), 1u);
  changes = {};
  changes.deletes = {"a.md"};
  r = store->apply(changes);
  EXPECT_EQ(r.stats.deleted, 1u);
  EXPECT_EQ(r.stats.version, 2u);
}

TEST(KnowledgeBaseDocuments, EveryNodeOfOneKnowledgeBaseExposesTheSameStore) {
  KnowledgeBaseOptions o;
  o.lsa.dimensions = 8;
  auto kb = std::make_shared<KnowledgeBase>(o);
  auto other = std::make_shared<KnowledgeBase>(o);
  EmbedNode embed(kb);
  Bm25Node bm25(kb, 10);
  AnswerNode answer(kb, AnswerOptions{}, nullptr);
  EXPECT_EQ(embed.document_store(), bm25.document_store());
  EXPECT_EQ(embed.document_store(), answer.document_store());
  EXPECT_NE(embed.document_store(), Bm25Node(other, 10).document_store());
  EXPECT_EQ(embed.document_store()->name(), "(in memory)");
}

}  // namespace
}  // namespace sluice::retrieval
