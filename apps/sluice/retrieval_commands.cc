// `sluice ingest FILE --source PATH` and `sluice eval FILE --dataset DIR [--tune [--profile F]]
// [--plot P]`: thin wrappers over nodes/retrieval (eval/evaluate.h, eval/eval_breakdown.h,
// fusion/fusion_profile.h). `sluice ingest` shows a progress bar on a terminal
// (ingest_progress.h). The pipeline file says which knowledge base (its retrieval
// nodes' `knowledge_base`, relative to the file) and which fusion settings to use.
#include <cstdio>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "apps/sluice/commands.h"
#include "apps/sluice/gnuplot_plot.h"
#include "apps/sluice/ingest_progress.h"
#include "apps/sluice/registry.h"
#include "inference/encoder/encoder_location.h"
#include "nodes/retrieval/dense/use_lite_embedder.h"
#include "nodes/retrieval/eval/eval_breakdown.h"
#include "nodes/retrieval/eval/evaluate.h"
#include "nodes/retrieval/fusion/fusion_profile.h"
#include "nodes/retrieval/kb/knowledge_base.h"
#include "nodes/retrieval/kb/loaders.h"
#include "nodes/retrieval/node/retrieval_nodes.h"

namespace sluice::cli {
namespace {

// The knowledge base directory the pipeline's retrieval nodes serve ("" when none).
std::string knowledge_base_of(const LoadedSpec& spec) {
  for (const auto& n : spec.pipeline.nodes()) {
    std::string kb;
    if (n.has_embed()) kb = n.embed().knowledge_base();
    else if (n.has_bm25()) kb = n.bm25().knowledge_base();
    else if (n.has_dense()) kb = n.dense().knowledge_base();
    else if (n.has_fuse()) kb = n.fuse().knowledge_base();
    else if (n.has_answer()) kb = n.answer().knowledge_base();
    if (kb.empty()) continue;
    std::filesystem::path p(kb);
    if (p.is_relative()) p = std::filesystem::path(spec.base_dir) / p;
    return p.lexically_normal().string();
  }
  return "";
}

bool flag(const Args& args, std::size_t& i, const char* name, std::string* out) {
  if (args[i] != name || i + 1 >= args.size()) return false;
  *out = args[++i];
  return true;
}

}  // namespace

int ingest(const Args& args) {
  const char* usage = "sluice ingest FILE --source PATH   (PATH: a file or a directory; the knowledge base is made equal to it)";
  std::string file, source;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (flag(args, i, "--source", &source)) continue;
    if (file.empty() && args[i][0] != '-') {
      file = args[i];
      continue;
    }
    std::fprintf(stderr, "unexpected argument '%s'\nusage: %s\n", args[i].c_str(), usage);
    return 2;
  }
  if (file.empty() || source.empty()) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  LoadedSpec spec;
  if (!load_pipeline(file, &spec)) return 2;
  std::string dir = knowledge_base_of(spec);
  if (dir.empty()) {
    std::fprintf(stderr, "sluice ingest: %s has no retrieval node with a knowledge_base\n", file.c_str());
    return 2;
  }
  // Progress on a terminal only (ingest_progress.h); problems print after the bar is cleared.
  IngestProgressBar progress = IngestProgressBar::for_stderr();
  retrieval::LoaderOptions loader;
  if (progress.enabled()) loader.on_file = [&](std::size_t done, std::size_t total) { progress.files(done, total); };
  retrieval::LoadedSource loaded = retrieval::load_path(source, loader);
  progress.finish();
  for (const auto& p : loaded.problems) std::cerr << "skipped: " << p.to_string() << "\n";
  retrieval::KnowledgeBaseOptions options;
  options.directory = dir;
  for (const auto& n : spec.pipeline.nodes())  // the embed node's dense model, if it names one
    if (n.has_embed() && !n.embed().model().empty()) options.dense_model = n.embed().model();
  std::filesystem::create_directories(dir);
  std::unique_ptr<retrieval::KnowledgeBase> opened;
  try {
    opened = std::make_unique<retrieval::KnowledgeBase>(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice ingest: knowledge base %s: %s\n", dir.c_str(), e.what());
    return 2;
  }
  retrieval::KnowledgeBase& kb = *opened;
  retrieval::IngestProgressFn on_progress;
  if (progress.enabled()) on_progress = [&](const retrieval::IngestProgress& p) { progress.ingest(p); };
  retrieval::IngestStats stats = kb.sync(std::move(loaded.documents), on_progress);
  progress.finish();
  for (const auto& p : stats.problems) std::cerr << "skipped: " << p.to_string() << "\n";
  std::cout << "knowledge base " << dir << " version " << stats.version << ": " << stats.added << " added, "
            << stats.updated << " updated, " << stats.unchanged << " unchanged, " << stats.deleted << " deleted; "
            << stats.chunks_total << " chunks (" << stats.chunks_embedded << " embedded"
            << (stats.refitted ? ", embedder refitted" : "") << ", " << kb.dense_model() << ") in " << stats.seconds << " s";
  std::size_t problems = loaded.problems.size() + stats.problems.size();
  if (problems) std::cout << "; " << problems << " input problems";
  std::cout << "\n";
  return 0;
}

// Per query type and method, then the queries where the hybrid loses most to the better path.
static void print_breakdown(const retrieval::EvalBreakdown& b, std::size_t worst) {
  std::printf("\n%-22s %-16s %7s %8s %8s\n", "method", "query type", "queries", "nDCG@10", "R@10");
  for (const auto& r : b.rows) {
    std::printf("%-22s %-16s %7zu %8.3f %8.3f\n", r.method.c_str(), r.type.c_str(), r.queries, r.ndcg10, r.recall10);
  }
  if (b.best_single_path.empty()) return;
  std::printf("\npath agreement on these queries (no judgements used): BM25's and dense's top 10 share %.2f on average;\n"
              "BM25's first hit is at rank %.1f of the dense list (Cranfield: 0.65 and 2.9, where fusion helps; CACM: 0.40\n"
              "and 21.2, where it hurts)\n",
              b.top10_overlap, b.bm25_first_in_dense);
  if (worst == 0) return;
  std::printf("\n%s against %s (the better single path here), per query: %zu better, %zu worse, %zu equal; worst %zu:\n",
              b.hybrid_method.c_str(), b.best_single_path.c_str(), b.wins, b.losses, b.queries.size() - b.wins - b.losses,
              std::min(worst, b.queries.size()));
  std::printf("  %-8s %-16s %6s %6s %6s %7s  %s\n", "query", "type", "bm25", "dense", b.hybrid_method.c_str(), "diff", "text");
  for (std::size_t i = 0; i < b.queries.size() && i < worst; ++i) {
    const auto& q = b.queries[i];
    std::printf("  %-8s %-16s %6.3f %6.3f %6.3f %+7.3f  %.70s\n", q.id.c_str(), q.type.c_str(), q.bm25, q.dense, q.hybrid,
                q.difference, q.text.c_str());
  }
}

int eval(const Args& args) {
  const char* usage =
      "sluice eval FILE --dataset DIR [--dense lsa|use-lite|both] [--tune [--profile OUT.json]] [--folds N] [--json OUT.json]\n"
      "            [--trec-dir DIR] [--plot OUT.png] [--worst N]";
  std::string file, dataset, json_out, trec_dir, folds = "5", dense = "lsa", profile_out, plot, worst = "10";
  bool tune = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (flag(args, i, "--dataset", &dataset) || flag(args, i, "--json", &json_out) || flag(args, i, "--trec-dir", &trec_dir) ||
        flag(args, i, "--folds", &folds) || flag(args, i, "--dense", &dense) || flag(args, i, "--profile", &profile_out) ||
        flag(args, i, "--plot", &plot) || flag(args, i, "--worst", &worst)) {
      continue;
    }
    if (args[i] == "--tune") {
      tune = true;
      continue;
    }
    if (file.empty() && args[i][0] != '-') {
      file = args[i];
      continue;
    }
    std::fprintf(stderr, "unexpected argument '%s'\nusage: %s\n", args[i].c_str(), usage);
    return 2;
  }
  if (file.empty() || dataset.empty()) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  if (!profile_out.empty() && !tune) {
    std::fprintf(stderr, "sluice eval: --profile writes what --tune chooses; add --tune\n");
    return 2;
  }
  std::size_t worst_count = 0;
  if (std::from_chars(worst.data(), worst.data() + worst.size(), worst_count).ec != std::errc()) {
    std::fprintf(stderr, "sluice eval: --worst '%s' is not a count\n", worst.c_str());
    return 2;
  }
  LoadedSpec spec;
  if (!load_pipeline(file, &spec)) return 2;
  retrieval::EvalOptions options;
  for (const auto& n : spec.pipeline.nodes()) {
    if (!n.has_fuse()) continue;
    try {
      options.retrieve = retrieval::retrieve_options_from(n.fuse(), spec.base_dir);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "sluice eval: node '%s': %s\n", n.name().c_str(), e.what());
      return 2;
    }
  }
  options.tune = tune;
  options.folds = std::stoul(folds);
  if (dense != "lsa" && dense != "use-lite" && dense != "both") {
    std::fprintf(stderr, "sluice eval: --dense '%s' is not one of lsa, use-lite, both\n", dense.c_str());
    return 2;
  }
  std::vector<std::shared_ptr<const retrieval::Embedder>> embedders;
  if (dense != "use-lite") embedders.push_back(nullptr);  // LSA, fitted on the corpus
  if (dense != "lsa") {
    try {
      embedders.push_back(retrieval::UseLiteEmbedder::open(inference::default_encoder_path()));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sluice eval: the sentence encoder: %s (scripts/setup-encoder writes it)\n", e.what());
      return 2;
    }
  }
  const retrieval::BeirDataset loaded = retrieval::load_beir_dataset(dataset);
  retrieval::EvalReport report = retrieval::evaluate_embedders(loaded, options, embedders, dataset);
  for (const auto& p : report.problems) std::cerr << "skipped: " << p.to_string() << "\n";
  std::printf("%-22s %8s %8s %8s %8s %8s %8s\n", "method", "nDCG@10", "R@10", "R@100", "MRR@10", "P@10", "MAP@100");
  nlohmann::json j = report.to_json();
  for (const auto& m : j["methods"]) {
    const auto& s = m["metrics"];
    std::printf("%-22s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", m["name"].get<std::string>().c_str(), s.value("ndcg@10", 0.0),
                s.value("recall@10", 0.0), s.value("recall@100", 0.0), s.value("mrr@10", 0.0), s.value("p@10", 0.0),
                s.value("map@100", 0.0));
  }
  const retrieval::EvalBreakdown breakdown = retrieval::eval_breakdown(report, loaded);
  print_breakdown(breakdown, worst_count);
  if (report.path_agreement.measured()) {
    std::printf("\npath agreement on the knowledge base's own text (%zu pseudo-queries, measured at every build): %.2f;\n"
                "the hybrid is led by %s (min_path_agreement %.2f)\n",
                report.path_agreement.samples, report.path_agreement.overlap,
                retrieval::lexical_led(options.retrieve, report.path_agreement) ? "BM25" : "the configured weights",
                options.retrieve.min_path_agreement);
  }
  const nlohmann::json b = retrieval::to_json(breakdown, worst_count);
  for (const auto& [key, value] : b.items()) j[key] = value;
  if (tune) {
    std::printf("tuned on every query (in-sample nDCG@10 %.3f; held-out folds %.3f): natural_language %s %.1f/%.1f, exact_lookup %s %.1f/%.1f\n",
                report.profile.in_sample_ndcg10, report.profile.held_out_ndcg10,
                retrieval::fusion_method_name(report.profile.natural_language.method), report.profile.natural_language.bm25_weight,
                report.profile.natural_language.final_weight(), retrieval::fusion_method_name(report.profile.exact_lookup.method),
                report.profile.exact_lookup.bm25_weight, report.profile.exact_lookup.final_weight());
    // The held-out figure is what a profile will do on new questions. The default's is measured
    // on the same queries; its weights were chosen on Cranfield (optimistic there), its path
    // agreement uses no judgement.
    for (const auto& m : report.methods) {
      if (m.name != "hybrid") continue;
      const bool better = report.profile.held_out_ndcg10 > m.metrics.ndcg10;
      std::printf("%s: held-out folds %.3f against the default hybrid's %.3f nDCG@10%s\n",
                  better ? "a profile pays here" : "the default ranks better here", report.profile.held_out_ndcg10,
                  m.metrics.ndcg10, better ? "" : " (a profile written from this run is not worth loading)");
    }
  }
  if (!profile_out.empty()) {
    std::ofstream(profile_out) << retrieval::fusion_profile_json(report.profile);
    std::printf("fusion profile written to %s (load it with the fuse node's profile: setting)\n", profile_out.c_str());
  }
  if (!plot.empty() && !breakdown.queries.empty()) {
    std::vector<double> x;
    Series diff{breakdown.hybrid_method + " - " + breakdown.best_single_path + " (nDCG@10)", {}, false, false};
    for (std::size_t i = 0; i < breakdown.queries.size(); ++i) {
      x.push_back(static_cast<double>(i + 1));
      diff.values.push_back(breakdown.queries[i].difference);
    }
    write_plot(plot, {"sluice eval: " + dataset + ", per-query nDCG@10 difference, sorted", "query (sorted by difference)",
                      "nDCG@10 difference", "", false},
               x, {diff});
  }
  if (!json_out.empty()) std::ofstream(json_out) << j.dump(2) << "\n";
  if (!trec_dir.empty()) {
    std::filesystem::create_directories(trec_dir);
    for (const auto& m : report.methods) {
      std::ofstream out(std::filesystem::path(trec_dir) / (m.name + ".run"));
      retrieval::write_trec_run(out, m.run, m.name);
    }
  }
  return 0;
}

}  // namespace sluice::cli
