// PathAgreementWatch: which way a fuse node's hybrid is led (kb/path_agreement.h), reported as
// knowledge-base snapshots come and go. An ingest or a POST /v1/documents can move a knowledge
// base across `min_path_agreement` and switch its ranking between dense-led and BM25-led; an
// operator should see that happen, not discover it in answer quality.
//
//   gauges  sluice_fuse_path_agreement{node}  the live snapshot's figure (-1: not measured)
//           sluice_fuse_bm25_led{node}        1 while the hybrid is led by BM25
//   log     one line for the first snapshot seen and one at each change of lead
//
// observe() is called per request; a snapshot already seen, or older than one seen (a request
// pinned before a swap), costs one atomic load.
// Thread-safety: observe() may run on many threads at once; each newer version is reported once.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "graph/metrics.h"
#include "nodes/retrieval/kb/kb_snapshot.h"
#include "nodes/retrieval/kb/retriever.h"

namespace sluice::retrieval {

class PathAgreementWatch {
 public:
  // `metrics` may be null (no gauges).
  PathAgreementWatch(std::string node, MetricsRegistry* metrics);
  void observe(const KbSnapshot& snapshot, const RetrieveOptions& options);

 private:
  static constexpr std::uint64_t kNone = UINT64_MAX;
  std::string node_;
  Gauge* agreement_ = nullptr;
  Gauge* bm25_led_ = nullptr;
  std::atomic<std::uint64_t> version_{kNone};  // the last snapshot version reported
  std::atomic<int> lead_{-1};                  // -1 none yet, 0 configured weights, 1 BM25
};

}  // namespace sluice::retrieval
