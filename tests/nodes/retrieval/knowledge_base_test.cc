#include "nodes/retrieval/kb/knowledge_base.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "nodes/retrieval/dense/vector_device.h"
#include "nodes/retrieval/kb/retriever.h"

namespace sluice::retrieval {
namespace {

std::vector<SourceDocument> corpus(int n, const std::string& salt = "") {
  static const char* const kTopics[] = {"wing lift drag airfoil", "heat conduction slab", "boundary layer flow",
                                        "shock wave nozzle", "flutter panel vibration"};
  std::vector<SourceDocument> docs;
  for (int i = 0; i < n; ++i) {
    docs.push_back({"doc" + std::to_string(i), "Title " + std::to_string(i),
                    std::string(kTopics[i % 5]) + " study number " + std::to_string(i) + " " + salt,
                    DocumentKind::kNarrative, CodeLanguage::kNone});
  }
  return docs;
}

KnowledgeBaseOptions small_options(const std::string& dir = "") {
  KnowledgeBaseOptions o;
  o.lsa.dimensions = 8;
  o.embed_batch = 7;
  o.refit_fraction = 0.5;
  o.directory = dir;
  return o;
}

std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("sluice-kb-test-" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

TEST(KnowledgeBase, UpdateWritesAndDeletesAsOneVersion) {
  KnowledgeBase kb(small_options());
  kb.upsert(corpus(10));
  auto docs = corpus(2);
  docs[1].text += " changed";
  const auto s = kb.update(docs, {"doc7", "doc8", "absent"});
  EXPECT_EQ(s.unchanged, 1u);
  EXPECT_EQ(s.updated, 1u);
  EXPECT_EQ(s.deleted, 2u);  // "absent" was never there
  EXPECT_EQ(s.chunks_embedded, 1u);
  EXPECT_EQ(s.version, 2u);
  EXPECT_EQ(kb.document_count(), 8u);
}

// The `dense` node's device: cpu stays, auto resolves (cpu here unless a GPU is usable), cuda
// where it cannot run is refused with the reason, and a second node may not move the index.
// On a GPU machine the live snapshot moves to the device at once, same version, same answers.
TEST(KnowledgeBase, TheVectorDeviceIsChosenOnceAndTheLiveSnapshotMovesToIt) {
  KnowledgeBase kb(small_options());
  kb.upsert(corpus(40));
  const std::vector<float> q = kb.current()->embedder().embed({"shock wave nozzle"});
  const auto before = kb.current()->search_dense(q.data(), 1, 10);
  const std::uint64_t version = kb.version();

  std::string usable = "cuda";
  try {
    resolve_vector_device("cuda");
  } catch (const std::invalid_argument& e) {
    usable = "cpu";
    EXPECT_THROW(kb.set_vector_device("cuda"), std::invalid_argument);  // nothing chosen by it
    EXPECT_EQ(kb.vector_device(), "cpu");
  }
  kb.set_vector_device("auto");
  EXPECT_EQ(kb.vector_device(), usable);
  EXPECT_EQ(kb.version(), version);
  const auto after = kb.current()->search_dense(q.data(), 1, 10);
  ASSERT_EQ(before[0].size(), after[0].size());
  for (std::size_t i = 0; i < before[0].size(); ++i) {
    EXPECT_EQ(before[0][i].doc, after[0][i].doc);
    EXPECT_EQ(before[0][i].score, after[0][i].score);
  }
  kb.set_vector_device(usable);  // the same choice again is fine
  if (usable == "cuda") {
    EXPECT_THROW(kb.set_vector_device("cpu"), std::invalid_argument);  // another node's different choice
  }
  kb.upsert(corpus(41));  // later snapshots are built on the chosen device
  EXPECT_EQ(kb.vector_device(), usable);
  EXPECT_EQ(kb.current()->search_dense(q.data(), 1, 10)[0].size(), 10u);
}

TEST(KnowledgeBase, ProgressReportsChunkingThenEmbeddingBatches) {
  KnowledgeBase kb(small_options());  // embed_batch 7
  std::vector<IngestProgress> seen;
  kb.upsert(corpus(20), [&](const IngestProgress& p) { seen.push_back(p); });
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().documents_done, 0u);
  EXPECT_EQ(seen.front().documents_total, 20u);
  EXPECT_EQ(seen.front().chunks_to_embed, 0u);
  // The first ingest fits the embedder: announced once, with every chunk.
  std::size_t fits = 0;
  for (const auto& p : seen) fits += p.fitting_chunks == 20u;
  EXPECT_EQ(fits, 1u);
  // Then embedding: announced with nothing done, then one report per batch of 7 (7, 14, 20).
  std::vector<std::size_t> embedded;
  for (const auto& p : seen) {
    if (p.chunks_to_embed > 0) {
      EXPECT_EQ(p.chunks_to_embed, 20u);
      EXPECT_EQ(p.documents_done, 20u);
      embedded.push_back(p.chunks_embedded);
    }
  }
  EXPECT_EQ(embedded, (std::vector<std::size_t>{0, 7, 14, 20}));
}

TEST(KnowledgeBase, IncrementalIngestEmbedsOnlyChangedDocuments) {
  KnowledgeBase kb(small_options());
  EXPECT_EQ(kb.current()->chunks().size(), 0u);
  auto s = kb.upsert(corpus(100));
  EXPECT_EQ(s.added, 100u);
  EXPECT_TRUE(s.refitted);
  EXPECT_EQ(s.chunks_embedded, 100u);
  EXPECT_EQ(s.version, 1u);
  auto docs = corpus(100);
  docs[3].text += " changed";
  docs[50].text += " changed";
  docs.push_back({"new", "", "a brand new document about nozzles", DocumentKind::kNarrative, CodeLanguage::kNone});
  s = kb.upsert(docs);
  EXPECT_EQ(s.unchanged, 98u);
  EXPECT_EQ(s.updated, 2u);
  EXPECT_EQ(s.added, 1u);
  EXPECT_FALSE(s.refitted);
  EXPECT_EQ(s.chunks_embedded, 3u);
  EXPECT_EQ(kb.version(), 2u);
  // Whitespace-only edits are not changes.
  docs[7].text = "  " + docs[7].text + "\n";
  s = kb.upsert(docs);
  EXPECT_EQ(s.chunks_embedded, 0u);
  EXPECT_EQ(kb.version(), 2u);
  // sync deletes what is absent.
  docs.resize(90);
  s = kb.sync(docs);
  EXPECT_EQ(s.deleted, 11u);
  EXPECT_EQ(kb.current()->chunks().size(), 90u);
  EXPECT_EQ(kb.remove({"doc0", "missing"}).deleted, 1u);
}

TEST(KnowledgeBase, PathAgreementIsCarriedAcrossSmallWritesAndMeasuredAgainAfterLargeOnes) {
  KnowledgeBase kb(small_options());
  kb.upsert(corpus(100));
  ASSERT_TRUE(kb.current()->path_agreement().measured());
  EXPECT_EQ(kb.current()->path_agreement().version, 1u);
  auto docs = corpus(100);
  docs[3].text += " changed";  // 1 chunk embedded + 1 retired: 2% of 100
  auto s = kb.upsert(docs);
  ASSERT_FALSE(s.refitted);
  EXPECT_EQ(kb.version(), 2u);
  EXPECT_EQ(kb.current()->path_agreement().version, 1u) << "carried: 2 of 100 chunks changed";
  for (int i = 10; i < 13; ++i) docs[i].text += " changed";  // 6 more: 8 of 100 since measured
  s = kb.upsert(docs);
  ASSERT_FALSE(s.refitted);
  EXPECT_EQ(kb.current()->path_agreement().version, 3u) << "measured again past 5%";
  docs[20].text += " changed";
  kb.upsert(docs);
  EXPECT_EQ(kb.current()->path_agreement().version, 3u) << "the count restarts at the measurement";
}

// kb.bin keeps the path agreement: a reopened knowledge base has the figure it was saved with
// (measured at version 1, carried to 2), not one measured again at load (which would say 2),
// and keeps counting the changes since, so the next small write still carries it.
TEST(KnowledgeBase, PathAgreementIsKeptInKbBinAcrossAReopen) {
  const std::string dir = temp_dir("agreement");
  PathAgreement saved;
  {
    KnowledgeBase kb(small_options(dir));
    kb.upsert(corpus(100));
    auto docs = corpus(100);
    docs[3].text += " changed";
    kb.upsert(docs);
    saved = kb.current()->path_agreement();
    ASSERT_TRUE(saved.measured());
    ASSERT_EQ(saved.version, 1u);
  }
  KnowledgeBase reopened(small_options(dir));
  EXPECT_EQ(reopened.version(), 2u);
  const PathAgreement& loaded = reopened.current()->path_agreement();
  EXPECT_EQ(loaded.version, 1u);
  EXPECT_EQ(loaded.samples, saved.samples);
  EXPECT_EQ(loaded.overlap, saved.overlap);
  auto docs = corpus(100);
  docs[3].text += " changed";
  docs[4].text += " changed";  // 2 more chunks: 4 of 100 since it was measured
  reopened.upsert(docs);
  EXPECT_EQ(reopened.current()->path_agreement().version, 1u);
  std::filesystem::remove_all(dir);
}

TEST(KnowledgeBase, EmptyAndDuplicateDocumentsAreReportedNotFatal) {
  KnowledgeBase kb(small_options());
  auto docs = corpus(5);
  docs.push_back({"empty", "", "   ", DocumentKind::kNarrative, CodeLanguage::kNone});
  docs.push_back(docs[0]);
  const auto s = kb.upsert(docs);
  EXPECT_EQ(s.added, 5u);
  ASSERT_EQ(s.problems.size(), 2u);
  EXPECT_EQ(s.problems[0].file, "empty");
  EXPECT_NE(s.problems[1].message.find("duplicate"), std::string::npos);
}

TEST(KnowledgeBase, RetrievesWithAllPaths) {
  KnowledgeBase kb(small_options());
  kb.upsert(corpus(50));
  const auto gen = kb.current();
  for (auto mode : {RetrieveMode::kBm25, RetrieveMode::kDense, RetrieveMode::kHybrid}) {
    RetrieveOptions o;
    o.mode = mode;
    o.rerank = true;
    const auto r = retrieve(*gen, "heat conduction in a slab", o);
    ASSERT_FALSE(r.hits.empty()) << retrieve_mode_name(mode);
    EXPECT_NE(gen->chunks()[r.hits[0].chunk].text.find("heat"), std::string::npos) << retrieve_mode_name(mode);
    EXPECT_LE(r.hits.size(), o.top_k);
  }
}

TEST(KnowledgeBase, SwapIsAtomicUnderConcurrentQueries) {
  // Generation v holds documents whose text all carry the tag "vN"; a query must see exactly
  // one tag across every chunk of the snapshot it holds, and never fail.
  KnowledgeBase kb(small_options());
  kb.sync(corpus(40, "v0"));
  std::atomic<bool> stop{false};
  std::atomic<int> queries{0}, mixed{0};
  std::thread reader([&] {
    while (!stop.load()) {
      const auto gen = kb.current();
      const auto hits = gen->search_bm25("wing lift", 10);
      std::string tag;
      for (const auto& c : gen->chunks()) {
        const std::string t = c.text.substr(c.text.rfind(' ') + 1);
        if (tag.empty()) tag = t;
        if (t != tag) ++mixed;
      }
      if (hits.empty()) ++mixed;
      ++queries;
    }
  });
  for (int v = 1; v <= 15; ++v) kb.sync(corpus(40, "v" + std::to_string(v)));
  // Make sure the reader overlapped at least a few swaps before stopping it.
  while (queries.load() < 50) std::this_thread::yield();
  stop = true;
  reader.join();
  EXPECT_EQ(mixed.load(), 0);
  EXPECT_EQ(kb.version(), 16u);
}

TEST(KnowledgeBase, ReadersKeepTheirGenerationWhileTheNextIsBuilt) {
  KnowledgeBase kb(small_options());
  kb.sync(corpus(10, "old"));
  const auto held = kb.current();
  bool checked = false;
  kb.set_before_swap_hook([&] {
    // The next snapshot is complete but not yet visible.
    EXPECT_EQ(kb.current()->version(), 1u);
    checked = true;
  });
  kb.sync(corpus(10, "new"));
  EXPECT_TRUE(checked);
  EXPECT_EQ(kb.current()->version(), 2u);
  EXPECT_EQ(held->version(), 1u);
  EXPECT_NE(held->chunks()[0].text.find("old"), std::string::npos);
}

TEST(KnowledgeBase, SurvivesRestartAndATornWrite) {
  const std::string dir = temp_dir("persist");
  {
    KnowledgeBase kb(small_options(dir));
    kb.upsert(corpus(30));
    auto docs = corpus(30);
    docs[1].text += " edited";
    kb.upsert(docs);
    EXPECT_EQ(kb.version(), 2u);
  }
  std::string top_before;
  {
    KnowledgeBase kb(small_options(dir));
    EXPECT_EQ(kb.loaded_from(), "kb.bin");
    EXPECT_EQ(kb.version(), 2u);
    EXPECT_EQ(kb.current()->chunks().size(), 30u);
    top_before = kb.current()->chunks()[kb.current()->search_bm25("flutter panel", 1)[0].doc].doc_id;
    // Nothing changed: a restart re-embeds nothing.
    EXPECT_EQ(kb.upsert(corpus(30)).chunks_embedded, 1u);  // doc1 reverts to its original text
  }
  // Tear kb.bin in half: open falls back to kb.prev (the previous version).
  const std::string bin = dir + "/kb.bin";
  const auto size = std::filesystem::file_size(bin);
  std::filesystem::resize_file(bin, size / 2);
  {
    KnowledgeBase kb(small_options(dir));
    EXPECT_EQ(kb.loaded_from(), "kb.prev");
    EXPECT_EQ(kb.version(), 2u);
    EXPECT_EQ(kb.current()->chunks().size(), 30u);
  }
  // Flip a byte in both: a clear error, not a crash or silent garbage.
  for (const char* f : {"kb.bin", "kb.prev"}) {
    std::fstream io(dir + "/" + f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(60);
    io.put('\x5A');
  }
  std::filesystem::resize_file(bin, size / 2);
  EXPECT_THROW(KnowledgeBase kb(small_options(dir)), std::runtime_error);
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(top_before.empty());
}

}  // namespace
}  // namespace sluice::retrieval
