#include "nodes/retrieval/kb/kb_snapshot.h"

#include <stdexcept>
#include <string>

#include "graph/visible_parallel_for.h"
#include "nodes/retrieval/dense/exact_index.h"
#include "nodes/retrieval/dense/vector_device.h"

namespace sluice::retrieval {

std::shared_ptr<const KbSnapshot> KbSnapshot::build(std::vector<Chunk> chunks,
                                                              const std::vector<float>& vectors,
                                                              std::shared_ptr<const Embedder> embedder,
                                                              const IndexOptions& options,
                                                              std::uint64_t version,
                                                              const PathAgreement* carried) {
  if (!embedder) throw std::invalid_argument("index snapshot: no embedder");
  const std::size_t dim = embedder->dimension();
  if (vectors.size() != chunks.size() * dim) {
    throw std::invalid_argument("index snapshot: " + std::to_string(vectors.size()) + " floats for " +
                                std::to_string(chunks.size()) + " chunks of dimension " + std::to_string(dim));
  }
  std::shared_ptr<KbSnapshot> g(new KbSnapshot(options));
  g->version_ = version;
  g->embedder_ = std::move(embedder);
  std::vector<std::vector<std::string>> terms(chunks.size());
  visible_parallel_for(std::size_t{0}, chunks.size(), [&](std::size_t i) {
    terms[i] = g->analyzer_.terms(index_text(chunks[i]));
  });
  Bm25Index::Builder builder;
  for (const auto& t : terms) builder.add(t);
  g->bm25_ = builder.build(options.bm25);
  std::string kind = options.vector_index;
  const std::string device = resolve_vector_device(options.vector_device);
  if (kind == "auto") kind = chunks.size() >= options.hnsw_min_chunks && device == "cpu" ? "hnsw" : "exact";
  if (is_cuda_vector_device(device) && kind == "exact") {
    g->vectors_ = make_cuda_exact_index(dim, options.coalescing, device == "cuda-f16");
  } else if (is_cuda_vector_device(device)) {
    throw std::invalid_argument("index.vector_index: '" + kind + "' runs on the CPU only; on cuda the index is exact");
  } else if (kind == "exact") {
    g->vectors_ = std::make_unique<ExactIndex>(dim);
  } else if (kind == "hnsw") {
    g->vectors_ = std::make_unique<HnswIndex>(dim, options.hnsw);
  } else {
    throw std::invalid_argument("index.vector_index: '" + options.vector_index + "' is not exact, hnsw or auto");
  }
  g->vectors_->add(vectors.data(), chunks.size());
  g->chunks_ = std::move(chunks);
  if (carried != nullptr && carried->measured()) {
    g->path_agreement_ = *carried;
  } else {
    g->path_agreement_ = measure_path_agreement(*g, options.path_agreement);
    g->path_agreement_.version = version;
  }
  return g;
}

std::vector<ScoredDoc> KbSnapshot::search_bm25(std::string_view query, std::size_t k) const {
  return bm25_.search(analyzer_.terms(query), k);
}

std::vector<std::vector<ScoredDoc>> KbSnapshot::search_dense(const float* query_vectors, std::size_t nq,
                                                                  std::size_t k) const {
  return vectors_->search(query_vectors, nq, k);
}

}  // namespace sluice::retrieval
