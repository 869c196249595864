// Spec loading: a pipeline file (YAML, JSON or protobuf text format) into the Pipeline
// message, with the file position of every field so later errors can point at the line.
//
// Format by extension: .yaml/.yml (main format), .json, .textproto/.pbtxt/.txtpb. In YAML and
// JSON scalars, ${VAR} and ${VAR:-default} are replaced from the environment ($$ is a literal
// $); in text format the substitution is textual. Durations are written "250ms", "1.5s",
// "2m"; sizes "64KiB", "1MB" or plain bytes. Absent fields take the default stated in the
// schema's (sluice.v1.rules) option.
//
// Errors are collected, not thrown one at a time: a file with three mistakes reports three.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/schema.h"

namespace sluice {

struct SourcePos {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based
};

// Positions by field path: "runtime.drain_timeout", "nodes[2].config.text", "edges[0].to".
// A oneof member of NodeSpec/SourceSpec is always addressed as "config".
class SourceMap {
 public:
  void set_key(const std::string& path, SourcePos pos) { keys_[path] = pos; }
  void set_value(const std::string& path, SourcePos pos) { values_[path] = pos; }
  bool has(const std::string& path) const { return keys_.count(path) || values_.count(path); }
  // Position of the value at `path`, else of its key, else of the nearest ancestor.
  SourcePos value_pos(const std::string& path) const;
  // Position of the key at `path`, else as value_pos.
  SourcePos key_pos(const std::string& path) const;

 private:
  std::map<std::string, SourcePos> keys_;
  std::map<std::string, SourcePos> values_;
};

struct SpecError {
  std::string file;
  SourcePos pos;
  std::string node;      // the node or source the error is about; may be empty
  std::string message;   // a plain sentence
  std::string to_string() const;  // "file:line:column: node 'x': message"
};

class SpecErrors : public std::runtime_error {
 public:
  explicit SpecErrors(std::vector<SpecError> errors);
  const std::vector<SpecError>& errors() const { return errors_; }

 private:
  static std::string join(const std::vector<SpecError>& errors);
  std::vector<SpecError> errors_;
};

struct LoadedSpec {
  std::string path;       // as given
  std::string base_dir;   // directory of the file, for relative paths in configs
  PipelineSpec pipeline;
  SourceMap positions;

  SpecError error_at(const std::string& field_path, std::string node, std::string message, bool at_key = false) const;
};

// A node's kind, stated once in a loaded spec: the name of its `config` member, or for a kind
// that takes no config, the `kind` string ("" when neither is set). The loader moves the file's
// `kind` into the member when the kind has one. Likewise for sources.
std::string node_kind(const NodeSpec& node);
std::string source_kind(const SourceSpec& source);

// Looks up an environment variable; injectable for tests. Returns nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();

// Loads and converts a file. Throws SpecErrors for syntax, unknown fields, bad values.
LoadedSpec load_spec_file(const std::string& path, const EnvLookup& env = process_env());
// Same, from text; `path` is used for messages and to pick the format.
LoadedSpec load_spec_text(const std::string& text, const std::string& path, const EnvLookup& env = process_env());
// Loads what can be loaded and reports field-level problems in `errors` instead of throwing,
// so validation can report whole-pipeline problems in the same pass. Still throws SpecErrors
// on syntax errors, after which nothing is usable.
LoadedSpec load_spec_text_partial(const std::string& text, const std::string& path, const EnvLookup& env,
                                  std::vector<SpecError>* errors);
std::string read_spec_file(const std::string& path);

}  // namespace sluice
