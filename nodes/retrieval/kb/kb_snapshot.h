// KbSnapshot: one immutable, complete snapshot of the searchable knowledge base: the
// chunks, their BM25 index, the embedder that produced their vectors, and the vector index.
//
// A snapshot is built whole (build()) and never changes afterwards, so any number of queries
// may read it concurrently through a shared_ptr<const KbSnapshot> while the next one is
// being built; the knowledge base swaps the pointer (knowledge_base.h). `version` increases by one
// per snapshot and is what caches invalidate on.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "nodes/retrieval/bm25/bm25_index.h"
#include "nodes/retrieval/chunk/chunk.h"
#include "nodes/retrieval/dense/embedder.h"
#include "nodes/retrieval/dense/hnsw_index.h"
#include "nodes/retrieval/dense/search_coalescer.h"
#include "nodes/retrieval/dense/vector_index.h"
#include "nodes/retrieval/kb/path_agreement.h"
#include "nodes/retrieval/text/analyzer.h"

namespace sluice::retrieval {

struct IndexOptions {
  AnalyzerOptions analyzer;      // BM25's analysis (the LSA embedder carries its own)
  Bm25Params bm25;
  // "exact", "hnsw", or "auto": exact below `hnsw_min_chunks`, where brute force is both exact
  // and fast enough (Cranfield-size search costs microseconds), HNSW above.
  std::string vector_index = "auto";
  std::size_t hnsw_min_chunks = 200'000;
  // "cpu", "cuda", "cuda-f16" or "auto" (dense/vector_device.h). On cuda the index is exact whatever its
  // size ("auto" picks exact; "hnsw" is refused): a GPU scans 200,000 vectors in well under a
  // millisecond, and the exact index's answers are the CPU's.
  std::string vector_device = "cpu";
  CoalescerOptions coalescing;  // concurrent searches of a GPU index, merged into one launch
  HnswOptions hnsw;
  PathAgreementOptions path_agreement;  // measured at every build (path_agreement.h)
};

class KbSnapshot {
 public:
  // `vectors` holds chunks.size() rows of embedder->dimension() floats, in chunk order.
  // Throws std::invalid_argument when sizes disagree or an option is unknown.
  // `carried`: a path agreement measured on an earlier snapshot to keep instead of measuring
  // again (the knowledge base passes it when little has changed since; knowledge_base.h).
  static std::shared_ptr<const KbSnapshot> build(std::vector<Chunk> chunks, const std::vector<float>& vectors,
                                                      std::shared_ptr<const Embedder> embedder,
                                                      const IndexOptions& options, std::uint64_t version,
                                                      const PathAgreement* carried = nullptr);

  std::uint64_t version() const { return version_; }
  const std::vector<Chunk>& chunks() const { return chunks_; }
  const Analyzer& analyzer() const { return analyzer_; }
  const Bm25Index& bm25() const { return bm25_; }
  const Embedder& embedder() const { return *embedder_; }
  std::shared_ptr<const Embedder> shared_embedder() const { return embedder_; }
  const VectorIndex& vectors() const { return *vectors_; }
  // How far the dense path agrees with BM25 on this snapshot's own text (path_agreement.h).
  const PathAgreement& path_agreement() const { return path_agreement_; }
  const IndexOptions& options() const { return options_; }

  std::vector<ScoredDoc> search_bm25(std::string_view query, std::size_t k) const;
  // Query vectors (nq x dimension) in, top k per query out.
  std::vector<std::vector<ScoredDoc>> search_dense(const float* query_vectors, std::size_t nq, std::size_t k) const;

 private:
  KbSnapshot(const IndexOptions& options) : options_(options), analyzer_(options.analyzer) {}
  IndexOptions options_;
  Analyzer analyzer_;
  std::uint64_t version_ = 0;
  std::vector<Chunk> chunks_;
  Bm25Index bm25_;
  std::shared_ptr<const Embedder> embedder_;
  std::unique_ptr<VectorIndex> vectors_;
  PathAgreement path_agreement_;
};

}  // namespace sluice::retrieval
