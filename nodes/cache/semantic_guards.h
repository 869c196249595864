// Verification of a semantic cache hit: two questions whose embeddings are close may still ask
// opposite or different things ("How do I enable dark mode?" scores 0.948 against "How do I
// disable dark mode?" with USE-lite), so a candidate above the threshold is served only when
// every guard finds the two questions agree. Each guard compares one feature of the two
// questions' words (lower-cased; docs/caching.md lists the rules and word lists):
//
//   negation     the parity of negation cues (not, n't, never, no, without, cannot, ...);
//   antonym      for each class of opposites (enable/disable, add/remove, start/stop,
//                upload/download, before/after, minimum/maximum, ...; phrases such as
//                "turn on"/"turn off" count as one word), the sides each question uses;
//   number       the numbers, with the unit written right after them ("5 GB" = "5gb"),
//                digits and number words alike ("two" = "2"; "1,000" = "1000"; "one" is
//                left out, it is a pronoun as often), and rates ("per second", "every day");
//   date         month and weekday names, relative days (today, yesterday, tomorrow),
//                relative periods (last/next/this week ...), quarters (q1..q4);
//   entity       identifiers and names: words with digits mixed into letters (gpt4, v2),
//                inner capitals (iPhone, ModelY), all capitals (AWS), dots, slashes or
//                underscores inside (config.yaml, api/v1), quoted text, a setting's value
//                ("invalidate: cited": the word after a "name:"), and capitalised
//                words not at the start of the question; an entity of one question must
//                appear among the words of the other (so "Dark Mode" = "dark mode");
//   comparative  comparatives and superlatives (faster, cheapest, more, least, ...), synonyms
//                spelled one way (quickest = fastest, additional = more);
//   topic        one content word swapped for another in otherwise the same question ("enable
//                logging" vs "enable caching"): the content words (function words, negations
//                and politeness left out; plurals, possessives and common synonyms folded) of
//                each question lack exactly one of the other's, and the two differ by more
//                than a typo (an edit distance over 2); or another question about the same
//                things: both have content words of their own, and one has three or more,
//                outnumbering the shared ones.
//
// A guard can only refuse a hit, never make one: a false rejection costs one inference, a
// false hit serves a wrong answer. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::cache {

enum class Guard { kNegation, kAntonym, kNumber, kDate, kEntity, kComparative, kTopic };
inline constexpr int kGuardCount = 7;
const char* guard_name(Guard guard);  // "negation", "antonym", ...

struct QuestionFeatures {
  bool negated = false;
  std::vector<std::pair<int, int>> polar;   // (antonym class, side 0/1), sorted, unique
  std::vector<std::string> numbers;         // sorted
  std::vector<std::string> dates;           // sorted
  std::vector<std::string> entities;        // lower-cased, sorted, unique
  std::vector<std::string> words;           // every lower-cased word, sorted, unique
  std::vector<std::string> comparatives;    // sorted, unique
  std::vector<std::string> content;         // content words, folded (see topic), sorted, unique
  std::vector<std::string> spelled;         // the same words as written (plurals folded), sorted, unique
};

QuestionFeatures question_features(std::string_view question);
// The first guard (in the order above) that finds the questions differ; nullopt: they agree.
std::optional<Guard> guard_mismatch(const QuestionFeatures& a, const QuestionFeatures& b);

}  // namespace sluice::cache
