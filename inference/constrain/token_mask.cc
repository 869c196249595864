#include "inference/constrain/token_mask.h"

#include <algorithm>
#include <limits>
#include <map>

namespace sluice::constrain {

VocabTrie::VocabTrie(const std::vector<std::string>& pieces) : vocab_(pieces.size()) {
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

void TokenConstraint::walk(std::uint32_t at, std::size_t depth, int tokens_left) {
  const VocabTrie::Node& n = trie_->node(at);
  const MatchState& here = depth == 0 ? state_ : levels_[depth];
  for (std::uint32_t e = n.first_child; e < n.first_child + n.child_count; ++e) {
    const VocabTrie::Edge& edge = trie_->edge(e);
    MatchState& next = levels_[depth + 1];
    matcher_.advance(here, edge.byte, next);
    if (next.empty()) continue;
    const VocabTrie::Node& child = trie_->node(edge.child);
    // Each further byte lowers min_remaining by one at most: a subtree whose deepest token
    // still could not finish in the tokens after it is skipped.
    const std::int64_t need = matcher_.min_remaining(next);
    const std::int64_t after = tokens_left - 1;
    if (need - std::int64_t(child.height) > after) continue;
    if (child.token_count > 0 && need <= after) {
      for (std::uint32_t t = child.first_token; t < child.first_token + child.token_count; ++t) {
        const std::int32_t id = trie_->token(t);
        if (!allowed_[std::size_t(id)]) {
          allowed_[std::size_t(id)] = 1;
          ++allowed_count_;
        }
      }
    }
    if (child.child_count > 0) walk(edge.child, depth + 1, tokens_left);
  }
}

std::size_t TokenConstraint::mask(std::span<float> logits, int tokens_left) {
  allowed_.assign(logits.size(), 0);
  levels_.resize(trie_->node(0).height + 2);  // walk() holds references into it: never resized there
  allowed_count_ = 0;
  if (matcher_.accepts(state_)) {
    for (std::int32_t t : end_tokens_)
      if (t >= 0 && std::size_t(t) < logits.size() && !allowed_[std::size_t(t)]) {
        allowed_[std::size_t(t)] = 1;
        ++allowed_count_;
      }
  }
  if (!matcher_.finished(state_) && tokens_left > 0) walk(0, 0, tokens_left);
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
