#include "graph/spec_fields.h"

#include <google/protobuf/duration.pb.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "graph/units.h"

namespace sluice::spec_fields {

namespace pb = google::protobuf;

const FieldRules& rules_of(const pb::FieldDescriptor* fd) { return fd->options().GetExtension(rules); }

bool is_duration(const pb::FieldDescriptor* fd) {
  return fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE &&
         fd->message_type()->full_name() == "google.protobuf.Duration";
}

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

bool set_scalar_field(pb::Message* msg, const pb::FieldDescriptor* fd, const std::string& text, std::string* problem) {
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
            if (!set_scalar_field(msg, fd, item.Scalar(), &problem)) {
              errors.push_back({file, {}, "", "schema default of " + child + " is invalid: " + problem});
            }
          }
        }
      }
      continue;
    }
    if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && !is_duration(fd)) {
      // An `optional` message is a feature switched on by writing it: absent stays absent.
      if (fd->has_optional_keyword() && !r->HasField(*msg, fd)) continue;
      apply_defaults(r->MutableMessage(msg, fd), child, map, file, errors);
      continue;
    }
    if (map.has(child) || fr.default_value().empty()) continue;
    std::string problem;
    if (!set_scalar_field(msg, fd, fr.default_value(), &problem)) {
      errors.push_back({file, {}, "", "schema default of " + child + " is invalid: " + problem});
    }
  }
}

}  // namespace sluice::spec_fields
