#include "nodes/retrieval/eval/metrics.h"

#include <algorithm>
#include <cmath>

namespace sluice::retrieval {
namespace {

int grade_of(const QueryJudgements& judged, const std::string& doc) {
  auto it = judged.find(doc);
  return it == judged.end() ? 0 : it->second;
}

std::size_t relevant_count(const QueryJudgements& judged) {
  std::size_t n = 0;
  for (const auto& [doc, grade] : judged) n += grade >= 1;
  return n;
}

}  // namespace

void sort_trec_order(std::vector<RankedDoc>& ranked) {
  std::sort(ranked.begin(), ranked.end(), [](const RankedDoc& a, const RankedDoc& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.doc_id > b.doc_id;
  });
}

double ndcg_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k) {
  double dcg = 0;
  for (std::size_t i = 0; i < std::min(k, ranked.size()); ++i) {
    const int g = grade_of(judged, ranked[i].doc_id);
    if (g > 0) dcg += g / std::log2(static_cast<double>(i) + 2.0);
  }
  std::vector<int> ideal;
  for (const auto& [doc, grade] : judged) {
    if (grade > 0) ideal.push_back(grade);
  }
  std::sort(ideal.rbegin(), ideal.rend());
  double idcg = 0;
  for (std::size_t i = 0; i < std::min(k, ideal.size()); ++i) {
    idcg += ideal[i] / std::log2(static_cast<double>(i) + 2.0);
  }
  return idcg > 0 ? dcg / idcg : 0.0;
}

double recall_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k) {
  const std::size_t rel = relevant_count(judged);
  if (rel == 0) return 0;
  std::size_t hit = 0;
  for (std::size_t i = 0; i < std::min(k, ranked.size()); ++i) hit += grade_of(judged, ranked[i].doc_id) >= 1;
  return static_cast<double>(hit) / static_cast<double>(rel);
}

double precision_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k) {
  if (k == 0) return 0;
  std::size_t hit = 0;
  for (std::size_t i = 0; i < std::min(k, ranked.size()); ++i) hit += grade_of(judged, ranked[i].doc_id) >= 1;
  return static_cast<double>(hit) / static_cast<double>(k);
}

double mrr_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k) {
  for (std::size_t i = 0; i < std::min(k, ranked.size()); ++i) {
    if (grade_of(judged, ranked[i].doc_id) >= 1) return 1.0 / static_cast<double>(i + 1);
  }
  return 0;
}

double map_at(const QueryJudgements& judged, const std::vector<RankedDoc>& ranked, std::size_t k) {
  const std::size_t rel = relevant_count(judged);
  if (rel == 0) return 0;
  double sum = 0;
  std::size_t hit = 0;
  for (std::size_t i = 0; i < std::min(k, ranked.size()); ++i) {
    if (grade_of(judged, ranked[i].doc_id) >= 1) {
      ++hit;
      sum += static_cast<double>(hit) / static_cast<double>(i + 1);
    }
  }
  return sum / static_cast<double>(rel);
}

MetricSet query_metrics(const QueryJudgements& judged, std::vector<RankedDoc> ranked) {
  sort_trec_order(ranked);
  MetricSet m;
  m.ndcg10 = ndcg_at(judged, ranked, 10);
  m.recall10 = recall_at(judged, ranked, 10);
  m.recall100 = recall_at(judged, ranked, 100);
  m.mrr10 = mrr_at(judged, ranked, 10);
  m.p10 = precision_at(judged, ranked, 10);
  m.map100 = map_at(judged, ranked, 100);
  return m;
}

RunMetrics evaluate_run(const Qrels& qrels, const Run& run) {
  RunMetrics out;
  static const std::vector<RankedDoc> kEmpty;
  for (const auto& [qid, judged] : qrels) {
    if (relevant_count(judged) == 0) continue;
    auto it = run.find(qid);
    const MetricSet m = query_metrics(judged, it == run.end() ? kEmpty : it->second);
    out.per_query.emplace(qid, m);
    out.mean.ndcg10 += m.ndcg10;
    out.mean.recall10 += m.recall10;
    out.mean.recall100 += m.recall100;
    out.mean.mrr10 += m.mrr10;
    out.mean.p10 += m.p10;
    out.mean.map100 += m.map100;
    ++out.queries;
  }
  if (out.queries > 0) {
    const double n = static_cast<double>(out.queries);
    out.mean.ndcg10 /= n;
    out.mean.recall10 /= n;
    out.mean.recall100 /= n;
    out.mean.mrr10 /= n;
    out.mean.p10 /= n;
    out.mean.map100 /= n;
  }
  return out;
}

}  // namespace sluice::retrieval
