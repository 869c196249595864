// Constrained decoding for one sequence: before each sampled token, the logits of every token
// whose bytes would leave the grammar are set to -inf; after it, the token's bytes advance the
// grammar. The answer then parses, whatever the model.
//
// VocabTrie holds the vocabulary's byte strings as a prefix tree, built once per model, so the
// mask walks each shared prefix once: the cost per step is one matcher advance per trie node
// the grammar lets through (inside a string that is most of the trie; at a fixed key, a
// handful). Inside a string (most of an answer) the plain-text tokens are allowed as a list
// and only the others are walked: bench/generation/constrained_bench measures both.
//
// Budget: with `tokens_left` tokens to go, a token is allowed only when the document can still
// be completed in the tokens after it (its min_remaining bytes, one byte token each, which
// every SentencePiece vocabulary with byte fallback has). So a constrained answer closes its
// brackets before max_tokens instead of being cut off mid-value; it ends with finish_reason
// "length" only when even the shortest completion did not fit when it started (the engine
// refuses such a request up front).
//
// Not thread-safe: one TokenConstraint per sequence; the trie and grammar are shared, immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "inference/constrain/json_grammar.h"
#include "inference/constrain/json_matcher.h"

namespace sluice::constrain {

class VocabTrie {
 public:
  // pieces[id]: the bytes token id prints (empty: a control or unknown token, never allowed).
  // With `split_plain`, the tokens that are plain string text (no '"', '\\' or control byte,
  // whole UTF-8 characters) are listed apart and the rest gets its own trie: inside a string
  // every plain token is allowed without a walk, and only the rest is walked.
  explicit VocabTrie(const std::vector<std::string>& pieces, bool split_plain = true);

  // The plain-text tokens, and the trie of the others (null without split_plain).
  const std::vector<std::int32_t>& plain_tokens() const { return plain_; }
  const VocabTrie* non_plain() const { return non_plain_.get(); }

  struct Node {
    std::uint32_t first_child = 0, child_count = 0;  // into edges
    std::uint32_t first_token = 0, token_count = 0;  // into tokens: the tokens spelled exactly here
    std::uint32_t height = 0;                        // longest path below
  };
  struct Edge {
    std::uint8_t byte;
    std::uint32_t child;
  };
  const Node& node(std::uint32_t i) const { return nodes_[i]; }
  const Edge& edge(std::uint32_t i) const { return edges_[i]; }
  std::int32_t token(std::uint32_t i) const { return tokens_[i]; }
  std::size_t vocab_size() const { return vocab_; }
  std::size_t node_count() const { return nodes_.size(); }

 private:
  std::vector<Node> nodes_;  // 0 is the root
  std::vector<Edge> edges_;
  std::vector<std::int32_t> tokens_;
  std::size_t vocab_ = 0;
  std::vector<std::int32_t> plain_;
  std::unique_ptr<VocabTrie> non_plain_;
};

class TokenConstraint {
 public:
  // `end_tokens`: the tokens that end generation (allowed only once the document is complete).
  TokenConstraint(std::shared_ptr<const JsonGrammar> grammar, std::shared_ptr<const VocabTrie> trie,
                  std::vector<std::int32_t> end_tokens);

  // Sets the logits of disallowed tokens to -inf. Returns how many tokens stay allowed (0: a
  // dead end, which the budget rule and the grammar's finite instances rule out).
  std::size_t mask(std::span<float> logits, int tokens_left);
  // Advances by the chosen token's bytes; false when they leave the grammar.
  bool accept(std::string_view bytes);
  // The document is complete and nothing may follow: stop now.
  bool finished() const { return matcher_.finished(state_); }
  bool accepts() const { return matcher_.accepts(state_); }
  std::uint32_t min_remaining() const { return matcher_.min_remaining(state_); }

 private:
  void walk(const VocabTrie& trie, std::uint32_t trie_node, std::size_t depth, int tokens_left);
  void allow(std::int32_t token);

  std::shared_ptr<const JsonGrammar> grammar_;
  std::shared_ptr<const VocabTrie> trie_;
  JsonMatcher matcher_;
  std::vector<std::int32_t> end_tokens_;
  MatchState state_, scratch_;
  std::vector<MatchState> levels_;  // the walk's state at each trie depth (reused)
  std::vector<std::uint8_t> allowed_;
  std::size_t allowed_count_ = 0;
};

}  // namespace sluice::constrain
