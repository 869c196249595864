// NodeRegistry: from a node kind (the `kind:` in a pipeline file) to what the validator needs
// to know about it and the factory that builds it.
//
// Port types are sets of "facts" a batch carries: a source provides {request}; a retrieval
// branch adds "hits.bm25"; `fuse` needs hits and adds "hits"; a responder needs what it reads.
// An edge is compatible when its producer's facts include everything the consumer needs; a
// fan-in provides the union of its branches' facts.
//
// Each capability under nodes/ registers its kinds in a function
// `register_<capability>_nodes(NodeRegistry&)` (file nodes/<capability>/register_nodes.cc);
// nodes/builtin_nodes.h's register_builtin_nodes() calls them all. Registration happens once at
// start-up; lookups afterwards are read-only and thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/node.h"
#include "graph/schema.h"

namespace sluice {

using FactSet = std::set<std::string>;

struct NodeKind {
  std::string kind;           // equals the name of NodeSpec's `config` oneof member
  std::string summary;        // one line for `sluice kinds` and docs
  FactSet needs;              // facts every input must provide
  FactSet adds;               // facts the node adds to its output
  bool async = false;         // true: factory returns an AsyncNode
  // Builds the node; throws std::invalid_argument (message without location: the builder
  // adds file:line:column and the node name) when the config is unusable.
  std::function<std::unique_ptr<Node>(const NodeSpec&, const NodeContext&)> factory;
};

// The degradations a latency budget may apply to a kind (NodeSpec.degrade, graph/
// stage_budget.h), each as what it means for the kind; empty: not supported. A kind that
// supports shrink reads NodeContext::shrink_factor and the request's trace; an async kind that
// supports skip hands on the batch it was given. Most kinds support none.
struct Degradations {
  std::string on_skip;
  std::string on_shrink;
};

class NodeRegistry {
 public:
  // Throws std::logic_error on a duplicate kind (a programming error).
  void add(NodeKind kind);
  // Declares what a registered kind's degradations mean (empty: not supported);
  // std::logic_error for an unknown kind.
  void set_degradations(const std::string& kind, std::string on_skip, std::string on_shrink);
  // Empty for a kind that supports none.
  const Degradations& degradations(const std::string& kind) const;
  const NodeKind* find(const std::string& kind) const;
  std::vector<std::string> kinds() const;
  // The kinds that support a degradation ("skip" or "shrink").
  std::set<std::string> kinds_that_degrade(const std::string& action) const;

 private:
  std::map<std::string, NodeKind> kinds_;
  std::map<std::string, Degradations> degradations_;
};

}  // namespace sluice
