// Extractive answer: what the `answer` node streams when no language model is configured.
// From the first `passages` retrieved chunks, the `max_sentences` sentences that best match the
// query (idf-weighted share of the query's analysed terms they contain; ties go to the
// better-ranked passage), in passage order, each followed by its citation "[n]"; then the
// sources, numbered in first-cited order. Sentences matching no query term are never used;
// with none left the answer says so rather than quoting noise. Sentences come in tiers
// (answer_sentences.h): prose first; measurements (three or more figures) only when no prose
// sentence matches, unless the question asks for a quantity; table rows, headings, code and
// fragments only when nothing else matches. A chunk with no text (a document that is only its
// title) is quoted by its title, as one sentence.
// Pure function of its inputs; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/citation.h"
#include "nodes/retrieval/kb/kb_snapshot.h"
#include "nodes/retrieval/kb/retriever.h"

namespace sluice::retrieval {

struct AnswerOptions {
  std::size_t passages = 4;       // the "pass on 3-5"
  std::size_t max_sentences = 3;
  std::size_t max_sentence_bytes = 600;  // very long "sentences" (tables, code) are cut
  CitationMode citations = CitationMode::kField;  // where the AnswerNode puts the sources
};

struct ExtractiveAnswer {
  std::vector<std::string> pieces;   // stream these in order: "sentence [n] " ...
  std::vector<Citation> sources;
  std::string sources_text() const;  // "\n\nSources:\n[1] title (doc id)\n..."
  std::string text() const;          // all pieces, then sources_text()
};

ExtractiveAnswer extractive_answer(std::string_view query, const std::vector<RetrievedChunk>& hits,
                                   const KbSnapshot& gen, const AnswerOptions& options = {});

}  // namespace sluice::retrieval
