#include "nodes/retrieval/eval/evaluate.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <ostream>
#include <random>
#include <set>
#include <unordered_set>

#include "graph/visible_parallel_for.h"

namespace sluice::retrieval {
namespace {

using Clock = std::chrono::steady_clock;

// Chunk hits -> document ranking: a document appears once, at its best chunk's place and score.
std::vector<RankedDoc> to_documents(const std::vector<ScoredDoc>& hits, const std::vector<std::string>& doc_of,
                                    std::size_t depth) {
  std::vector<RankedDoc> out;
  std::unordered_set<std::string> seen;
  for (const auto& h : hits) {
    if (out.size() >= depth) break;
    if (seen.insert(doc_of[h.doc]).second) out.push_back({doc_of[h.doc], h.score});
  }
  return out;
}

std::vector<ScoredDoc> as_scored(const std::vector<RetrievedChunk>& hits) {
  std::vector<ScoredDoc> out(hits.size());
  for (std::size_t i = 0; i < hits.size(); ++i) out[i] = {hits[i].chunk, hits[i].score};
  return out;
}

nlohmann::json params_json(const FusionParams& p) {
  nlohmann::json j{{"method", fusion_method_name(p.method)},
                   {"bm25_weight", p.bm25_weight},
                   {"final_bm25_weight", p.final_weight()}};
  if (p.method == FusionMethod::kRrf) j["rrf_k"] = p.rrf_k;
  return j;
}

nlohmann::json metrics_json(const MetricSet& m) {
  return {{"ndcg@10", m.ndcg10}, {"recall@10", m.recall10}, {"recall@100", m.recall100},
          {"mrr@10", m.mrr10},   {"p@10", m.p10},           {"map@100", m.map100}};
}

StageLatency summarize(std::vector<long long> nanos) {
  StageLatency s;
  if (nanos.empty()) return s;
  double sum = 0;
  for (auto n : nanos) sum += static_cast<double>(n);
  s.mean_us = sum / static_cast<double>(nanos.size()) / 1e3;
  std::nth_element(nanos.begin(), nanos.begin() + static_cast<std::ptrdiff_t>(nanos.size() / 2), nanos.end());
  s.p50_us = static_cast<double>(nanos[nanos.size() / 2]) / 1e3;
  return s;
}

// nDCG@10 of each query under each grid entry: table[grid][query].
std::vector<std::vector<double>> ndcg_table(const std::vector<TuningQuery>& qs, const Qrels& qrels,
                                            const std::vector<std::string>& doc_of,
                                            const std::vector<FusionParams>& grid, std::size_t depth,
                                            const FusionRanker& rank) {
  std::vector<std::vector<double>> table(grid.size(), std::vector<double>(qs.size(), 0.0));
  visible_parallel_for(std::size_t{0}, grid.size(), [&](std::size_t g) {
    for (std::size_t i = 0; i < qs.size(); ++i) {
      auto it = qrels.find(qs[i].id);
      if (it == qrels.end()) continue;
      auto ranked = to_documents(rank(qs[i], grid[g]), doc_of, depth);
      sort_trec_order(ranked);
      table[g][i] = ndcg_at(it->second, ranked, 10);
    }
  });
  return table;
}

}  // namespace

std::vector<FusionParams> fusion_grid() {
  std::vector<FusionParams> grid;
  for (int w = 0; w <= 10; ++w) {
    for (float f : {0.f, 0.1f, 0.2f, 0.3f, 0.4f}) {
      grid.push_back({FusionMethod::kWeighted, static_cast<float>(w) / 10.f, 60.f, f});
    }
  }
  for (float k : {10.f, 30.f, 60.f, 100.f}) {
    for (int w = 3; w <= 9; w += 2) grid.push_back({FusionMethod::kRrf, static_cast<float>(w) / 10.f, k});
  }
  return grid;
}

TuningResult tune_fusion_cv(const std::vector<TuningQuery>& queries, const Qrels& qrels,
                            const std::vector<std::string>& doc_of, std::size_t folds, std::uint64_t seed,
                            std::size_t depth, const RetrieveOptions& defaults, const FusionRanker& rank) {
  TuningResult result;
  result.folds = nlohmann::json::array();
  folds = std::max<std::size_t>(2, std::min(folds, queries.size()));
  // Deterministic shuffled fold assignment.
  std::vector<std::size_t> order(queries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::size_t> fold_of(queries.size());
  for (std::size_t i = 0; i < order.size(); ++i) fold_of[order[i]] = i % folds;
  const auto grid = fusion_grid();
  const auto table = ndcg_table(queries, qrels, doc_of, grid, depth, rank);
  for (std::size_t f = 0; f < folds; ++f) {
    nlohmann::json fold{{"fold", f}};
    for (QueryType type : {QueryType::kNaturalLanguage, QueryType::kExactLookup}) {
      std::vector<std::size_t> train, test;
      for (std::size_t i = 0; i < queries.size(); ++i) {
        if (queries[i].type != type) continue;
        (fold_of[i] == f ? test : train).push_back(i);
      }
      if (test.empty()) continue;
      FusionParams best = type == QueryType::kExactLookup ? defaults.exact_lookup : defaults.natural_language;
      double best_score = -1;
      if (!train.empty()) {
        for (std::size_t g = 0; g < grid.size(); ++g) {
          double s = 0;
          for (std::size_t i : train) s += table[g][i];
          s /= static_cast<double>(train.size());
          if (s > best_score + 1e-12) {
            best_score = s;
            best = grid[g];
          }
        }
      }
      auto j = params_json(best);
      j["train_queries"] = train.size();
      j["test_queries"] = test.size();
      j["train_ndcg@10"] = best_score;
      fold[query_type_name(type)] = j;
      for (std::size_t i : test) {
        result.held_out_run[queries[i].id] = to_documents(rank(queries[i], best), doc_of, depth);
      }
    }
    result.folds.push_back(fold);
  }
  // The profile: the same choice on every query of each type.
  result.profile.queries = queries.size();
  result.profile.natural_language = defaults.natural_language;
  result.profile.exact_lookup = defaults.exact_lookup;
  double in_sample = 0;
  for (QueryType type : {QueryType::kNaturalLanguage, QueryType::kExactLookup}) {
    std::vector<std::size_t> all;
    for (std::size_t i = 0; i < queries.size(); ++i)
      if (queries[i].type == type) all.push_back(i);
    if (all.empty()) continue;
    std::size_t best = 0;
    double best_sum = -1;
    for (std::size_t g = 0; g < grid.size(); ++g) {
      double sum = 0;
      for (std::size_t i : all) sum += table[g][i];
      if (sum > best_sum + 1e-12) {
        best_sum = sum;
        best = g;
      }
    }
    in_sample += best_sum;
    (type == QueryType::kExactLookup ? result.profile.exact_lookup : result.profile.natural_language) = grid[best];
    (type == QueryType::kExactLookup ? result.profile.exact_lookup_tuned : result.profile.natural_language_tuned) = true;
  }
  // Over the judged queries, as evaluate_run averages (an unjudged one scores 0 in the table).
  std::size_t judged = 0;
  for (const auto& q : queries) judged += qrels.count(q.id);
  result.profile.in_sample_ndcg10 = judged == 0 ? 0 : in_sample / static_cast<double>(judged);
  return result;
}

nlohmann::json EvalReport::to_json() const {
  nlohmann::json j;
  j["dataset"] = dataset;
  j["documents"] = documents;
  j["chunks"] = chunks;
  j["queries"] = queries;
  j["build_seconds"] = build_seconds;
  if (path_agreement.measured()) {
    // "kb_": eval_breakdown's "path_agreement" is the same measure on the evaluation's queries.
    j["kb_path_agreement"] = {{"overlap", path_agreement.overlap}, {"samples", path_agreement.samples}};
  }
  j["methods"] = nlohmann::json::array();
  for (const auto& m : methods) {
    j["methods"].push_back({{"name", m.name}, {"params", m.params}, {"metrics", metrics_json(m.metrics)}});
  }
  j["latency_us"] = nlohmann::json::object();
  for (const auto& [name, s] : stages) j["latency_us"][name] = {{"mean", s.mean_us}, {"p50", s.p50_us}};
  if (!folds.empty()) j["tuning_folds"] = folds;
  j["problems"] = nlohmann::json::array();
  for (const auto& p : problems) j["problems"].push_back(p.to_string());
  return j;
}

EvalReport evaluate_dataset(const BeirDataset& ds, const EvalOptions& options, const std::string& name) {
  EvalReport report;
  report.dataset = name;
  report.problems = ds.problems;
  report.documents = ds.corpus.size();
  report.queries = ds.queries.size();
  const auto t0 = Clock::now();
  std::vector<Chunk> chunks;
  for (const auto& d : ds.corpus) {
    if (options.chunk_documents) {
      for (auto& c : chunk_document({d.id, d.title, d.text, DocumentKind::kNarrative, CodeLanguage::kNone},
                                    options.chunking)) {
        chunks.push_back(std::move(c));
      }
    } else {
      chunks.push_back(Chunk{d.id, d.title, d.text, 0, static_cast<std::uint32_t>(d.text.size()), 0});
    }
  }
  std::vector<std::string> texts(chunks.size()), doc_of(chunks.size());
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    texts[i] = index_text(chunks[i]);
    doc_of[i] = chunks[i].doc_id;
  }
  std::shared_ptr<const Embedder> embedder = options.embedder ? options.embedder : LsaEmbedder::fit(texts, options.lsa);
  const std::vector<float> vectors = embedder->embed(texts);
  const auto gen = KbSnapshot::build(std::move(chunks), vectors, embedder, options.index, 1);
  report.chunks = gen->chunks().size();
  report.path_agreement = gen->path_agreement();
  report.build_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  // Candidates once per query; every method is a function of them.
  const std::size_t cand = std::max(options.retrieve.candidates, options.depth);
  std::vector<TuningQuery> tq(ds.queries.size());
  std::vector<long long> t_bm25, t_embed, t_dense, t_fuse, t_rerank;
  for (std::size_t i = 0; i < ds.queries.size(); ++i) {
    const auto& q = ds.queries[i];
    tq[i].id = q.id;
    tq[i].type = classify_query(q.text);
    auto t = Clock::now();
    tq[i].bm25 = gen->search_bm25(q.text, cand);
    t_bm25.push_back((Clock::now() - t).count());
    t = Clock::now();
    tq[i].vector = embedder->embed(std::vector<std::string>{q.text});
    t_embed.push_back((Clock::now() - t).count());
    t = Clock::now();
    tq[i].dense = gen->search_dense(tq[i].vector.data(), 1, cand)[0];
    t_dense.push_back((Clock::now() - t).count());
  }
  auto add_method = [&](std::string method, nlohmann::json params, Run run) {
    MethodResult m{std::move(method), std::move(params), evaluate_run(ds.qrels, run).mean, std::move(run)};
    report.methods.push_back(std::move(m));
  };
  auto run_of = [&](auto&& ranking) {
    Run run;
    for (const auto& q : tq) run[q.id] = to_documents(ranking(q), doc_of, options.depth);
    return run;
  };
  add_method("bm25", {{"k1", options.index.bm25.k1}, {"b", options.index.bm25.b}},
             run_of([](const TuningQuery& q) { return q.bm25; }));
  add_method("dense", {{"embedder", embedder->name()}, {"index", gen->vectors().kind()}},
             run_of([](const TuningQuery& q) { return q.dense; }));
  const RetrieveOptions& ro = options.retrieve;
  add_method("dense+feedback", {{"feedback_docs", ro.feedback_docs}, {"feedback_weight", ro.feedback_weight}},
             run_of([&](const TuningQuery& q) {
               return feedback_dense(*gen, q.vector.data(), q.dense, ro.feedback_docs, ro.feedback_weight, cand);
             }));
  const FusionParams rrf{FusionMethod::kRrf, 0.5f, 60.f};
  add_method("rrf", params_json(rrf), run_of([&](const TuningQuery& q) { return fuse(q.bm25, q.dense, rrf); }));
  add_method("weighted",
             {{"natural_language", params_json(ro.natural_language)}, {"exact_lookup", params_json(ro.exact_lookup)}},
             run_of([&](const TuningQuery& q) { return fuse(q.bm25, q.dense, fusion_params_for(ro, q.type)); }));
  RetrieveOptions with_feedback = ro;
  with_feedback.candidates = cand;
  auto hybrid = [&](const TuningQuery& q) {
    auto t = Clock::now();
    auto hits = hybrid_rank(*gen, q.vector.data(), q.bm25, q.dense, fusion_params_for(ro, q.type, *gen), with_feedback);
    t_fuse.push_back((Clock::now() - t).count());
    return hits;
  };
  add_method("hybrid",
             {{"natural_language", params_json(ro.natural_language)},
              {"exact_lookup", params_json(ro.exact_lookup)},
              {"feedback_docs", ro.feedback_docs},
              {"feedback_weight", ro.feedback_weight},
              {"min_path_agreement", ro.min_path_agreement},
              {"low_agreement", params_json(ro.low_agreement)},
              {"led_by", lexical_led(ro, *gen) ? "bm25" : "configured weights"}},
             run_of([&](const TuningQuery& q) { return as_scored(hybrid(q)); }));
  std::map<std::string, const QueryText*> text_of;
  for (const auto& q : ds.queries) text_of[q.id] = &q;
  const ProximityScorer scorer(gen->analyzer(), gen->bm25());
  add_method("hybrid+rerank",
             {{"rerank", "proximity"}, {"depth", ro.rerank_depth}, {"weight", ro.rerank_weight}},
             run_of([&](const TuningQuery& q) {
               auto hits = hybrid(q);
               auto t = Clock::now();
               rerank_hits(hits, text_of[q.id]->text, *gen, scorer, ro.rerank_depth, ro.rerank_weight);
               t_rerank.push_back((Clock::now() - t).count());
               return as_scored(hits);
             }));
  if (options.tune) {
    // The grid's parameters as given: the path-agreement switch is what a profile replaces.
    RetrieveOptions tuning = with_feedback;
    tuning.min_path_agreement = 0;
    const FusionRanker rank = [&](const TuningQuery& q, const FusionParams& p) {
      return as_scored(hybrid_rank(*gen, q.vector.data(), q.bm25, q.dense, p, tuning));
    };
    auto tuned = tune_fusion_cv(tq, ds.qrels, doc_of, options.folds, options.seed, options.depth, ro, rank);
    add_method("tuned (held-out folds)",
               {{"folds", options.folds}, {"seed", options.seed}, {"feedback_docs", ro.feedback_docs}},
               std::move(tuned.held_out_run));
    report.folds = std::move(tuned.folds);
    report.profile = std::move(tuned.profile);
    report.profile.dataset = name;
    report.profile.held_out_ndcg10 = report.methods.back().metrics.ndcg10;
  }
  report.stages = {{"bm25", summarize(t_bm25)},
                   {"embed", summarize(t_embed)},
                   {"dense", summarize(t_dense)},
                   {"fuse+feedback", summarize(t_fuse)},
                   {"rerank", summarize(t_rerank)}};
  return report;
}

EvalReport evaluate_dataset_dir(const std::string& dir, const EvalOptions& options) {
  return evaluate_dataset(load_beir_dataset(dir), options, dir);
}

Run fuse_runs_rrf(const std::vector<const Run*>& runs, double k, std::size_t depth) {
  Run out;
  std::set<std::string> queries;
  for (const Run* r : runs)
    for (const auto& [qid, docs] : *r) queries.insert(qid);
  for (const std::string& qid : queries) {
    std::map<std::string, double> score;
    for (const Run* r : runs) {
      auto it = r->find(qid);
      if (it == r->end()) continue;
      auto ranked = it->second;
      sort_trec_order(ranked);
      for (std::size_t i = 0; i < ranked.size(); ++i) score[ranked[i].doc_id] += 1.0 / (k + double(i + 1));
    }
    std::vector<RankedDoc> fused;
    for (auto& [doc, s] : score) fused.push_back({doc, s});
    sort_trec_order(fused);
    if (fused.size() > depth) fused.resize(depth);
    out[qid] = std::move(fused);
  }
  return out;
}

EvalReport evaluate_embedders(const BeirDataset& ds, const EvalOptions& options,
                              const std::vector<std::shared_ptr<const Embedder>>& embedders, const std::string& name) {
  EvalReport report;
  std::vector<Run> dense_runs;
  Run bm25;
  for (std::size_t e = 0; e < embedders.size(); ++e) {
    EvalOptions o = options;
    o.embedder = embedders[e];
    EvalReport r = evaluate_dataset(ds, o, name);
    std::string model;
    for (auto& m : r.methods) {
      if (m.name == "bm25") bm25 = m.run;
      if (m.name == "dense") {
        dense_runs.push_back(m.run);
        model = m.params.value("embedder", std::string());
      }
    }
    if (e == 0) {
      report = std::move(r);
      continue;
    }
    for (auto& m : r.methods) {
      if (m.name == "bm25") continue;  // the same in every report
      m.name += ":" + model;
      report.methods.push_back(std::move(m));
    }
    for (auto& [stage, latency] : r.stages)
      if (stage == "embed") report.stages.emplace_back("embed:" + model, latency);
  }
  if (embedders.size() > 1) {
    std::vector<const Run*> runs{&bm25};
    for (const Run& d : dense_runs) runs.push_back(&d);
    Run fused = fuse_runs_rrf(runs, 60.0, options.depth);
    MethodResult m{"rrf3", {{"k", 60}, {"paths", runs.size()}}, evaluate_run(ds.qrels, fused).mean, std::move(fused)};
    report.methods.push_back(std::move(m));
  }
  return report;
}

void write_trec_run(std::ostream& out, const Run& run, const std::string& tag) {
  for (const auto& [qid, docs] : run) {
    auto sorted = docs;
    sort_trec_order(sorted);
    for (std::size_t r = 0; r < sorted.size(); ++r) {
      out << qid << " Q0 " << sorted[r].doc_id << ' ' << (r + 1) << ' ' << sorted[r].score << ' ' << tag << '\n';
    }
  }
}

}  // namespace sluice::retrieval
