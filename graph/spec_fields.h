// Reflection over the pipeline schema shared by the spec readers (spec_yaml.cc,
// spec_text_format.cc, spec_loader.cc): a field's rules (sluice.v1.rules), what kind of value
// it takes, setting a scalar from its text form under those rules, and filling in the schema's
// defaults. Internal to graph/'s loader; the schema itself is graph/schema.h.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <string>
#include <vector>

#include "graph/schema.h"
#include "graph/spec_loader.h"

namespace sluice::spec_fields {

const FieldRules& rules_of(const google::protobuf::FieldDescriptor* fd);
// A google.protobuf.Duration field (written "250ms" in YAML).
bool is_duration(const google::protobuf::FieldDescriptor* fd);
// The oneof named "config" of NodeSpec / SourceSpec, if `d` has one.
const google::protobuf::OneofDescriptor* config_oneof(const google::protobuf::Descriptor* d);
// The names a file may write in a `d` mapping (the config oneof's members as one "config").
std::vector<std::string> field_names(const google::protobuf::Descriptor* d);
// What a value of `fd` looks like, for "expected ..." messages ("a duration such as \"250ms\"").
std::string type_word(const google::protobuf::FieldDescriptor* fd);

// Sets a scalar (or Duration) field from its text form: numbers with their units (sizes,
// durations, addresses), enums by name, checked against the field's range and allowed values
// (NaN is outside every range). False with `*problem` set when the text is refused.
bool set_scalar_field(google::protobuf::Message* msg, const google::protobuf::FieldDescriptor* fd,
                      const std::string& text, std::string* problem);

// Fills every field the file did not write (`map` has no position for it) with its schema
// default (FieldRules.default_value), recursing into messages present and the chosen config.
void apply_defaults(google::protobuf::Message* msg, const std::string& path, const SourceMap& map,
                    const std::string& file, std::vector<SpecError>& errors);

}  // namespace sluice::spec_fields
