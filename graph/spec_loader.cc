#include "graph/spec_loader.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/duration.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "graph/schema.h"
#include "graph/units.h"

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

const FieldRules& rules_of(const pb::FieldDescriptor* fd) { return fd->options().GetExtension(rules); }

bool is_duration(const pb::FieldDescriptor* fd) {
  return fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE &&
         fd->message_type()->full_name() == "google.protobuf.Duration";
}

// The oneof named "config" of NodeSpec / SourceSpec, if `d` has one.
const pb::OneofDescriptor* config_oneof(const pb::Descriptor* d) { return d->FindOneofByName("config"); }

std::vector<std::string> field_names(const pb::Descriptor* d) {
  std::vector<std::string> names;
  const pb::OneofDescriptor* config = config_oneof(d);
  for (int i = 0; i < d->field_count(); ++i) {
    if (config && d->field(i)->containing_oneof() == config) continue;
    names.push_back(d->field(i)->name());
  }
  if (config) names.push_back("config");
  return names;
}

std::string type_word(const pb::FieldDescriptor* fd) {
  if (fd->is_repeated()) return "a list";
  if (is_duration(fd)) return "a duration such as \"250ms\"";
  switch (fd->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_MESSAGE: return "a mapping";
    case pb::FieldDescriptor::CPPTYPE_BOOL: return "true or false";
    case pb::FieldDescriptor::CPPTYPE_STRING: return "a string";
    case pb::FieldDescriptor::CPPTYPE_ENUM: return "one of the names of " + fd->enum_type()->name();
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: return "a number";
    default: return rules_of(fd).unit() == "bytes" ? "a size such as \"64KiB\"" : "a whole number";
  }
}

// ---------------------------------------------------------------- YAML / JSON -> message

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
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) {
        error(it->first.Mark(), node, where(path) + "field names must be plain strings");
        continue;
      }
      std::string key = it->first.Scalar();
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
    if (!set_scalar(msg, fd, *text, &problem)) error(n.Mark(), node, where(path) + problem);
  }

 public:
  // Sets a scalar (or Duration) field from its text form. Shared with default application.
  static bool set_scalar(pb::Message* msg, const pb::FieldDescriptor* fd, const std::string& text, std::string* problem) {
    const pb::Reflection* r = msg->GetReflection();
    bool rep = fd->is_repeated();
    const FieldRules& fr = rules_of(fd);
    auto check_range = [&](double v) {
      if (fr.has_range() && !(v >= fr.min() && v <= fr.max())) {  // NaN ("nan" reads as one) is outside too
        std::ostringstream os;
        os.precision(15);
        os << "must be between " << fr.min() << " and " << fr.max() << ", got " << text;
        *problem = os.str();
        return false;
      }
      return true;
    };
    auto bad = [&]() {
      *problem = "expected " + type_word(fd) + ", got \"" + text + "\"";
      return false;
    };
    if (is_duration(fd)) {
      auto ns = parse_duration(text, problem);
      if (!ns) return false;
      pb::Duration d;
      d.set_seconds(*ns / 1'000'000'000);
      d.set_nanos(static_cast<int>(*ns % 1'000'000'000));
      if (rep) r->AddMessage(msg, fd)->CopyFrom(d);
      else r->MutableMessage(msg, fd)->CopyFrom(d);
      return true;
    }
    switch (fd->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_STRING:
        rep ? r->AddString(msg, fd, text) : r->SetString(msg, fd, text);
        return true;
      case pb::FieldDescriptor::CPPTYPE_BOOL: {
        bool v;
        if (text == "true") v = true;
        else if (text == "false") v = false;
        else return bad();
        rep ? r->AddBool(msg, fd, v) : r->SetBool(msg, fd, v);
        return true;
      }
      case pb::FieldDescriptor::CPPTYPE_FLOAT:
      case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
        double v;
        auto res = std::from_chars(text.data(), text.data() + text.size(), v);
        if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return bad();
        if (!check_range(v)) return false;
        if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_FLOAT) {
          rep ? r->AddFloat(msg, fd, static_cast<float>(v)) : r->SetFloat(msg, fd, static_cast<float>(v));
        } else {
          rep ? r->AddDouble(msg, fd, v) : r->SetDouble(msg, fd, v);
        }
        return true;
      }
      case pb::FieldDescriptor::CPPTYPE_ENUM: {
        const pb::EnumValueDescriptor* ev = fd->enum_type()->FindValueByName(text);
        if (!ev) {
          std::vector<std::string> names;
          for (int i = 0; i < fd->enum_type()->value_count(); ++i) names.push_back(fd->enum_type()->value(i)->name());
          std::string hint = did_you_mean(text, names);
          std::string all;
          for (const auto& nm : names) all += (all.empty() ? "" : ", ") + nm;
          *problem = "\"" + text + "\" is not one of " + all + (hint.empty() ? "" : " (did you mean '" + hint + "'?)");
          return false;
        }
        rep ? r->AddEnum(msg, fd, ev) : r->SetEnum(msg, fd, ev);
        return true;
      }
      default: {
        bool is_signed = fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT32 || fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64;
        long double v;
        if (fr.unit() == "bytes") {
          auto bytes = parse_size(text, problem);
          if (!bytes) return false;
          v = static_cast<long double>(*bytes);
        } else if (is_signed) {
          std::int64_t i;
          auto res = std::from_chars(text.data(), text.data() + text.size(), i);
          if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return bad();
          v = i;
        } else {
          std::uint64_t u;
          auto res = std::from_chars(text.data(), text.data() + text.size(), u);
          if (res.ec != std::errc() || res.ptr != text.data() + text.size()) {
            if (!text.empty() && text[0] == '-') {
              *problem = "must not be negative, got " + text;
              return false;
            }
            return bad();
          }
          v = u;
        }
        if (!check_range(static_cast<double>(v))) return false;
        switch (fd->cpp_type()) {
          case pb::FieldDescriptor::CPPTYPE_INT32:
            if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max()) return bad();
            rep ? r->AddInt32(msg, fd, static_cast<std::int32_t>(v)) : r->SetInt32(msg, fd, static_cast<std::int32_t>(v));
            break;
          case pb::FieldDescriptor::CPPTYPE_INT64:
            rep ? r->AddInt64(msg, fd, static_cast<std::int64_t>(v)) : r->SetInt64(msg, fd, static_cast<std::int64_t>(v));
            break;
          case pb::FieldDescriptor::CPPTYPE_UINT32:
            if (v > std::numeric_limits<std::uint32_t>::max()) {
              *problem = "is too large, got " + text;
              return false;
            }
            rep ? r->AddUInt32(msg, fd, static_cast<std::uint32_t>(v)) : r->SetUInt32(msg, fd, static_cast<std::uint32_t>(v));
            break;
          default:
            rep ? r->AddUInt64(msg, fd, static_cast<std::uint64_t>(v)) : r->SetUInt64(msg, fd, static_cast<std::uint64_t>(v));
        }
        return true;
      }
    }
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

// ---------------------------------------------------------------- defaults

void apply_defaults(pb::Message* msg, const std::string& path, const SourceMap& map, const std::string& file,
                    std::vector<SpecError>& errors) {
  const pb::Descriptor* d = msg->GetDescriptor();
  const pb::Reflection* r = msg->GetReflection();
  const pb::OneofDescriptor* config = config_oneof(d);
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* fd = d->field(i);
    bool in_config = config && fd->containing_oneof() == config;
    std::string child = path.empty() ? std::string(in_config ? "config" : fd->name())
                                     : path + "." + (in_config ? "config" : fd->name());
    if (in_config) {
      if (r->HasField(*msg, fd)) apply_defaults(r->MutableMessage(msg, fd), child, map, file, errors);
      continue;
    }
    const FieldRules& fr = rules_of(fd);
    if (fd->is_repeated()) {
      if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        for (int j = 0; j < r->FieldSize(*msg, fd); ++j) {
          apply_defaults(r->MutableRepeatedMessage(msg, fd, j), child + "[" + std::to_string(j) + "]", map, file, errors);
        }
      }
      if (r->FieldSize(*msg, fd) == 0 && !map.has(child) && !fr.default_value().empty()) {
        // A list default is written in flow style: "[P0, P1, P2]".
        YAML::Node list = YAML::Load(fr.default_value());
        for (const auto& item : list) {
          if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
            // Lists of messages default by their first required string field (e.g. class names).
            pb::Message* sub = r->AddMessage(msg, fd);
            const pb::FieldDescriptor* key = sub->GetDescriptor()->field(0);
            sub->GetReflection()->SetString(sub, key, item.Scalar());
          } else {
            std::string problem;
            if (!YamlConverter::set_scalar(msg, fd, item.Scalar(), &problem)) {
              errors.push_back({file, {}, "", "schema default of " + child + " is invalid: " + problem});
            }
          }
        }
      }
      continue;
    }
    if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && !is_duration(fd)) {
      apply_defaults(r->MutableMessage(msg, fd), child, map, file, errors);
      continue;
    }
    if (map.has(child) || fr.default_value().empty()) continue;
    std::string problem;
    if (!YamlConverter::set_scalar(msg, fd, fr.default_value(), &problem)) {
      errors.push_back({file, {}, "", "schema default of " + child + " is invalid: " + problem});
    }
  }
}

// ---------------------------------------------------------------- text format

class TextErrors : public pb::io::ErrorCollector {
 public:
  TextErrors(const std::string& file, std::vector<SpecError>& errors) : file_(file), errors_(errors) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    std::string msg = message;
    // Add a suggestion to protobuf's "Message type "sluice.v1.X" has no field named "y"."
    static const std::string marker = "has no field named \"";
    if (auto at = msg.find(marker); at != std::string::npos) {
      std::size_t start = at + marker.size();
      std::string name = msg.substr(start, msg.find('"', start) - start);
      std::size_t t0 = msg.find('"');
      std::string type = msg.substr(t0 + 1, msg.find('"', t0 + 1) - t0 - 1);
      if (const pb::Descriptor* d = pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type)) {
        std::vector<std::string> names;
        for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
        std::string hint = did_you_mean(name, names);
        msg = "unknown field '" + name + "' in " + d->name() + (hint.empty() ? "" : " (did you mean '" + hint + "'?)");
      }
    }
    errors_.push_back(SpecError{file_, SourcePos{line + 1, column + 1}, "", msg});
  }

 private:
  const std::string& file_;
  std::vector<SpecError>& errors_;
};

void map_text_positions(const pb::Message& msg, const pb::TextFormat::ParseInfoTree* tree, const std::string& path,
                        SourceMap& map) {
  if (!tree) return;
  const pb::Descriptor* d = msg.GetDescriptor();
  const pb::Reflection* r = msg.GetReflection();
  const pb::OneofDescriptor* config = config_oneof(d);
  std::vector<const pb::FieldDescriptor*> fields;
  r->ListFields(msg, &fields);
  for (const pb::FieldDescriptor* fd : fields) {
    bool in_config = config && fd->containing_oneof() == config;
    std::string child = (path.empty() ? "" : path + ".") + (in_config ? "config" : fd->name());
    int n = fd->is_repeated() ? r->FieldSize(msg, fd) : 1;
    for (int j = 0; j < n; ++j) {
      int index = fd->is_repeated() ? j : -1;
      std::string item = fd->is_repeated() ? child + "[" + std::to_string(j) + "]" : child;
      auto loc = tree->GetLocation(fd, index);
      if (loc.line >= 0) {
        SourcePos p{loc.line + 1, loc.column + 1};
        if (j == 0) map.set_key(child, p);
        map.set_value(item, p);
      }
      if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& sub = fd->is_repeated() ? r->GetRepeatedMessage(msg, fd, j) : r->GetMessage(msg, fd);
        map_text_positions(sub, tree->GetTreeForNested(fd, index), item, map);
      }
    }
  }
}

// A number field's value as text (integers exactly) and as a double for the range check.
std::string number_text(const pb::Message& msg, const pb::FieldDescriptor* fd, int j, double* v) {
  const pb::Reflection* r = msg.GetReflection();
  const bool rep = fd->is_repeated();
  switch (fd->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      auto x = rep ? r->GetRepeatedInt32(msg, fd, j) : r->GetInt32(msg, fd);
      *v = x;
      return std::to_string(x);
    }
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      auto x = rep ? r->GetRepeatedInt64(msg, fd, j) : r->GetInt64(msg, fd);
      *v = static_cast<double>(x);
      return std::to_string(x);
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32: {
      auto x = rep ? r->GetRepeatedUInt32(msg, fd, j) : r->GetUInt32(msg, fd);
      *v = x;
      return std::to_string(x);
    }
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      auto x = rep ? r->GetRepeatedUInt64(msg, fd, j) : r->GetUInt64(msg, fd);
      *v = static_cast<double>(x);
      return std::to_string(x);
    }
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
      *v = fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_FLOAT ? (rep ? r->GetRepeatedFloat(msg, fd, j) : r->GetFloat(msg, fd))
                                                                 : (rep ? r->GetRepeatedDouble(msg, fd, j) : r->GetDouble(msg, fd));
      std::ostringstream os;
      os.precision(15);
      os << *v;
      return os.str();
    }
    default: *v = 0; return "";
  }
}

// Text format sets fields itself, not through set_scalar: what it wrote is checked against the
// same rules (ranges; a duration is not negative and its nanos are 0-999999999), at the
// positions the file gave. Fields text format leaves at zero are not listed (proto3): absent.
void check_text_values(const pb::Message& msg, const std::string& path, const std::string& node, const LoadedSpec& spec,
                       std::vector<SpecError>& errors) {
  const pb::Reflection* r = msg.GetReflection();
  const pb::OneofDescriptor* config = config_oneof(msg.GetDescriptor());
  std::vector<const pb::FieldDescriptor*> fields;
  r->ListFields(msg, &fields);
  for (const pb::FieldDescriptor* fd : fields) {
    const bool in_config = config && fd->containing_oneof() == config;
    const std::string child = (path.empty() ? "" : path + ".") + (in_config ? "config" : fd->name());
    const int n = fd->is_repeated() ? r->FieldSize(msg, fd) : 1;
    for (int j = 0; j < n; ++j) {
      const std::string item = fd->is_repeated() ? child + "[" + std::to_string(j) + "]" : child;
      if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& sub = fd->is_repeated() ? r->GetRepeatedMessage(msg, fd, j) : r->GetMessage(msg, fd);
        const pb::Descriptor* sd = sub.GetDescriptor();
        if (is_duration(fd)) {
          const std::int64_t seconds = sub.GetReflection()->GetInt64(sub, sd->FindFieldByName("seconds"));
          const std::int32_t nanos = sub.GetReflection()->GetInt32(sub, sd->FindFieldByName("nanos"));
          if (seconds < 0 || nanos < 0 || nanos > 999'999'999) {
            errors.push_back(spec.error_at(item, node, item + ": a duration cannot be negative and its nanos are 0 to "
                                                              "999999999, got seconds: " + std::to_string(seconds) +
                                                              " nanos: " + std::to_string(nanos)));
          }
          continue;
        }
        std::string sub_node = node;  // a node's or source's errors name it
        if (config_oneof(sd)) sub_node = sub.GetReflection()->GetString(sub, sd->FindFieldByName("name"));
        check_text_values(sub, item, sub_node, spec, errors);
        continue;
      }
      const FieldRules& fr = rules_of(fd);
      if (!fr.has_range()) continue;
      double v = 0;
      const std::string text = number_text(msg, fd, j, &v);
      if (!(v >= fr.min() && v <= fr.max())) {
        std::ostringstream os;
        os.precision(15);
        os << item << ": must be between " << fr.min() << " and " << fr.max() << ", got " << text;
        errors.push_back(spec.error_at(item, node, os.str()));
      }
    }
  }
}

std::string substitute_text(const std::string& text, const EnvLookup& env, const std::string& file,
                            std::vector<SpecError>& errors) {
  std::string out;
  int line = 1, col = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      std::size_t close = text.find('}', i);
      std::string body = close == std::string::npos ? "" : text.substr(i + 2, close - i - 2);
      std::string name = body, fallback;
      bool has_fallback = false;
      if (auto sep = body.find(":-"); sep != std::string::npos) {
        name = body.substr(0, sep);
        fallback = body.substr(sep + 2);
        has_fallback = true;
      }
      auto v = close == std::string::npos ? std::nullopt : env(name);
      if (v) out += *v;
      else if (has_fallback) out += fallback;
      else {
        errors.push_back({file, {line, col}, "", close == std::string::npos
                                                     ? "'${' without a closing '}'"
                                                     : "environment variable " + name + " is not set (write ${" + name + ":-default} to give a default)"});
      }
      if (close == std::string::npos) break;
      col += static_cast<int>(close - i);
      i = close;
    } else {
      out += c;
    }
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return out;
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The kind is stated once in the loaded spec: by the config member when the kind has one (the
// file's `kind` is then cleared), else by the `kind` string (kinds that take no config). Text
// format writes the member and may leave `kind` out; YAML and JSON write `kind` and `config`.
template <class Spec>
void settle_kind(Spec* s, const std::string& path, LoadedSpec& spec, std::vector<SpecError>& errors) {
  const pb::Descriptor* d = s->GetDescriptor();
  const pb::OneofDescriptor* config = config_oneof(d);
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
    std::string substituted = substitute_text(text, env, path, errors);
    pb::TextFormat::Parser parser;
    TextErrors collector(path, errors);
    parser.RecordErrorsTo(&collector);
    pb::TextFormat::ParseInfoTree tree;
    parser.WriteLocationsTo(&tree);
    text_parsed = parser.ParseFromString(substituted, &spec.pipeline);
    if (text_parsed) {
      map_text_positions(spec.pipeline, &tree, "", spec.positions);
      check_text_values(spec.pipeline, "", "", spec, errors);
    }
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
    YamlConverter(path, env, spec.positions, errors).message(root, &spec.pipeline, "", "");
  }
  // A text-format syntax error leaves nothing usable to validate.
  if (textproto && !text_parsed) throw SpecErrors(std::move(errors));
  for (int i = 0; i < spec.pipeline.nodes_size(); ++i)
    settle_kind(spec.pipeline.mutable_nodes(i), "nodes[" + std::to_string(i) + "]", spec, errors);
  for (int i = 0; i < spec.pipeline.sources_size(); ++i)
    settle_kind(spec.pipeline.mutable_sources(i), "sources[" + std::to_string(i) + "]", spec, errors);
  apply_defaults(&spec.pipeline, "", spec.positions, path, errors);
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
