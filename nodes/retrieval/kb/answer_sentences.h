// The sentences of a retrieved chunk that an extractive answer may quote, each with the kind of
// text it is, so the answer can prefer explanation to structure and to measurements.
//
//   kProse        an ordinary sentence of running text;
//   kMeasurement  prose that mostly reports figures: at least kMeasurementFigures numbers that
//                 carry a unit, a decimal point, a range or thousands ("2.75-3 s", "2x", "99 %",
//                 "1,984"); identifiers such as P0 or p99 and bare small integers are not figures.
//                 A benchmark result matches a "how does X work" question's words without
//                 explaining anything;
//   kStructure    a Markdown table row (also the part of a row after a ". " inside a cell), a
//                 heading, a line of a fenced or indented code block, or a fragment: text that
//                 starts mid-sentence (lower-case letter, digit, closing bracket or punctuation).
//
// A chunk may begin inside a code block (its opening fence in the previous chunk): when the
// chunk's first fence is bare ("```") and the next one opens a block ("```yaml"), the first is
// taken as a closing fence. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace sluice::retrieval {

enum class SentenceKind { kProse, kMeasurement, kStructure };

inline constexpr std::size_t kMeasurementFigures = 3;

struct AnswerSentence {
  std::size_t begin, end;  // byte range in the chunk text (split_sentences' ranges)
  SentenceKind kind;
};

std::vector<AnswerSentence> answer_sentences(std::string_view chunk_text);

// The number of figures (as defined above) in `text`.
std::size_t count_figures(std::string_view text);

// True when the question asks for a quantity ("how fast", "how many", "latency", "throughput",
// "benchmark", ...): then measurements answer it and count as prose.
bool asks_for_quantity(std::string_view question);

}  // namespace sluice::retrieval
