// Markdown reference of the pipeline schema, generated from the Protobuf descriptors and their
// (sluice.v1.rules) options: one table per message with each field's type, default, unit or
// range and reason. `sluice schema` prints it; docs/pipelines.md embeds it and a test keeps
// the two identical, so the documentation cannot drift from the schema.
#pragma once

#include <string>

namespace sluice {

std::string schema_reference_markdown();

}  // namespace sluice
