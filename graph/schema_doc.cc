#include "graph/schema_doc.h"

#include <google/protobuf/descriptor.h>

#include <set>
#include <sstream>
#include <vector>

#include "graph/schema.h"

namespace sluice {

namespace pb = google::protobuf;

namespace {

std::string type_name(const pb::FieldDescriptor* fd) {
  std::string t;
  const FieldRules& r = fd->options().GetExtension(rules);
  if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    t = fd->message_type()->full_name() == "google.protobuf.Duration" ? "duration" : fd->message_type()->name();
  } else if (r.unit() == "bytes") {
    t = "size";
  } else if (r.unit() == "address") {
    t = "address";
  } else if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_ENUM) {
    t = "enum " + fd->enum_type()->name();
  } else {
    t = fd->type_name();
  }
  return fd->is_repeated() ? "list of " + t : t;
}

std::string cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void table(const pb::Descriptor* d, std::ostringstream& out, std::vector<const pb::Descriptor*>& queue,
           std::set<std::string>& seen) {
  out << "### " << d->name() << "\n\n| field | type | default | range | why |\n| --- | --- | --- | --- | --- |\n";
  const pb::OneofDescriptor* config = d->FindOneofByName("config");
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* fd = d->field(i);
    if (config && fd->containing_oneof() == config) continue;
    const FieldRules& r = fd->options().GetExtension(rules);
    // A default with line breaks (a template) is shown with them written as \n, as in the .proto.
    std::string shown;
    for (char c : r.default_value()) shown += c == '\n' ? std::string("\\n") : std::string(1, c);
    std::string def = r.required() ? "required" : shown.empty() ? "" : "`" + shown + "`";
    std::string range;
    if (r.has_range()) {
      std::ostringstream rs;
      rs.precision(15);
      rs << r.min() << " .. " << r.max();
      range = rs.str();
    } else if (r.allowed_size() > 0) {
      for (const std::string& a : r.allowed()) range += (range.empty() ? "" : ", ") + ("`" + a + "`");
    } else if (r.unit() == "address") {
      range = "host:port, port 0 .. 65535";
    }
    out << "| `" << fd->name() << "` | " << type_name(fd) << " | " << def << " | " << range << " | " << cell(r.doc()) << " |\n";
    if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && fd->message_type()->file()->package() == PipelineSpec::descriptor()->file()->package() &&
        seen.insert(fd->message_type()->full_name()).second) {
      queue.push_back(fd->message_type());
    }
  }
  if (config) {
    out << "| `config` | one of the kinds below | | | Settings of the kind named by `kind`. |\n";
    out << "\nKinds (`kind:` value → its `config` message):\n\n";
    for (int i = 0; i < config->field_count(); ++i) {
      const pb::FieldDescriptor* fd = config->field(i);
      out << "- `" << fd->name() << "` → " << fd->message_type()->name() << "\n";
      if (seen.insert(fd->message_type()->full_name()).second) queue.push_back(fd->message_type());
    }
  }
  out << "\n";
}

}  // namespace

std::string schema_reference_markdown() {
  std::ostringstream out;
  std::vector<const pb::Descriptor*> queue{PipelineSpec::descriptor()};
  std::set<std::string> seen{PipelineSpec::descriptor()->full_name()};
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const pb::Descriptor* d = queue[i];
    if (d->field_count() == 0) {
      out << "### " << d->name() << "\n\nNo settings.\n\n";
      continue;
    }
    table(d, out, queue, seen);
  }
  return out.str();
}

}  // namespace sluice
