#include "apps/sluice/commands.h"
#include "apps/sluice/registry.h"

#include <csignal>
#include <cstdio>
#include <iostream>

#include "graph/metrics.h"
#include "graph/pipeline.h"
#include "graph/schema_doc.h"
#include "graph/spec_dot.h"
#include "graph/spec_validator.h"
#include "nodes/builtin_nodes.h"

namespace sluice::cli {
namespace {


bool one_file(const Args& args, const char* command) {
  if (args.size() == 1 && args[0][0] != '-') return true;
  std::fprintf(stderr, "usage: sluice %s FILE\n", command);
  return false;
}

}  // namespace

NodeRegistry& node_registry() {
  static NodeRegistry r = [] {
    NodeRegistry reg;
    register_builtin_nodes(reg);
    return reg;
  }();
  return r;
}

bool load_pipeline(const std::string& path, LoadedSpec* out) {
  try {
    *out = load_and_validate(path, node_registry());
    return true;
  } catch (const SpecErrors& e) {
    for (const auto& err : e.errors()) std::cerr << err.to_string() << "\n";
    std::cerr << e.errors().size() << (e.errors().size() == 1 ? " problem" : " problems") << " in " << path << "\n";
    return false;
  }
}

int validate(const Args& args) {
  if (!one_file(args, "validate")) return 2;
  LoadedSpec spec;
  if (!load_pipeline(args[0], &spec)) return 2;
  std::cout << args[0] << ": pipeline '" << spec.pipeline.name() << "' is valid (" << spec.pipeline.sources_size()
            << " sources, " << spec.pipeline.nodes_size() << " nodes, " << spec.pipeline.edges_size() << " edges)\n";
  return 0;
}

int graph(const Args& args) {
  if (!one_file(args, "graph")) return 2;
  LoadedSpec spec;
  if (!load_pipeline(args[0], &spec)) return 2;
  std::cout << pipeline_to_dot(spec.pipeline);
  return 0;
}

int kinds(const Args&) {
  for (const auto& k : node_registry().kinds()) {
    const NodeKind* kind = node_registry().find(k);
    std::cout << k << "\t" << kind->summary << "\n";
    // What a latency budget's `degrade` does to this kind (docs/operations.md, "Latency budgets").
    const Degradations& d = node_registry().degradations(k);
    if (!d.on_skip.empty()) std::cout << "\tdegrade: skip\t" << d.on_skip << "\n";
    if (!d.on_shrink.empty()) std::cout << "\tdegrade: shrink\t" << d.on_shrink << "\n";
  }
  return 0;
}

int schema(const Args&) {
  std::cout << schema_reference_markdown();
  return 0;
}

}  // namespace sluice::cli
