#include "nodes/retrieval/fusion/fusion.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace sluice::retrieval {
namespace {

std::vector<ScoredDoc> sorted(const std::unordered_map<DocIndex, float>& acc) {
  std::vector<ScoredDoc> out;
  out.reserve(acc.size());
  for (const auto& [doc, score] : acc) out.push_back({doc, score});
  std::sort(out.begin(), out.end(), ranks_before);
  return out;
}

}  // namespace

const char* fusion_method_name(FusionMethod m) { return m == FusionMethod::kRrf ? "rrf" : "weighted"; }

FusionMethod parse_fusion_method(const std::string& name) {
  if (name == "rrf") return FusionMethod::kRrf;
  if (name == "weighted") return FusionMethod::kWeighted;
  throw std::invalid_argument("fusion.method: '" + name + "' is not rrf or weighted");
}

std::vector<ScoredDoc> fuse_rrf(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                                float k, float bm25_weight) {
  std::unordered_map<DocIndex, float> acc;
  for (std::size_t r = 0; r < bm25.size(); ++r) acc[bm25[r].doc] += bm25_weight / (k + static_cast<float>(r + 1));
  for (std::size_t r = 0; r < dense.size(); ++r) acc[dense[r].doc] += (1 - bm25_weight) / (k + static_cast<float>(r + 1));
  return sorted(acc);
}

std::vector<ScoredDoc> fuse_weighted(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                                     float bm25_weight) {
  std::unordered_map<DocIndex, float> acc;
  auto add = [&](const std::vector<ScoredDoc>& list, float w) {
    if (list.empty()) return;
    float lo = list.front().score, hi = lo;
    for (const auto& h : list) {
      lo = std::min(lo, h.score);
      hi = std::max(hi, h.score);
    }
    const float span = hi - lo;
    for (const auto& h : list) acc[h.doc] += w * (span > 0 ? (h.score - lo) / span : 1.f);
  };
  add(bm25, bm25_weight);
  add(dense, 1 - bm25_weight);
  return sorted(acc);
}

std::vector<ScoredDoc> fuse(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                            const FusionParams& p) {
  return p.method == FusionMethod::kRrf ? fuse_rrf(bm25, dense, p.rrf_k, p.bm25_weight)
                                        : fuse_weighted(bm25, dense, p.bm25_weight);
}

}  // namespace sluice::retrieval
