// YAML (and JSON, which is YAML) pipeline files to the schema's message: every key is a field
// of the message at its place (unknown ones named with a suggestion), scalars go through
// spec_fields.h's set_scalar_field with ${VAR} and ${VAR:-default} substituted, a node's or
// source's `kind` picks its config member, and every key and value's position is recorded in
// `map` for the errors of later checks. Problems are appended to `errors`, each at its place.
#pragma once

#include <yaml-cpp/yaml.h>

#include <google/protobuf/message.h>

#include <string>
#include <vector>

#include "graph/spec_loader.h"

namespace sluice {

void yaml_to_message(const YAML::Node& root, google::protobuf::Message* msg, const std::string& file,
                     const EnvLookup& env, SourceMap& map, std::vector<SpecError>& errors);

}  // namespace sluice
