#include "nodes/retrieval/node/path_agreement_watch.h"

#include <cstdio>

namespace sluice::retrieval {

PathAgreementWatch::PathAgreementWatch(std::string node, MetricsRegistry* metrics) : node_(std::move(node)) {
  if (metrics == nullptr) return;
  const Labels labels{{"node", node_}};
  agreement_ = &metrics->gauge("sluice_fuse_path_agreement",
                               "Share of BM25's top 10 the dense path also finds on the knowledge base's own text "
                               "(-1: not measured)",
                               labels);
  bm25_led_ = &metrics->gauge("sluice_fuse_bm25_led", "1 while the hybrid is led by BM25 (path agreement below the bar)",
                              labels);
}

void PathAgreementWatch::observe(const KbSnapshot& snapshot, const RetrieveOptions& options) {
  const std::uint64_t version = snapshot.version();
  std::uint64_t seen = version_.load(std::memory_order_acquire);
  // Forward only: a request pinned to the snapshot before a swap must not report it again. One
  // thread reports each newer version; the others go on ranking.
  do {
    if (seen != kNone && version <= seen) return;
  } while (!version_.compare_exchange_weak(seen, version, std::memory_order_acq_rel));
  const PathAgreement& a = snapshot.path_agreement();
  const int lead = lexical_led(options, snapshot) ? 1 : 0;
  if (agreement_ != nullptr) agreement_->set(a.measured() ? a.overlap : -1.0);
  if (bm25_led_ != nullptr) bm25_led_->set(lead);
  const int before = lead_.exchange(lead);
  if (before == lead || options.min_path_agreement <= 0) return;
  const char* led_by = lead == 1 ? "BM25" : "the configured weights";
  if (a.measured()) {
    std::fprintf(stderr,
                 "sluice: node '%s': knowledge base version %llu: path agreement %.2f on its own text (bar %.2f): "
                 "the hybrid is %sled by %s\n",
                 node_.c_str(), static_cast<unsigned long long>(version), a.overlap, options.min_path_agreement,
                 before < 0 ? "" : "now ", led_by);
  } else {
    std::fprintf(stderr,
                 "sluice: node '%s': knowledge base version %llu: path agreement not measured (too few chunks or "
                 "distinct openings): the hybrid is %sled by %s\n",
                 node_.c_str(), static_cast<unsigned long long>(version), before < 0 ? "" : "now ", led_by);
  }
}

}  // namespace sluice::retrieval
