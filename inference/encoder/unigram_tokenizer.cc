#include "inference/encoder/unigram_tokenizer.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <utility>

#include "inference/model_error.h"

namespace sluice::inference {
namespace {

constexpr char32_t kWordBoundary = U'\u2581';

std::u32string to_code_points(std::string_view utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  size_t i = 0;
  while (i < utf8.size()) {
    const auto b = static_cast<unsigned char>(utf8[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = len > 0 && i + size_t(len) <= utf8.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(utf8[i + size_t(k)]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (!ok) {  // pieces come from the model file; a bad byte is its own unknown character
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += size_t(len);
  }
  return out;
}

uint32_t utf16_length(const std::u32string& cps) {
  uint32_t n = 0;
  for (char32_t c : cps) n += c > 0xFFFF ? 2 : 1;
  return n;
}

}  // namespace

UnigramTokenizer::UnigramTokenizer(std::vector<UnigramPiece> pieces, int reserved) : pieces_(std::move(pieces)) {
  if (pieces_.empty()) throw ModelError("unigram tokenizer: the vocabulary is empty");
  if (reserved < 1 || size_t(reserved) > pieces_.size())
    throw ModelError("unigram tokenizer: reserved count " + std::to_string(reserved) + " is outside 1.." +
                     std::to_string(pieces_.size()));
  utf16_length_.reserve(pieces_.size());
  nodes_.push_back({});
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const std::u32string cps = to_code_points(pieces_[id].text);
    utf16_length_.push_back(utf16_length(cps));
    if (id < size_t(reserved) || cps.empty()) continue;
    int32_t node = 0;
    for (char32_t c : cps) {
      const uint64_t key = (uint64_t(node) << 21) | c;
      auto it = edges_.find(key);
      if (it == edges_.end()) {
        const auto next = int32_t(nodes_.size());
        nodes_.push_back({-1, nodes_[size_t(node)].length + 1});
        it = edges_.emplace(key, next).first;
      }
      node = it->second;
    }
    nodes_[size_t(node)].id = int32_t(id);  // a piece listed twice keeps its last id
  }
}

int32_t UnigramTokenizer::child(int32_t node, char32_t c) const {
  auto it = edges_.find((uint64_t(node) << 21) | c);
  return it == edges_.end() ? -1 : it->second;
}

std::u32string UnigramTokenizer::normalize(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(status);
  if (U_FAILURE(status)) throw ModelError(std::string("unigram tokenizer: ICU NFKC is unavailable: ") + u_errorName(status));
  const icu::UnicodeString source = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), int32_t(text.size())));
  const icu::UnicodeString normal = nfkc->normalize(source, status);
  if (U_FAILURE(status)) throw ModelError(std::string("unigram tokenizer: NFKC failed: ") + u_errorName(status));
  std::u32string out;
  if (normal.isEmpty()) return out;
  out.reserve(size_t(normal.length()) + 1);
  out.push_back(kWordBoundary);
  for (int32_t i = 0; i < normal.length(); i = normal.moveIndex32(i, 1)) {
    const char32_t c = char32_t(normal.char32At(i));
    out.push_back(c == U' ' ? kWordBoundary : c);
  }
  return out;
}

std::vector<int32_t> UnigramTokenizer::encode(std::string_view text) const {
  const std::u32string symbols = normalize(text);
  const size_t n = symbols.size();
  if (n == 0) return {};
  // best[e], words[e]: the reference's arrays (0 doubles as "unset"). Visiting every start s
  // in ascending order and extending best[s] forward reaches each end position's candidates
  // in the same ascending-start order as the reference's lattice walk, since best[s] is final
  // once every start before s has been visited.
  std::vector<double> best(n + 1, 0.0);
  std::vector<int32_t> words(n + 1, 0);
  auto offer = [&](size_t start, size_t end, double score, int32_t id) {
    const double total = score + best[start];
    if (best[end] == 0.0 || total >= best[end]) {
      best[end] = total;
      words[end] = id;
    }
  };
  for (size_t s = 0; s < n; ++s) {
    bool matched = false;
    int32_t node = child(0, symbols[s]);
    for (size_t e = s + 1; node >= 0; ++e) {
      const Node& at = nodes_[size_t(node)];
      if (at.id >= 0) {
        offer(s, e, pieces_[size_t(at.id)].score, at.id);
        matched = true;
      }
      if (e >= n) break;
      node = child(node, symbols[e]);
    }
    if (!matched) offer(s, s + 1, 0.0, 0);
  }
  std::vector<int32_t> reversed;
  for (int64_t at = int64_t(n); at > 0; at -= int64_t(utf16_length_[size_t(words[size_t(at)])]))
    reversed.push_back(words[size_t(at)]);
  std::vector<int32_t> ids;
  ids.reserve(reversed.size());
  bool previous_unknown = false;
  for (int32_t id : reversed) {
    if (!(previous_unknown && id == 0)) ids.push_back(id);
    previous_unknown = id == 0;
  }
  return {ids.rbegin(), ids.rend()};
}

}  // namespace sluice::inference
