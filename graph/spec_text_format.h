// Protobuf text-format pipeline files (.textproto, .pbtxt, .txtpb) to the schema's message.
// ${VAR} and ${VAR:-default} are substituted first; protobuf's parser reads the result, its
// errors placed at file:line:column (unknown fields with a suggestion); the positions of what
// it set are recorded in spec.positions, and its values are held to the same rules as YAML's
// (ranges, durations not negative), which the parser itself does not know.
#pragma once

#include <string>
#include <vector>

#include "graph/spec_loader.h"

namespace sluice {

// Parses `text` into spec.pipeline (spec.path names the file in errors). False when the text
// is not valid text format: nothing usable was read. Problems are appended to `errors`.
bool read_text_format(const std::string& text, const EnvLookup& env, LoadedSpec& spec, std::vector<SpecError>& errors);

}  // namespace sluice
