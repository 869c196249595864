#include "nodes/retrieval/kb/extractive_answer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "graph/document_store.h"
#include "nodes/retrieval/kb/answer_sentences.h"

namespace sluice::retrieval {
namespace {

// What an answer quotes from a chunk: its text, or its title when it has none (a BEIR record that
// is only a title, such as half of CACM's, is one chunk of its title; chunker.h).
std::string_view quotable_text(const Chunk& c) {
  return is_blank(c.text) ? std::string_view(c.title) : std::string_view(c.text);
}

}  // namespace

std::string ExtractiveAnswer::sources_text() const { return sluice::sources_text(sources); }

std::string ExtractiveAnswer::text() const {
  std::string s;
  for (const auto& p : pieces) s += p;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s + sources_text();
}

ExtractiveAnswer extractive_answer(std::string_view query, const std::vector<RetrievedChunk>& hits,
                                   const KbSnapshot& gen, const AnswerOptions& options) {
  ExtractiveAnswer answer;
  const Analyzer& analyzer = gen.analyzer();
  std::map<std::string, double> weight;  // query term -> idf
  const double n = static_cast<double>(std::max<std::size_t>(1, gen.bm25().num_docs()));
  for (const auto& t : analyzer.terms(query)) {
    const double df = gen.bm25().doc_freq(t);
    weight[t] = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
  }
  struct Candidate {
    std::size_t passage, begin, end;
    double score;
    int tier;  // 0 prose, 1 measurement, 2 structure (answer_sentences.h)
  };
  // A measurement answers a question that asks for a quantity as well as prose does.
  const bool figures_wanted = asks_for_quantity(query);
  std::vector<Candidate> cands;
  const std::size_t passages = std::min(options.passages, hits.size());
  for (std::size_t p = 0; p < passages; ++p) {
    const std::string_view text = quotable_text(gen.chunks()[hits[p].chunk]);
    for (const AnswerSentence& s : answer_sentences(text)) {
      std::set<std::string> seen;
      double score = 0;
      for (const auto& t : analyzer.terms(text.substr(s.begin, s.end - s.begin))) {
        auto it = weight.find(t);
        if (it != weight.end() && seen.insert(t).second) score += it->second;
      }
      int tier = s.kind == SentenceKind::kStructure ? 2 : s.kind == SentenceKind::kMeasurement && !figures_wanted ? 1 : 0;
      if (score > 0) cands.push_back({p, s.begin, s.end, score, tier});
    }
  }
  // A table row, heading, code line or fragment matches query terms without saying anything a
  // reader can take as an answer, and a benchmark result matches a "how does it work" question's
  // words without explaining: each is quoted only when no sentence of a better tier matches.
  if (!cands.empty()) {
    const int best = std::min_element(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
                       return a.tier < b.tier;
                     })->tier;
    cands.erase(std::remove_if(cands.begin(), cands.end(), [&](const Candidate& c) { return c.tier != best; }), cands.end());
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.score > b.score || (a.score == b.score && a.passage < b.passage);
  });
  // Overlapping chunks hold the same sentence twice: quote it once, from its best passage.
  std::set<std::string_view> quoted;
  cands.erase(std::remove_if(cands.begin(), cands.end(),
                             [&](const Candidate& c) {
                               const std::string_view text = quotable_text(gen.chunks()[hits[c.passage].chunk]);
                               return !quoted.insert(text.substr(c.begin, c.end - c.begin)).second;
                             }),
              cands.end());
  if (cands.size() > options.max_sentences) cands.resize(options.max_sentences);
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.passage != b.passage ? a.passage < b.passage : a.begin < b.begin;
  });
  std::map<std::size_t, int> number_of;  // passage -> citation number
  for (const auto& s : cands) {
    auto [it, fresh] = number_of.try_emplace(s.passage, static_cast<int>(number_of.size()) + 1);
    const Chunk& c = gen.chunks()[hits[s.passage].chunk];
    if (fresh) answer.sources.push_back({it->second, c.doc_id, c.title, c.begin, c.end, chunk_key(c)});
    // One line of text: a wrapped sentence's line breaks and indentation become one space.
    std::string sentence;
    for (char ch : quotable_text(c).substr(s.begin, std::min(s.end - s.begin, options.max_sentence_bytes))) {
      const bool space = std::isspace(static_cast<unsigned char>(ch));
      if (space && (sentence.empty() || sentence.back() == ' ')) continue;
      sentence += space ? ' ' : ch;
    }
    answer.pieces.push_back(sentence + " [" + std::to_string(it->second) + "] ");
  }
  if (answer.pieces.empty()) answer.pieces.push_back("No passage in the knowledge base matches the question.");
  return answer;
}

}  // namespace sluice::retrieval
