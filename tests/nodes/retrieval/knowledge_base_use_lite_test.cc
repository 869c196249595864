// Knowledge bases with the pretrained sentence encoder as their dense model: ingest, chunk
// length in the encoder's tokens, incremental re-ingest, persistence, switching models in
// either direction, and the error when kb.bin names an encoder that does not load.
#include <gtest/gtest.h>

#include <filesystem>

#include "nodes/retrieval/kb/knowledge_base.h"
#include "tests/inference/encoder/encoder_fixture.h"
#include "tests/support/scoped_env.h"

namespace sluice::retrieval {
namespace {

std::vector<SourceDocument> docs() {
  return {{"dark.md", "Dark mode", "To turn on dark mode, open Settings and choose Appearance, then Dark.", DocumentKind::kNarrative, CodeLanguage::kNone},
          {"otters.md", "Sea otters", "Sea otters hold hands while they sleep so they do not drift apart.", DocumentKind::kNarrative, CodeLanguage::kNone},
          {"volcano.md", "Volcanoes", "A volcano erupts when magma rises through the crust and escapes as lava.", DocumentKind::kNarrative, CodeLanguage::kNone},
          {"long.md", "Long", [] { std::string s; for (int i = 0; i < 400; ++i) s += "word" + std::to_string(i) + " "; return s; }(),
           DocumentKind::kNarrative, CodeLanguage::kNone}};
}

std::string scratch(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("sluice-kb-use-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

std::string top_doc(const KnowledgeBase& kb, const std::string& query) {
  const auto snap = kb.current();
  const auto v = snap->embedder().embed(std::vector<std::string>{query});
  const auto hits = snap->search_dense(v.data(), 1, 1)[0];
  return hits.empty() ? "" : snap->chunks()[hits[0].doc].doc_id;
}

TEST(KnowledgeBaseUseLite, EmbedsWithTheEncoderAndFindsParaphrases) {
  SLUICE_REQUIRE_ENCODER();
  KnowledgeBaseOptions o;
  o.dense_model = "use-lite";
  KnowledgeBase kb(o);
  const IngestStats s = kb.upsert(docs());
  EXPECT_EQ(kb.current()->embedder().name(), "use-lite");
  EXPECT_EQ(kb.current()->embedder().dimension(), 512u);
  EXPECT_EQ(s.chunks_embedded, s.chunks_total);
  EXPECT_EQ(top_doc(kb, "How can I enable the dark theme?"), "dark.md");
  EXPECT_EQ(top_doc(kb, "Why do otters link paws when sleeping?"), "otters.md");
  // Chunks fit the encoder's 128-token context (a 400-word document becomes several).
  size_t long_chunks = 0;
  for (const Chunk& c : kb.current()->chunks()) {
    EXPECT_LE(kb.current()->embedder().count_tokens(c.text), 128u) << c.doc_id;
    long_chunks += c.doc_id == "long.md";
  }
  EXPECT_GT(long_chunks, 3u);
  // Incremental: one changed document re-embeds its chunks only.
  auto next = docs();
  next[1].text += " They also use rocks as tools.";
  const IngestStats again = kb.sync(next);
  EXPECT_EQ(again.updated, 1u);
  EXPECT_EQ(again.unchanged, 3u);
  EXPECT_EQ(again.chunks_embedded, 1u);
  EXPECT_FALSE(again.refitted);
}

TEST(KnowledgeBaseUseLite, PersistsItsModelAndSwitchesBothWays) {
  SLUICE_REQUIRE_ENCODER();
  const std::string dir = scratch("switch");
  KnowledgeBaseOptions lsa;
  lsa.directory = dir;
  lsa.lsa.dimensions = 4;
  {
    KnowledgeBase kb(lsa);
    kb.sync(docs());
    EXPECT_EQ(kb.dense_model(), "lsa");
    kb.set_dense_model("use-lite");
    const IngestStats s = kb.sync(docs());  // unchanged documents, but a new model: all again
    EXPECT_TRUE(s.refitted);
    EXPECT_EQ(s.chunks_embedded, s.chunks_total);
    EXPECT_EQ(s.unchanged, 0u);
    EXPECT_EQ(kb.current()->embedder().name(), "use-lite");
  }
  {
    KnowledgeBaseOptions as_stored;  // dense_model "": whatever kb.bin was built with
    as_stored.directory = dir;
    KnowledgeBase kb(as_stored);
    EXPECT_EQ(kb.loaded_from(), "kb.bin");
    EXPECT_EQ(kb.dense_model(), "use-lite");
    EXPECT_EQ(top_doc(kb, "How can I enable the dark theme?"), "dark.md");
    EXPECT_EQ(kb.sync(docs()).chunks_embedded, 0u);  // nothing changed, nothing re-embedded
    kb.set_dense_model("lsa");
    const IngestStats back = kb.sync(docs());
    EXPECT_TRUE(back.refitted);
    EXPECT_EQ(kb.current()->embedder().name().rfind("lsa-", 0), 0u) << kb.current()->embedder().name();
  }
  std::filesystem::remove_all(dir);
}

TEST(KnowledgeBaseUseLite, AKbBinNamingAMissingEncoderIsAClearError) {
  SLUICE_REQUIRE_ENCODER();
  const std::string dir = scratch("missing");
  {
    KnowledgeBaseOptions o;
    o.directory = dir;
    o.dense_model = "use-lite";
    KnowledgeBase kb(o);
    kb.sync(docs());
  }
  sluice::testing::ScopedEnv env("SLUICE_ENCODER", "/nonexistent/use-lite.gguf");
  KnowledgeBaseOptions o;
  o.directory = dir;
  try {
    KnowledgeBase kb(o);
    ADD_FAILURE() << "opened";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("embedded with use-lite"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/nonexistent/use-lite.gguf"), std::string::npos) << e.what();
  }
  KnowledgeBaseOptions unknown_model;
  unknown_model.dense_model = "bert";
  EXPECT_THROW(KnowledgeBase{unknown_model}, std::invalid_argument);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::retrieval
