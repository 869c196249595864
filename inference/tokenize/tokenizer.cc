#include "inference/tokenize/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <queue>

#include "inference/gguf/gguf_file.h"
#include "inference/tokenize/prompt_text.h"

namespace sluice::inference {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK
constexpr int32_t kUnknownType = 2, kControlType = 3, kUserDefinedType = 4, kByteType = 6;

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Length of the UTF-8 character starting with byte c (1 for invalid lead bytes).
size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  if ((c & 0xF8) == 0xF0) return 4;
  return 1;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

Tokenizer::Tokenizer(const GgufFile& file) {
  const std::string_view model = file.get_string("tokenizer.ggml.model");
  if (model == "gpt2")
    file.fail("metadata 'tokenizer.ggml.model'",
              "GPT-2 byte-level BPE (Llama 3, Qwen) is not supported yet; only 'llama' (SentencePiece BPE) is");
  if (model != "llama")
    file.fail("metadata 'tokenizer.ggml.model'", "tokenizer '" + std::string(model) + "' is not supported; only 'llama' is");
  const GgufValue& tokens = file.get_array("tokenizer.ggml.tokens", GgufType::kString);
  const size_t n = tokens.strings.size();
  if (n == 0 || n > (1u << 24)) file.fail("metadata 'tokenizer.ggml.tokens'", "vocabulary size " + std::to_string(n) + " is out of range");
  scores_.assign(n, 0.0f);
  if (file.find("tokenizer.ggml.scores")) {
    const GgufValue& s = file.get_array("tokenizer.ggml.scores", GgufType::kF32);
    if (s.count != n) file.fail("metadata 'tokenizer.ggml.scores'", "has " + std::to_string(s.count) + " entries for " + std::to_string(n) + " tokens");
    std::memcpy(scores_.data(), s.data, n * 4);
  }
  std::vector<int32_t> types(n, 1);
  if (file.find("tokenizer.ggml.token_type")) {
    const GgufValue& t = file.get_array("tokenizer.ggml.token_type", GgufType::kI32);
    if (t.count != n) file.fail("metadata 'tokenizer.ggml.token_type'", "has " + std::to_string(t.count) + " entries for " + std::to_string(n) + " tokens");
    std::memcpy(types.data(), t.data, n * 4);
  }
  auto id_key = [&](const char* key, int32_t fallback) {
    const auto v = file.find_uint(key);
    if (!v) return fallback;
    if (*v >= n) file.fail(std::string("metadata '") + key + "'", "token id " + std::to_string(*v) + " is outside the vocabulary");
    return int32_t(*v);
  };
  bos_ = id_key("tokenizer.ggml.bos_token_id", 1);
  eos_ = id_key("tokenizer.ggml.eos_token_id", 2);
  unk_ = id_key("tokenizer.ggml.unknown_token_id", 0);
  if (const GgufValue* v = file.find("tokenizer.ggml.add_space_prefix")) add_space_prefix_ = v->u != 0;

  std::fill(std::begin(byte_token_), std::end(byte_token_), -1);
  raw_.reserve(n);
  text_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string_view p = tokens.strings[i];
    raw_.emplace_back(p);
    if (types[i] == kByteType && p.size() == 6 && p.substr(0, 3) == "<0x" && p[5] == '>' &&
        hex_digit(p[3]) >= 0 && hex_digit(p[4]) >= 0) {
      const int b = hex_digit(p[3]) * 16 + hex_digit(p[4]);
      if (byte_token_[b] < 0) byte_token_[b] = int32_t(i);
      text_.emplace_back(1, char(b));
    } else if (types[i] == kControlType || types[i] == kUnknownType) {
      text_.emplace_back();
    } else {
      text_.push_back(replace_all(p, kSpaceMark, " "));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (types[i] == kUserDefinedType && !raw_[i].empty()) user_defined_.push_back(int32_t(i));
  }
  // Longest first, as llama.cpp partitions them; the lower id first among equals.
  std::stable_sort(user_defined_.begin(), user_defined_.end(),
                   [&](int32_t a, int32_t b) { return raw_[a].size() > raw_[b].size(); });
  for (size_t i = 0; i < n; ++i) {  // first id wins
    if (types[i] == kControlType) {
      control_index_.emplace(raw_[i], int32_t(i));
    } else if (types[i] != kUnknownType) {
      index_.emplace(raw_[i], int32_t(i));
    }
  }
}

int32_t Tokenizer::lookup(std::string_view raw_piece) const {
  const auto it = index_.find(raw_piece);
  return it == index_.end() ? -1 : it->second;
}

int32_t Tokenizer::control_token(std::string_view text) const {
  const auto it = control_index_.find(text);
  return it == control_index_.end() ? -1 : it->second;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos) out.push_back(bos_);
  append_text(text, true, out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_prompt(const PromptText& prompt, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos) out.push_back(bos_);
  bool after_control = true;  // the prompt's start takes the leading space, as after a control token
  std::string run;            // text since the last control token
  auto flush = [&] {
    if (run.empty()) return;
    append_text(run, after_control, out);
    after_control = false;
    run.clear();
  };
  for (const PromptPart& part : prompt.parts()) {
    const int32_t id = part.marker ? control_token(part.text) : -1;
    if (id < 0) {
      run += part.text;
      continue;
    }
    flush();
    out.push_back(id);
    after_control = true;
  }
  flush();
  return out;
}

void Tokenizer::append_text(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  if (user_defined_.empty()) {
    append_pieces(text, space_prefix, out);
    return;
  }
  // Split out the user-defined tokens, longest first, each at every place it occurs in what
  // is still text (llama.cpp's partition): a fragment is text (token -1) or one such token.
  struct Fragment {
    std::string_view text;
    int32_t token;
  };
  std::vector<Fragment> fragments{{text, -1}};
  for (int32_t id : user_defined_) {
    const std::string_view needle = raw_[id];
    std::vector<Fragment> next;
    for (const Fragment& f : fragments) {
      if (f.token >= 0 || f.text.size() < needle.size()) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t at; (at = rest.find(needle)) != std::string_view::npos;) {
        if (at > 0) next.push_back({rest.substr(0, at), -1});
        next.push_back({needle, id});
        rest.remove_prefix(at + needle.size());
      }
      if (!rest.empty()) next.push_back({rest, -1});
    }
    fragments.swap(next);
  }
  // Text after a user-defined token takes the leading space, as after any token llama.cpp
  // partitions out.
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      space_prefix = true;
    } else {
      append_pieces(f.text, space_prefix, out);
      space_prefix = false;
    }
  }
}

void Tokenizer::append_pieces(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string s;
  if (add_space_prefix_ && space_prefix) s = kSpaceMark;
  s += replace_all(text, " ", kSpaceMark);

  // Symbols start as UTF-8 characters and merge pairwise, best score first (leftmost on ties),
  // over a linked list, as llama.cpp's SentencePiece tokenizer does.
  struct Symbol {
    int prev, next;
    size_t start, len;
  };
  std::vector<Symbol> sym;
  for (size_t i = 0; i < s.size();) {
    const size_t len = std::min(utf8_len(static_cast<unsigned char>(s[i])), s.size() - i);
    sym.push_back({int(sym.size()) - 1, int(sym.size()) + 1, i, len});
    i += len;
  }
  sym.back().next = -1;
  struct Bigram {
    float score;
    int left;
    size_t len;
    bool operator<(const Bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
  };
  std::priority_queue<Bigram> queue;
  auto try_pair = [&](int l) {
    if (l < 0 || sym[l].next < 0) return;
    const Symbol& a = sym[l];
    const Symbol& b = sym[a.next];
    const int32_t id = lookup(std::string_view(s).substr(a.start, a.len + b.len));
    if (id >= 0) queue.push({scores_[id], l, a.len + b.len});
  };
  for (int i = 0; i + 1 < int(sym.size()); ++i) try_pair(i);
  while (!queue.empty()) {
    const Bigram top = queue.top();
    queue.pop();
    Symbol& a = sym[top.left];
    if (a.len == 0 || a.next < 0 || a.len + sym[a.next].len != top.len) continue;  // stale
    Symbol& b = sym[a.next];
    a.len += b.len;
    b.len = 0;
    a.next = b.next;
    if (a.next >= 0) sym[a.next].prev = top.left;
    try_pair(a.prev);
    try_pair(top.left);
  }
  for (int i = 0; i >= 0 && i < int(sym.size()); i = sym[i].next) {
    const std::string_view piece = std::string_view(s).substr(sym[i].start, sym[i].len);
    const int32_t id = lookup(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (unsigned char c : piece) out.push_back(byte_token_[c] >= 0 ? byte_token_[c] : unk_);
  }
}

std::string_view Tokenizer::piece(int32_t prev, int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  std::string_view p = text_[id];
  if (prev == bos_ && !p.empty() && p[0] == ' ') p.remove_prefix(1);
  return p;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  int32_t prev = bos_;
  for (int32_t id : ids) {
    out += piece(prev, id);
    prev = id;
  }
  return out;
}

}  // namespace sluice::inference
