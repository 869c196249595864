#include "nodes/retrieval/eval/eval_breakdown.h"

#include <algorithm>
#include <map>

#include "nodes/retrieval/fusion/query_classifier.h"

namespace sluice::retrieval {

EvalBreakdown eval_breakdown(const EvalReport& report, const BeirDataset& ds, const std::string& hybrid_method) {
  EvalBreakdown out;
  out.hybrid_method = hybrid_method;
  std::map<std::string, std::string> type_of;
  for (const auto& q : ds.queries) type_of[q.id] = query_type_name(classify_query(q.text));
  std::map<std::string, RunMetrics> metrics;
  for (const auto& m : report.methods) metrics[m.name] = evaluate_run(ds.qrels, m.run);

  for (const auto& m : report.methods) {
    std::map<std::string, TypeRow> by_type;
    for (const auto& [qid, set] : metrics[m.name].per_query) {
      TypeRow& row = by_type[type_of[qid]];
      ++row.queries;
      row.ndcg10 += set.ndcg10;
      row.recall10 += set.recall10;
    }
    for (auto& [type, row] : by_type) {
      row.method = m.name;
      row.type = type;
      row.ndcg10 /= static_cast<double>(row.queries);
      row.recall10 /= static_cast<double>(row.queries);
      out.rows.push_back(row);
    }
  }

  if (!metrics.count("bm25") || !metrics.count("dense") || !metrics.count(hybrid_method)) return out;
  const RunMetrics &bm25 = metrics["bm25"], &dense = metrics["dense"], &hybrid = metrics[hybrid_method];
  out.best_single_path = bm25.mean.ndcg10 >= dense.mean.ndcg10 ? "bm25" : "dense";
  const RunMetrics& best = out.best_single_path == "bm25" ? bm25 : dense;
  std::map<std::string, const std::string*> text_of;
  for (const auto& q : ds.queries) text_of[q.id] = &q.text;
  auto ndcg = [](const RunMetrics& r, const std::string& qid) {
    auto it = r.per_query.find(qid);
    return it == r.per_query.end() ? 0.0 : it->second.ndcg10;
  };
  for (const auto& [qid, set] : hybrid.per_query) {
    QueryDifference d;
    d.id = qid;
    d.text = text_of.count(qid) ? *text_of[qid] : "";
    d.type = type_of[qid];
    d.bm25 = ndcg(bm25, qid);
    d.dense = ndcg(dense, qid);
    d.hybrid = set.ndcg10;
    d.difference = d.hybrid - ndcg(best, qid);
    out.queries.push_back(std::move(d));
  }
  // Agreement of the two paths' runs, over the queries both answered.
  const Run *bm25_run = nullptr, *dense_run = nullptr;
  for (const auto& m : report.methods) {
    if (m.name == "bm25") bm25_run = &m.run;
    if (m.name == "dense") dense_run = &m.run;
  }
  std::size_t both = 0;
  for (const auto& [qid, docs] : *bm25_run) {
    auto d = dense_run->find(qid);
    if (d == dense_run->end() || docs.empty()) continue;
    auto b_sorted = docs, d_sorted = d->second;
    sort_trec_order(b_sorted);
    sort_trec_order(d_sorted);
    std::size_t shared = 0, first_rank = 101;
    for (std::size_t i = 0; i < b_sorted.size() && i < 10; ++i) {
      for (std::size_t k = 0; k < d_sorted.size() && k < 10; ++k) shared += b_sorted[i].doc_id == d_sorted[k].doc_id;
    }
    for (std::size_t k = 0; k < d_sorted.size() && k < 100; ++k) {
      if (d_sorted[k].doc_id == b_sorted[0].doc_id) {
        first_rank = k + 1;
        break;
      }
    }
    out.top10_overlap += static_cast<double>(shared) / 10.0;
    out.bm25_first_in_dense += static_cast<double>(first_rank);
    ++both;
  }
  if (both) {
    out.top10_overlap /= static_cast<double>(both);
    out.bm25_first_in_dense /= static_cast<double>(both);
  }
  for (const auto& q : out.queries) {
    out.wins += q.difference > 1e-9;
    out.losses += q.difference < -1e-9;
  }
  std::stable_sort(out.queries.begin(), out.queries.end(),
                   [](const QueryDifference& a, const QueryDifference& b) { return a.difference < b.difference; });
  return out;
}

nlohmann::json to_json(const EvalBreakdown& b, std::size_t worst) {
  nlohmann::json j;
  j["per_type"] = nlohmann::json::array();
  for (const auto& r : b.rows) {
    j["per_type"].push_back({{"method", r.method}, {"type", r.type}, {"queries", r.queries}, {"ndcg@10", r.ndcg10}, {"recall@10", r.recall10}});
  }
  if (b.best_single_path.empty()) return j;
  j["compared"] = {{"hybrid", b.hybrid_method}, {"best_single_path", b.best_single_path}};
  j["path_agreement"] = {{"top10_overlap", b.top10_overlap}, {"bm25_first_in_dense", b.bm25_first_in_dense}};
  j["worst_queries"] = nlohmann::json::array();
  for (std::size_t i = 0; i < b.queries.size() && i < worst; ++i) {
    const auto& q = b.queries[i];
    j["worst_queries"].push_back({{"id", q.id},         {"text", q.text},   {"type", q.type},    {"bm25", q.bm25},
                                  {"dense", q.dense},   {"hybrid", q.hybrid}, {"difference", q.difference}});
  }
  j["differences"] = nlohmann::json::array();
  for (const auto& q : b.queries) j["differences"].push_back(q.difference);
  j["wins"] = b.wins;
  j["losses"] = b.losses;
  j["ties"] = b.queries.size() - b.wins - b.losses;
  return j;
}

}  // namespace sluice::retrieval
