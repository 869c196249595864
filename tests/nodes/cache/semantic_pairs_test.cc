// The semantic cache's labelled pair set (data/semantic_pairs.tsv, provenance in its header):
// each pair's USE-lite similarity and the verification guards' verdict, as the store decides a
// lookup (question_a cached, question_b asked). Prints, for thresholds 0.90-0.97, the share of
// should-hit pairs served and the must-not pairs served with and without the guards, then the
// default's misses per category; docs/caching.md and docs/benchmarks.md quote the table.
// Asserts at the default threshold (0.88): no must-not pair served in any set, at least 60% of
// the should-hit pairs served in the first set and 50% in the held-out one, and courtesy taken
// off serving at least 10 points more of the courtesy set's should-hit pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "inference/encoder/shared_encoders.h"
#include "nodes/cache/cache_key.h"
#include "nodes/cache/semantic_guards.h"
#include "sluice/cache.pb.h"
#include "sluice/options.pb.h"
#include "tests/inference/encoder/encoder_fixture.h"

namespace sluice::cache {
namespace {

struct Pair {
  bool hit = false;
  std::string category, a, b;
  float similarity = 0;
  std::optional<Guard> guard;
};

// `file` under tests/nodes/cache/data/, or an absolute path.
std::vector<Pair> load_pairs(const std::string& file) {
  std::ifstream in(file.front() == '/' ? file : std::string(SLUICE_SOURCE_DIR) + "/tests/nodes/cache/data/" + file);
  if (!in) ADD_FAILURE() << "cannot read " << file;
  std::vector<Pair> pairs;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string field; std::getline(s, field, '\t');) f.push_back(field);
    if (f.size() != 4 || (f[0] != "hit" && f[0] != "miss")) {
      ADD_FAILURE() << file << ": malformed line: " << line;
      continue;
    }
    pairs.push_back({f[0] == "hit", f[1], f[2], f[3], 0.0f, std::nullopt});
  }
  return pairs;
}

float cosine(const float* x, const float* y, std::size_t n) {
  double xy = 0, xx = 0, yy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    xy += double(x[i]) * y[i];
    xx += double(x[i]) * x[i];
    yy += double(y[i]) * y[i];
  }
  return static_cast<float>(xy / std::sqrt(xx * yy));
}

struct AtDefault {
  double hit_rate = 0;
  std::size_t false_hits = 0;
};

// Scores every pair of `file`, prints the tables, returns the figures at the default threshold.
// `courtesy`: take the courtesy off as a lookup does (false: the texts as written, for comparison).
AtDefault evaluate(const std::string& file, float default_threshold, bool courtesy = true) {
  std::vector<Pair> pairs = load_pairs(file);
  std::printf("%s%s\n", file.c_str(), courtesy ? "" : " (courtesy kept)");
  auto encoder = inference::shared_sentence_encoder(inference::default_encoder_path(), 0);
  const std::size_t dim = static_cast<std::size_t>(encoder->dimension());
  std::vector<std::string> texts;
  for (const Pair& p : pairs) {  // as a lookup reads them: courtesy off (cache_key.h)
    texts.push_back(courtesy ? semantic_question_text(p.a) : normalize_whitespace(p.a));
    texts.push_back(courtesy ? semantic_question_text(p.b) : normalize_whitespace(p.b));
  }
  std::vector<float> vectors(texts.size() * dim);
  encoder->embed(texts, vectors.data());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    pairs[i].similarity = cosine(&vectors[2 * i * dim], &vectors[(2 * i + 1) * dim], dim);
    pairs[i].guard = guard_mismatch(question_features(texts[2 * i + 1]), question_features(texts[2 * i]));
  }

  // SLUICE_PAIRS_OUT=file writes every pair's similarity and verdict (how docs/caching.md
  // calibrates a threshold on one's own questions).
  if (const char* out = std::getenv("SLUICE_PAIRS_OUT"); out && *out) {
    std::ofstream f(out);
    for (const Pair& p : pairs)
      f << (p.hit ? "hit" : "miss") << '\t' << p.category << '\t' << p.similarity << '\t'
        << (p.guard ? guard_name(*p.guard) : "-") << '\t' << p.a << '\t' << p.b << '\n';
  }
  std::size_t should = 0, must_not = 0;
  for (const Pair& p : pairs) (p.hit ? should : must_not) += 1;
  std::printf("pairs: %zu should hit, %zu must not\n", should, must_not);
  std::printf("threshold  hits(guards)  false hits(guards)  hits(no guards)  false hits(no guards)\n");
  AtDefault at_default;
  const int default100 = static_cast<int>(std::lround(default_threshold * 100));
  for (int t100 = 85; t100 <= 97; ++t100) {
    const float t = t100 / 100.0f;
    std::size_t hit_g = 0, false_g = 0, hit_raw = 0, false_raw = 0;
    for (const Pair& p : pairs) {
      if (p.similarity < t) continue;
      (p.hit ? hit_raw : false_raw) += 1;
      if (!p.guard) (p.hit ? hit_g : false_g) += 1;
    }
    std::printf("  %.2f     %5.1f%% %3zu    %5zu (%4.1f%%)      %5.1f%% %3zu      %5zu (%4.1f%%)\n", t, 100.0 * hit_g / should, hit_g,
                false_g, 100.0 * false_g / must_not, 100.0 * hit_raw / should, hit_raw, false_raw, 100.0 * false_raw / must_not);
    if (t100 == default100) at_default = {double(hit_g) / should, false_g};
  }
  // Per category at the default: how many pairs reach the threshold, and how many the guards refuse.
  std::map<std::string, std::array<int, 4>> by_category;  // pairs, at/above the default, refused by a guard, served
  std::map<std::string, int> refusals;                    // of should-hit pairs at/above the default, by guard
  for (const Pair& p : pairs) {
    auto& c = by_category[(p.hit ? "hit/" : "miss/") + p.category];
    ++c[0];
    if (p.similarity < default_threshold) continue;
    ++c[1];
    if (p.guard) {
      ++c[2];
      if (p.hit) ++refusals[guard_name(*p.guard)];
    } else {
      ++c[3];
    }
    if (!p.hit && !p.guard) std::printf("FALSE HIT %.3f: \"%s\" / \"%s\"\n", p.similarity, p.a.c_str(), p.b.c_str());
  }
  std::printf("at %.2f: category         pairs  >=  refused  served\n", default_threshold);
  for (const auto& [name, c] : by_category) std::printf("  %-20s %4d %6d %7d %7d\n", name.c_str(), c[0], c[1], c[2], c[3]);
  for (const auto& [guard, n] : refusals) std::printf("  should-hit pairs refused by %s: %d\n", guard.c_str(), n);

  return at_default;
}

// The schema default of semantic_cache.threshold (proto/sluice/cache.proto).
float default_threshold() {
  const auto* field = v1::SemanticCacheConfig::descriptor()->FindFieldByName("threshold");
  return std::stof(field->options().GetExtension(v1::rules).default_value());
}

TEST(SemanticPairs, NoFalseHitAndMostParaphrasesHitAtTheDefaultThreshold) {
  SLUICE_REQUIRE_ENCODER();
  const AtDefault d = evaluate("semantic_pairs.tsv", default_threshold());
  EXPECT_EQ(d.false_hits, 0u) << "must-not pairs served at the default threshold";
  // 60.0% until the workload replay's false hit added the topic guard's "outnumbered" rule
  // (docs/caching.md), 57.6% after it, 60.6% since courtesy comes off (question_courtesy.h),
  // 62.4% since the topic guard reads misspellings of folded words as typos.
  EXPECT_GE(d.hit_rate, 0.60) << "should-hit pairs served at the default threshold";
}

// The held-out set was written after the guards were tuned on the first. Its first reading
// (2 false hits at 0.93, 32% hits) showed gaps the guards then closed by general rules (un-/de-
// prefixes, "last <noun>", am/pm), so it is no longer unseen: docs/caching.md says so.
TEST(SemanticPairs, HeldOutSetHasNoFalseHitAtTheDefaultThreshold) {
  SLUICE_REQUIRE_ENCODER();
  const AtDefault d = evaluate("semantic_pairs_holdout.tsv", default_threshold());
  EXPECT_EQ(d.false_hits, 0u) << "must-not pairs served at the default threshold";
  EXPECT_GE(d.hit_rate, 0.50) << "should-hit pairs served at the default threshold (52.5% now)";
}

// Pairs wrapped in courtesy, written after the courtesy rule (question_courtesy.h): half use
// wrappings the rule does not list, and every must-not pair is wrapped, so that taking the
// wrapping off cannot hide a difference.
TEST(SemanticPairs, CourtesyWrappedQuestionsHitAndHideNoDifference) {
  SLUICE_REQUIRE_ENCODER();
  const AtDefault kept = evaluate("semantic_pairs_courtesy.tsv", default_threshold(), false);
  const AtDefault d = evaluate("semantic_pairs_courtesy.tsv", default_threshold());
  EXPECT_EQ(d.false_hits, 0u) << "must-not pairs served at the default threshold";
  EXPECT_GE(d.hit_rate, kept.hit_rate + 0.1) << "should-hit pairs served at the default threshold (70.0% -> 85.0% when written)";
}

// SLUICE_PAIRS_FILE=/abs/pairs.tsv (same columns): one's own pairs scored the same way, to
// calibrate the threshold on one's own questions (docs/caching.md). Only prints.
TEST(SemanticPairs, YourOwnPairs) {
  const char* file = std::getenv("SLUICE_PAIRS_FILE");
  if (!file || !*file) GTEST_SKIP() << "set SLUICE_PAIRS_FILE to an absolute path of a pairs file";
  SLUICE_REQUIRE_ENCODER();
  evaluate(file, default_threshold());
}

}  // namespace
}  // namespace sluice::cache
