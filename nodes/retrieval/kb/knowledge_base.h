// KnowledgeBase: the documents, their chunks and vectors, and the live KbSnapshot that
// queries read. The lifecycle the issue asks for:
//
//  - Incremental ingest. Each document's content fingerprint (FNV-1a 64 of its kind, title and
//    whitespace-normalised text) is kept; upsert() re-chunks and re-embeds only new or changed
//    documents (counted in IngestStats::chunks_embedded), remove() drops documents, update()
//    does both in one change (POST /v1/documents), sync() makes the set equal to the given one
//    (deleting what is absent). An optional IngestProgressFn reports chunking and embedding
//    progress (the `sluice ingest` progress bar).
//  - Embedding in batches of `embed_batch` (default 256, issue range 100-500).
//  - The dense model (`dense_model`): "lsa" (default) or "use-lite", the pretrained sentence
//    encoder (dense/use_lite_embedder.h), which needs no fit and reads 128 tokens of a chunk, so
//    chunks are cut to at most 128 of its tokens. Changing the model re-chunks every document an
//    ingest brings and re-embeds every chunk (counted as a refit); until then the stored model
//    keeps answering, so a snapshot never mixes two models' vectors.
//  - LSA refit. The embedder is fitted on the first ingest and then kept, so unchanged chunks
//    keep their vectors; it is refitted (and every chunk re-embedded) when the chunks changed
//    since the last fit exceed `refit_fraction` of the total, so the latent space follows the
//    corpus without refitting on every small edit.
//  - Double buffer. Every change builds the next snapshot off to the side, then swaps a
//    shared_ptr under a short lock: queries (current()) never see a half-built index and never
//    wait for a build; a reader keeps its snapshot alive for as long as it holds it.
//  - Persistence (when `directory` is set): kb.bin = magic "SLKB", format version (2: the dense
//    model's kind, then LSA's state or USE-lite's source and width; 1, LSA only, still loads), snapshot
//    version, payload size, FNV-1a 64 checksum of the payload, payload. Written to a temporary
//    file, fsync'ed, then renamed over kb.bin after the old one is kept as kb.prev; a crash
//    mid-write leaves kb.bin (or kb.prev) intact, and open() falls back to kb.prev when kb.bin
//    fails its checksum.
//  - version() increases by one per committed change. Change listeners (the answer caches,
//    nodes/cache/) hear of each commit before its snapshot is swapped in, and so before the
//    ingest returns: the new version and the chunk keys (chunk_key()) it retires, those of
//    changed or deleted documents whose text is no longer in the knowledge base.
// Thread-safety: current()/version() from any thread at any time; mutations are serialised
// by an internal mutex (a second ingest waits for the first), and document_count() takes the
// same mutex, so it waits for a running ingest. set_before_swap_hook only while no mutation runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/mutex.h"
#include "graph/thread_annotations.h"
#include "nodes/retrieval/chunk/chunker.h"
#include "nodes/retrieval/dense/lsa_embedder.h"
#include "nodes/retrieval/eval/beir_dataset.h"
#include "nodes/retrieval/kb/kb_snapshot.h"

namespace sluice::retrieval {

struct KnowledgeBaseOptions {
  ChunkingOptions chunking;
  IndexOptions index;
  LsaOptions lsa;
  std::string dense_model;          // "lsa", "use-lite", or "" (as kb.bin has it; lsa when new)
  std::string encoder_path;         // use-lite: the GGUF file; empty: inference::default_encoder_path()
  std::size_t embed_batch = 256;
  double refit_fraction = 0.2;  // refit LSA when more than this share of chunks changed since the last fit
  std::string directory;        // persistence; empty = in memory only
};

struct IngestStats {
  std::size_t added = 0, updated = 0, unchanged = 0, deleted = 0;
  std::size_t chunks_total = 0;
  std::size_t chunks_embedded = 0;  // embedder calls' worth of chunks in this ingest
  bool refitted = false;
  std::uint64_t version = 0;
  double seconds = 0;
  std::vector<LoadProblem> problems;
};

// Where a running ingest is, for progress display: documents chunked (of those given), then,
// when the embedder is refitted, the fit (fitting_chunks > 0, reported once before it), then
// chunks embedded (of those that need it). Reported every 64 documents and after each
// embedding batch, on the ingesting thread.
struct IngestProgress {
  std::size_t documents_done = 0, documents_total = 0;
  std::size_t fitting_chunks = 0;
  std::size_t chunks_embedded = 0, chunks_to_embed = 0;
};
using IngestProgressFn = std::function<void(const IngestProgress&)>;

// One committed change as its listeners hear of it.
struct KbChange {
  std::uint64_t version = 0;          // the version being committed
  std::vector<std::string> retired;   // chunk keys no longer in the knowledge base, sorted
};
using KbChangeListener = std::function<void(const KbChange&)>;

std::uint64_t content_fingerprint(const SourceDocument& doc);

class KnowledgeBase {
 public:
  // Opens (or starts) a knowledge base; loads `options.directory`'s kb.bin when present.
  // Throws std::runtime_error when both kb.bin and kb.prev exist but neither loads.
  explicit KnowledgeBase(KnowledgeBaseOptions options);

  IngestStats upsert(std::vector<SourceDocument> docs, const IngestProgressFn& progress = {}) EXCLUDES(write_mu_);
  IngestStats remove(const std::vector<std::string>& doc_ids) EXCLUDES(write_mu_);
  IngestStats sync(std::vector<SourceDocument> docs, const IngestProgressFn& progress = {}) EXCLUDES(write_mu_);
  // Upserts and removals as one change (one new version); an id in both ends up removed.
  IngestStats update(std::vector<SourceDocument> upserts, const std::vector<std::string>& removals,
                     const IngestProgressFn& progress = {}) EXCLUDES(write_mu_);

  // The live snapshot (never null; empty before the first ingest).
  std::shared_ptr<const KbSnapshot> current() const EXCLUDES(swap_mu_);
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  std::size_t document_count() const EXCLUDES(write_mu_);
  // Where it persists ("" in memory only).
  const std::string& directory() const { return options_.directory; }
  // Which file open() loaded: "kb.bin", "kb.prev", or "" (fresh).
  const std::string& loaded_from() const { return loaded_from_; }
  // The dense model the next ingest embeds with; a different one than the stored model makes
  // that ingest re-chunk and re-embed (the `embed` node's `model`). Throws std::invalid_argument
  // for an unknown name.
  void set_dense_model(const std::string& model) EXCLUDES(write_mu_);
  std::string dense_model() const EXCLUDES(write_mu_);
  // Where the snapshots' vector index lives: "cpu", "cuda", "cuda-f16" or "auto" (dense/vector_device.h;
  // the `dense` node's `device`), and how a GPU index merges concurrent searches. Rebuilds the live snapshot's index there at once (same
  // version), so the first query already searches on it. Throws std::invalid_argument for
  // cuda where it cannot run, and when another node chose another device for this knowledge
  // base (a snapshot has one index).
  void set_vector_device(const std::string& device, const CoalescerOptions& coalescing = {})
      EXCLUDES(write_mu_, swap_mu_);
  std::string vector_device() const EXCLUDES(write_mu_);  // "cpu", "cuda" or "cuda-f16"
  // Told of every search of a GPU index of this knowledge base, whichever snapshot (the dense
  // node attaches its metrics here).
  const std::shared_ptr<BatchObserver>& search_observer() const { return search_observer_; }
  // Called on the ingesting thread for every later commit, before the new snapshot is swapped
  // in; must not ingest. Returns an id for remove_change_listener. Thread-safe.
  std::uint64_t add_change_listener(KbChangeListener listener) EXCLUDES(listeners_mu_);
  void remove_change_listener(std::uint64_t id) EXCLUDES(listeners_mu_);
  // Test hook: called after the new snapshot is built and before it is swapped in.
  void set_before_swap_hook(std::function<void()> hook) { before_swap_ = std::move(hook); }

 private:
  struct DocState {
    std::uint64_t fingerprint = 0;
    std::vector<Chunk> chunks;
    std::vector<float> vectors;  // chunks.size() x dim
  };
  IngestStats apply(std::vector<SourceDocument> upserts, const std::vector<std::string>& removals, bool exact_set,
                    const IngestProgressFn& progress) EXCLUDES(write_mu_);
  void embed_in_batches(std::vector<DocState*>& states, IngestStats& stats, const IngestProgressFn& progress,
                        IngestProgress& at) REQUIRES(write_mu_);
  void commit(IngestStats& stats, std::vector<std::string> retired) REQUIRES(write_mu_) EXCLUDES(swap_mu_);
  // Writes kb.bin with the documents and `agreement`, the new snapshot's path agreement.
  void persist(const PathAgreement& agreement) const REQUIRES(write_mu_);
  // Chunk keys of `before`'s changed or deleted documents that `after` no longer holds.
  static std::vector<std::string> retired_chunks(const std::map<std::string, DocState>& before,
                                                 const std::map<std::string, DocState>& after);
  // Called only by the constructor, which has sole access (hence REQUIRES without a lock there).
  bool load_file(const std::string& path) REQUIRES(write_mu_);

  KnowledgeBaseOptions options_;           // set at construction, read-only after
  mutable Mutex write_mu_;                 // serialises mutations; guards the document state below
  mutable Mutex swap_mu_;                  // guards live_ (held only for a pointer copy)
  std::shared_ptr<const KbSnapshot> live_ GUARDED_BY(swap_mu_);
  std::atomic<std::uint64_t> version_{0};  // atomic: read by version() without a lock
  std::map<std::string, DocState> docs_ GUARDED_BY(write_mu_);  // ordered: snapshots list chunks in doc-id order
  // The model the next ingest embeds with (dense_model): the live one, or a fresh one when the
  // configured model differs from the stored one.
  std::shared_ptr<const Embedder> target_embedder() const REQUIRES(write_mu_);
  std::shared_ptr<const Embedder> open_use_lite() const;

  std::shared_ptr<const Embedder> embedder_ GUARDED_BY(write_mu_);  // LsaEmbedder or UseLiteEmbedder
  std::string vector_device_ GUARDED_BY(write_mu_) = "cpu";
  bool vector_device_chosen_ GUARDED_BY(write_mu_) = false;
  CoalescerOptions coalescing_ GUARDED_BY(write_mu_);
  const std::shared_ptr<BatchObserver> search_observer_ = std::make_shared<BatchObserver>();
  // Every document's chunks and vectors, in document order: what a snapshot is built from.
  void gather(std::vector<Chunk>* chunks, std::vector<float>* vectors) const REQUIRES(write_mu_);
  // options_.index with the chosen vector device.
  IndexOptions index_options() const REQUIRES(write_mu_);
  std::string dense_model_ GUARDED_BY(write_mu_);                    // what target_embedder() gives
  std::size_t changed_since_fit_ GUARDED_BY(write_mu_) = 0;
  // Chunks embedded or retired since the live snapshot's path agreement was measured: below
  // kRemeasureAgreementShare of the total, a new snapshot carries the figure instead of spending
  // 256 searches and embeddings on it (0.44-0.61 s with USE-lite) for every small write.
  std::size_t changed_since_agreement_ GUARDED_BY(write_mu_) = 0;
  PathAgreement loaded_agreement_;  // what kb.bin carried; read by the constructor only
  static constexpr double kRemeasureAgreementShare = 0.05;
  std::string loaded_from_;                // set at construction, read-only after
  std::function<void()> before_swap_;      // test hook, not under a lock: set while no mutation runs
  mutable Mutex listeners_mu_;             // guards listeners_ (taken inside write_mu_ by commit)
  std::map<std::uint64_t, KbChangeListener> listeners_ GUARDED_BY(listeners_mu_);
  std::uint64_t next_listener_ GUARDED_BY(listeners_mu_) = 1;
};

}  // namespace sluice::retrieval
