// libFuzzer target for what the semantic cache reads from a user's question (run by
// scripts/fuzz): the courtesy rule (question_courtesy.h) and the verification guards'
// features (semantic_guards.h), both fed any bytes a request can carry. The input is two
// questions, split at its first newline (a pair of the labelled sets, as the seeds are).
// Besides not crashing:
//  - the question without its courtesy is no longer than the question and one closing mark,
//    is UTF-8 when the question is, and is the question itself or a run of its text (its first
//    letter capitalised, a closing mark added);
//  - a question agrees with itself (a verbatim repeat is never refused by a guard), with and
//    without its courtesy;
//  - the guards give the same verdict in either order (a hit does not depend on which of the
//    two questions was cached first).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nodes/cache/cache_key.h"
#include "nodes/cache/question_courtesy.h"
#include "nodes/cache/semantic_guards.h"
#include "tests/support/fuzz_check.h"

namespace {

using namespace sluice::cache;

void check_courtesy(const std::string& question) {
  const std::string out = without_courtesy(question);
  FUZZ_CHECK(out.size() <= question.size() + 1);
  if (sluice::fuzzing::is_utf8(question)) FUZZ_CHECK(sluice::fuzzing::is_utf8(out));
  if (out == question) return;
  FUZZ_CHECK(!out.empty());
  // The kept run: what follows the first letter, less a closing mark the rule may have added.
  std::string_view run(out);
  run.remove_prefix(1);
  if (!run.empty() && (run.back() == '?' || run.back() == '.' || run.back() == '!')) run.remove_suffix(1);
  bool found = false;
  for (std::size_t at = question.find(run, 1); at != std::string::npos && !found; at = question.find(run, at + 1)) {
    const char before = question[at - 1];
    found = before == out[0] || std::toupper(static_cast<unsigned char>(before)) == static_cast<unsigned char>(out[0]);
  }
  FUZZ_CHECK(found);
}

void check_guards(const std::string& a, const std::string& b) {
  const QuestionFeatures fa = question_features(a);
  const QuestionFeatures fb = question_features(b);
  FUZZ_CHECK(!guard_mismatch(fa, fa).has_value());
  FUZZ_CHECK(!guard_mismatch(fb, fb).has_value());
  FUZZ_CHECK(guard_mismatch(fa, fb).has_value() == guard_mismatch(fb, fa).has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  const std::string a(input.substr(0, newline));
  const std::string b(newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1));
  check_courtesy(a);
  check_courtesy(b);
  check_guards(a, b);
  check_guards(semantic_question_text(a), semantic_question_text(b));
  return 0;
}
