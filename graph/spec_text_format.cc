#include "graph/spec_text_format.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cstdint>
#include <sstream>

#include "graph/spec_fields.h"
#include "graph/units.h"

namespace sluice {

namespace pb = google::protobuf;
using namespace spec_fields;

namespace {

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

}  // namespace

bool read_text_format(const std::string& text, const EnvLookup& env, LoadedSpec& spec, std::vector<SpecError>& errors) {
  std::string substituted = substitute_text(text, env, spec.path, errors);
  pb::TextFormat::Parser parser;
  TextErrors collector(spec.path, errors);
  parser.RecordErrorsTo(&collector);
  pb::TextFormat::ParseInfoTree tree;
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(substituted, &spec.pipeline)) return false;
  map_text_positions(spec.pipeline, &tree, "", spec.positions);
  check_text_values(spec.pipeline, "", "", spec, errors);
  return true;
}

}  // namespace sluice
