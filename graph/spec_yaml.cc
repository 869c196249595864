#include "graph/spec_yaml.h"

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <map>
#include <optional>

#include "graph/spec_fields.h"
#include "graph/units.h"

namespace sluice {

namespace pb = google::protobuf;
using namespace spec_fields;

namespace {

class YamlConverter {
 public:
  YamlConverter(const std::string& file, const EnvLookup& env, SourceMap& map, std::vector<SpecError>& errors)
      : file_(file), env_(env), map_(map), errors_(errors) {}

  void message(const YAML::Node& n, pb::Message* msg, const std::string& path, const std::string& node) {
    const pb::Descriptor* d = msg->GetDescriptor();
    if (n.IsNull()) return;
    if (!n.IsMap()) {
      error(n.Mark(), node, where(path) + "expected a mapping of " + d->name() + " fields");
      return;
    }
    const pb::OneofDescriptor* config = config_oneof(d);
    YAML::Node config_value;
    bool has_config = false;
    std::string kind;
    // yaml-cpp keeps both entries of a repeated key; the file's meaning would be a guess.
    std::map<std::string, int> first_line;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) {
        error(it->first.Mark(), node, where(path) + "field names must be plain strings");
        continue;
      }
      std::string key = it->first.Scalar();
      if (auto [seen, fresh] = first_line.emplace(key, it->first.Mark().line + 1); !fresh) {
        error(it->first.Mark(), node,
              where(path) + "field '" + key + "' is written twice (first at line " + std::to_string(seen->second) + ")");
        continue;
      }
      std::string child = path.empty() ? key : path + "." + key;
      map_.set_key(child, pos(it->first.Mark()));
      map_.set_value(child, pos(it->second.Mark()));
      if (config && key == "config") {
        config_value = it->second;
        has_config = true;
        continue;
      }
      const pb::FieldDescriptor* fd = d->FindFieldByName(key);
      if (fd && config && fd->containing_oneof() == config) fd = nullptr;  // written as `config:`
      if (!fd) {
        std::string hint = did_you_mean(key, field_names(d));
        error(it->first.Mark(), node,
              where(path) + "unknown field '" + key + "' in " + d->name() + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
        continue;
      }
      if (key == "kind") {
        if (auto s = scalar(it->second, child, node)) kind = *s;
      }
      field(it->second, msg, fd, child, node);
    }
    if (config && !kind.empty()) {
      const pb::FieldDescriptor* member = nullptr;
      for (int i = 0; i < config->field_count(); ++i) {
        if (config->field(i)->name() == kind) member = config->field(i);
      }
      // An unknown kind is reported by the validator, which knows the registry's kinds.
      if (member) {
        pb::Message* sub = msg->GetReflection()->MutableMessage(msg, member);
        if (has_config) message(config_value, sub, path + ".config", node);
      }
    }
  }

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& path, const std::string& node) {
    if (!n.IsScalar()) {
      error(n.Mark(), node, where(path) + "expected a single value, not a " + (n.IsMap() ? "mapping" : n.IsSequence() ? "list" : "null"));
      return std::nullopt;
    }
    return substitute(n.Scalar(), n.Mark(), path, node);
  }

 private:
  void field(const YAML::Node& n, pb::Message* msg, const pb::FieldDescriptor* fd, const std::string& path,
             const std::string& node) {
    if (fd->is_repeated()) {
      if (n.IsNull()) return;
      if (!n.IsSequence()) {
        error(n.Mark(), node, where(path) + "expected a list");
        return;
      }
      for (std::size_t i = 0; i < n.size(); ++i) {
        std::string child = path + "[" + std::to_string(i) + "]";
        map_.set_value(child, pos(n[i].Mark()));
        element(n[i], msg, fd, child, item_node(n[i], fd, node));
      }
      return;
    }
    element(n, msg, fd, path, node);
  }

  // A node's errors name the node; its name is known before its other fields are read.
  std::string item_node(const YAML::Node& item, const pb::FieldDescriptor* fd, const std::string& node) {
    if (fd->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE || !config_oneof(fd->message_type())) return node;
    if (item.IsMap() && item["name"] && item["name"].IsScalar()) return item["name"].Scalar();
    return node;
  }

  void element(const YAML::Node& n, pb::Message* msg, const pb::FieldDescriptor* fd, const std::string& path,
               const std::string& node) {
    const pb::Reflection* r = msg->GetReflection();
    bool rep = fd->is_repeated();
    if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && !is_duration(fd)) {
      pb::Message* sub = rep ? r->AddMessage(msg, fd) : r->MutableMessage(msg, fd);
      const std::string& shorthand = rules_of(fd).shorthand();
      if (!shorthand.empty() && n.IsScalar()) {  // `auth: none` for `auth: {mode: none}`
        const pb::FieldDescriptor* target = sub->GetDescriptor()->FindFieldByName(shorthand);
        map_.set_value(path + "." + shorthand, pos(n.Mark()));
        element(n, sub, target, path + "." + shorthand, node);
        return;
      }
      message(n, sub, path, node);
      return;
    }
    if (n.IsNull()) {
      error(n.Mark(), node, where(path) + "has no value; expected " + type_word(fd));
      return;
    }
    auto text = scalar(n, path, node);
    if (!text) return;
    std::string problem;
    if (!set_scalar_field(msg, fd, *text, &problem)) error(n.Mark(), node, where(path) + problem);
  }

 private:
  // ${VAR} and ${VAR:-default}; $$ is a literal $.
  std::optional<std::string> substitute(const std::string& s, const YAML::Mark& mark, const std::string& path,
                                        const std::string& node) {
    if (s.find('$') == std::string::npos) return s;
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '$') {
        out += s[i];
        continue;
      }
      if (i + 1 < s.size() && s[i + 1] == '$') {
        out += '$';
        ++i;
        continue;
      }
      if (i + 1 >= s.size() || s[i + 1] != '{') {
        out += '$';
        continue;
      }
      std::size_t close = s.find('}', i);
      if (close == std::string::npos) {
        error(mark, node, where(path) + "'${' without a closing '}' in \"" + s + "\"");
        return std::nullopt;
      }
      std::string body = s.substr(i + 2, close - i - 2);
      std::string name = body, fallback;
      bool has_fallback = false;
      if (auto sep = body.find(":-"); sep != std::string::npos) {
        name = body.substr(0, sep);
        fallback = body.substr(sep + 2);
        has_fallback = true;
      }
      bool valid = !name.empty();
      for (char c : name) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!valid) {
        error(mark, node, where(path) + "'${" + body + "}' is not a valid variable reference; write ${NAME} or ${NAME:-default}");
        return std::nullopt;
      }
      auto v = env_(name);
      if (v && !(has_fallback && v->empty())) out += *v;
      else if (has_fallback) out += fallback;
      else {
        error(mark, node, where(path) + "environment variable " + name + " is not set (write ${" + name + ":-default} to give a default)");
        return std::nullopt;
      }
      i = close;
    }
    return out;
  }

  static SourcePos pos(const YAML::Mark& m) { return SourcePos{m.line + 1, m.column + 1}; }
  static std::string where(const std::string& path) { return path.empty() ? "" : path + ": "; }
  void error(const YAML::Mark& m, const std::string& node, std::string message) {
    errors_.push_back(SpecError{file_, pos(m), node, std::move(message)});
  }

  const std::string& file_;
  const EnvLookup& env_;
  SourceMap& map_;
  std::vector<SpecError>& errors_;
};

}  // namespace

void yaml_to_message(const YAML::Node& root, pb::Message* msg, const std::string& file, const EnvLookup& env,
                     SourceMap& map, std::vector<SpecError>& errors) {
  YamlConverter(file, env, map, errors).message(root, msg, "", "");
}

}  // namespace sluice
