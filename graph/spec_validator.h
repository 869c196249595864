// Spec validation: the checks that need the whole pipeline and the node registry, after the
// loader has checked syntax, field names and value types. Every problem is reported with the
// file position of the offending field and the node it concerns:
//  - missing required fields; duplicate source/node names;
//  - unknown node or source kinds (with a suggestion); a text-format config that names
//    another kind than `kind`;
//  - edges from or to names that do not exist (with a suggestion), into a source, self
//    loops, duplicates, more inputs than a join supports; cycles (the cycle is spelt out);
//  - nodes no source reaches, sources that feed nothing;
//  - incompatible ports: a node that needs facts (e.g. "hits") its inputs do not provide;
//  - priority classes: duplicates, unknown default class or source default priority.
#pragma once

#include <vector>

#include "graph/node_registry.h"
#include "graph/spec_loader.h"

namespace sluice {

// Maximum number of edges into one node (the arity of the join the builder inserts).
constexpr int kMaxFanIn = 4;

std::vector<SpecError> validate_spec(const LoadedSpec& spec, const NodeRegistry& registry);

// Loads, validates and throws SpecErrors if anything is wrong.
LoadedSpec load_and_validate(const std::string& path, const NodeRegistry& registry, const EnvLookup& env = process_env());
LoadedSpec load_and_validate_text(const std::string& text, const std::string& path, const NodeRegistry& registry,
                                  const EnvLookup& env = process_env());

}  // namespace sluice
