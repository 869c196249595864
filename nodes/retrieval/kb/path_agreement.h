// Path agreement: how far a knowledge base's dense path agrees with its BM25 path, measured on
// the knowledge base's own text with no judged query, so the hybrid can tell when its dense
// model does not fit the corpus.
//
// Pseudo-queries: `samples` chunks drawn without replacement (a fixed seed, so one corpus always
// gives the same figure), each cut to its first `words` words of title and text; an opening
// already taken (boilerplate: a licence header every source file starts with) is skipped, and
// with fewer than `min_samples` distinct ones the figure is not measured. For each, both
// paths return their top `top`, and the agreement is the share of BM25's top that the dense top
// also holds; the figure is the mean over the pseudo-queries (0-1).
//
// Why: a dense model that fits its corpus (LSA on Cranfield: 0.71) puts most of BM25's neighbours
// of a passage among its own; one that does not (LSA on CACM's one-line titles: 0.57) scatters
// them, and a hybrid led by it ranks below BM25 alone (docs/retrieval.md, "Path agreement").
// Judged queries say the same (real queries' mean top-10 overlap: 0.65 against 0.41).
//
// Cost: `samples` BM25 searches, one batched embedding and `samples` dense searches, at
// snapshot build (kb_snapshot.h): 11 ms for 256 samples with LSA on Cranfield or CACM (one
// thread); 0.61 s on Cranfield and 0.44 s on CACM with USE-lite, whose embedding of the 256
// texts is most of it. The knowledge base carries a figure across small writes
// (knowledge_base.h), so a POST /v1/documents of a few documents does not pay it.
// Thread-safe: a pure function of the snapshot.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::retrieval {

class KbSnapshot;

struct PathAgreementOptions {
  std::size_t samples = 256;     // pseudo-queries; over 30 seeds the figure varied by sd 0.008-0.012
  std::size_t words = 30;        // words of each chunk's opening that make its pseudo-query
  std::size_t top = 10;          // the lists compared: what a user reads
  std::size_t min_chunks = 50;   // below this the figure is not measured (too few neighbours)
  std::size_t min_samples = 20;  // distinct pseudo-queries needed for a figure
  std::uint64_t seed = 42;
};

struct PathAgreement {
  double overlap = -1;        // mean share, 0-1; -1 when not measured
  std::size_t samples = 0;    // pseudo-queries used
  std::uint64_t version = 0;  // the snapshot version it was measured on (a later one may carry it)
  bool measured() const { return samples > 0; }
};

PathAgreement measure_path_agreement(const KbSnapshot& snapshot, const PathAgreementOptions& options = {});

}  // namespace sluice::retrieval
