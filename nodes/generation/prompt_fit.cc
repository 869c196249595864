#include "nodes/generation/prompt_fit.h"

namespace sluice::generation {

using namespace sluice::inference;  // the model runtime these nodes drive
namespace {

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

FittedPrompt fit_prompt(const CitedPromptDraft& draft, const Tokenizer& tokenizer, int64_t budget) {
  auto encode = [&](std::size_t n, std::size_t last_chars) {
    return tokenizer.encode_prompt(draft.render(n, last_chars), true);
  };
  auto fits = [&](const std::vector<int32_t>& t) { return int64_t(t.size()) <= budget; };
  const std::size_t all = draft.passages.size();
  FittedPrompt out;
  out.passages = all;
  out.tokens = encode(all, 0);
  if (fits(out.tokens)) return out;

  // 2. Whole passages, last first (rendering with fewer passages never grows the prompt).
  std::size_t kept = all;
  while (kept > 0) {
    --kept;
    out.passages = kept;
    out.tokens = encode(kept, 0);
    if (fits(out.tokens)) break;
  }
  if (!fits(out.tokens)) return out;  // 4. even no passage fits: the engine's rule decides

  // 3. The first dropped passage, cut at its tail: the longest cut that fits, by bisection over
  // code points (longer cuts never make fewer tokens, up to a merge or two at the cut).
  const std::size_t max_chars = draft.options->layout.max_passage_chars;
  std::size_t hi = code_points(draft.passages[kept].text);
  if (max_chars > 0) hi = std::min(hi, max_chars);
  if (hi <= kMinCutPassageChars) return out;
  --hi;  // the whole passage (within max_passage_chars) did not fit
  std::vector<int32_t> best = encode(kept + 1, kMinCutPassageChars);
  if (!fits(best)) return out;
  std::size_t lo = kMinCutPassageChars;  // fits
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    std::vector<int32_t> t = encode(kept + 1, mid);
    if (fits(t)) {
      lo = mid;
      best = std::move(t);
    } else {
      hi = mid - 1;
    }
  }
  out.passages = kept + 1;
  out.last_passage_chars = lo;
  out.tokens = std::move(best);
  return out;
}

}  // namespace sluice::generation
