// libFuzzer target for the USE-lite tokenizer (inference/encoder/unigram_tokenizer.h) on any
// bytes: malformed UTF-8, NFKC expansions, unknown characters, and a vocabulary with pieces
// whose UTF-16 length differs from their code-point length (the reference's backward walk
// counts UTF-16 units, which can skip lattice positions). Checks: no crash or hang, every id in
// range and not reserved (except the unknown id 0), no two unknown ids in a row, no ids exactly
// when the normalised text is empty.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "inference/encoder/unigram_tokenizer.h"
#include "tests/support/fuzz_check.h"

using sluice::inference::UnigramPiece;
using sluice::inference::UnigramTokenizer;

namespace {

const UnigramTokenizer& tokenizer() {
  static const UnigramTokenizer t = [] {
    std::vector<UnigramPiece> pieces = {{"\xEF\xBF\xBD", 0}, {"<s>", 0}, {"</s>", 0}, {"a1", 0}, {"a2", 0}, {"a3", 0}};
    const std::string wb = "\xE2\x96\x81";  // ▁
    double score = -1;
    for (const char* p : {"e", "t", "a", "o", "n", "th", "he", "the", "in", "ing", ".", ",", ":", "://", "1", "12"})
      pieces.push_back({p, score -= 0.25});
    for (const char* p : {"the", "a", "in", "on", "of", ""}) pieces.push_back({wb + p, score -= 0.25});
    pieces.push_back({"\xF0\x9F\x98\x80", -3});         // 😀: one code point, two UTF-16 units
    pieces.push_back({"x\xF0\x9F\x98\x80y", -2});       // a piece around it
    pieces.push_back({"\xE6\x97\xA5\xE6\x9C\xAC", -4});  // 日本
    pieces.push_back({"fi", 0});                        // a zero score, as the reference's null ones
    pieces.push_back({"fi", -1});                       // listed twice: the last id wins
    return UnigramTokenizer(std::move(pieces), 6);
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const UnigramTokenizer& t = tokenizer();
  const std::vector<int32_t> ids = t.encode(text);
  FUZZ_CHECK(ids.empty() == UnigramTokenizer::normalize(text).empty());
  for (size_t i = 0; i < ids.size(); ++i) {
    FUZZ_CHECK(ids[i] == 0 || (ids[i] >= 6 && size_t(ids[i]) < t.size()));
    FUZZ_CHECK(!(i > 0 && ids[i] == 0 && ids[i - 1] == 0));
  }
  return 0;
}
