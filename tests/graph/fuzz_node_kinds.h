// The builtin node kinds as the validator sees them (kind, ports, async) without their
// factories, for the spec fuzzer (spec_fuzz.cc), which links no node library: linking them would
// build most of the tree again with clang for one fuzz target. graph_test checks this list
// against register_builtin_nodes(), so it cannot drift.
#pragma once

#include <initializer_list>
#include <tuple>

#include "graph/node_registry.h"

namespace sluice::testing {

inline NodeRegistry builtin_kinds_without_factories() {
  struct Kind {
    const char* kind;
    FactSet needs, adds;
    bool async;
  };
  NodeRegistry registry;
  for (const Kind& k : std::initializer_list<Kind>{
           {"priority_router", {"request"}, {}, true},  // nodes/admission
           {"dynamic_batcher", {"request"}, {}, true},
           {"service_curve", {"request"}, {"answer"}, true},
           {"passthrough", {"request"}, {}, false},  // nodes/basic
           {"template", {"request"}, {"answer"}, true},
           {"embeddings", {"request"}, {}, false},  // nodes/embedding
           {"response_cache", {"request"}, {}, false},  // nodes/cache
           {"semantic_cache", {"request"}, {}, false},
           {"generate", {"request"}, {"answer"}, true},  // nodes/generation
           {"prompt", {"hits"}, {"prompt"}, false},
           {"embed", {"request"}, {"query.vector"}, false},  // nodes/retrieval
           {"dense", {"query.vector"}, {"hits.dense"}, false},
           {"bm25", {"request"}, {"hits.bm25"}, false},
           {"fuse", {"hits.bm25", "hits.dense"}, {"hits"}, false},
           {"rerank", {"hits"}, {}, false},
           {"answer", {"hits"}, {"answer"}, false},
       }) {
    registry.add(NodeKind{k.kind, "", k.needs, k.adds, k.async, nullptr});
  }
  // Which degradations each kind supports (the texts only need to be non-empty here).
  for (const auto& [kind, skip, shrink] : std::initializer_list<std::tuple<const char*, bool, bool>>{
           {"service_curve", false, true}, {"generate", true, true}, {"dense", true, false},
           {"bm25", true, false}, {"fuse", false, true}, {"rerank", true, true}}) {
    registry.set_degradations(kind, skip ? "skip" : "", shrink ? "shrink" : "");
  }
  return registry;
}

}  // namespace sluice::testing
