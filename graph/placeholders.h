// {{name}} placeholders in configured text: the one syntax and implementation shared by the
// `template` fixture's text and the `prompt` node's templates.
//
// "{{name}}" is replaced by its value; single braces are plain text; a value is inserted as is
// (never expanded again, so a question containing "{{n}}" stays literal). An unknown or
// unclosed placeholder is a configuration error, reported with the field's name.
// Pure functions; thread-safe.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "graph/status.h"

namespace sluice {

struct Placeholder {
  std::string_view name;
  std::string_view value;
};

// Appends `tmpl` to `out` with each {{name}} replaced by its value. Returns Ok, or
// kInvalidArgument with the problem (unclosed or unknown placeholder) as a sentence; `out` is
// then incomplete. Callers that checked the template at build (check_placeholders) may ignore it.
Status fill_placeholders(std::string_view tmpl, std::initializer_list<Placeholder> values, std::string& out);

// Checks `tmpl` against the placeholders `allowed` (their values are ignored) and that each of
// `required` occurs. Throws std::invalid_argument("<field>: <problem>").
void check_placeholders(std::string_view field, std::string_view tmpl, std::initializer_list<Placeholder> allowed,
                        std::initializer_list<std::string_view> required = {});

}  // namespace sluice
