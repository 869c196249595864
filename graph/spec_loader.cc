#include "graph/spec_loader.h"

#include <google/protobuf/descriptor.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/schema.h"
#include "graph/spec_fields.h"
#include "graph/spec_text_format.h"
#include "graph/spec_yaml.h"

namespace sluice {

namespace pb = google::protobuf;

// ---------------------------------------------------------------- SourceMap, errors

SourcePos SourceMap::value_pos(const std::string& path) const {
  std::string p = path;
  while (true) {
    if (auto it = values_.find(p); it != values_.end()) return it->second;
    if (auto it = keys_.find(p); it != keys_.end()) return it->second;
    if (p.empty()) return {};
    std::size_t cut = p.find_last_of(".[");
    p.resize(cut == std::string::npos ? 0 : cut);
  }
}

SourcePos SourceMap::key_pos(const std::string& path) const {
  if (auto it = keys_.find(path); it != keys_.end()) return it->second;
  return value_pos(path);
}

std::string SpecError::to_string() const {
  std::string out = file;
  if (pos.line > 0) out += ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
  out += ": ";
  if (!node.empty()) out += "node '" + node + "': ";
  return out + message;
}

SpecErrors::SpecErrors(std::vector<SpecError> errors) : std::runtime_error(join(errors)), errors_(std::move(errors)) {}

std::string SpecErrors::join(const std::vector<SpecError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += "\n";
    out += e.to_string();
  }
  return out;
}

SpecError LoadedSpec::error_at(const std::string& field_path, std::string node, std::string message, bool at_key) const {
  return SpecError{path, at_key ? positions.key_pos(field_path) : positions.value_pos(field_path), std::move(node),
                   std::move(message)};
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The kind is stated once in the loaded spec: by the config member when the kind has one (the
// file's `kind` is then cleared), else by the `kind` string (kinds that take no config). Text
// format writes the member and may leave `kind` out; YAML and JSON write `kind` and `config`.
template <class Spec>
void settle_kind(Spec* s, const std::string& path, LoadedSpec& spec, std::vector<SpecError>& errors) {
  const pb::Descriptor* d = s->GetDescriptor();
  const pb::OneofDescriptor* config = spec_fields::config_oneof(d);
  if (s->config_case() != Spec::CONFIG_NOT_SET) {
    const std::string& member = d->FindFieldByNumber(s->config_case())->name();
    if (!s->kind().empty() && s->kind() != member) {
      errors.push_back(spec.error_at(path + ".config", s->name(),
                                     "config is for kind '" + member + "' but kind is '" + s->kind() + "'"));
      return;
    }
    if (!spec.positions.has(path + ".kind")) spec.positions.set_value(path + ".kind", spec.positions.value_pos(path + ".config"));
    s->clear_kind();
    return;
  }
  const pb::FieldDescriptor* member = d->FindFieldByName(s->kind());
  if (member && member->containing_oneof() == config) {  // a kind with settings, none written
    s->GetReflection()->MutableMessage(s, member);
    s->clear_kind();
  }
}

}  // namespace

std::string node_kind(const NodeSpec& node) {
  if (node.config_case() == NodeSpec::CONFIG_NOT_SET) return node.kind();
  return node.GetDescriptor()->FindFieldByNumber(node.config_case())->name();
}

std::string source_kind(const SourceSpec& source) {
  if (source.config_case() == SourceSpec::CONFIG_NOT_SET) return source.kind();
  return source.GetDescriptor()->FindFieldByNumber(source.config_case())->name();
}

LoadedSpec load_spec_text(const std::string& text, const std::string& path, const EnvLookup& env) {
  std::vector<SpecError> errors;
  LoadedSpec spec = load_spec_text_partial(text, path, env, &errors);
  if (!errors.empty()) throw SpecErrors(std::move(errors));
  return spec;
}

LoadedSpec load_spec_text_partial(const std::string& text, const std::string& path, const EnvLookup& env,
                                  std::vector<SpecError>* errors_out) {
  LoadedSpec spec;
  spec.path = path;
  spec.base_dir = std::filesystem::path(path).parent_path().string();
  if (spec.base_dir.empty()) spec.base_dir = ".";
  std::vector<SpecError> errors;

  bool text_parsed = false;
  bool textproto = has_suffix(path, ".textproto") || has_suffix(path, ".pbtxt") || has_suffix(path, ".txtpb");
  if (textproto) {
    text_parsed = read_text_format(text, env, spec, errors);
  } else {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      errors.push_back({path, {e.mark.line + 1, e.mark.column + 1}, "",
                        std::string(has_suffix(path, ".json") ? "JSON" : "YAML") + " syntax error: " + e.msg});
      throw SpecErrors(std::move(errors));
    }
    if (!root || root.IsNull()) {
      errors.push_back({path, {1, 1}, "", "the file is empty; a pipeline needs at least a name, a source and a node"});
      throw SpecErrors(std::move(errors));
    }
    if (!root.IsMap()) {
      errors.push_back({path, {root.Mark().line + 1, root.Mark().column + 1}, "",
                        "the top level must be a mapping with name, sources, nodes and edges"});
      throw SpecErrors(std::move(errors));
    }
    spec.positions.set_value("", {root.Mark().line + 1, root.Mark().column + 1});
    yaml_to_message(root, &spec.pipeline, path, env, spec.positions, errors);
  }
  // A text-format syntax error leaves nothing usable to validate.
  if (textproto && !text_parsed) throw SpecErrors(std::move(errors));
  for (int i = 0; i < spec.pipeline.nodes_size(); ++i)
    settle_kind(spec.pipeline.mutable_nodes(i), "nodes[" + std::to_string(i) + "]", spec, errors);
  for (int i = 0; i < spec.pipeline.sources_size(); ++i)
    settle_kind(spec.pipeline.mutable_sources(i), "sources[" + std::to_string(i) + "]", spec, errors);
  spec_fields::apply_defaults(&spec.pipeline, "", spec.positions, path, errors);
  *errors_out = std::move(errors);
  return spec;
}

std::string read_spec_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecErrors({SpecError{path, {}, "", "cannot read the file: " + std::string(std::strerror(errno))}});
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

LoadedSpec load_spec_file(const std::string& path, const EnvLookup& env) {
  return load_spec_text(read_spec_file(path), path, env);
}

}  // namespace sluice
