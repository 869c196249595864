#include "inference/constrain/token_mask.h"

#include <algorithm>
#include <limits>
#include <map>

namespace sluice::constrain {

namespace {

// Text a string body takes whole: no quote, backslash or control byte, and whole UTF-8
// characters by the matcher's rule (json_matcher.cc).
bool plain_string_text(std::string_view p) {
  if (p.empty()) return false;
  for (std::size_t i = 0; i < p.size();) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c == '"' || c == '\\' || c < 0x20) return false;
    std::size_t n = 1;
    if (c >= 0x80) {
      if (c >= 0xC2 && c <= 0xDF) n = 2;
      else if (c >= 0xE0 && c <= 0xEF) n = 3;
      else if (c >= 0xF0 && c <= 0xF4) n = 4;
      else return false;
      if (i + n > p.size()) return false;
      for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(p[i + k]);
        if (b < 0x80 || b > 0xBF) return false;
      }
    }
    i += n;
  }
  return true;
}

}  // namespace

VocabTrie::VocabTrie(const std::vector<std::string>& pieces, bool split_plain) : vocab_(pieces.size()) {
  if (split_plain) {
    std::vector<std::string> rest(pieces.size());
    for (std::size_t id = 0; id < pieces.size(); ++id) {
      if (plain_string_text(pieces[id])) plain_.push_back(std::int32_t(id));
      else rest[id] = pieces[id];
    }
    non_plain_ = std::make_unique<VocabTrie>(rest, false);
  }
  struct Temp {
    std::map<std::uint8_t, std::uint32_t> children;
    std::vector<std::int32_t> tokens;
  };
  std::vector<Temp> temp(1);
  for (std::size_t id = 0; id < pieces.size(); ++id) {
    if (pieces[id].empty()) continue;
    std::uint32_t at = 0;
    for (unsigned char c : pieces[id]) {
      auto it = temp[at].children.find(c);
      if (it == temp[at].children.end()) {
        temp.emplace_back();
        it = temp[at].children.emplace(c, std::uint32_t(temp.size() - 1)).first;
      }
      at = it->second;
    }
    temp[at].tokens.push_back(std::int32_t(id));
  }
  nodes_.resize(temp.size());
  for (std::size_t i = 0; i < temp.size(); ++i) {
    Node& n = nodes_[i];
    n.first_child = std::uint32_t(edges_.size());
    n.child_count = std::uint32_t(temp[i].children.size());
    for (const auto& [byte, child] : temp[i].children) edges_.push_back(Edge{byte, child});
    n.first_token = std::uint32_t(tokens_.size());
    n.token_count = std::uint32_t(temp[i].tokens.size());
    tokens_.insert(tokens_.end(), temp[i].tokens.begin(), temp[i].tokens.end());
  }
  // Children always have larger ids than their parent: heights in one backward pass.
  for (std::size_t i = nodes_.size(); i-- > 0;) {
    Node& n = nodes_[i];
    for (std::uint32_t e = n.first_child; e < n.first_child + n.child_count; ++e)
      n.height = std::max(n.height, nodes_[edges_[e].child].height + 1);
  }
}

TokenConstraint::TokenConstraint(std::shared_ptr<const JsonGrammar> grammar, std::shared_ptr<const VocabTrie> trie,
                                 std::vector<std::int32_t> end_tokens)
    : grammar_(std::move(grammar)),
      trie_(std::move(trie)),
      matcher_(*grammar_),
      end_tokens_(std::move(end_tokens)),
      state_(matcher_.start()) {}

void TokenConstraint::allow(std::int32_t id) {
  if (!allowed_[std::size_t(id)]) {
    allowed_[std::size_t(id)] = 1;
    ++allowed_count_;
  }
}

void TokenConstraint::walk(const VocabTrie& trie, std::uint32_t at, std::size_t depth, int tokens_left) {
  const VocabTrie::Node& n = trie.node(at);
  const MatchState& here = depth == 0 ? state_ : levels_[depth];
  for (std::uint32_t e = n.first_child; e < n.first_child + n.child_count; ++e) {
    const VocabTrie::Edge& edge = trie.edge(e);
    MatchState& next = levels_[depth + 1];
    matcher_.advance(here, edge.byte, next);
    if (next.empty()) continue;
    const VocabTrie::Node& child = trie.node(edge.child);
    // Each further byte lowers min_remaining by one at most: a subtree whose deepest token
    // still could not finish in the tokens after it is skipped.
    const std::int64_t need = matcher_.min_remaining(next);
    const std::int64_t after = tokens_left - 1;
    if (need - std::int64_t(child.height) > after) continue;
    if (child.token_count > 0 && need <= after)
      for (std::uint32_t t = child.first_token; t < child.first_token + child.token_count; ++t) allow(trie.token(t));
    if (child.child_count > 0) walk(trie, edge.child, depth + 1, tokens_left);
  }
}

std::size_t TokenConstraint::mask(std::span<float> logits, int tokens_left) {
  allowed_.assign(logits.size(), 0);
  levels_.resize(trie_->node(0).height + 2);  // the non-plain trie is never taller  // walk() holds references into it: never resized there
  allowed_count_ = 0;
  if (matcher_.accepts(state_)) {
    for (std::int32_t t : end_tokens_)
      if (t >= 0 && std::size_t(t) < logits.size()) allow(t);
  }
  if (!matcher_.finished(state_) && tokens_left > 0) {
    // In a free string body a plain token changes nothing the budget sees (the string still
    // owes its closing quote), so with room for that they are all allowed, unwalked.
    if (trie_->non_plain() && matcher_.in_free_string(state_) && int64_t(matcher_.min_remaining(state_)) <= tokens_left - 1) {
      for (std::int32_t t : trie_->plain_tokens()) allow(t);
      walk(*trie_->non_plain(), 0, 0, tokens_left);
    } else {
      walk(*trie_, 0, 0, tokens_left);
    }
  }
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (!allowed_[i]) logits[i] = kMasked;
  return allowed_count_;
}

bool TokenConstraint::accept(std::string_view bytes) {
  for (unsigned char c : bytes) {
    matcher_.advance(state_, c, scratch_);
    if (scratch_.empty()) return false;
    std::swap(state_, scratch_);
  }
  return true;
}

}  // namespace sluice::constrain
